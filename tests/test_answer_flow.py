"""The one answer flow (`memory.answer.respond`): the model's reply streamed as it comes, asked once,
never rewritten, its decline standing, and the same frame for every client, every benchmark
system and every phrasing of a question.

The memory is real (SQLite with sqlite-vec, the packaged embedder, the sample conversation); its
LLM is a scripted HTTP server (tests/scripted_server.py), so what is checked is what the memory
does with a given reply, whatever a real model would have said.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from assistant.bench.systems.base import Answerer
from assistant.config import load_settings
from assistant.llm import OpenAIChat, load_tokenizer
from assistant.memory.answer import DONT_KNOW, frame, read_reply, says_unknown
from assistant.memory.api import Memory
from assistant.memory.question import bare_question
from assistant.records import Answer, Utterance

from .conftest import overrides
from .llm_server import SERVED_MODEL, model_file
from .scripted_server import ScriptedServer, Stream, scripted
from .test_memory import sample

QUESTION = "What is Priya allergic to?"
PEANUTS = "I am allergic to peanuts, so I always ask them first."


def served_memory(
    tmp_path: Path, server: ScriptedServer, conversation: Iterable[Utterance] | None = None, **answer: Any
) -> Memory:
    """A memory of `conversation` (the sample one by default) whose LLM is `server`."""
    settings = load_settings(
        user_file=tmp_path / "absent.yaml",
        overrides=overrides(
            tmp_path / "data",
            llm={"backend": "openai", "base_url": server.base_url, "model": "m", "retries": 0},
            # The 0.5B model's vocabulary counts the tokens; its weights are not loaded.
            models={"llm": SERVED_MODEL},
            memory={"distill": {"mode": "extractive"}, "answer": answer},
        ),
    )
    mem = Memory(settings)
    mem.add_many(sample() if conversation is None else conversation)
    return mem


def asked(mem: Memory, question: str) -> tuple[list[str], Answer]:
    *pieces, answer = mem.ask_stream(question)
    assert isinstance(answer, Answer) and all(isinstance(p, str) for p in pieces)
    return [str(p) for p in pieces], answer


def notes_lines(server: ScriptedServer, n: int) -> list[str]:
    """The lines with a speaker in the n-th request's notes."""
    body = server.posts()[n].body
    assert body is not None
    notes = body["messages"][1]["content"].split("\n\n", 1)[1].split("\n\nQuestion:", 1)[0]
    return [line for line in notes.splitlines() if ": " in line]


def ask_scripted(
    tmp_path: Path, reply: tuple[str, ...], question: str = QUESTION
) -> tuple[list[str], Answer, ScriptedServer]:
    with scripted(Stream(reply)) as server:
        mem = served_memory(tmp_path, server)
        try:
            pieces, answer = asked(mem, question)
        finally:
            mem.close()
    return pieces, answer, server


def test_an_answer_is_streamed_as_it_comes_and_asked_once(tmp_path: Path) -> None:
    pieces, answer, server = ask_scripted(tmp_path, ("Pean", "uts", "."))
    # Nothing held back, nothing added: the user sees each piece as the model writes it.
    assert pieces == ["Pean", "uts", "."]
    assert (answer.text, answer.knows) == ("Peanuts.", True)
    assert [e.text for e in answer.evidence] == [PEANUTS]
    assert len(server.posts()) == 1


def test_the_models_decline_stands(tmp_path: Path) -> None:
    # The answer is in the context; a model that declines anyway is not asked again.
    pieces, answer, server = ask_scripted(tmp_path, ("Not", " mentioned", "."))
    assert f"Priya: {PEANUTS}" in notes_lines(server, 0)
    assert (answer.text, answer.knows, answer.evidence) == ("Not mentioned.", False, ())
    assert pieces == ["Not", " mentioned", "."]
    assert len(server.posts()) == 1


def test_the_models_words_are_never_rewritten(tmp_path: Path) -> None:
    # A reply that is only a date, to a question asking when, is the user's answer as written.
    pieces, answer, server = ask_scripted(tmp_path, ("16 November 2026",), "When did Priya mention her allergy?")
    assert answer.text == "16 November 2026" and pieces == ["16 November 2026"]
    assert len(server.posts()) == 1


def test_a_fact_that_something_is_unknown_is_an_answer(tmp_path: Path) -> None:
    _, answer, _ = ask_scripted(tmp_path, ("The cause is still unknown.",))
    assert answer.knows and answer.text == "The cause is still unknown."


@pytest.mark.parametrize(
    "reply",
    [
        "Not mentioned.",
        "not mentioned",
        "Unknown",
        "I don't know.",
        "I don\u2019t know",
        "The notes do not mention her sister.",
        "There is no information about that.",
        "Her sister is not mentioned in the notes.",
    ],
)
def test_declines(reply: str) -> None:
    assert says_unknown(reply)
    assert not read_reply(reply).knows


@pytest.mark.parametrize(
    "reply",
    [
        "The cause of the leak is unknown.",
        "Unknown to everyone, Zoë had already paid.",
        "An unknown caller rang twice.",
        "Björn said he doesn't know the way yet.",
        "Peanuts",
    ],
)
def test_answers_that_are_not_declines(reply: str) -> None:
    assert not says_unknown(reply)
    assert read_reply(reply).knows


def test_a_reply_of_only_citations_is_not_knowing() -> None:
    assert read_reply("[1][2]") == read_reply(DONT_KNOW)


@pytest.mark.parametrize(
    ("spoken", "carried"),
    [
        ("Do you remember when the plumber is coming?", "When the plumber is coming?"),
        ("Can you tell me who booked the table?", "Who booked the table?"),
        ("I was wondering whether Björn paid the deposit?", "Did Björn pay the deposit?"),
        ("I was wondering whether Chioma is coming to the barbecue?", "Is Chioma coming to the barbecue?"),
        ("Can you tell me whether the plumber has been?", "Has the plumber been?"),
        ("Do you remember whether the train was late?", "Was the train late?"),
        ("Could you remind me how much the new tyres cost?", "How much the new tyres cost?"),
        ("I'd like to know where Ana parked.", "Where Ana parked?"),
        ("Tell me what Priya said about the move.", "What Priya said about the move?"),
        ("Do you know if we paid the gas bill?", "Did we pay the gas bill?"),
        ("I wonder if Ana likes the new flat?", "Does Ana like the new flat?"),
    ],
)
def test_a_spoken_wrapper_is_read_as_the_question_it_carries(spoken: str, carried: str) -> None:
    # The model is asked what the bare question asks, so it reads no question about its own memory.
    assert bare_question(spoken) == carried
    assert frame("notes", spoken) == frame("notes", carried)


@pytest.mark.parametrize(
    "question",
    [
        "Hey, what did Zoë buy?",  # no wrapper clause: asked as it is
        "Did Sam say when the trip starts?",  # about what Sam said, not the asker's memory
        "When did I say I'd call the garage?",  # the main clause asks its own "when"
        "What was the talk that Ana gave about?",  # a wh-word outside the clause it governs
        "Do you remember the plumber's name?",  # nothing embedded to ask
    ],
)
def test_a_question_that_asks_in_its_own_main_clause_is_kept_whole(question: str) -> None:
    assert bare_question(question) == question
    assert f"Question: {question}\n" in frame("notes", question)[1]["content"]


def test_the_benchmark_answers_through_the_same_flow_as_the_memory(tmp_path: Path) -> None:
    with scripted(Stream(("Not", " mentioned")), Stream(("The cause is unknown",))) as server:
        served = {"backend": "openai", "base_url": server.base_url, "model": "m", "retries": 0}
        llm = OpenAIChat(load_settings(user_file=tmp_path / "absent.yaml", overrides={"llm": served}).llm)
        answerer = Answerer(lambda: llm, load_tokenizer(model_file()), 48, 4096)
        declined, _ = answerer.answer("Monday 1 May 2023:\nAna: I like tea.", QUESTION)
        answered, _ = answerer.answer("Monday 1 May 2023:\nAna: The leak? Nobody knows why.", "What caused the leak?")
    # One request per question (no second look), the frame's own messages, the reply as written.
    assert len(server.posts()) == 2
    body = server.posts()[0].body
    assert body is not None and body["messages"] == frame("Monday 1 May 2023:\nAna: I like tea.", QUESTION)
    assert (declined, answered) == ("Not mentioned", "The cause is unknown")


SPOKEN = [
    ("Who is looking after Priya's dog?", "Can you tell me who is looking after Priya's dog?"),
    ("What is Priya allergic to?", "Hey, what is Priya allergic to?"),
    ("How much did finance approve for the trip?", "I was wondering how much finance approved for the trip?"),
    ("When will Sam write the release notes?", "Could you remind me when Sam will write the release notes?"),
    ("When do we fly out to Lisbon?", "Do you remember when we fly out to Lisbon?"),
]


def test_a_question_in_spoken_form_reaches_what_the_bare_question_does(tmp_path: Path) -> None:
    """ "Can you tell me who ...", "Hey, ...": the same person read from the question, the same best
    line, and the model asked (no gate), as for the bare question."""
    with scripted(Stream(("x",))) as server:
        mem = served_memory(tmp_path, server)
        try:
            for bare, spoken in SPOKEN:
                a, b = mem.prepare(bare, use=False), mem.prepare(spoken, use=False)
                assert a.prompt is not None and b.prompt is not None, spoken
                assert a.retrieval.filter == b.retrieval.filter and a.retrieval.about == b.retrieval.about, spoken
                assert a.retrieval.lines[0].evidence == b.retrieval.lines[0].evidence, spoken
                assert a.retrieval.lines[0].evidence in b.prompt.sources, spoken
        finally:
            mem.close()
