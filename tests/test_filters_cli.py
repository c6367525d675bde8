"""`assistant search` and `assistant ask --since/--until/--speaker` on a real memory, run as a user would.

The memory is the bundled sample conversation (Sam, Priya and Alex on 16 and 17 November 2026),
ingested once with extractive distillation: no LLM anywhere except in the tests marked slow.
Times in the config's zone are Tokyo's (UTC+9), so a test can tell a date read in the
configured zone from one read as UTC.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from assistant.cli import main

from .cli_runner import assistant
from .conftest import MODELS_DIR

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "assistant" / "data" / "sample_conversation.jsonl"
TOKYO = ZoneInfo("Asia/Tokyo")


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def tokyo(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=TOKYO).timestamp()


def said(speaker: str) -> list[tuple[float, str]]:
    """What the sample has `speaker` say: (time, text)."""
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    return [(utc(r["time"].replace("Z", "")), r["text"]) for r in rows if r["speaker"] == speaker]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding the sample conversation, and its config."""
    root = tmp_path_factory.mktemp("filters-cli")
    (root / "cli-config.yaml").write_text(
        "time_zone: Asia/Tokyo\n"
        f"paths:\n  data_dir: {root / 'data'}\n  models_dir: {MODELS_DIR}\n"
        "models:\n  llm: qwen2.5-coder-0.5b-instruct\n"
        "memory:\n  distill:\n    mode: extractive\n"
    )
    out = cli(root, "ingest", str(SAMPLE))
    assert out.returncode == 0, out.stderr
    return root


def cli(root: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    env = {"XDG_CONFIG_HOME": str(root / "xdg"), "HF_HUB_OFFLINE": "1"}
    return assistant(["--config", str(root / "cli-config.yaml"), *args], cwd=root, env=env, process=process)


def search(root: Path, *args: str) -> dict[str, Any]:
    out = cli(root, "search", "--json", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def inside(line: dict[str, Any], f: dict[str, Any]) -> bool:
    """Whether a recalled line satisfies the filter the response says was applied."""
    return (
        (f["speaker"] is None or line["speaker"] == f["speaker"])
        and (f["since"] is None or line["time"] >= f["since"])
        and (f["until"] is None or line["time"] < f["until"])
    )


# --- search -------------------------------------------------------------------------------------


def test_search_by_speaker_keeps_to_that_speaker_and_never_loads_the_llm(home: Path) -> None:
    # In a process of its own: its log is on stderr, and no model is loaded before it starts.
    out = cli(home, "-v", "search", "--speaker", "Priya", "Who is looking after the dog?", process=True)
    assert out.returncode == 0, out.stderr
    # -v logs every load of the LLM's weights; a search must not need them.
    assert "loading LLM" not in out.stderr, out.stderr
    assert out.stdout.startswith("limited to Priya\n"), out.stdout
    assert "recalled lines" in out.stdout and "tree paths" in out.stdout

    found = search(home, "--speaker", "Priya", "Who is looking after the dog?")
    assert found["filter"] == {"since": None, "until": None, "speaker": "Priya", "inferred": []}
    assert all(inside(line, found["filter"]) for line in found["lines"]), found["lines"]
    assert all(u["speaker"] == "Priya" for u in found["short_term"]), found["short_term"]
    # The replies to the best matches are searched among everyone's lines (the best is Sam's "Who is
    # looking after your dog ...?"), and kept only when Priya said them.
    assert [r["text"] for r in found["replies"]] == ["My sister will take Biscuit, she loves that beagle."]
    assert all(inside(r, found["filter"]) for r in found["replies"]), found["replies"]
    # An id names the same speaker; the filter reports the name.
    assert search(home, "--speaker", "2", "the dog")["filter"]["speaker"] == "Priya"


def test_search_since_and_until_bound_the_times(home: Path) -> None:
    # Naive times are read in the configured zone (Tokyo): 17 November there starts at 15:00 UTC on the 16th.
    found = search(home, "--since", "2026-11-17", "--until", "2026-11-17 19:01", "the beta release")
    f = found["filter"]
    assert f["since"] == tokyo("2026-11-17T00:00") == utc("2026-11-16T15:00")
    assert f["until"] == tokyo("2026-11-17T19:01") == utc("2026-11-17T10:01")
    assert f["speaker"] is None and f["inferred"] == []
    assert all(inside(line, f) for line in found["lines"]), found["lines"]
    assert all(f["since"] <= u["time"] < f["until"] for u in found["short_term"]), found["short_term"]
    assert all(inside(r, f) for r in found["replies"]), found["replies"]
    # An offset, or epoch seconds, say when exactly; the two forms agree.
    explicit = search(home, "--since", "2026-11-16T15:00:00Z", "--until", str(int(utc("2026-11-17T10:01"))), "beta")
    assert (explicit["filter"]["since"], explicit["filter"]["until"]) == (f["since"], f["until"])


def test_search_text_shows_the_window_in_local_time(home: Path) -> None:
    out = cli(home, "search", "--speaker", "Sam", "--since", "2026-11-16 18:00", "Lisbon")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "limited to Sam, from 2026-11-16 18:00 JST", out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--speaker", "Zed"], "no speaker 'Zed' (known: 1 'Sam', 2 'Priya', 3 'Alex')"),
        (
            ["--since", "2026-11-17", "--until", "2026-11-16"],
            "--since (2026-11-17 00:00 JST) must be before --until (2026-11-16 00:00 JST)",
        ),
        (
            ["--since", "2026-11-16", "--until", "2026-11-16"],
            "--since (2026-11-16 00:00 JST) must be before --until (2026-11-16 00:00 JST)",
        ),
        (["--until", "next tuesday"], "--until: 'next tuesday' is not a time; give an ISO-8601 date"),
        (["--since", "2026-13-01"], "--since: '2026-13-01' is not a time"),
        (["--since", "1e300"], "--since: '1e300' is outside the years 1 to 9999"),
        (["--since", "nan"], "--since: 'nan' is outside the years 1 to 9999"),
    ],
)
def test_bad_filters_are_clear_errors(
    home: Path, args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real command line, run in this process: fourteen fresh interpreters (each importing
    # torch) took minutes to say the same thing.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    for command in ("search", "ask"):
        out = CliRunner().invoke(main, ["--config", str(home / "cli-config.yaml"), command, *args, "the trip"])
        assert out.exit_code == 4, (command, out.stdout, out.stderr)
        assert f"error: {message}" in out.stderr, (command, out.stderr)
        assert out.exception is None or isinstance(out.exception, SystemExit), out.exception
        assert out.stdout == ""


# --- ask ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ask_with_a_speaker_and_a_window_says_what_it_was_limited_to(home: Path) -> None:
    out = cli(home, "ask", "--speaker", "Priya", "--since", "2026-11-16", "Who will take care of Biscuit?")
    assert out.returncode == 0, out.stderr
    assert "(limited to Priya, from 2026-11-16 00:00 JST)" in out.stdout, out.stdout
    # Every question of a file is limited the same way.
    questions = home / "questions.txt"
    questions.write_text("Who will take care of Biscuit?\nWhat did finance approve?\n")
    out = cli(home, "ask", "--questions", str(questions), "--speaker", "Alex")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("(limited to Alex)") == 2, out.stdout


# --- what the filter recalls: the lines the data guarantees -------------------------------------------


def test_search_by_speaker_recalls_their_lines(home: Path) -> None:
    found = search(home, "--speaker", "Sam", "the email about the Lisbon trip")
    assert found["lines"], "Sam spoke of the Lisbon trip: the search recalls nothing"
    assert all(line["speaker"] == "Sam" for line in found["lines"]), found["lines"]
    assert any("Lisbon" in line["text"] for line in found["lines"]), found["lines"]


def test_search_in_a_window_recalls_only_its_lines(home: Path) -> None:
    since, until = utc("2026-11-17T10:00"), utc("2026-11-17T10:02")
    found = search(home, "--since", str(since), "--until", str(until), "the export bugs and the beta")
    assert found["lines"], "three lines about the beta fall in the window: the search recalls none"
    assert all(since <= line["time"] < until for line in found["lines"]), found["lines"]
    inside_window = {text for t, text in said("Sam") + said("Priya") + said("Alex") if since <= t < until}
    assert {line["text"] for line in found["lines"]} <= inside_window
