"""The relevance gate (`memory.answer.min_relevance`): a question the memory has nothing on is
answered "not mentioned" without asking the model, which would only guess; a question about someone
the memory has heard always reaches that person's lines.

The memory is real (SQLite with sqlite-vec, the packaged embedder, the sample conversation); its
LLM is a scripted HTTP server that answers whatever it is asked, so a request it receives is the
gate letting the question through.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.memory.answer import DONT_KNOW
from assistant.records import Answer, Retrieval

from .scripted_server import ScriptedServer, Stream, scripted
from .test_second_look import asked, notes_lines, served_memory

GENERAL = "Who wrote the Iliad?"
# Names a speaker of the sample conversation, and shares no content word with anything said.
ABOUT_PRIYA = "What is Priya's political leaning?"


@dataclass
class Asked:
    found: Retrieval  # what recall found, which the gate reads
    gate: float  # memory.answer.min_relevance
    pieces: list[str]
    answer: Answer
    server: ScriptedServer


def ask_once(tmp_path: Path, reply: tuple[str, ...], question: str, **answer: Any) -> Asked:
    """Ask the sample conversation's memory one question, its model scripted to give `reply`."""
    with scripted(Stream(reply)) as server:
        mem = served_memory(tmp_path, server, **answer)
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
    assert a.found.lines and a.found.relevance < a.gate and not a.found.matched_words and a.found.names == ()
    assert (a.answer.text, a.answer.knows, a.answer.evidence, a.pieces) == (DONT_KNOW, False, (), [DONT_KNOW])
    assert a.server.posts() == []


def test_a_question_naming_someone_heard_is_asked_from_their_lines(tmp_path: Path) -> None:
    a = ask_once(tmp_path, ("Not on", " record"), ABOUT_PRIYA)
    # Below the gate on words and meaning alike: only the name lets it through.
    assert a.found.relevance < a.gate and not a.found.matched_words and a.found.names == ("Priya",)
    assert a.answer.text == "Not on record"
    assert len(a.server.posts()) == 1
    lines = notes_lines(a.server, 0)
    assert lines and all(line.startswith("Priya: ") for line in lines)


def test_the_gate_is_one_setting(tmp_path: Path) -> None:
    # At 0 nothing is below it: even a question about no one reaches the model.
    a = ask_once(tmp_path, ("Homer",), GENERAL, min_relevance=0.0)
    assert a.answer.text == "Homer" and len(a.server.posts()) == 1
