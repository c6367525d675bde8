"""The day said is not the day it happened: a reply that is only the date above the answering line
becomes the date that line resolves ("last week" said on 6 July -> "the week before 6 July 2023").

The function is tested on notes written as the context renders them; the memory's streaming and
the benchmark answerer's use of it with a scripted model (tests/scripted_server.py), because the
replies tested are ones a real model gives only by chance.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.bench.systems.base import Answerer
from assistant.config import load_settings
from assistant.llm import OpenAIChat, load_tokenizer
from assistant.memory.answer import dated_reply, may_be_only_a_day, may_be_replaced

from .llm_server import model_file
from .scripted_server import Stream, scripted
from .test_second_look import asked, served_memory

NOTES = """3 July 2023:
Ana: I'm learning the piano now. What made you try pottery?

6 July 2023:
Ana: My friends have been so good to me. We even had a picnic last week (the week before 6 July 2023)! It was lovely.
Sam: We went to the museum with the kids. Luna loved the dinosaurs."""

PICNIC = "When did Ana have a picnic?"


@pytest.mark.parametrize(
    ("reply", "question", "expected"),
    [
        # The day above the line that answers -> the date the line resolves.
        ("6 July 2023", PICNIC, "the week before 6 July 2023"),
        ("6 July 2023.", PICNIC, "the week before 6 July 2023"),
        # The line that shares most with the question resolves nothing: it happened that day.
        ("6 July 2023", "When did Sam go to the museum?", "6 July 2023"),
        # Another day's date, a date the line itself gives, or more than a date: left as it is.
        ("3 July 2023", PICNIC, "3 July 2023"),
        ("the week before 6 July 2023", PICNIC, "the week before 6 July 2023"),
        ("A picnic on 6 July 2023", PICNIC, "A picnic on 6 July 2023"),
        # Not a question asking for a day.
        ("6 July 2023", "What did Ana do with her friends?", "6 July 2023"),
        # No line of that day shares a word with the question.
        ("6 July 2023", "When did Ana buy a car?", "6 July 2023"),
    ],
)
def test_a_reply_that_is_only_the_day_said_becomes_the_day_meant(reply: str, question: str, expected: str) -> None:
    assert dated_reply(reply, question, NOTES) == expected


def test_the_sentence_that_answers_picks_among_a_lines_dates() -> None:
    notes = (
        "9 June 2023:\nAna: I gave a talk at a school last week (the week before 9 June 2023). "
        "It made me think of how far I've come since I moved three years ago (2020)."
    )
    assert dated_reply("9 June 2023", "When did Ana give a talk at a school?", notes) == "the week before 9 June 2023"
    assert dated_reply("9 June 2023", "When did Ana move?", notes) == "2020"
    # Two lines of the day tied on the question's words: no way to tell which answers.
    tied = (
        "9 June 2023:\nAna: The talk was last Friday (the Friday before 9 June 2023).\n"
        "Ana: The talk was yesterday (8 June 2023)."
    )
    assert dated_reply("9 June 2023", "When was Ana's talk?", tied) == "9 June 2023"
    # Tied lines, one with its date in the sentence holding the question's word: that one answers.
    told = (
        "9 June 2023:\nAna: Hi! My school event last week (the week before 9 June 2023) went well.\n"
        "Ana: Giving it felt great."
    )
    assert dated_reply("9 June 2023", "When did Ana give a talk at a school?", told) == "the week before 9 June 2023"
    # A line does not win a tie by having a date somewhere: here the date is about something else.
    fence = (
        "9 June 2023:\nAna: I painted the fence! So happy.\n"
        "Ana: The fence we built last year (2022)? We painted it too."
    )
    assert dated_reply("9 June 2023", "When did Ana paint the fence?", fence) == "9 June 2023"


def test_a_reply_that_may_be_only_a_date_is_held() -> None:
    assert all(may_be_only_a_day("6 July 2023"[:n], PICNIC) for n in range(12))
    assert not may_be_only_a_day("the week", PICNIC)
    assert not may_be_only_a_day("6 July", "What did Ana do?")
    # Held for that reason alone; a reply that has become something else is let through.
    assert may_be_replaced("6 July", PICNIC)
    assert not may_be_replaced("the week before ", PICNIC)


def test_the_memory_answers_with_the_day_meant_and_streams_it_once(tmp_path: Path) -> None:
    # The sample conversation: on 17 November 2026 Alex said "I fixed the CSV export bug last night".
    with scripted(Stream(("17", " November", " 2026"))) as server:
        mem = served_memory(tmp_path, server)
        try:
            pieces, answer = asked(mem, "When did Alex fix the CSV export bug?")
        finally:
            mem.close()
    assert (answer.text, pieces) == ("16 November 2026", ["16 November 2026"])
    assert [e.speaker for e in answer.evidence] == ["Alex"]
    assert "CSV export bug last night" in answer.evidence[0].text


def test_the_benchmark_answerer_gives_the_day_meant_too(tmp_path: Path) -> None:
    with scripted(Stream(("6 July 2023",)), Stream(("6 July 2023",))) as server:
        served = {"backend": "openai", "base_url": server.base_url, "model": "m", "retries": 0}
        llm = OpenAIChat(load_settings(user_file=tmp_path / "absent.yaml", overrides={"llm": served}).llm)
        answerer = Answerer(lambda: llm, load_tokenizer(model_file()), 48, 4096, strongest_first=True)
        # From the strongest lines first (a question asking for a day), then from the whole context.
        assert answerer.answer("(many lines)", PICNIC, NOTES)[0] == "the week before 6 July 2023"
        assert answerer.answer(NOTES, PICNIC)[0] == "the week before 6 July 2023"
