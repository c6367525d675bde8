"""Date accuracy: temporal answers scored by the date they mean, whatever their wording.

Every case here is written for this test (dates in 2019-2026, none of LoCoMo's answers).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest

from assistant.bench.checkpoint import ProbeLog
from assistant.bench.date_accuracy import find_times, gold_span, score_date
from assistant.bench.host import Machine
from assistant.bench.locomo import ConversationRun, LocomoRun, ProbeResult, SystemTotals, plan_probes
from assistant.bench.locomo_metrics import score_temporal_date
from assistant.bench.locomo_report import locomo_json, locomo_markdown
from assistant.records import Utterance
from assistant.transcripts import Conversation, Question


def at(year: int, month: int, day: int, hour: int = 15) -> float:
    return datetime(year, month, day, hour, tzinfo=UTC).timestamp()


THURSDAY = at(2025, 10, 9)  # Thursday 9 October 2025, mid-afternoon


def matches(reply: str, gold: str, said_at: float = THURSDAY) -> bool | None:
    return score_date(reply, gold, said_at).match


# --- a day -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "She went on Thursday, October 2, 2025.",
        "2025-10-02",
        "the 2nd of October 2025",
        "Oct. 2nd",  # no year: the 2 October nearest the day it was said
        "Thursday 2 October 2025",
        "October 2nd, 2025",
    ],
)
def test_a_gold_day_is_matched_by_that_day_in_any_writing(reply):
    gold = "the Thursday before 9 October 2025"
    assert gold_span(gold, THURSDAY).unit == "day"
    assert matches(reply, gold) is True


@pytest.mark.parametrize("reply", ["3 October 2025", "October 2025", "the week of 29 September 2025", "2025"])
def test_another_day_or_a_coarser_time_misses_a_gold_day(reply):
    assert matches(reply, "2 October 2025") is False


def test_relative_words_in_a_reply_count_from_the_day_the_evidence_was_said():
    assert matches("last Friday", "3 October 2025") is True  # the Friday before Thursday 9 October
    assert matches("yesterday", "8 October 2025") is True
    assert matches("yesterday", "8 October 2025", said_at=at(2025, 10, 10)) is False
    assert matches("three days before 9 October 2025", "6 October 2025") is True


# --- a week, a weekend -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "hit"),
    [
        ("9 October 2025", True),  # a day of the week before Wednesday 15 October
        ("the week of Monday 6 October 2025", True),
        ("Tuesday 14 October 2025", True),  # the seven days before, read the other way
        ("15 October 2025", False),  # the day itself is not before it
        ("5 October 2025", False),
        ("October 2025", False),
    ],
)
def test_a_gold_week_is_matched_by_a_day_in_it_or_the_week(reply, hit):
    gold = "the week before 15 October 2025"
    assert gold_span(gold, THURSDAY).unit == "week"
    assert matches(reply, gold) is hit


def test_a_gold_weekend_takes_either_of_its_days():
    gold = "the weekend of 11 October 2025"
    assert gold_span(gold, THURSDAY).unit == "weekend"
    assert matches("Sunday 12 October 2025", gold) is True
    assert matches("Friday 10 October 2025", gold) is False
    # Counted back from a Monday: the nearest weekend wholly before it, then a week further.
    assert matches("4 October 2025", "two weekends before 13 October 2025") is True
    assert matches("11 October 2025", "two weekends before 13 October 2025") is False
    # Counted back from a Sunday: not the weekend that day ends.
    assert matches("5 October 2025", "the weekend before 12 October 2025") is True
    assert matches("11 October 2025", "the weekend before 12 October 2025") is False


# --- a month, a year --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "hit"),
    [("in March 2024", True), ("March, 2024", True), ("18 March 2024", True), ("April 2024", False), ("2024", False)],
)
def test_a_gold_month_is_matched_by_the_month_or_a_day_in_it(reply, hit):
    assert gold_span("March, 2024", THURSDAY).unit == "month"
    assert matches(reply, "March, 2024") is hit


@pytest.mark.parametrize(("reply", "hit"), [("in the summer of 2019", True), ("June 2019", True), ("2018", False)])
def test_a_gold_year_is_matched_by_anything_in_that_year(reply, hit):
    assert gold_span("2019", THURSDAY).unit == "year"
    assert matches(reply, "2019") is hit


def test_a_gold_counted_from_the_day_said():
    assert gold_span("six years ago", THURSDAY).first == date(2019, 1, 1)
    assert matches("back in 2019", "six years ago") is True
    # A day without its year is the one nearest the day said, across a new year too.
    assert gold_span("the 2nd of January", at(2025, 12, 28)).first == date(2026, 1, 2)


def test_a_gold_said_relative_to_its_day_has_the_unit_its_span_has():
    units = {words: gold_span(words, THURSDAY) for words in ("yesterday", "last night", "last weekend", "last week")}
    assert {w: (s.first, s.last, s.unit) for w, s in units.items()} == {
        "yesterday": (date(2025, 10, 8), date(2025, 10, 8), "day"),
        "last night": (date(2025, 10, 8), date(2025, 10, 8), "day"),  # a night is its evening's day
        "last weekend": (date(2025, 10, 4), date(2025, 10, 5), "weekend"),
        "last week": (date(2025, 9, 29), date(2025, 10, 5), "week"),
    }


def test_a_vague_count_of_days_is_a_window():
    gold = "a few days before 20 November 2025"
    assert gold_span(gold, THURSDAY).unit == "window"
    assert matches("16 November 2025", gold) is True
    assert matches("19 November 2025", gold) is False


# --- what the reply's date is, and what cannot be scored -------------------------------------


def test_the_reply_first_date_is_its_answer():
    assert matches("On 3 October 2025, though she said so on 9 October 2025.", "3 October 2025") is True
    assert matches("She said on 9 October 2025 that she went on 3 October 2025.", "3 October 2025") is False
    assert matches("I don't know.", "3 October 2025") is False


@pytest.mark.parametrize(
    "gold",
    ["3 years", "a few years ago", "several months before 2024", "2 October 2025 and 9 October 2025", "soon"],
)
def test_a_gold_without_one_pinned_date_is_not_scorable(gold):
    assert gold_span(gold, THURSDAY) is None
    assert score_date("2 October 2025", gold, THURSDAY).match is None


def test_one_time_is_read_once():
    found = find_times("the week before Wednesday 15 October 2025", THURSDAY)
    assert [f.words for f in found] == ["the week before Wednesday 15 October 2025"]


def test_only_temporal_questions_are_date_scored():
    assert score_temporal_date("2 October 2025", "2 October 2025", 2, THURSDAY).match is True
    assert score_temporal_date("2 October 2025", "2 October 2025", 4, THURSDAY).unit is None
    assert score_temporal_date(None, "2 October 2025", 2, THURSDAY).match is None  # recall only: no reply


# --- the benchmark -----------------------------------------------------------------------------


def test_a_probe_counts_dates_from_its_last_evidence_turn():
    day1, day2 = at(2025, 10, 1, 9), at(2025, 10, 9, 9)
    utterances = (Utterance("Ana", "We planted the olive tree yesterday.", day1), Utterance("Ben", "Nice.", day1 + 30))
    utterances += (Utterance("Ana", "The tree has its first olives.", day2),)
    question = Question("When did Ana plant the olive tree?", "30 September 2025", 2, ("D1:1",))
    conv = Conversation("c", utterances, ("D1:1", "D1:2", "D2:1"), (question,))
    (probe,) = plan_probes(conv)
    assert probe.said_at == day1
    assert score_date("yesterday", question.answer, probe.said_at).match is True


def _row(number: int, category: int, unit: str | None, match: float | None, probe: str = "evidence") -> ProbeResult:
    return ProbeResult("rag", "c", number, category, probe, "Q?", "gold", "reply", 0.5, 0.5, 0.5, 1.0, 1.0, 100, 1.0,
                       50.0, unit, match)  # fmt: skip


def test_the_report_gives_date_accuracy_over_the_scorable_temporal_questions():
    rows = [
        _row(0, 2, "day", 1.0),
        _row(1, 2, "month", 0.0),
        _row(2, 2, "day", 1.0),
        _row(3, 2, None, None),  # a temporal gold naming no date: counted, not scored
        _row(4, 4, None, None),  # not temporal
        _row(0, 2, "day", 0.0, "end"),
    ]
    totals = SystemTotals(utterances=1, ingest_ms=[1.0])
    machine = Machine(2, 4.0, "Linux x86_64", "3.11", None, "2026-11-27")
    conversations = (ConversationRun("c", 1, 5, {"rag": totals}),)
    run = LocomoRun("d.json", ("rag",), "m", "m", "llm", 0, None, (), 60.0, conversations, tuple(rows),
                    {"rag": "retrieval"}, machine)  # fmt: skip
    report = locomo_json(run)
    rag = report["systems"]["rag"]
    assert rag["date_accuracy"] == pytest.approx(2 / 3)
    assert (rag["date_scorable"], rag["temporal"]) == (3, 4)
    assert rag["date_by_unit"] == {"day": {"n": 2, "date_accuracy": 1.0}, "month": {"n": 1, "date_accuracy": 0.0}}
    assert rag["at_end"]["date_accuracy"] == 0.0 and rag["at_end"]["date_scorable"] == 1
    assert rag["by_category"]["evidence"]["2"]["date_accuracy"] == pytest.approx(2 / 3)
    assert "| rag | 0.500 | 0.667 (n=3 of 4) |" in locomo_markdown(report)
    json.dumps(report)


def test_a_checkpoint_written_before_date_accuracy_still_resumes(tmp_path):
    path, run_id = tmp_path / "answers.jsonl", {"systems": ["rag"]}
    log = ProbeLog(path, run_id, ProbeResult)
    log.add(_row(0, 2, "day", 1.0))
    log.close()
    lines = path.read_text().splitlines()
    old = json.loads(lines[1])
    del old["date_unit"], old["date_match"]
    path.write_text("\n".join([lines[0], json.dumps(old)]) + "\n")
    again = ProbeLog(path, run_id, ProbeResult)
    assert again.get(("rag", "c", 0, "evidence")).date_unit is None  # scored again when the run resumes
