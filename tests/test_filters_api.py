"""Recall limited by time and speaker through the real daemon: POST /search, POST /ask, the CLI as its client.

The daemon's memory is the bundled sample conversation (Sam, Priya and Alex on 16 and 17
November 2026), ingested before it starts; it then listens to a second of silence. Its zone is
Tokyo's (UTC+9), so a naive time read in the configured zone differs from one read as UTC.
The daemon loads the LLM at start: every test here is slow.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from assistant.bench.synth_speech import silence

from .daemon_helpers import DaemonProcess, daemon_config, kill_leftovers, running, settled

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parents[1] / "assistant" / "data" / "sample_conversation.jsonl"
TOKYO = ZoneInfo("Asia/Tokyo")


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def tokyo(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=TOKYO).timestamp()


def sample_daemon(root: Path) -> DaemonProcess:
    """A started daemon whose memory holds the sample conversation (known speakers, known times)."""
    d = daemon_config(root)
    d.config.write_text("time_zone: Asia/Tokyo\n" + d.config.read_text())
    # The daemon owns the database once it runs: the conversation goes in first, as `ingest` would.
    out = subprocess.run(
        [sys.executable, "-m", "assistant", "--config", str(d.config), "ingest", str(SAMPLE)],
        capture_output=True,
        text=True,
        env=d.env(),
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    d.start(silence(root / "quiet.wav", 1.0))
    d.wait_for(settled, "the silence to be heard")
    return d


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    d = sample_daemon(tmp_path_factory.mktemp("filters-api"))
    d.shared = True
    with running(d):
        yield d


def post(daemon: DaemonProcess, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """Status and body; an NDJSON stream comes back as its list of lines."""
    with daemon.client() as c:
        r = c.post(path, json=body)
        if r.headers.get("content-type", "").startswith("application/x-ndjson"):
            return r.status_code, [json.loads(line) for line in r.text.splitlines() if line.strip()]
        return r.status_code, r.json()


def inside(line: dict[str, Any], f: dict[str, Any]) -> bool:
    return (
        (f["speaker"] is None or line["speaker"] == f["speaker"])
        and (f["since"] is None or line["time"] >= f["since"])
        and (f["until"] is None or line["time"] < f["until"])
    )


# --- /search ------------------------------------------------------------------------------------


def test_search_limited_to_a_speaker_and_a_window(daemon: DaemonProcess) -> None:
    status, found = post(
        daemon,
        "/search",
        {"question": "the Lisbon trip", "speaker": "Sam", "since": "2026-11-16T09:00:00Z", "until": "2026-11-16 19:00"},
    )
    assert status == 200, found
    # An offset says when exactly; a naive time is the daemon's local time (Tokyo: 10:00 UTC).
    assert found["filter"] == {
        "since": utc("2026-11-16T09:00"),
        "until": tokyo("2026-11-16T19:00"),
        "speaker": "Sam",
        "inferred": [],
    }
    assert {"lines", "paths", "short_term", "replies", "relevance", "question"} <= found.keys()
    # Sam spoke three times that morning (09:02 to 09:05 UTC).
    assert found["lines"] and all(inside(line, found["filter"]) for line in found["lines"]), found["lines"]
    for line in found["lines"]:
        assert set(line) == {"utterance_id", "speaker", "time", "text", "score", "found_by", "history"}
    # The short-term buffer holds the last ten lines, all three speakers', and the reply to a best
    # match may be anyone's: each of the three parts keeps to Sam's lines of the 17th.
    status, found = post(daemon, "/search", {"question": "the design review", "speaker": "Sam", "since": "2026-11-17"})
    assert status == 200, found
    assert found["filter"]["speaker"] == "Sam" and found["filter"]["since"] == tokyo("2026-11-17T00:00")
    for part in ("lines", "short_term", "replies"):
        assert found[part] and all(inside(u, found["filter"]) for u in found[part]), (part, found[part])


def test_search_takes_epoch_seconds_and_speaker_ids(daemon: DaemonProcess) -> None:
    since, until = utc("2026-11-17T10:00"), utc("2026-11-17T10:02")
    status, found = post(daemon, "/search", {"question": "the beta", "since": since, "until": int(until), "speaker": 2})
    assert status == 200, found
    assert found["filter"] == {"since": since, "until": until, "speaker": "Priya", "inferred": []}
    # Priya's two lines about the beta, at 10:00 and 10:01:30.
    assert len(found["lines"]) == 2 and all(inside(line, found["filter"]) for line in found["lines"]), found
    # The best match for the dog is Sam's question to Priya; her reply, which shares no word with
    # it, comes back as the reply to the best match.
    status, found = post(daemon, "/search", {"question": "Who is looking after the dog?", "speaker": 2})
    assert [r["text"] for r in found["replies"]] == ["My sister will take Biscuit, she loves that beagle."], found
    # The id as a string is the same speaker; no filter at all is reported as such.
    assert post(daemon, "/search", {"question": "the beta", "speaker": "2"})[1]["filter"]["speaker"] == "Priya"
    assert post(daemon, "/search", {"question": "the beta"})[1]["filter"] == {
        "since": None,
        "until": None,
        "speaker": None,
        "inferred": [],
    }


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"speaker": "Zed"}, 400, "no speaker 'Zed' (known: 1 'Sam', 2 'Priya', 3 'Alex')"),
        ({"speaker": 99}, 400, "no speaker 99"),
        (
            {"since": "2026-11-17", "until": "2026-11-16"},
            400,
            "since (2026-11-17 00:00 JST) must be before until (2026-11-16 00:00 JST)",
        ),
        ({"since": 1_800_000_000, "until": 1_800_000_000}, 400, "must be before until"),
        ({"since": "yesterday"}, 422, "body.since: Value error, 'yesterday' is not a time; give an ISO-8601 date"),
        ({"until": "2026-02-30"}, 422, "body.until: Value error, '2026-02-30' is not a time"),
        ({"since": True}, 422, "body.since: Value error, True is not a time"),
        ({"until": 1e300}, 422, "body.until: Value error, 1e+300 is outside the years 1 to 9999"),
        ({"since": "2" * 65}, 422, "body.since: Value error, a time is at most 64 characters; got 65"),
        ({"speaker": ""}, 422, "body.speaker: Value error, a speaker is a name"),
        ({"speaker": 1.5}, 422, "body.speaker: Value error, a speaker is a name"),
        ({"speaker": 0}, 422, "body.speaker: Value error, a speaker is a name"),
    ],
)
def test_bad_filters_are_refused_with_what_was_wrong(
    daemon: DaemonProcess, body: dict[str, Any], status: int, message: str
) -> None:
    for path in ("/search", "/ask"):
        got, reply = post(daemon, path, {"question": "the trip", **body})
        # /ask refuses before its stream starts: a status and an error, never an error line.
        assert got == status, (path, got, reply)
        assert isinstance(reply, dict) and set(reply) == {"error"}, (path, reply)
        assert message in reply["error"], (path, reply)


def test_push_to_talk_stop_checks_its_limits_too(daemon: DaemonProcess) -> None:
    with daemon.client() as c:
        # Nothing is recording (a file daemon has no microphone): the body is checked first.
        bad = c.post("/push-to-talk/stop", json={"since": "soon"})
        assert bad.status_code == 422 and "body.since" in bad.json()["error"]
        assert c.post("/push-to-talk/stop", json={"speaker": "Sam"}).status_code == 400
        assert c.post("/push-to-talk/stop").status_code == 400


def test_the_schema_describes_the_filter(daemon: DaemonProcess) -> None:
    with daemon.client() as c:
        schema = c.get("/openapi.json").json()
    question = schema["components"]["schemas"]["Question"]["properties"]
    assert {"question", "since", "until", "speaker"} <= question.keys()
    assert "ISO-8601" in question["since"]["description"]
    search_out = schema["components"]["schemas"]["SearchResult"]["properties"]
    assert {"lines", "filter"} <= search_out.keys()


# --- /ask ---------------------------------------------------------------------------------------


def test_ask_limited_to_a_speaker_reports_its_filter(daemon: DaemonProcess) -> None:
    status, lines = post(
        daemon, "/ask", {"question": "Who will look after Biscuit?", "speaker": "Priya", "since": "2026-11-16"}
    )
    assert status == 200, lines
    answer = lines[-1]
    assert answer["type"] == "answer", lines
    assert answer["filter"] == {"since": tokyo("2026-11-16T00:00"), "until": None, "speaker": "Priya", "inferred": []}


# --- the CLI as the daemon's client -------------------------------------------------------------


def cli(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assistant", "--config", str(daemon.config), *args],
        capture_output=True,
        text=True,
        env=daemon.env(),
        timeout=300,
    )


def test_cli_search_and_ask_go_through_the_daemon(daemon: DaemonProcess) -> None:
    args = ["--speaker", "Alex", "--since", "2026-11-16", "--until", "2026-11-18"]
    out = cli(daemon, "search", "--json", *args, "the hotel")
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found == post(daemon, "/search", {"question": "the hotel", "speaker": "Alex", **window()})[1]
    out = cli(daemon, "search", *args, "the hotel")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("limited to Alex, from 2026-11-16 00:00 JST, before 2026-11-18 00:00 JST\n")
    out = cli(daemon, "ask", *args, "How much was the hotel a night?")
    assert out.returncode == 0, out.stderr
    assert "(limited to Alex, from 2026-11-16 00:00 JST, before 2026-11-18 00:00 JST)" in out.stdout
    # The daemon's refusals come back as the CLI's errors.
    refused = cli(daemon, "search", "--speaker", "Zed", "the hotel")
    assert refused.returncode == 4 and "no speaker 'Zed'" in refused.stderr, refused.stderr


def window() -> dict[str, float]:
    return {"since": tokyo("2026-11-16T00:00"), "until": tokyo("2026-11-18T00:00")}


# --- what the filter recalls: the lines the data guarantees -------------------------------------------


def test_search_recalls_the_speakers_own_lines(daemon: DaemonProcess) -> None:
    status, found = post(daemon, "/search", {"question": "the email about the Lisbon trip", "speaker": "Sam"})
    assert status == 200, found
    assert found["lines"], "Sam spoke of the Lisbon trip: /search recalls nothing"
    assert all(line["speaker"] == "Sam" for line in found["lines"]), found["lines"]
    assert any("Lisbon" in line["text"] for line in found["lines"])


def test_an_answers_evidence_keeps_inside_its_filter(daemon: DaemonProcess) -> None:
    status, lines = post(daemon, "/ask", {"question": "Who will look after Biscuit?", "speaker": "Priya"})
    assert status == 200, lines
    answer = lines[-1]
    assert answer["type"] == "answer", lines
    # Priya's own line says who: the answer rests on it, and on nothing outside the filter.
    assert answer["knows"] and answer["evidence"], answer
    assert all(inside(e, answer["filter"]) for e in answer["evidence"]), answer["evidence"]
    assert any("Biscuit" in e["text"] for e in answer["evidence"]), answer["evidence"]
