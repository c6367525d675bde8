"""The everyday set (tests/fixtures/everyday): its scorer, its files, and how many of its questions
the packaged 1.5B answers right.

The slow test runs the set as a user meets it: the default config with extractive formation
(the packaged 1.5B answers; extractive formation keeps the run within minutes on two cores), a
fresh memory per conversation, each question asked at its own moment. The target is every
question right (BENCHMARKS.md); the test holds the count measured at this commit, so that a
change that loses a question goes red, and lists what each wrong answer said.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from assistant.bench.everyday import KINDS, EverydayRun, default_set, load_set, run_everyday
from assistant.bench.everyday_report import everyday_json, everyday_markdown
from assistant.bench.everyday_scoring import Day, Number, is_decline, mentions, score
from assistant.config import load_settings
from assistant.errors import InputError

from .conftest import MODELS_DIR

SET = load_set(default_set())
THE_16TH = Day(date(2025, 10, 16))


# --- the scorer ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "He's coming on Thursday 16 October.",
        "Thursday, October 16th, in the morning.",
        "On the 16th of October.",
        "Oct. 16",
        "16/10/2025",
        "2025-10-16",
        "October the 16th",
    ],
)
def test_a_day_is_found_however_it_is_written(reply):
    assert mentions(reply, THE_16TH)


@pytest.mark.parametrize("reply", ["On Thursday.", "17 October", "16 November", "October 1", "116 October"])
def test_another_day_or_a_bare_weekday_is_not_that_day(reply):
    assert not mentions(reply, THE_16TH)


@pytest.mark.parametrize("reply", ["The budget is €2,100.", "2100 euros", "2 100 EUR", "It's 2,100."])
def test_a_number_is_found_with_or_without_separators(reply):
    assert mentions(reply, Number(Decimal(2100)))


@pytest.mark.parametrize("reply", ["21,800 euros", "1,8000", "18,000", "1,800.50"])
def test_a_number_is_not_found_inside_another(reply):
    assert not mentions(reply, Number(Decimal(1800)))


def test_decimals_take_a_point_or_a_comma():
    amount = Number(Decimal("35.90"))
    assert mentions("You each owe her €35.90.", amount)
    assert mentions("35,90 each", amount)
    assert not mentions("135.90", amount)


def test_words_match_whole_ignoring_case_but_not_accents():
    assert mentions("Yes, he is.", "yes")
    assert not mentions("He came yesterday.", "yes")
    assert mentions("SIOBHÁN is picking him up", "Siobhán")
    # The same name typed with a combining accent is the same name.
    assert mentions(unicodedata.normalize("NFD", "Siobhán will."), "Siobhán")
    assert not mentions("Siobhan is picking him up", "Siobhán")
    assert mentions("It’s harbourlight7", "it's harbourlight7")


@pytest.mark.parametrize(
    "reply",
    [
        "Not mentioned.",
        "I don't know.",
        "Björn didn't mention a sister.",
        "There is no mention of a sister.",
        "I'm not sure; it wasn't mentioned.",
        "",
    ],
)
def test_declines_are_recognised(reply):
    assert is_decline(reply)


@pytest.mark.parametrize(
    "reply",
    [
        "The cause of the leak is still unknown.",
        "The plumber doesn't know what caused it.",
        "No, Chidi can't make it; he's at a wedding.",
        "The release date for version 3 is unknown.",
    ],
)
def test_a_fact_that_something_is_unknown_is_not_a_decline(reply):
    assert not is_decline(reply)


def test_every_item_must_be_met_and_nothing_forbidden_said():
    must = [["unknown", "not known"], ["leak", "cause"]]
    assert score("The cause of the leak is unknown.", must, ["not mentioned"], "answer").right
    half = score("Unknown.", must, [], "answer")
    assert not half.right and '"leak" / "cause"' in half.why
    old = score("It went from 1,800 to 2,100.", [[Number(Decimal(2100))]], [Number(Decimal(1800))], "answer")
    assert not old.right and 'says "1,800"' in old.why


def test_a_decline_is_wrong_where_an_answer_is_due_and_right_where_none_is():
    assert not score("Not mentioned.", [[THE_16TH]], [], "answer").right
    # "not" answers "is Chidi coming?", but not as part of a decline.
    declined = score("Not mentioned.", [["no", "not", "can't"]], [], "answer")
    assert not declined.right and declined.why == "declined"
    assert score("Not mentioned.", [], ["Anders"], "decline").right
    named = score("Björn's brother Anders is not his sister; not mentioned.", [], ["Anders"], "decline")
    assert not named.right and 'says "Anders"' in named.why
    answered = score("She arrives on Saturday.", [], ["Anders"], "decline")
    assert not answered.right and "not mentioned" in answered.why


# --- the set's files -----------------------------------------------------------------------------


def test_the_set_covers_every_kind_with_enough_questions_and_talk():
    assert len(SET.questions) >= 25
    assert set(Counter(q.kind for q in SET.questions)) == set(KINDS)
    assert 60 <= sum(len(c.lines) for c in SET.conversations.values()) <= 120
    for conv in SET.conversations.values():
        zone = ZoneInfo(conv.time_zone)
        days = {datetime.fromtimestamp(line.time, zone).date() for line in conv.lines}
        assert 3 <= len(days) <= 5, conv.name
    # Every question is asked once something has been said.
    for q in SET.questions:
        assert q.asked_at >= SET.conversations[q.conv].lines[0].time, q.id
    assert any(not q.question.isascii() for q in SET.questions)
    assert any(q.expect == "decline" for q in SET.questions)


def _write_set(tmp_path: Path, question: str, line_time: str = "2025-10-13T08:00:00+01:00") -> Path:
    (tmp_path / "talk.jsonl").write_text(f'{{"speaker": "Ana", "time": "{line_time}", "text": "Hi."}}\n')
    (tmp_path / "questions.yaml").write_text(
        "conversations:\n  talk: {file: talk.jsonl, time_zone: Europe/Dublin}\nquestions:\n" + question
    )
    return tmp_path


GOOD = (
    "  - {id: a, conv: talk, asked_at: '2025-10-13T09:00:00+01:00', question: 'Hi?', kind: polite, expect: answer,"
    " must: [[hi]]}\n"
)


def test_a_well_formed_set_loads(tmp_path):
    loaded = load_set(_write_set(tmp_path, GOOD))
    assert [q.id for q in loaded.questions] == ["a"]
    assert loaded.conversations["talk"].lines[0].speaker == "Ana"


@pytest.mark.parametrize(
    ("question", "line_time", "complaint"),
    [
        (GOOD, "2025-10-13T08:00:00", "names no offset"),
        (GOOD.replace("kind: polite", "kind: chatty"), "2025-10-13T08:00:00+01:00", "kind 'chatty'"),
        (GOOD.replace(" must: [[hi]]", " must: []"), "2025-10-13T08:00:00+01:00", "cannot be wrong"),
        (GOOD.replace("[[hi]]", "[[{date: 13-10-2025}]]"), "2025-10-13T08:00:00+01:00", "not a YYYY-MM-DD"),
        (GOOD.replace("conv: talk", "conv: chat"), "2025-10-13T08:00:00+01:00", "no conversation 'chat'"),
        (GOOD.replace(" must:", " evidence: [Bye], must:"), "2025-10-13T08:00:00+01:00", "in 0 lines"),
    ],
)
def test_a_malformed_set_is_refused_with_its_fault_named(tmp_path, question, line_time, complaint):
    with pytest.raises(InputError, match=complaint):
        load_set(_write_set(tmp_path, question, line_time))


def test_the_command_needs_a_set(tmp_path):
    from assistant.cli import main

    result = CliRunner().invoke(main, ["bench", "everyday", "--data", str(tmp_path)])
    assert result.exit_code != 0
    assert "no questions.yaml" in result.output


# --- the set, answered by the packaged 1.5B (slow) -----------------------------------------------


@pytest.fixture(scope="module")
def answered(tmp_path_factory) -> EverydayRun:
    home = tmp_path_factory.mktemp("everyday")
    settings = load_settings(
        user_file=home / "no-user-config.yaml",
        overrides={
            "paths": {"data_dir": str(home / "data"), "models_dir": MODELS_DIR},
            "memory": {"distill": {"mode": "extractive"}},
        },
    )
    assert settings.models.llm == "qwen2.5-coder-1.5b-instruct-q4km"
    return run_everyday(settings, default_set())


# 25 of 32 were right with the 1.5B once the decline rule moved into the system message and a
# question about one person needed a line about them (BENCHMARKS.md, "The everyday set"); two
# below that is the floor, so that losing questions goes red. The target is all of them.
RIGHT_AT_LEAST = 23


@pytest.mark.slow
def test_the_15b_answers_the_everyday_set(answered):
    wrong = [
        f"{r.question.id}: {r.question.question!r} got {r.reply!r} ({r.why})" for r in answered.results if not r.right
    ]
    right = len(answered.results) - len(wrong)
    assert right >= RIGHT_AT_LEAST, f"{right} of {len(answered.results)} right:\n" + "\n".join(wrong)


@pytest.mark.slow
def test_the_report_lists_every_question(answered):
    report = everyday_json(answered)
    table = everyday_markdown(report)
    assert report["questions"] == len(SET.questions)
    for q in SET.questions:
        assert f"| {q.id} |" in table
