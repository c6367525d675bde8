"""`assistant bench served`: answer latency through a served model against the same model in process.

The summary's arithmetic is checked on timings written here; the command end to end against
llama-cpp-python's own server on the 0.5B model (tests/llm_server.py), with the 0.5B loaded here too.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from assistant.bench.served_latency import Asked, Timing, summarise

from .llm_server import SERVED_MODEL, llm_server
from .test_cli import run as run_cli

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "locomo-mini.json"


def asked(number: int, local: float | None, served: float | None, *, same: bool = True) -> Asked:
    here = Timing(local / 4, local, "the answer") if local is not None else None
    there = Timing(served / 4, served, "the answer" if same else "another") if served is not None else None
    return Asked(number, f"question {number}", here, there, served_first=number % 2 == 1)


def test_the_summary_compares_only_questions_both_sides_answered_with_the_model():
    rows = [
        asked(0, 1000, 1100),
        asked(1, 2000, 2000, same=False),
        asked(2, 4000, 6000),
        asked(3, None, None),  # answered "not mentioned" without the model on both sides
    ]
    s = summarise(rows)
    assert (s.asked, s.answered_by_model, s.same_answers) == (4, 3, 2)
    assert (s.local_whole_ms, s.served_whole_ms) == (2000, 2000)
    assert (s.local_first_token_ms, s.served_first_token_ms) == (500, 500)
    # The ratio of the medians (2000 / 2000) differs from the median of the ratios (1.1, 1.0, 1.5).
    assert s.ratio_of_medians == pytest.approx(1.0)
    assert s.median_of_ratios == pytest.approx(1.1)


def test_with_no_question_for_the_model_there_is_no_ratio():
    s = summarise([asked(0, None, None)])
    assert (s.answered_by_model, s.ratio_of_medians, s.median_of_ratios, s.local_whole_ms) == (0, None, None, None)


@pytest.mark.slow
def test_the_bench_answers_each_question_both_ways_and_the_served_side_reaches_the_server(tmp_path):
    out = tmp_path / "served.json"
    with llm_server(tmp_path / "server") as server:
        before = server.chat_requests()
        args = ["bench", "served", "--url", server.base_url, "--llm", SERVED_MODEL, "--data", str(FIXTURE)]
        done = run_cli([*args, "--questions", "3", "--json", str(out)], tmp_path)
        requests = server.chat_requests() - before
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["format"] == "assistant-bench-served/1"
    rows = report["questions"]
    assert [r["number"] for r in rows] == [0, 1, 2]
    assert [r["served_first"] for r in rows] == [False, True, False]
    timed = [r for r in rows if r["local"] is not None]
    assert timed, "no question reached the model"
    for r in rows:
        # Both sides read the same prepared question: both use the model, or neither does.
        assert (r["local"] is None) == (r["served"] is None), r
    for r in timed:
        for side in (r["local"], r["served"]):
            assert 0 < side["first_token_ms"] <= side["whole_ms"], r
    # Every served answer was a request to the server (a second look may add one).
    assert requests >= len(timed), (requests, timed)
    s = report["summary"]
    assert s["answered_by_model"] == len(timed)
    assert s["served_whole_ms"] == pytest.approx(statistics.median(r["served"]["whole_ms"] for r in timed))
    assert "served / in-process" in done.stdout
