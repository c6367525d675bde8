"""Hybrid recall on real SQLite (FTS5 + sqlite-vec) with the packaged embedder: what it finds, what
limits it, and that its lexical index follows every write, prune, forget and import."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from assistant.errors import InputError
from assistant.memory.api import PreparedQuestion
from assistant.memory.forget import ForgetFilter
from assistant.memory.question import fts_query, read_question
from assistant.records import Utterance

from .conftest import check_invariants, open_memory, undo_held_lines

DAY = 86_400.0
# Monday 14 August 2023, 10:00 UTC.
T0 = datetime(2023, 8, 14, 10, tzinfo=UTC).timestamp()

CONVERSATION = [
    # day 0
    ("Sam", "The Lisbon trip moves to May, we fly out on the fourteenth.", 0),
    ("Ana", "Great, I booked the hotel near the harbour in Alfama.", 60),
    ("Sam", "The budget for the whole trip is twelve thousand euros.", 120),
    ("Ana", "I adopted a beagle called Biscuit last weekend.", 180),
    ("Sam", "Biscuit is a lovely name for a dog.", 240),
    # day 2
    ("Ana", "I started pottery classes, the teacher is called Zorblat.", 2 * DAY),
    ("Sam", "For walking or running?", 2 * DAY + 60),
    ("Ana", "These shoes are for running, it helps me de-stress.", 2 * DAY + 120),
    ("Sam", "I have been painting sunsets on the weekends.", 2 * DAY + 180),
    # day 5
    ("Sam", "My sister Priya visits from Toronto next month.", 5 * DAY),
    ("Ana", "Priya will love the new bakery on our street.", 5 * DAY + 60),
]


def _fill(mem) -> None:
    mem.add_many([Utterance(s, t, T0 + dt) for s, t, dt in CONVERSATION])


def _prepared(data: Path, question: str, **settings: Any) -> PreparedQuestion:
    """`question` prepared (not used) by a fresh memory at `data` that heard CONVERSATION."""
    mem = open_memory(data, **settings)
    try:
        _fill(mem)
        return mem.prepare(question, use=False)
    finally:
        mem.close()


@pytest.fixture
def memory(tmp_path):
    mem = open_memory(tmp_path / "data", stsb={"max_gap_seconds": 3600})
    _fill(mem)
    yield mem
    mem.close()


def _lexical(mem, word: str) -> list[int]:
    return [r[0] for r in mem.store.db.all("SELECT rowid FROM memory_lines WHERE memory_lines MATCH ?", (word,))]


def test_reading_a_question():
    speakers = ["Rosalind", "Ingrid", "Sam Lee", "Speaker 2", "Speaker 3"]
    r = read_question("What has Ingrid baked?", speakers, T0, UTC)
    assert r.speaker == "Ingrid" and "Ingrid" not in r.topic and r.terms == ("baked",)
    # A possessive, a first name of a full name, and a nickname are all that speaker.
    assert read_question("What is Rosalind's favourite film?", speakers, T0, UTC).speaker == "Rosalind"
    assert read_question("Where does Sam work?", speakers, T0, UTC).speaker == "Sam Lee"
    assert read_question("How often do Ros and her brother go climbing?", speakers, T0, UTC).speaker == "Rosalind"
    assert read_question("What did Speaker 3 say?", speakers, T0, UTC).speaker == "Speaker 3"
    # Two speakers, or a question in the first person, name no single speaker the question is about...
    both = read_question("What do Rosalind and Ingrid agree on?", speakers, T0, UTC)
    assert both.speaker is None and both.named == ("Rosalind", "Ingrid")
    mine = read_question("What did I promise Ingrid?", speakers, T0, UTC)
    assert mine.speaker is None and mine.named == ("Ingrid",)
    # ...and a question about no one names no one.
    assert read_question("Who wrote the Iliad?", speakers, T0, UTC).named == ()
    # A word that merely begins like a name ("Ros") is not the name.
    assert read_question("Which rose did they plant?", speakers, T0, UTC).speaker is None
    # A time bounds the lines only when the question asks what was said then.
    said = read_question("What did Sam say last week?", speakers, T0, UTC)
    assert said.window is not None and said.window[1] <= T0
    assert read_question("Where did Ingrid live three years ago?", speakers, T0, UTC).window is None
    # Quoting keeps FTS5 operators in the words from being read as operators.
    assert fts_query(("near", "or", 'a"b')) == '"near" OR "or" OR "ab"'
    assert fts_query(()) is None


def test_lexical_index_holds_exactly_what_the_memory_holds(memory):
    check_invariants(memory)  # memory_lines == node sources + buffers

    def delete_events_on(word: str) -> tuple[int, int, int]:
        """Delete the events resting on the one line holding `word`: that line, and what holds it then
        (node sources, the short-term buffer)."""
        (uid,) = _lexical(memory, word)
        nodes = memory.store.nodes_by_id(memory.store.node_ids_of([uid])[uid])
        events = [n for n in nodes if n.level.value == "event"]
        assert events, word
        for event in events:
            memory.delete(event.id)
        db = memory.store.db
        sources = db.scalar("SELECT count(*) FROM node_sources WHERE utterance_id = ?", (uid,))
        buffered = db.scalar("SELECT count(*) FROM stsb WHERE utterance_id = ?", (uid,))
        return uid, sources, buffered

    # The first line of day 0 has left the short-term buffer: its event was all that held it, and
    # with the event gone it goes from the index.
    uid, sources, buffered = delete_events_on("fourteenth")
    assert (sources, buffered) == (0, 0)
    assert uid not in _lexical(memory, "fourteenth")
    # Day 2's line is still in the buffer too: it stays findable.
    uid, sources, buffered = delete_events_on("zorblat")
    assert (sources, buffered) == (0, 1)
    assert _lexical(memory, "zorblat") == [uid]
    check_invariants(memory)


def test_a_bounded_memory_lets_pruned_lines_go_from_both_indexes(tmp_path):
    mem = open_memory(tmp_path / "data", budget=200)
    for i in range(60):
        mem.add(
            "Sam" if i % 2 else "Ana", f"Note {i}: the {['red', 'blue', 'green'][i % 3]} folder number {i}.", T0 + i
        )
    mem.flush()
    check_invariants(mem)
    held = set(mem.store.held_ids())
    assert len(held) < 60  # the budget pruned some
    found = mem.store.dense_lines(mem._embedder.encode_one("the blue folder"), 100)
    assert found and {uid for uid, _ in found} <= held
    mem.close()


def test_forgotten_words_are_in_neither_index_nor_any_file(memory, tmp_path):
    assert _lexical(memory, "zorblat")
    memory.forget(ForgetFilter(text="Zorblat"))
    memory.engine.distill_pending()
    assert not _lexical(memory, "zorblat")
    vocab = memory.store.db
    vocab.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, memory_lines, 'row')")
    assert not vocab.all("SELECT term FROM terms WHERE term LIKE 'zorbl%'")
    assert all(b"orblat" not in p.read_bytes().lower() for p in (tmp_path / "data").rglob("*") if p.is_file())
    assert not [r for r in memory.search("Who teaches the pottery class?").lines if "Zorblat" in r.evidence.text]
    check_invariants(memory)


def test_recall_fuses_lexical_and_dense(memory):
    # A made-up name only the lexical index can match...
    found = memory.search("Who is Zorblat?", now=T0 + 6 * DAY)
    assert "Zorblat" in found.lines[0].evidence.text and "lexical" in found.lines[0].found_by
    # ...and a paraphrase that shares no content word with its line, only the dense one.
    found = memory.search("How much money can we spend?", now=T0 + 6 * DAY)
    top = [r for r in found.lines[:3] if "twelve thousand" in r.evidence.text]
    assert top and "dense" in top[0].found_by and "lexical" not in top[0].found_by


def test_recall_is_limited_by_speaker_and_time(memory):
    later = T0 + 6 * DAY
    by_ana = memory.search("What does she do to relax?", speaker="Ana", now=later)
    assert by_ana.lines and {r.evidence.speaker for r in by_ana.lines} == {"Ana"}
    assert by_ana.filter.speaker == "Ana" and by_ana.filter.inferred == ()
    window = memory.search("trip", since=T0 + DAY, until=T0 + 3 * DAY, now=later)
    assert window.lines and all(T0 + DAY <= r.evidence.time < T0 + 3 * DAY for r in window.lines)
    # The question's own name is who it is about: their lines rank first, but no one is barred...
    about = memory.search("What has Sam been painting?", now=later)
    assert about.about == "Sam" and about.filter.speaker is None and about.filter.inferred == ()
    assert "sunsets" in about.lines[0].evidence.text
    assert "Ana" in {r.evidence.speaker for r in about.lines}
    # ...and a speaker the caller gives is a filter.
    given = memory.search("What has Sam been painting?", speaker="Ana", now=later)
    assert given.filter.speaker == "Ana" and given.about is None
    assert {r.evidence.speaker for r in given.lines} == {"Ana"}
    # "What did Sam say yesterday?" asked on day 6 reads day 5, Sam's line first.
    yesterday = memory.search("What did Sam say yesterday?", now=T0 + 6 * DAY)
    assert yesterday.filter.inferred == ("since", "until")
    assert yesterday.lines[0].evidence.text == "My sister Priya visits from Toronto next month."
    with pytest.raises(InputError, match="no speaker"):
        memory.search("trip", speaker="Nobody")
    with pytest.raises(InputError, match="since must be before until"):
        memory.search("trip", since=T0 + DAY, until=T0)


def test_a_fact_about_someone_told_by_someone_else_is_recalled(tmp_path):
    """A question that names a person prefers their lines without hiding another speaker's line
    about them: here the latest date of Sam's appointment is Ana's news."""
    mem = open_memory(tmp_path / "data", stsb={"max_gap_seconds": 3600})
    try:
        mem.add_many(
            [
                Utterance("Sam", "My cat Pixel sees the vet on Friday afternoon.", T0),
                Utterance("Ana", "Sam, the clinic phoned: Pixel's vet visit moved to Tuesday morning.", T0 + DAY),
                Utterance("Sam", "I still need to buy a new carrier for Pixel.", T0 + DAY + 60),
            ]
        )
        found = mem.prepare("When does Sam take Pixel to the vet?", use=False, now=T0 + 2 * DAY)
        assert found.prompt is not None
        assert any("Tuesday" in e.text for e in found.prompt.sources)
        assert found.retrieval.about == "Sam"
    finally:
        mem.close()


def test_utility_breaks_ties_but_does_not_rank(memory, tmp_path):
    before = [r.evidence.utterance_id for r in memory.search("Lisbon trip hotel", now=T0 + 6 * DAY).lines]
    for _ in range(5):
        memory.search("the beagle Biscuit", use=True, now=T0 + 6 * DAY)
    after = [r.evidence.utterance_id for r in memory.search("Lisbon trip hotel", now=T0 + 6 * DAY).lines]
    # Five uses of the dog's lines do not lift them above the lines about the trip.
    assert after[:3] == before[:3]

    # A tie: one line each from the lexical and the dense arm, both first in theirs, fuse to the
    # same score. Utility decides: the more recent line first, until the other is used.
    tied = open_memory(
        tmp_path / "tied",
        stsb={"max_gap_seconds": 3600},
        retrieval={"lexical_k": 1, "dense_k": 1, "tree": False, "reply_lines": 0},
    )
    try:
        _fill(tied)
        now = T0 + 6 * DAY

        def order() -> list[str]:
            lines = tied.search("hotel shoes", now=now).lines
            assert len(lines) == 2 and lines[0].score - lines[1].score < 1e-5, lines  # fused alike
            return [r.evidence.text.split()[:3] for r in lines]

        shoes, hotel = ["These", "shoes", "are"], ["Great,", "I", "booked"]
        assert order() == [shoes, hotel]  # said on day 2, the hotel on day 0
        for _ in range(3):
            tied.search("the hotel near the harbour", use=True, now=now)
        assert order() == [hotel, shoes]
    finally:
        tied.close()


def test_recall_stays_on_what_the_memory_holds_after_a_restart(tmp_path):
    mem = open_memory(tmp_path / "data")
    _fill(mem)
    before = [r.evidence.utterance_id for r in mem.search("hotel in Alfama", now=T0 + 6 * DAY).lines]
    mem.close()
    again = open_memory(tmp_path / "data")
    after = [r.evidence.utterance_id for r in again.search("hotel in Alfama", now=T0 + 6 * DAY).lines]
    assert after == before
    again.close()


def test_lexical_index_is_built_for_a_database_of_an_earlier_version(tmp_path):
    """A memory written before the lexical index existed gets one, with the lines it holds."""
    data = tmp_path / "data"
    mem = open_memory(data)
    _fill(mem)
    held = sorted(mem.store.held_ids())
    db = mem.store.db
    # Back to schema 2: drop what migration 0003 made (and 0007 remade).
    undo_held_lines(db)
    for (name,) in db.all("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'memory_lines%'"):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE memory_lines")
    db.execute("DROP INDEX pending_utterances_utterance")
    db.execute("DELETE FROM migrations WHERE name = '0003_memory_lines'")
    # ... and what the later ones made.
    db.execute("DROP TABLE utterance_voices")
    db.execute("DELETE FROM migrations WHERE name = '0004_utterance_voices'")
    db.execute("DROP TABLE supersessions")
    db.execute("DELETE FROM migrations WHERE name = '0005_supersessions'")
    db.execute("ALTER TABLE speakers DROP COLUMN enrolled_seconds")
    db.execute("DROP INDEX utterances_speaker_time")
    db.execute("CREATE INDEX utterances_speaker ON utterances(speaker_id)")
    db.execute("DELETE FROM migrations WHERE name = '0006_enrolled_seconds'")
    db.execute("PRAGMA user_version = 2")
    mem.close()
    upgraded = open_memory(data)
    assert sorted(upgraded.store.held_ids()) == held
    check_invariants(upgraded)
    upgraded.close()


def test_lines_far_below_the_best_match_stay_out_of_the_context(tmp_path):
    """`answer.min_score_share`: a small answerer reads a short context of strong matches better
    than one filled to the cap with weak ones, so a line scoring under that share of the best is
    left out, however much room is left."""
    question = "Where is the hotel Ana booked?"
    contexts = {}
    for share in (0.0, 0.6):
        prepared = _prepared(
            tmp_path / f"data-{share}",
            question,
            retrieval={"reply_lines": 0},
            answer={"min_score_share": share, "neighbours": 0},
        )
        assert prepared.prompt is not None
        scores = {r.evidence.utterance_id: r.score for r in prepared.retrieval.lines}
        contexts[share] = (prepared.prompt.sources, scores, prepared.prompt.context_tokens)
    (wide, scores, wide_tokens), (narrow, _, narrow_tokens) = contexts[0.0], contexts[0.6]
    best = max(scores.values())
    # Without a floor the cap is all that limits: every recalled line fits this small memory.
    assert {e.utterance_id for e in wide} == set(scores)
    assert any(s < 0.6 * best for s in scores.values())
    # With it, exactly the lines at or above the floor are quoted.
    assert {e.utterance_id for e in narrow} == {u for u, s in scores.items() if s >= 0.6 * best}
    assert any("hotel" in e.text for e in narrow) and narrow_tokens < wide_tokens


REVIEW = [
    ("Sam", "Who is chairing the finance review this quarter?"),
    ("Ana", "Julia Okafor is, she took over from Gustavo in June."),
    ("Sam", "Can we keep the finance review shorter this time?"),
    ("Ana", "Let's try forty minutes."),
    ("Sam", "The finance review is in the Orchard room again?"),
    ("Ana", "Yes, the Orchard room."),
    ("Sam", "My bike got a flat tyre on the way in."),
    ("Ana", "The coffee machine on the third floor is fixed."),
]


def test_the_floor_is_a_share_of_the_best_line_that_states_something(tmp_path):
    """Lines that ask repeat the question's words and rank first, but state no value: the floor
    (`answer.min_score_share`) is a share of the best line that states something, so the reply
    that answers is quoted. A floor set by the question above it left the answer out."""
    share = 0.7
    mem = open_memory(
        tmp_path / "data", retrieval={"reply_lines": 0}, answer={"neighbours": 0, "min_score_share": share}
    )
    try:
        for i, (speaker, text) in enumerate(REVIEW):
            mem.add(speaker, text, T0 + 60 * i)
        mem.flush()
        prepared = mem.prepare("Who chairs the finance review?", use=False, now=T0 + 3600)
    finally:
        mem.close()
    assert prepared.prompt is not None
    ranked = prepared.retrieval.lines
    scores = {r.evidence.text: r.score for r in ranked}
    answer = "Julia Okafor is, she took over from Gustavo in June."
    assert ranked[0].evidence.text.endswith("?")
    assert scores[answer] < share * ranked[0].score  # what a floor set by the question would cut
    stated = next(r.score for r in ranked if not r.evidence.text.endswith("?"))
    quoted = {e.text for e in prepared.prompt.sources}
    assert answer in quoted
    assert quoted == {text for text, score in scores.items() if score >= share * stated}


SUMMER = [
    ("Ana", "Last summer I swam in the lake every morning."),
    ("Sam", "The lake sounds lovely, was the water cold?"),
    ("Ana", "I love reading on a summer evening."),
    ("Sam", "Any plans for the summer, Ana?"),
    ("Ana", "Researching adoption agencies, I want to give a child a home."),
    ("Sam", "That is wonderful news."),
    ("Ana", "My plans for the garden fell through."),
]


def test_the_reply_to_the_best_match_is_offered(tmp_path):
    """`retrieval.reply_lines`: the words of "What are Ana's plans for the summer?" are in Sam's
    question; Ana's answer shares none of them. The turn just after the best match, said by
    someone else, is offered."""
    question = "What are Ana's plans for the summer?"
    answer = "Researching adoption agencies, I want to give a child a home."
    quoted = {}
    for replies in (0, 1):
        mem = open_memory(
            tmp_path / f"data-{replies}",
            retrieval={"lexical_k": 2, "dense_k": 2, "tree": False, "reply_lines": replies},
            answer={"neighbours": 0},
        )
        mem.add_many([Utterance(s, t, T0 + 60 * i) for i, (s, t) in enumerate(SUMMER)])
        prepared = mem.prepare(question, use=False)
        assert prepared.prompt is not None and prepared.retrieval.about == "Ana"
        # Without the rule nothing reaches Ana's answer: no arm ranks it.
        assert answer not in {r.evidence.text for r in prepared.retrieval.lines}
        quoted[replies] = {e.text for e in prepared.prompt.sources}
        assert (answer in [e.text for e in prepared.retrieval.replies]) == bool(replies)
        mem.close()
    assert answer in quoted[1] - quoted[0]


# A plan announced, asked about by someone else, and answered in a turn that names neither.
GIG = [
    ("Ana", "Next item: the band's gig for the hospice fundraiser."),
    ("Sam", "Brilliant. Where are we playing?"),
    ("Ana", "The Crown on Mill Lane, they have a back room for eighty people."),
    ("Sam", "I still need new strings for my bass."),
    ("Ana", "The bakery on the corner closes early on Sundays."),
]


def test_a_reply_that_asks_brings_the_turn_that_answers_it(tmp_path):
    """The best match for "Where is the band's gig?" is Ana's announcement; Sam's reply only asks
    where, and the place is in Ana's next turn, which shares no word with the question. A reply
    that is a question is offered with the turn that answers it."""
    mem = open_memory(
        tmp_path / "data",
        retrieval={"lexical_k": 1, "dense_k": 1, "tree": False, "reply_lines": 1},
        answer={"neighbours": 0},
    )
    try:
        mem.add_many([Utterance(s, t, T0 + 60 * i) for i, (s, t) in enumerate(GIG)])
        found = mem.search("Where is the band's gig?")
        assert found.lines[0].evidence.text == GIG[0][1]
        assert [e.text for e in found.replies] == [GIG[1][1], GIG[2][1]]
    finally:
        mem.close()


def test_the_short_question_before_a_strongest_line_is_shown(tmp_path):
    """`answer.neighbours`: "These shoes are for running" answers a question it does not repeat
    ("For walking or running?"); that turn, short and asked by someone else, is shown beside it."""
    asked = "For walking or running?"
    quoted = {}
    for neighbours in (0, 1):
        prepared = _prepared(
            tmp_path / f"data-{neighbours}",
            "What are Ana's new shoes for?",
            stsb={"max_gap_seconds": 3600},
            retrieval={"reply_lines": 0},
            answer={"neighbours": neighbours},
        )
        assert prepared.prompt is not None
        quoted[neighbours] = [e.text for e in prepared.prompt.sources]
    assert asked in quoted[1] and asked not in quoted[0]


def test_the_turn_next_to_an_utterance(memory):
    ids = sorted(memory.store.held_ids())
    said = {u.id: u.text for u in memory.store.utterances(ids)}
    running = next(i for i in ids if said[i].startswith("These shoes"))
    assert memory.store.adjacent(running, after=False).text == "For walking or running?"
    assert memory.store.adjacent(running, after=True).text == "I have been painting sunsets on the weekends."
    assert memory.store.adjacent(ids[0], after=False) is None
    assert memory.store.adjacent(ids[-1], after=True) is None
    assert memory.store.adjacent(10**9, after=True) is None


def test_lines_that_speak_of_the_person_asked_about_rank_with_their_own(tmp_path):
    """A question about someone prefers the lines about them: theirs, and another's that speaks of
    them ("Sofia picked ..."), not one that only addresses them ("Thanks, Sofia!")."""
    mem = open_memory(tmp_path / "data", stsb={"max_gap_seconds": 3600})
    try:
        mem.add_many(
            [
                Utterance("Sofia", "We found damp behind the basement wall.", T0),
                Utterance("Sofia", "The plumber says the basement pipes are older than the house.", T0 + 60),
                Utterance("Ana", "Thanks, Sofia! Your basement will look lovely once it is dry.", T0 + 120),
                Utterance("Ana", "Sofia picked oak boards for the basement in the end.", T0 + DAY),
                Utterance("Ana", "Our garden gets new paving stones next week.", T0 + DAY + 60),
            ]
        )
        found = mem.search("What finish did Sofia choose for the basement?", now=T0 + 2 * DAY)
        assert found.about == "Sofia"
        by_text = {r.evidence.text: r for r in found.lines}
        oak = by_text["Sofia picked oak boards for the basement in the end."]
        thanks = by_text["Thanks, Sofia! Your basement will look lovely once it is dry."]
        assert {"lexical_own", "dense_own"} <= set(oak.found_by)
        assert not {"lexical_own", "dense_own"} & set(thanks.found_by)
        assert found.lines[0].evidence == oak.evidence
    finally:
        mem.close()


def test_the_turn_after_a_line_about_the_person_is_about_them_too(tmp_path):
    """ "Sofia is moving out" and then, without her name, "the new one is on Mill Lane": the reply
    goes on about her, and ranks with the lines about her; a turn after anyone else's line does not."""
    mem = open_memory(tmp_path / "data", stsb={"max_gap_seconds": 3600})
    try:
        moved = "The first flat fell through, so the new one is above the bakery on Mill Lane."
        mem.add_many(
            [
                Utterance("Sofia", "I've got a new job at the library.", T0 - DAY),
                Utterance("Ana", "Sofia is moving out of the city centre.", T0),
                Utterance("Ben", moved, T0 + 60),
                Utterance("Carla", "My new flat has a balcony over the park.", T0 + DAY),
                Utterance("Dan", "A new flat with a balcony, lovely.", T0 + DAY + 60),
            ]
        )
        found = mem.search("Where is Sofia's new flat?", now=T0 + 2 * DAY)
        assert found.about == "Sofia"
        by_text = {r.evidence.text: r for r in found.lines}
        mill_lane = by_text[moved]
        assert {"lexical_own", "dense_own"} <= set(mill_lane.found_by)
        assert not {"lexical_own", "dense_own"} & set(by_text["A new flat with a balcony, lovely."].found_by)
        assert found.lines[0].evidence == mill_lane.evidence
    finally:
        mem.close()


def test_the_talk_goes_on_about_the_person_until_it_names_someone_else(tmp_path):
    """Two turns after "Any news on Sofia's move?", "the new one is above the bakery" is still
    about her, and is recalled and read as hers; the turns after the talk names Ravi are his, and
    a line after a long silence is no one's."""
    mem = open_memory(tmp_path / "data", stsb={"max_gap_seconds": 3600}, retrieval={"person_turns": 4})
    try:
        hers = "Also, the first flat fell through, the new one is above the bakery on Mill Lane."
        his = "The new one is on Quay Street, right by the station."
        later = "The new one has a lovely view over the harbour."
        mem.add_many(
            [
                Utterance("Sofia", "I've got a new job at the library.", T0 - DAY),
                Utterance("Ravi", "My bike got a flat tyre on the way in.", T0 - DAY + 60),
                Utterance("Ana", "Any news on Sofia's move?", T0),
                Utterance("Ben", "The van is booked for Saturday morning.", T0 + 60),
                Utterance("Carla", hers, T0 + 120),
                Utterance("Dan", "Speaking of moving, Ravi's landlord is selling up.", T0 + 180),
                Utterance("Ana", his, T0 + 240),
                Utterance("Ben", later, T0 + 240 + 2 * 3600),
            ]
        )
        found = mem.search("Where is Sofia's new flat?", now=T0 + 2 * DAY)
        ids = {r.evidence.text: r.evidence.utterance_id for r in found.lines}
        assert found.about == "Sofia" and ids[hers] in found.of_them
        assert ids[his] not in found.of_them and ids[later] not in found.of_them
        by_text = {r.evidence.text: r for r in found.lines}
        assert {"lexical_own", "dense_own"} <= set(by_text[hers].found_by)
        assert found.lines[0].evidence.text == hers
        # The answer's person test reads it as hers: the nearest line about her is the nearest of all.
        assert mem.prepare("Where is Sofia's new flat?", use=False, now=T0 + 2 * DAY).nearness.person_share == 1.0
    finally:
        mem.close()
