"""The relevance gate (`memory.answer.min_relevance`): a question the memory has nothing on is
answered "not mentioned" without asking the model, which would only guess; a question about someone
the memory has heard always reaches that person's lines.

The memory is real (SQLite with sqlite-vec, the packaged embedder, the sample conversation); its
LLM is a scripted HTTP server that answers whatever it is asked, so a request it receives is the
gate letting the question through.
"""

from __future__ import annotations

from pathlib import Path

from assistant.memory.answer import DONT_KNOW

from .scripted_server import Stream, scripted
from .test_second_look import asked, notes_lines, served_memory

GENERAL = "Who wrote the Iliad?"
# Names a speaker of the sample conversation, and shares no content word with anything said.
ABOUT_PRIYA = "What is Priya's political leaning?"


def test_a_question_the_memory_has_nothing_on_is_declined_without_asking(tmp_path: Path) -> None:
    with scripted(Stream(("Homer",))) as server:
        mem = served_memory(tmp_path, server)
        try:
            found = mem.search(GENERAL)
            pieces, answer = asked(mem, GENERAL)
            gate = mem.settings.memory.answer.min_relevance
        finally:
            mem.close()
    assert found.lines and found.relevance < gate and not found.matched_words and found.names == ()
    assert (answer.text, answer.knows, answer.evidence, pieces) == (DONT_KNOW, False, (), [DONT_KNOW])
    assert server.posts() == []


def test_a_question_naming_someone_heard_is_asked_from_their_lines(tmp_path: Path) -> None:
    with scripted(Stream(("Not on", " record"))) as server:
        mem = served_memory(tmp_path, server)
        try:
            found = mem.search(ABOUT_PRIYA)
            _, answer = asked(mem, ABOUT_PRIYA)
            gate = mem.settings.memory.answer.min_relevance
        finally:
            mem.close()
    # Below the gate on words and meaning alike: only the name lets it through.
    assert found.relevance < gate and not found.matched_words and found.names == ("Priya",)
    assert answer.text == "Not on record"
    assert len(server.posts()) == 1
    lines = notes_lines(server, 0)
    assert lines and all(line.startswith("Priya: ") for line in lines)


def test_the_gate_is_one_setting(tmp_path: Path) -> None:
    # At 0 nothing is below it: even a question about no one reaches the model.
    with scripted(Stream(("Homer",))) as server:
        mem = served_memory(tmp_path, server, min_relevance=0.0)
        try:
            _, answer = asked(mem, GENERAL)
        finally:
            mem.close()
    assert answer.text == "Homer" and len(server.posts()) == 1
