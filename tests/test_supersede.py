"""Supersession: a later line stating a new value makes the earlier one history, in the budget and in recall."""

from dataclasses import replace
from datetime import UTC

import pytest

from assistant.cli import _print_search
from assistant.config import BudgetOptions
from assistant.mcp_server.views import SearchView
from assistant.memory.budget import enforce_budget
from assistant.memory.supersede import (
    NAME,
    ORGANISATION,
    PERSON,
    PLACE,
    QUANTITY,
    Value,
    ValueTagger,
    value_pair,
)
from assistant.records import ForgetFilter, Level, SearchResult, Utterance
from assistant.wire import from_json, to_json

from .conftest import check_invariants, open_memory

DAY = 86400.0


def _links(mem) -> set[tuple[str, str]]:
    links = mem.store.supersession_links()
    texts = {u.id: u.text for u in mem.store.utterances({i for link in links for i in link})}
    return {(texts[old], texts[new]) for old, new in links}


def _said(mem, lines: list[tuple[str, str, float]]) -> None:
    for speaker, text, t in lines:
        mem.add(speaker, text, t)
    mem.flush()
    mem.engine.distill_pending()


# Talk between the updates, naming no value the updates name.
_CHATTER = (
    "My cat knocked a plant off the shelf this morning.",
    "The printer on the second floor is jammed again.",
    "I finally fixed the squeaky door hinge.",
)


def _updates(mem, said: list[tuple[str, float]]) -> None:
    """Ana says each line at its time, and Bo something unrelated a minute later."""
    lines = []
    for (text, t), chatter in zip(said, _CHATTER, strict=False):
        lines += [("Ana", text, t), ("Bo", chatter, t + 60)]
    _said(mem, lines)


def test_values_are_numbers_dates_and_names():
    tagger = ValueTagger()  # the capitalised-words fallback: no spaCy pipeline
    (values,) = tagger.values(["On Friday 21 May we pay 2,400 euros at room 4B to Hotel Aurora."])
    keys = {(v.kind, v.key) for v in values}
    assert {(QUANTITY, "friday"), (QUANTITY, "21"), (QUANTITY, "may"), (QUANTITY, "2400"), (QUANTITY, "4b")} <= keys
    assert (NAME, "hotel aurora") in keys
    # The first word of a sentence is capitalised whatever it is.
    assert all(v.key != "on" for v in values)


@pytest.mark.parametrize(
    ("old", "new", "paired"),
    [
        # A new amount, a new day, a new person: one slot, a new value.
        ("The kitchen quote is 3,100 pounds.", "The kitchen quote came back at 3,450 pounds.", True),
        ("The Kestrel launch is run by Nadia Brook.", "The Kestrel launch is run by Tomas Ortiz now.", True),
        # Two kinds of difference (another place and another amount): two facts, not one.
        ("The Oslo rent is 900 euros.", "The Bergen rent is 950 euros.", False),
        # Nothing new is stated: the same values, or fewer.
        ("The Oslo rent is 900 euros.", "Yes, 900 euros for Oslo.", False),
        # A new name with nothing else in common, or where the earlier line named nobody.
        ("Hi Felix, good to see you.", "Hi Rosa, good to see you.", False),
        ("The quote is ready.", "The quote is 3,450 pounds.", False),
        # A question states no value.
        ("The Oslo rent is 900 euros.", "Is the Oslo rent 950 euros now?", False),
    ],
)
def test_a_pair_needs_a_new_value_of_one_kind(old, new, paired):
    tagger = ValueTagger()
    old_values, new_values = tagger.values([old, new])
    pair = value_pair(Utterance("Ana", old, 0.0, 1), Utterance("Bo", new, 1.0, 2), old_values, new_values)
    assert (pair is not None) == paired


def _tagged(text: str, *names: tuple[str, str]) -> tuple[Value, ...]:
    """Values as a recogniser might tag them: (kind, the words it marked)."""
    return tuple(
        Value(kind, words.casefold(), text.index(words), text.index(words) + len(words)) for kind, words in names
    )


@pytest.mark.parametrize(
    ("old", "old_names", "new", "new_names", "masked"),
    [
        # A recogniser marks the whole name in one sentence and a part of it in the next; the
        # value that changed is the garage, the only name new to the later line.
        (
            "I left the Volvo Amazon at Berg Garage.",
            [(PLACE, "the Volvo Amazon"), (ORGANISATION, "Berg Garage")],
            "We took the Volvo Amazon from Berg Garage to Lund Garage.",
            [(PLACE, "Amazon"), (ORGANISATION, "Berg Garage"), (ORGANISATION, "Lund Garage")],
            "We took the Volvo Amazon from Berg Garage to NAME.",
        ),
        # Who leaves is named in full only in the update: still the same person, so only the
        # new one is masked.
        (
            "Lindgren runs the Heron stall.",
            [(PERSON, "Lindgren"), (ORGANISATION, "Heron")],
            "Marek Lindgren left, so Wanda Kos runs Heron now.",
            [(PERSON, "Marek Lindgren"), (PERSON, "Wanda Kos"), (ORGANISATION, "Heron")],
            "Marek Lindgren left, so NAME runs Heron now.",
        ),
    ],
)
def test_a_name_said_in_full_in_one_line_and_in_part_in_the_other_is_one_name(old, old_names, new, new_names, masked):
    pair = value_pair(
        Utterance("Ana", old, 0.0, 1), Utterance("Bo", new, 1.0, 2), _tagged(old, *old_names), _tagged(new, *new_names)
    )
    assert pair is not None and pair.new_masked == masked


@pytest.mark.parametrize(
    ("old", "old_values", "new", "new_values", "masked"),
    [
        # Only the update has the car's name marked; both say it, and the bill is what changed.
        (
            "The Corolla service is 300 pounds.",
            [(QUANTITY, "300")],
            "Quick note, the Corolla service went up to 420 pounds.",
            [(ORGANISATION, "Corolla"), (QUANTITY, "420")],
            "Quick note, the Corolla service went up to NUMBER pounds.",
        ),
        # Who runs the stall changed; the stall is marked only in the update, but both name it.
        (
            "Berit runs the Heron stall.",
            [(PERSON, "Berit")],
            "Wanda runs the Heron stall now.",
            [(PERSON, "Wanda"), (ORGANISATION, "Heron")],
            "NAME runs the Heron stall now.",
        ),
    ],
)
def test_a_name_marked_in_one_line_only_is_no_new_value_where_both_say_it(old, old_values, new, new_values, masked):
    earlier, later = Utterance("Ana", old, 0.0, 1), Utterance("Bo", new, 1.0, 2)
    pair = value_pair(earlier, later, _tagged(old, *old_values), _tagged(new, *new_values))
    assert pair is not None and pair.new_masked == masked


@pytest.mark.parametrize(
    ("new", "new_names", "masked"),
    [
        # The owner is left out of the update, as people do once it is clear whose car it is.
        (
            "We took the Volvo to Lund Garage.",
            [(NAME, "Volvo"), (ORGANISATION, "Lund Garage")],
            "We took the Volvo to NAME.",
        ),
        # New values of two kinds (an owner and a garage) are another fact: Bo's car.
        ("Bo's Volvo is at Lund Garage.", [(PERSON, "Bo"), (NAME, "Volvo"), (ORGANISATION, "Lund Garage")], None),
    ],
)
def test_a_name_the_update_leaves_out_is_no_second_kind_of_change(new, new_names, masked):
    old = "Diego's Volvo is at Berg Garage."
    old_names = [(PERSON, "Diego"), (NAME, "Volvo"), (ORGANISATION, "Berg Garage")]
    pair = value_pair(
        Utterance("Ana", old, 0.0, 1), Utterance("Bo", new, 1.0, 2), _tagged(old, *old_names), _tagged(new, *new_names)
    )
    assert (pair.new_masked if pair is not None else None) == masked


def test_a_later_value_supersedes_the_earlier_line_and_gets_its_own_unit(tmp_path):
    """Stated, then changed days later: the link is stored, and the novelty check does not fold the
    new value into the unit that holds the old one."""
    mem = open_memory(tmp_path)
    try:
        old, new = "The budget for the Lisbon trip is 2,000 euros.", "The Lisbon trip budget is now 2,600 euros."
        _updates(mem, [(old, 1000.0), (new, 3 * DAY)])
        assert (old, new) in _links(mem)
        # Nothing unrelated is linked: the chatter names no value the other lines name.
        assert all(o == old and n == new for o, n in _links(mem))
        ids = {u.text: u.id for u in mem.store.utterances(mem.store.held_ids())}
        units = {
            nid: {ev.utterance_id for ev in evs}
            for nid, evs in mem.store.sources(n.id for n in mem.store.nodes(Level.AMU)).items()
        }
        assert any(ids[new] in srcs and ids[old] not in srcs for srcs in units.values())
        check_invariants(mem)
    finally:
        mem.close()


def test_unrelated_facts_are_not_linked(tmp_path):
    mem = open_memory(tmp_path)
    try:
        _said(
            mem,
            [
                ("Ana", "The budget for the Lisbon trip is 2,000 euros.", 1000.0),
                ("Bo", "The budget for the Porto trip is 2,600 euros.", 2 * DAY),
                ("Ana", "I found a walking tour of Lisbon for 25 euros each.", 3 * DAY),
                ("Bo", "When do we leave for Lisbon?", 4 * DAY),
            ],
        )
        assert _links(mem) == set()
    finally:
        mem.close()


def test_an_update_that_names_no_one_supersedes_only_lines_about_whom_the_talk_was_about(tmp_path):
    """Test 4. "We lost the first flat, the new one is ..." names no one: just after Esther's new
    address it is Esther's, just after Lena's it is Lena's, and neither supersedes the other,
    however alike the two read, while Esther's next update supersedes hers. Without the talk's
    person (`person_turns` 0), Lena's supersedes Esther's and is superseded by Esther's next."""

    def links(turns: int) -> set[tuple[str, str]]:
        mem = open_memory(tmp_path / str(turns), retrieval={"person_turns": turns})
        try:
            _said(
                mem,
                [
                    ("Esther", "Morning, all.", 1000.0),
                    ("Ana", "Esther's new place is at 96 Chestnut Lane.", 1060.0),
                    ("Bo", "Also, we lost the first flat, the new one is 177 Orchard Street.", 1120.0),
                    ("Lena", "Hi, everyone.", 3 * DAY),
                    ("Ana", "Lena's new place is at 99 Orchard Avenue.", 3 * DAY + 60),
                    ("Bo", "I still need to cancel the internet at the old place.", 3 * DAY + 120),
                    ("Lena", "We lost the first flat, the new one is 123 Bridge Avenue.", 3 * DAY + 180),
                    ("Bo", "Any news on Esther's move?", 6 * DAY),
                    ("Ana", "We lost the second flat too, the new one is 12 Mill Road.", 6 * DAY + 60),
                ],
            )
            return _links(mem)
        finally:
            mem.close()

    esthers = "Also, we lost the first flat, the new one is 177 Orchard Street."
    lenas = "We lost the first flat, the new one is 123 Bridge Avenue."
    esthers_next = "We lost the second flat too, the new one is 12 Mill Road."
    wrong = {(esthers, lenas), (lenas, esthers_next)}
    assert wrong <= links(0)
    assert links(8) == {(esthers, esthers_next)}


def test_a_word_written_with_digits_is_one_value():
    """A code or a password changes as a whole: masking only its digits would leave the rest of
    the word ("maple", "birch") to tell two statements of one fact apart."""
    tagger = ValueTagger()
    old, new = tagger.values(["The shed code is maple88 now.", "The shed code is birch31 now."])
    assert [v.key for v in old] == ["maple88"] and [v.key for v in new] == ["birch31"]
    pair = value_pair(
        Utterance("Ana", "The shed code is maple88 now.", 0.0, 1),
        Utterance("Bo", "The shed code is birch31 now.", 1.0, 2),
        old,
        new,
    )
    assert pair is not None and pair.old_masked == pair.new_masked == "The shed code is NUMBER now."


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "Thanks. Oh, and the landlord changed the gate code yesterday, it's now 5823.",
            "Morning all, hope you slept well, that storm was wild. Bad news, somebody wrote the gate code on "
            "the bins, so the landlord changed it again. It's 7716 now.",
        ),
        (
            "The parking permit costs 85 euros a year.",
            "Hello hello, sorry I'm late, the bus never came and I had to walk in the rain. I rang the council "
            "about the parking permit this morning. It's gone up to 110 euros a year.",
        ),
    ],
)
def test_an_update_wrapped_in_other_talk_is_linked(tmp_path, old, new):
    """Spoken updates come inside greetings and news; the two lines are compared on what they say
    about the fact (the sentences with the value or the other line's words), not on the rest."""
    mem = open_memory(tmp_path)
    try:
        _updates(mem, [(old, 1000.0), (new, 2 * DAY)])
        assert _links(mem) == {(old, new)}
    finally:
        mem.close()


def test_a_superseded_value_is_pruned_before_its_successor(tmp_path):
    """Over budget, the unit resting on the superseded line goes first, though it was used more
    (a higher utility), and the merge does not fold the two (the old line would live on)."""
    mem = open_memory(tmp_path)
    try:
        store, embed = mem.store, mem.engine.embedder.encode
        old_text, new_text = "The Lisbon trip budget is 2,000 euros.", "The Lisbon trip budget is 2,600 euros."
        old_line = store.add_utterance(Utterance("Ana", old_text, 100.0), embed([old_text])[0])
        new_line = store.add_utterance(Utterance("Bo", new_text, 900.0), embed([new_text])[0])
        assert old_line is not None and new_line is not None and old_line.id and new_line.id
        vectors = embed([old_text, new_text])
        with store.atomic():
            scene = store.add_node(Level.SCENE, None, "trip", 1, vectors[0], created=0.0)
            event = store.add_node(Level.EVENT, scene, "trip talk", 2, vectors[0], created=0.0)
            old = store.add_node(Level.AMU, event, old_text, 12, vectors[0], created=0.0, sources=[old_line.id])
            new = store.add_node(Level.AMU, event, new_text, 12, vectors[1], created=0.0, sources=[new_line.id])
            store.db.execute("UPDATE nodes SET frequency = 5, last_access = 900 WHERE id = ?", (old,))
            store.add_supersessions([(old_line.id, new_line.id)])
            report = enforce_budget(
                store, BudgetOptions(token_budget=20, merge_threshold=0.5), mem.settings.memory.utility, 1000.0
            )
        assert report.merged == 0 and report.pruned == 1
        assert store.node(old) is None and store.node(new) is not None
        assert store.held_ids_among([old_line.id, new_line.id]) == [new_line.id]
    finally:
        mem.close()


def test_recall_shows_the_current_value_first(tmp_path):
    """The old line repeats the question's words more than the new one, yet the new one comes
    first, with the old one as its history and not as a line of its own."""
    mem = open_memory(tmp_path)
    try:
        old, new = "The budget for the Lisbon trip is 2,000 euros.", "The Lisbon trip budget went up to 2,600 euros."
        _updates(mem, [(old, 1000.0), (new, 3 * DAY)])
        assert (old, new) in _links(mem)
        found = mem.search("What is the budget for the Lisbon trip?", use=False)
        texts = [r.evidence.text for r in found.lines]
        assert texts[0] == new and old not in texts
        assert [e.text for e in found.lines[0].history] == [old]
    finally:
        mem.close()


def test_search_shows_what_the_current_value_replaced(tmp_path, capsys):
    """Every client's search shows the old line under its successor: the CLI, the JSON the daemon
    and the typed client exchange, and MCP."""
    mem = open_memory(tmp_path)
    try:
        old, new = "The budget for the Lisbon trip is 2,000 euros.", "The Lisbon trip budget went up to 2,600 euros."
        _updates(mem, [(old, 1000.0), (new, 3 * DAY)])
        result = SearchResult.of(mem.search("What is the budget for the Lisbon trip?", use=False))
    finally:
        mem.close()
    assert result.lines[0].text == new
    assert [e.text for e in result.lines[0].history] == [old]
    assert from_json(SearchResult, to_json(result)) == result
    assert [e.text for e in SearchView.of(result, UTC).lines[0].earlier] == [old]
    _print_search(result, UTC)
    shown = capsys.readouterr().out.splitlines()
    at = next(i for i, row in enumerate(shown) if row.endswith(new))
    assert shown[at + 1].strip().startswith("earlier: Ana") and shown[at + 1].endswith(old)


def test_a_forgotten_successor_gives_the_old_line_back(tmp_path):
    """The link goes with either line: once the new line is forgotten the old one is all the
    memory has, and recall shows it."""
    mem = open_memory(tmp_path)
    try:
        old, new = "The budget for the Lisbon trip is 2,000 euros.", "The Lisbon trip budget is now 2,600 euros."
        _said(mem, [("Ana", old, 1000.0), ("Ana", new, 3 * DAY)])
        assert (old, new) in _links(mem)
        mem.forget(ForgetFilter(since=3 * DAY - 1, until=3 * DAY + 1))
        assert _links(mem) == set()
        texts = [r.evidence.text for r in mem.search("What is the budget for the Lisbon trip?", use=False).lines]
        assert texts[0] == old
    finally:
        mem.close()


def test_every_old_value_gives_its_place_to_the_current_one(tmp_path):
    """A figure changed twice: both older lines lead to the latest, and neither stays a line of
    its own beside it (each is the latest line's history)."""
    mem = open_memory(tmp_path)
    try:
        first = "The budget for the Lisbon trip is 2,000 euros."
        second = "The Lisbon trip budget went up to 2,400 euros."
        latest = "The Lisbon trip budget went up to 2,900 euros."
        _updates(mem, [(first, 1000.0), (second, 2 * DAY), (latest, 4 * DAY)])
        links = _links(mem)
        assert (first, latest) in links and (second, latest) in links
        found = mem.search("What is the budget for the Lisbon trip?", use=False)
        texts = [r.evidence.text for r in found.lines]
        assert texts[0] == latest and first not in texts and second not in texts
        assert [e.text for e in found.lines[0].history] == [first, second]
    finally:
        mem.close()


def test_the_caches_stay_bounded_and_never_lose_a_line_the_call_needs():
    tagger = ValueTagger(cache_limit=3)
    first = tagger.values(["We paid 40 euros.", "The budget is 3,100."])
    # Two new lines would take the cache past 3: it is emptied, and the line it held is tagged again.
    again = tagger.values(["We paid 40 euros.", "It costs 55 now.", "The rent went up to 900."])
    assert again[0] == first[0] and [v.key for v in again[2]] == ["900"]
    assert len(tagger._cache) <= 3


# A morning's household talk: the plumber's visit, moved in a line that names neither the
# plumber nor the boiler, and other things coming or fixed around it.
_PLUMBER = [
    ("Ana", "The plumber is coming to fix the boiler on Tuesday 3 March.", 0.0),
    ("Bo", "My cat knocked a plant off the shelf this morning.", 60.0),
    ("Ana", "I finally fixed the squeaky door hinge.", 120.0),
    ("Bo", "The repair got pushed back to Friday 6 March.", 2 * DAY),
    ("Ana", "The printer on the second floor is jammed again.", 2 * DAY + 60),
    ("Bo", "My brother is coming to visit at Easter.", 2 * DAY + 120),
    ("Ana", "Can you fix the bike light before the weekend?", 2 * DAY + 180),
    ("Bo", "The boiler room smells a bit damp lately.", 2 * DAY + 240),
    ("Ana", "The electrician fixed the kitchen socket last month.", 2 * DAY + 300),
    ("Bo", "The gardener is coming every other Wednesday now.", 2 * DAY + 360),
    ("Ana", "My sister is coming to fix the garden fence tomorrow.", 2 * DAY + 420),
    ("Bo", "The boiler manual is in the kitchen drawer.", 2 * DAY + 480),
]


def test_a_later_value_the_floor_would_cut_is_shown_with_the_line_it_may_update(tmp_path):
    """An update that does not repeat the question's words ranks low, under the floor
    (`answer.min_score_share`), while the line it updates passes: the answer would give the old
    day. A line that may state a new value for a line the answer is shown is shown too."""
    mem = open_memory(tmp_path)
    try:
        _said(mem, [(s, text, 1_700_000_000.0 + t) for s, text, t in _PLUMBER])
        assert _links(mem) == set()  # too unlike the first line, masked, to be linked when said
        prepared = mem.prepare("When is the plumber coming to fix the boiler?", use=False)
        scores = {r.evidence.text: r.score for r in prepared.retrieval.lines}
        best, moved = scores[_PLUMBER[0][1]], scores[_PLUMBER[3][1]]
        assert moved < mem.settings.memory.answer.min_score_share * best  # what the floor alone would cut
        assert prepared.prompt is not None
        assert "Friday 6 March" in prepared.prompt.notes and "Tuesday 3 March" in prepared.prompt.notes
    finally:
        mem.close()


# Flats found for several people of a group, and one of them changed in a line that names no one:
# only the talk before it ("Any news on Priya's move?") says whose it is.
_GROUP = ["Priya", "Tom", "Mei", "Omar", "Lucia", "Kwame"]
_FLATS = [
    *[(name, "Morning, everyone.", -600.0 + 10 * i) for i, name in enumerate(_GROUP)],
    ("Ana", "Priya's new flat is at 12 Elm Road.", 0.0),
    ("Bo", "Tom's new flat is at 4 Oak Street.", 60.0),
    ("Ana", "Mei's new flat is at 9 Ash Grove.", 120.0),
    ("Bo", "Omar's new flat is at 27 Pine Close.", 180.0),
    ("Ana", "Lucia's new flat is at 15 Cedar Way.", 240.0),
    ("Bo", "Priya's new flat has a lovely garden.", 300.0),
    ("Ana", "Priya's new flat is close to the station.", 360.0),
    ("Bo", "Priya's new flat needs a fresh coat of paint.", 420.0),
    ("Bo", "Any news on Priya's move?", 3 * DAY),
    ("Ana", "The first one fell through, the new one is 31 Elm Road.", 3 * DAY + 30),
    ("Bo", "Kwame's new flat is at 8 Willow Court.", 3 * DAY + 60),
]
_OLD, _NEW = "Priya's new flat is at 12 Elm Road.", "The first one fell through, the new one is 31 Elm Road."


def test_a_later_value_for_the_person_asked_about_is_shown_beside_the_line_it_may_update(tmp_path):
    """A change said in a line that names no one, in talk about the person a question asks about
    (recall's `of_them`), may rank too low for recall to keep it at all, and in a full context
    what is offered last is cut. A line about them that may update a line the answer is shown
    is offered right after that line."""
    mem = open_memory(tmp_path, retrieval={"max_lines": 4}, answer={"context_tokens": 90})
    try:
        _said(mem, [(s, text, 1_700_000_000.0 + t) for s, text, t in _FLATS])
        prepared = mem.prepare("Where is Priya's new flat?", use=False)
        ranked = [r.evidence.text for r in prepared.retrieval.lines]
        assert _OLD in ranked and _NEW not in ranked
        assert prepared.prompt is not None
        assert "12 Elm Road" in prepared.prompt.notes and "31 Elm Road" in prepared.prompt.notes
    finally:
        mem.close()


@pytest.mark.parametrize(
    ("asked_after", "offered"), [("Any news on Priya's move?", True), ("Any news on Tom's move?", False)]
)
def test_a_possible_update_about_someone_else_is_not_offered(tmp_path, asked_after, offered):
    """Test 4 holds for the lines an answer is offered as it does for links: a line that names no
    one is about whom the talk before it was, and no update of a line about someone else."""
    mem = open_memory(tmp_path)
    try:
        _said(
            mem,
            [
                *[(name, "Morning, everyone.", 1000.0 + i) for i, name in enumerate(("Priya", "Tom"))],
                ("Ana", _OLD, 2000.0),
                ("Bo", asked_after, 2000.0 + DAY),
                ("Ana", _NEW, 2030.0 + DAY),
            ],
        )
        lines = {u.text: u for u in mem.store.utterances(mem.store.held_ids())}
        found = mem.engine.supersession.possible_updates(mem.store, [lines[_OLD]], [lines[_NEW]])
        assert found == ({lines[_OLD].id: [lines[_NEW]]} if offered else {})
    finally:
        mem.close()


def test_possible_updates_are_later_statements_with_a_new_value_near_the_line(tmp_path):
    mem = open_memory(tmp_path)
    try:
        _said(
            mem,
            [
                ("Bo", "The kitchen quote was 2,900 pounds at first.", 1000.0),
                ("Ana", "The quote for the kitchen is 3,100 pounds.", 2000.0),
                ("Bo", "The kitchen quote came back at 3,450 pounds in the end.", 3000.0),
                ("Bo", "Is the kitchen quote 3,450 pounds now?", 4000.0),
                ("Bo", "Yes, 3,100 pounds for the kitchen.", 5000.0),
                ("Bo", "The gym costs 45 pounds a month now.", 6000.0),
            ],
        )
        said = {u.text: u for u in mem.store.speaker_utterances(mem.store.speaker_id("Bo"))}
        (old,) = mem.store.speaker_utterances(mem.store.speaker_id("Ana"))
        rest = list(said.values())
        supersession = mem.engine.supersession
        # Not the earlier value, the question, the same value, nor a new value of something else.
        later = said["The kitchen quote came back at 3,450 pounds in the end."]
        assert supersession.possible_updates(mem.store, [old], rest) == {old.id: [later]}
        supersession.options = replace(supersession.options, enabled=False)
        assert supersession.possible_updates(mem.store, [old], rest) == {}
    finally:
        mem.close()
