"""The one abstention mechanism (`memory.answer.min_relevance`, `memory/relevance.py`): a question
none of whose recalled lines comes near it, in words or in meaning, is answered "not mentioned"
without asking the model, which would only guess; one that some line matches is asked, and the
model may still decline. No question is let through for naming someone the memory has heard.

The memory is real (SQLite with sqlite-vec, the packaged embedder, the sample conversation); its
LLM is a scripted HTTP server that answers whatever it is asked, so a request it receives is the
gate letting the question through.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assistant.memory.answer import DONT_KNOW
from assistant.memory.relevance import relevance, word_weights
from assistant.records import Answer, Retrieval, Utterance

from .scripted_server import ScriptedServer, Stream, scripted
from .test_answer_flow import asked, notes_lines, served_memory

GENERAL = "Who wrote the Iliad?"
# Names a speaker of the sample conversation, and shares no content word with anything said.
ABOUT_PRIYA = "What is Priya's political leaning?"


def talk(*lines: tuple[str, str]) -> tuple[Utterance, ...]:
    """A conversation written for a test: (speaker, text) turns a minute apart."""
    return tuple(Utterance(who, text, 1_760_000_000.0 + 60 * i) for i, (who, text) in enumerate(lines))


@dataclass
class Asked:
    found: Retrieval  # what recall found, which the gate reads
    gate: float  # memory.answer.min_relevance
    pieces: list[str]
    answer: Answer
    server: ScriptedServer


def ask_once(
    tmp_path: Path,
    reply: tuple[str, ...],
    question: str,
    conversation: tuple[Utterance, ...] | None = None,
    **answer: Any,
) -> Asked:
    """Ask a memory of `conversation` (the sample one by default) one question, its model scripted
    to give `reply`."""
    with scripted(Stream(reply)) as server:
        mem = served_memory(tmp_path, server, conversation, **answer)
        try:
            pieces, got = asked(mem, question)
            gate = mem.settings.memory.answer.min_relevance
        finally:
            mem.close()
    # The retrieval the gate read is the answer's own: no second recall.
    assert got.retrieval is not None
    return Asked(got.retrieval, gate, pieces, got, server)


def test_a_question_the_memory_has_nothing_on_is_declined_without_asking(tmp_path: Path) -> None:
    a = ask_once(tmp_path, ("Homer",), GENERAL)
    assert a.found.lines
    assert (a.answer.text, a.answer.knows, a.answer.evidence, a.pieces) == (DONT_KNOW, False, (), [DONT_KNOW])
    assert a.server.posts() == []


def test_naming_someone_heard_does_not_let_a_question_through(tmp_path: Path) -> None:
    # Priya is heard, but nothing she said comes near her politics: one mechanism, no exemption.
    a = ask_once(tmp_path, ("Left",), ABOUT_PRIYA)
    assert a.found.names == ("Priya",)
    assert (a.answer.text, a.answer.knows) == (DONT_KNOW, False)
    assert a.server.posts() == []


def test_a_question_some_line_matches_is_asked_and_its_decline_stands(tmp_path: Path) -> None:
    a = ask_once(tmp_path, ("Not", " mentioned"), "What is Priya allergic to?")
    assert len(a.server.posts()) == 1
    assert any("allergic to peanuts" in line for line in notes_lines(a.server, 0))
    assert (a.answer.text, a.answer.knows) == ("Not mentioned", False)


def test_the_gate_is_one_setting(tmp_path: Path) -> None:
    # At 0 nothing is below it: even a question about no one reaches the model.
    a = ask_once(tmp_path, ("Homer",), GENERAL, min_relevance=0.0)
    assert a.answer.text == "Homer" and len(a.server.posts()) == 1


def test_a_question_about_someone_that_only_someone_else_answers_is_declined_unasked(tmp_path: Path) -> None:
    # Alex's daughter starts piano lessons; nothing Sam said, nor anything said of Sam, comes near it.
    a = ask_once(tmp_path / "sam", ("Wednesday",), "When does Sam's daughter start piano lessons?")
    assert a.found.about == "Sam"
    assert (a.answer.text, a.answer.knows, a.server.posts()) == (DONT_KNOW, False, [])
    # Asked of Alex, who said it, the same line goes to the model.
    b = ask_once(tmp_path / "alex", ("Wednesday",), "When does Alex's daughter start piano lessons?")
    assert b.found.about == "Alex" and len(b.server.posts()) == 1
    assert b.answer.text == "Wednesday"


def test_a_question_put_to_someone_counts_as_about_them(tmp_path: Path) -> None:
    # Sam asks Priya who is looking after her dog; her reply shares none of the question's words.
    a = ask_once(tmp_path, ("Her sister",), "Who is looking after Priya's dog?")
    assert a.found.about == "Priya"
    assert len(a.server.posts()) == 1 and a.answer.text == "Her sister"


# Four housemates, written for this test: Tariq's barbecue is named once with him, then talked of
# as "the barbecue"; nothing ties Mara to one.
BARBECUE = talk(
    ("Ines", "Tariq moved his barbecue to the Saturday after next."),
    ("Hugo", "About twenty people are coming to the barbecue, I counted the replies."),
    ("Ines", "Mara's book club meets on Thursday evenings now."),
    ("Hugo", "I'll pick up charcoal and ice on Friday."),
    ("Mara", "The bins go out on Tuesday this week."),
    ("Tariq", "Has anyone seen my blue umbrella?"),
)


def test_a_line_about_what_the_question_gives_someone_is_about_them(tmp_path: Path) -> None:
    # "Tariq's barbecue": one line ties the barbecue to Tariq, so Hugo's count of its guests, which
    # names no one, is about him too, and the question is asked (declined without the tie).
    a = ask_once(tmp_path / "tariq", ("Twenty",), "How many people are coming to Tariq's barbecue?", BARBECUE)
    assert a.found.about == "Tariq"
    assert len(a.server.posts()) == 1 and a.answer.text == "Twenty"
    # Nothing ties a barbecue to Mara: the one the lines speak of is someone else's.
    b = ask_once(tmp_path / "mara", ("Twenty",), "How many people are coming to Mara's barbecue?", BARBECUE)
    assert b.found.about == "Mara"
    assert (b.answer.text, b.answer.knows, b.server.posts()) == (DONT_KNOW, False, [])


# Two flatmates, written for this test: Nadia asks about the race, Ben ran it.
RACE = talk(
    ("Nadia", "Well done on Sunday! How did the half marathon go?"),
    ("Ben", "I finished in two hours and ten minutes, my best time yet."),
    ("Nadia", "I'm repainting the hallway this weekend, a pale green."),
    ("Ben", "My knees hurt, so I'm skipping the gym until Thursday."),
    ("Nadia", "Could someone feed the cat on Friday? I'm away."),
)


def test_what_a_line_asks_is_about_the_one_who_answers_not_the_asker(tmp_path: Path) -> None:
    # Nadia's line is the one nearest the race, but what comes near is what she asks, and it is
    # Ben's race: asked of Nadia, nothing she states comes near, and the model is not asked.
    a = ask_once(tmp_path / "nadia", ("Two hours ten",), "How long did Nadia take to run the half marathon?", RACE)
    assert a.found.about == "Nadia"
    assert (a.answer.text, a.answer.knows, a.server.posts()) == (DONT_KNOW, False, [])
    b = ask_once(tmp_path / "ben", ("Two hours ten",), "How long did Ben take to run the half marathon?", RACE)
    assert b.found.about == "Ben" and len(b.server.posts()) == 1
    assert b.answer.text == "Two hours ten"


def test_what_a_line_says_of_its_listener_is_about_them(tmp_path: Path) -> None:
    # Nadia's "your wrist" is the line nearest the question, but it is Ben's wrist.
    wrist = talk(
        ("Ben", "I came off my bike on Saturday."),
        ("Nadia", "Oh no! Your wrist must be really sore after that."),
        ("Ben", "It is, the doctor says two weeks in a splint."),
        ("Nadia", "I'm repainting the hallway this weekend, a pale green."),
        ("Ben", "Could someone feed the cat on Friday? I'm away."),
    )
    a = ask_once(tmp_path / "nadia", ("Two weeks",), "How sore is Nadia's wrist?", wrist)
    assert a.found.about == "Nadia"
    assert (a.answer.text, a.answer.knows, a.server.posts()) == (DONT_KNOW, False, [])
    b = ask_once(tmp_path / "ben", ("Two weeks",), "How sore is Ben's wrist?", wrist)
    assert b.found.about == "Ben" and len(b.server.posts()) == 1


def test_a_line_read_in_parts_is_weighed_against_parts(tmp_path: Path) -> None:
    # The nearest line is Nadia's, and it is near for the words of both its parts: her plan, and
    # what she asks Ben. Her part is weighed against the nearest part, not the whole line.
    camping = talk(
        ("Nadia", "The kids are off school soon, so we're camping in Kerry next month. Any plans yourself?"),
        ("Ben", "Not really, probably just working."),
        ("Ben", "I'm repainting the hallway this weekend, a pale green."),
        ("Nadia", "Could someone feed the cat on Friday? I'm away."),
    )
    a = ask_once(tmp_path, ("Camping in Kerry",), "What plans does Nadia have for next month?", camping)
    assert a.found.about == "Nadia"
    assert len(a.server.posts()) == 1 and a.answer.text == "Camping in Kerry"


def test_what_a_line_asks_counts_for_the_one_who_answers_it(tmp_path: Path) -> None:
    # Ben praises the photo and asks about the hike; Nadia's answer shares none of its words.
    hike = talk(
        ("Ben", "Lovely photo! Where was that hike?"),
        ("Nadia", "Glendalough, with my cousins on Saturday."),
        ("Ben", "I'm repainting the hallway this weekend, a pale green."),
        ("Nadia", "Could someone feed the cat on Friday? I'm away."),
    )
    a = ask_once(tmp_path, ("Glendalough",), "Where did Nadia go hiking?", hike)
    assert a.found.about == "Nadia"
    assert len(a.server.posts()) == 1 and a.answer.text == "Glendalough"


def test_the_person_test_is_one_setting(tmp_path: Path) -> None:
    a = ask_once(tmp_path, ("Wednesday",), "When does Sam's daughter start piano lessons?", min_person_share=0.0)
    assert len(a.server.posts()) == 1 and a.answer.text == "Wednesday"


def test_a_rare_word_weighs_more_than_a_common_one() -> None:
    # 100 lines held: "said" is in 60 of them, "Lisbon" in 2.
    weights = word_weights(("said", "lisbon"), 100, {"said": 60, "lisbon": 2})
    far = np.array([1.0, 0.0])
    topic = np.array([0.0, 1.0])  # no line is near in meaning: only the words decide
    rare = relevance("We fly to Lisbon in May.", far, topic, weights)
    common = relevance("She said it was fine.", far, topic, weights)
    assert rare > 0.7 and common < 0.3
    # Meaning alone is enough too.
    assert relevance("Nothing in common.", topic, topic, weights) == 1.0


def test_words_match_across_accents_and_forms() -> None:
    weights = word_weights(("malaga", "flights"), 10, {})
    far, topic = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert relevance("Zoë booked the flight to Málaga.", far, topic, weights) == 1.0


def test_the_benchmark_counts_what_each_threshold_would_decline() -> None:
    from assistant.bench.locomo import ProbeResult
    from assistant.bench.locomo_report import GATE_THRESHOLDS, PERSON_THRESHOLDS, _curve

    def probe(category: int, relevance: float | None, share: float | None = None) -> ProbeResult:
        return ProbeResult(
            "prostream", "c", 0, category, "end", "q", "g", None, None, None, None, None, None, 0, 0.0, None,
            relevance=relevance, person_share=share,
        )  # fmt: skip

    rows = [probe(1, 0.22), probe(2, 0.6, 0.95), probe(5, 0.1), probe(5, 0.3, 0.4), probe(5, 0.21, 0.65)]
    curve = {row["threshold"]: row for row in _curve(rows, "relevance", GATE_THRESHOLDS)}
    assert (curve[0.25]["answerable_declined"], curve[0.25]["answerable"]) == (1, 2)
    assert (curve[0.25]["unanswerable_declined"], curve[0.25]["unanswerable"]) == (2, 3)
    assert (curve[0.2]["answerable_declined"], curve[0.2]["unanswerable_declined"]) == (0, 1)
    # The person curve declines only questions about one person (those with a share).
    people = {row["threshold"]: row for row in _curve(rows, "person_share", PERSON_THRESHOLDS)}
    assert (people[0.7]["answerable_declined"], people[0.7]["unanswerable_declined"]) == (0, 2)
    assert (people[0.6]["answerable_declined"], people[0.6]["unanswerable_declined"]) == (0, 1)
    # A system that records no relevance has no curve.
    assert _curve([probe(1, None)], "relevance", GATE_THRESHOLDS) == []


def test_what_a_question_gives_someone_is_read_from_its_parse() -> None:
    from assistant.memory.question import possessed

    assert possessed("How many guests are coming to Lucy's housewarming?", "Lucy") == ("housewarming",)
    assert possessed("What is Sam's daughter's name?", "Sam") == ("daughter",)
    assert possessed("Do you remember where Zoë's new bike is?", "Zoë") == ("bike",)
    # A full name's possessive is on its last word; another person's thing is not theirs.
    assert possessed("When is Sam Lee's flight?", "Sam Lee") == ("flight",)
    assert possessed("When is Priya's flight?", "Sam") == ()
    assert possessed("What did Sam say about the trip?", "Sam") == ()
    # The small parser reads "Pablo's Fiat Panda cost" as one noun phrase: its first noun is
    # read too, so a line tying Pablo to the Fiat still counts.
    assert "Fiat" in possessed("How much does the repair of Pablo's Fiat Panda cost?", "Pablo")
