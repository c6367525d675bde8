"""A second look: a bare "not mentioned" asked again from the strongest lines alone (`memory.answer.second_look_lines`).

The memory is real (SQLite with sqlite-vec, the packaged embedder, the sample conversation); its
LLM is a scripted HTTP server (tests/scripted_server.py), because what is tested is what the
memory does with a reply a real model gives only by chance: "not mentioned" first, then an
answer that rests on the lines, or one made up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assistant.bench.systems.base import Answerer
from assistant.config import load_settings
from assistant.llm import OpenAIChat, load_tokenizer
from assistant.memory.answer import (
    grounded,
    is_bare_unknown,
    may_be_bare_unknown,
    may_say_question_back,
    says_question_back,
)
from assistant.memory.api import Memory
from assistant.records import Answer

from .conftest import overrides
from .llm_server import SERVED_MODEL, model_file
from .scripted_server import ScriptedServer, Stream, scripted
from .test_memory import sample

QUESTION = "What is Priya allergic to?"
PEANUTS = "I am allergic to peanuts, so I always ask them first."


@pytest.mark.parametrize("reply", ["not mentioned", "Not mentioned.", "(not mentioned)", "I don't know.", "Unknown"])
def test_bare_unknown_replies(reply: str) -> None:
    assert is_bare_unknown(reply)
    # Every beginning of it may still be one.
    assert all(may_be_bare_unknown(reply[:n]) for n in range(len(reply) + 1))


@pytest.mark.parametrize("reply", ["Not on Friday", "Not mentioned, but Priya avoids nuts", "Peanuts", "nothing"])
def test_replies_that_say_something(reply: str) -> None:
    assert not is_bare_unknown(reply)
    assert not may_be_bare_unknown(reply)


@pytest.mark.parametrize(
    ("reply", "question"),
    [
        ("Priya is allergic", QUESTION),
        ("Pottery workshops, pottery workshops", "What did Sam and his kids make at the pottery workshop?"),
        ("Sam's reason for running is running.", "What is Sam's reason for getting into running?"),
        ("Adoption agencies", "What kind of people does the adoption agency support?"),  # stemmed
        ("Ana, Ana", "Who sang at Ana's birthday?"),
    ],
)
def test_replies_that_say_the_question_back(reply: str, question: str) -> None:
    assert says_question_back(reply, question)
    # Every beginning of it may still be one.
    assert all(may_say_question_back(reply[:n], question) for n in range(len(reply) + 1))


@pytest.mark.parametrize(
    ("reply", "question"),
    [
        ("Peanuts", QUESTION),
        ("Priya is allergic to peanuts", QUESTION),
        ("not mentioned", QUESTION),  # a decline, with its own second look
        ("Yes", "Did Priya and Sam both go to the concert?"),
        ("Yes, Priya and Sam both went to the concert", "Did Priya and Sam both go to the concert?"),
        ("A national park", "Would Sam rather visit a national park or a theme park?"),
        ("2", "How many times did Sam go to the beach in 2023?"),
    ],
)
def test_replies_that_say_more_than_the_question(reply: str, question: str) -> None:
    assert not says_question_back(reply, question)


def test_a_word_still_being_written_is_not_judged() -> None:
    assert may_say_question_back("Priya is aller", QUESTION)  # "aller..." may become "allergic"
    assert may_say_question_back("Pean", QUESTION)
    assert not may_say_question_back("Peanuts ", QUESTION)
    assert not may_say_question_back("Priya is allergic to peanuts.", QUESTION)
    # The last word may not be finished: judged when the reply ends.
    assert may_say_question_back("Priya is allergic to peanuts", QUESTION)


def test_a_reply_is_grounded_when_every_word_it_adds_is_in_the_lines() -> None:
    lines = "16 November 2026:\nPriya: I am allergic to peanuts, so I always ask them first."
    assert grounded("Peanuts", QUESTION, lines)
    assert grounded("peanut", QUESTION, lines)  # stemmed
    # A word the lines do not have: made up.
    assert not grounded("Peanuts and shellfish", QUESTION, lines)
    # Nothing but the question's own words says nothing.
    assert not grounded("Priya is allergic", QUESTION, lines)
    # The date line is part of what the model read.
    assert grounded("16 November 2026", "When did Priya mention her allergy?", lines)


def served_memory(tmp_path: Path, server: ScriptedServer, **answer: Any) -> Memory:
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
    mem.add_many(sample())
    return mem


def asked(mem: Memory, question: str) -> tuple[list[str], Answer]:
    *pieces, answer = mem.ask_stream(question)
    assert isinstance(answer, Answer) and all(isinstance(p, str) for p in pieces)
    return [str(p) for p in pieces], answer


def notes_lines(server: ScriptedServer, n: int) -> list[str]:
    """The lines with a speaker in the n-th request's notes."""
    body = server.posts()[n].body
    assert body is not None
    notes = body["messages"][1]["content"].split("who said it:\n\n", 1)[1].split("\n\nQuestion:", 1)[0]
    return [line for line in notes.splitlines() if ": " in line]


@pytest.mark.parametrize(
    "first", [("Not", " mentioned", "."), ("Priya", " is", " allergic", ".")], ids=["not mentioned", "said back"]
)
def test_a_reply_that_says_nothing_is_asked_again_from_the_strongest_lines(
    tmp_path: Path, first: tuple[str, ...]
) -> None:
    with scripted(Stream(first), Stream(("Pean", "uts"))) as server:
        mem = served_memory(tmp_path, server)
        try:
            pieces, answer = asked(mem, QUESTION)
        finally:
            mem.close()
    assert (answer.text, answer.knows) == ("Peanuts", True)
    # The user never saw the first reply: it was held back until the second look answered.
    assert pieces == ["Peanuts"]
    assert [e.text for e in answer.evidence] == [PEANUTS]
    first, second = notes_lines(server, 0), notes_lines(server, 1)
    assert len(second) == 2 and len(first) > len(second)
    assert f"Priya: {PEANUTS}" in second
    # The context the answer reports is still the whole one the model read first.
    assert len(answer.context) == len(first)
    # Asked again, the model is not offered "not mentioned" (a small one takes that way out with
    # the answer in front of it); `grounded` is what keeps a made-up reply out.
    bodies = [post.body for post in server.posts()]
    assert bodies[0] is not None and bodies[1] is not None
    assert "not mentioned" in bodies[0]["messages"][1]["content"]
    assert "not mentioned" not in bodies[1]["messages"][1]["content"]


@pytest.mark.parametrize(
    ("first", "knows"),
    [(("not mentioned",), False), (("Priya", " is", " allergic"), True)],
    ids=["not mentioned", "said back"],
)
def test_a_second_reply_that_does_not_rest_on_the_lines_is_not_kept(
    tmp_path: Path, first: tuple[str, ...], knows: bool
) -> None:
    with scripted(Stream(first), Stream(("Shellfish",))) as server:
        mem = served_memory(tmp_path, server)
        try:
            pieces, answer = asked(mem, QUESTION)
        finally:
            mem.close()
    # The first reply stays, shown once when it is known to be the answer.
    assert (answer.text, answer.knows, pieces) == ("".join(first), knows, ["".join(first)])
    assert knows or answer.evidence == ()
    assert len(server.posts()) == 2


def test_an_answer_is_streamed_as_it_comes_and_asked_once(tmp_path: Path) -> None:
    with scripted(Stream(("Not", " on", " Friday", " night", "."))) as server:
        mem = served_memory(tmp_path, server)
        try:
            pieces, answer = asked(mem, QUESTION)
        finally:
            mem.close()
    # Held back only while it could still be "not mentioned" or the question said back: until a
    # whole word ("Friday", followed by a space) adds to the question.
    assert pieces == ["Not on Friday night", "."]
    assert answer.text == "Not on Friday night."
    assert len(server.posts()) == 1


def test_no_second_look_when_it_is_off(tmp_path: Path) -> None:
    with scripted(Stream(("Not mentioned.",)), Stream(("Peanuts",))) as server:
        mem = served_memory(tmp_path, server, second_look_lines=0)
        try:
            _, answer = asked(mem, QUESTION)
        finally:
            mem.close()
    assert (answer.text, answer.knows) == ("Not mentioned.", False)
    assert len(server.posts()) == 1


WHEN = "When do we fly out to Lisbon?"
FLIGHT = "Yes, we fly out on the 14th of May and come back on the 19th."


def test_a_question_asking_for_a_day_is_asked_from_the_strongest_lines_first(tmp_path: Path) -> None:
    with scripted(Stream(("14th", " of", " May"))) as server:
        mem = served_memory(tmp_path, server)
        try:
            pieces, answer = asked(mem, WHEN)
            whole = mem.prepare(WHEN, use=False)
        finally:
            mem.close()
    assert (answer.text, answer.knows, pieces) == ("14th of May", True, ["14th of", " May"])
    assert len(server.posts()) == 1
    first = notes_lines(server, 0)
    assert len(first) == 2 and any(line.startswith("Priya: Yes, we fly out on the 14th of May") for line in first)
    assert whole.prompt is not None and len(whole.prompt.sources) > 2
    # A first look: "not mentioned" is offered, so a decline can send the question on to the whole context.
    body = server.posts()[0].body
    assert body is not None and "not mentioned" in body["messages"][1]["content"]
    assert [e.text for e in answer.evidence] == [FLIGHT]


@pytest.mark.parametrize("declined", [("not mentioned",), ()], ids=["not mentioned", "nothing"])
def test_when_the_strongest_lines_do_not_answer_the_whole_context_is_asked(
    tmp_path: Path, declined: tuple[str, ...]
) -> None:
    with scripted(Stream(declined), Stream(("Not", " mentioned")), Stream(("14th of May",))) as server:
        mem = served_memory(tmp_path, server)
        try:
            pieces, answer = asked(mem, WHEN)
        finally:
            mem.close()
    # Strongest lines, then the whole context (both offering "not mentioned"), then the second
    # look at the strongest lines without that offer.
    assert (answer.text, pieces) == ("14th of May", ["14th of May"])
    sizes = [len(notes_lines(server, n)) for n in range(3)]
    assert sizes[0] == 2 and sizes[1] > 2 and sizes[2] == 2
    offers = ["not mentioned" in (post.body or {})["messages"][1]["content"] for post in server.posts()]
    assert offers == [True, True, False]


def test_other_questions_and_strongest_first_off_start_from_the_whole_context(tmp_path: Path) -> None:
    with scripted(Stream(("Peanuts",)), Stream(("14th of May",))) as server:
        mem = served_memory(tmp_path, server)
        try:
            asked(mem, QUESTION)
        finally:
            mem.close()
        mem = served_memory(tmp_path / "off", server, strongest_first=False)
        try:
            asked(mem, WHEN)
        finally:
            mem.close()
    assert [len(notes_lines(server, n)) > 2 for n in range(2)] == [True, True]


def test_the_benchmark_answerer_asks_the_strongest_lines_first_as_the_memory_does(tmp_path: Path) -> None:
    lines = "16 November 2026:\nPriya: Yes, we fly out on the 14th of May and come back on the 19th."
    with scripted(Stream(("14th of May",)), Stream(("19th",)), Stream(("14th of May",))) as server:
        served = {"backend": "openai", "base_url": server.base_url, "model": "m", "retries": 0}
        llm = OpenAIChat(load_settings(user_file=tmp_path / "absent.yaml", overrides={"llm": served}).llm)
        first = Answerer(lambda: llm, load_tokenizer(model_file()), 48, 4096, strongest_first=True)
        assert first.answer("(many lines)", WHEN, lines)[0] == "14th of May"
        # Not a question asking for a day; and off.
        assert first.answer("(many lines)", QUESTION, lines)[0] == "19th"
        off = Answerer(lambda: llm, load_tokenizer(model_file()), 48, 4096)
        assert off.answer("(many lines)", WHEN, lines)[0] == "14th of May"
    notes = [(post.body or {})["messages"][1]["content"] for post in server.posts()]
    assert ["(many lines)" in n for n in notes] == [False, True, True]


def test_the_benchmark_answerer_takes_the_same_second_look(tmp_path: Path) -> None:
    # `rag` hands its strongest hits; a system without them (a recency window) gets no second look.
    lines = "16 November 2026:\nPriya: I am allergic to peanuts, so I always ask them first."
    with scripted(Stream(("not mentioned",)), Stream(("Peanuts",)), Stream(("not mentioned",))) as server:
        served = {"backend": "openai", "base_url": server.base_url, "model": "m", "retries": 0}
        llm = OpenAIChat(load_settings(user_file=tmp_path / "absent.yaml", overrides={"llm": served}).llm)
        answerer = Answerer(lambda: llm, load_tokenizer(model_file()), 48, 4096)
        assert answerer.answer("(many lines)", QUESTION, lines)[0] == "Peanuts"
        assert answerer.answer("(many lines)", QUESTION)[0] == "not mentioned"
        assert len(server.posts()) == 3


def test_the_benchmark_answerer_asks_again_a_reply_that_says_the_question_back(tmp_path: Path) -> None:
    lines = "16 November 2026:\nPriya: I am allergic to peanuts, so I always ask them first."
    with scripted(Stream(("Priya is allergic",)), Stream(("Peanuts",))) as server:
        served = {"backend": "openai", "base_url": server.base_url, "model": "m", "retries": 0}
        llm = OpenAIChat(load_settings(user_file=tmp_path / "absent.yaml", overrides={"llm": served}).llm)
        answerer = Answerer(lambda: llm, load_tokenizer(model_file()), 48, 4096)
        assert answerer.answer("(many lines)", QUESTION, lines)[0] == "Peanuts"
        assert len(server.posts()) == 2
