"""The real daemon, as systemd runs it: a subprocess on a file source, talked to over its socket."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from assistant.bench.synth_speech import silence, sox
from assistant.store.db import _sqlite_module

from .daemon_helpers import (
    PART_ONE,
    PART_TWO,
    Transcript,
    daemon_config,
    kill_leftovers,
    make_recording,
    settled,
)

SAMPLE = Path(__file__).resolve().parents[1] / "assistant" / "data" / "sample_conversation.jsonl"


@pytest.fixture(autouse=True)
def _no_daemon_left_behind():
    yield
    kill_leftovers()


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    root = tmp_path_factory.mktemp("daemon-audio")
    return make_recording(root / "one", PART_ONE), make_recording(root / "two", PART_TWO)


@pytest.fixture(scope="module")
def running(tmp_path_factory, recordings):
    """One daemon for the tests that only talk to it (security, errors, the API description)."""
    d = daemon_config(tmp_path_factory.mktemp("daemon"), extra="  max_body_bytes: 4096\n")
    d.shared = True
    d.start(recordings[1])
    yield d
    assert d.stop() == 0, d.log.read_text()


def _stored(data_dir: Path) -> dict[int, str]:
    # A second connection, read-only, as any reader of a WAL database may have.
    db = _sqlite_module().connect(f"file:{data_dir / 'memory.db'}?mode=ro", uri=True)
    try:
        return {row[0]: row[1] for row in db.execute("SELECT id, text FROM utterances")}
    finally:
        db.close()


@pytest.mark.slow
def test_sigkill_mid_ingest_loses_nothing_acknowledged(tmp_path, recordings):
    one, two = recordings
    # A small budget, so the restart must also keep the memory within it.
    d = daemon_config(tmp_path / "d", budget=120)
    d.start(one)
    transcript = Transcript(d)
    transcript.wait(3)
    d.kill()  # SIGKILL: no chance to flush or spool anything
    transcript.close()
    acknowledged = {e["utterance_id"]: e["text"] for e in transcript.events}
    assert len(acknowledged) >= 3

    # Every utterance a client saw is in the database, word for word.
    stored = _stored(d.data_dir)
    for uid, text in acknowledged.items():
        assert stored.get(uid) == text, (uid, text, stored)

    d.start(two)
    s = d.wait_for(settled, "the second part")
    assert s["memory"]["tokens"] <= s["memory"]["token_budget"] == 120
    stored = _stored(d.data_dir)
    for uid, text in acknowledged.items():
        assert stored.get(uid) == text
    # The second part was heard too, and nothing was stored twice.
    assert any("Italian restaurant" in t for t in stored.values())
    assert len(set(stored.values())) == len(stored)
    # What the memory controls after the crash: the line heard after the restart is recalled first,
    # and the answer rests on recalled lines. Which of two dated lines the 0.5B then reads the day
    # from changes with the weekday the test runs on (on a Friday it read "by Thursday (3 December)"
    # beside "Friday evening (4 December)"); the benchmarks measure that, and test_llm_daemon asks
    # the same question of the whole conversation.
    question = "When will we book a table for?"
    with d.client() as c:
        found = c.post("/search", json={"question": question}).json()
        reply = c.post("/ask", json={"question": question})
        lines = [json.loads(line) for line in reply.iter_lines()]
    assert "book a table for Friday" in found["lines"][0]["text"], found["lines"]
    answer = lines[-1]
    assert answer["type"] == "answer" and answer["knows"] and answer["evidence"], lines
    assert {e["utterance_id"] for e in answer["evidence"]} <= {line["utterance_id"] for line in found["lines"]}
    assert d.stop() == 0


# A word of each of PART_ONE's turns that whisper spells one way (not "fourteenth", at times "14th").
PART_ONE_WORDS = ("lisbon", "fly", "slides", "finance", "looking", "sister")


def _turns_stored(data_dir: Path) -> dict[str, int]:
    """How many stored utterances hold each turn's word."""
    texts = [set(re.findall(r"[a-z]+", t.lower())) for t in _stored(data_dir).values()]
    return {w: sum(w in t for t in texts) for w in PART_ONE_WORDS}


@pytest.mark.slow
def test_sigterm_spools_what_is_left_and_the_next_start_files_it(tmp_path, recordings):
    one, _ = recordings
    # Raw PCM on stdin is read as fast as it comes, so the six turns are cut into segments in well
    # under a second while each takes whisper a second or more: with room for one segment in
    # memory, the rest wait on disk, and a stop with no time to file anything must spool them all.
    pcm = tmp_path / "one.raw"
    sox(one, "-t", "raw", "-e", "signed", "-b", "16", "-r", "16000", "-c", "1", pcm)
    d = daemon_config(tmp_path / "d", extra="  queue_segments: 1\n  stop_seconds: 0\n")
    d.start(stdin=pcm)
    d.wait_for(lambda s: s["spooled_segments"] >= 2, "segments to wait on disk", timeout=60)
    started = time.monotonic()
    assert d.stop(timeout=30) == 0
    assert time.monotonic() - started < 30  # systemd's TimeoutStopSec
    log = d.log.read_text()
    assert "stopped" in log and "Traceback" not in log
    spooled = sorted((d.data_dir / "spool").glob("*.wav"))
    assert len(spooled) >= 2, log
    before = _turns_stored(d.data_dir)
    assert 0 in before.values(), before  # some turns exist only in the spool

    # The next start (on a second of silence) transcribes the spool first, then deletes it.
    d.start(silence(tmp_path / "quiet.wav", 1.0))
    d.wait_for(lambda s: settled(s) and s["spooled_segments"] == 0, "the spool to drain")
    assert not list((d.data_dir / "spool").glob("*.wav"))
    assert "spooled speech segment(s) from the last run will be transcribed first" in d.log.read_text()
    # Every turn's words are stored, once: nothing lost, nothing filed twice.
    assert _turns_stored(d.data_dir) == dict.fromkeys(PART_ONE_WORDS, 1), _stored(d.data_dir)
    assert d.stop() == 0


@pytest.mark.slow
def test_sighup_reloads_the_config_and_a_bad_one_changes_nothing(running):
    before = running.status()["memory"]["token_budget"]
    original = running.config.read_text()
    try:
        running.config.write_text(original + "  idle_flush_seconds: 30\nmemory:\n  budget:\n    token_budget: 5000\n")
        running.signal(signal.SIGHUP)
        running.wait_for(lambda s: s["memory"]["token_budget"] == 5000, "the reload", timeout=30)
        running.config.write_text(original + "memory:\n  budget:\n    token_budget: -3\n")
        running.signal(signal.SIGHUP)
        time.sleep(2)
        assert running.status()["memory"]["token_budget"] == 5000
        assert "token_budget must be at least 1" in running.log.read_text()
    finally:
        running.config.write_text(original)
        running.signal(signal.SIGHUP)
        running.wait_for(lambda s: s["memory"]["token_budget"] == before, "the restore", timeout=30)


@pytest.mark.slow
def test_socket_is_private_to_its_owner(running):
    mode = stat.S_IMODE(running.socket.stat().st_mode)
    assert mode == 0o600
    assert stat.S_IMODE(running.socket.parent.stat().st_mode) == 0o700
    if os.getuid() != 0:
        return  # only root can try as another user; the modes above are what refuse them
    # A child that becomes `nobody` and tries to connect (the venv's python is not theirs to run,
    # so fork rather than exec; the child only makes system calls, then leaves with os._exit).
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(running.socket))
            code = 0
        except PermissionError:
            code = 13
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 13


@pytest.mark.slow
def test_bad_requests_get_4xx_with_a_message(running):
    with running.client() as c:
        huge = c.post(
            "/ask", content=b'{"question": "' + b"x" * 10_000 + b'"}', headers={"content-type": "application/json"}
        )
        assert huge.status_code == 413 and "limit" in huge.json()["error"]

        def chunks():
            for _ in range(10):
                yield b"x" * 1000

        streamed = c.post("/ask", content=chunks(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413
        bad_json = c.post("/ask", content=b"{oops", headers={"content-type": "application/json"})
        assert bad_json.status_code == 422 and "error" in bad_json.json()
        empty = c.post("/ask", json={"question": "   "})
        assert empty.status_code == 400 and "empty" in empty.json()["error"]
        assert c.post("/speakers/nobody-here/name", json={"name": "X"}).status_code == 400
        assert c.post("/speakers/1/name", json={"name": ""}).status_code == 422
        assert c.delete("/memory/nodes/999999").status_code == 400
        assert c.get("/no/such/route").status_code == 404
        assert c.post("/push-to-talk/stop").status_code == 400  # not recording
        assert c.post("/push-to-talk/start").status_code == 400  # a file source has no microphone
        assert c.get("/status").status_code == 200  # and it is still up


@pytest.mark.slow
def test_tcp_listener_needs_the_token(tmp_path, recordings):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "t0ken-for-the-test-1234"
    d = daemon_config(tmp_path / "d", extra=f"  tcp:\n    enabled: true\n    port: {port}\n    token: {token}\n")
    d.start(recordings[1])
    try:
        url = f"http://127.0.0.1:{port}/status"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(url, headers={"Authorization": f"Bearer {token}"}).status_code == 200
    finally:
        assert d.stop() == 0


@pytest.mark.slow
def test_cli_is_a_client_of_the_daemon(running):
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "assistant", "--config", str(running.config), *args],
            capture_output=True,
            text=True,
            env=running.env(),
            timeout=120,
        )

    out = cli("status")
    assert out.returncode == 0, out.stderr
    assert "memory:" in out.stdout and "/ " in out.stdout
    assert "paused" in cli("pause").stdout
    assert running.status()["state"] == "paused" and running.status()["paused"] is True
    assert (running.data_dir / "paused").exists()  # kept across a restart
    # Resumed: no longer paused, so listening, or done if its recording has ended meanwhile.
    resumed = cli("resume").stdout
    state = running.status()
    assert state["paused"] is False and state["state"] in ("listening", "source ended"), state
    assert resumed in ("the daemon is listening\n", "the daemon is source ended\n"), resumed
    assert not (running.data_dir / "paused").exists()  # the next start listens too
    # The database belongs to the daemon: a command that would write it directly refuses (the
    # others, `delete` among them, go through the daemon).
    refused = cli("ingest", str(SAMPLE))
    assert refused.returncode == 4 and "stop the daemon first" in refused.stderr


def test_cli_without_a_daemon_says_how_to_start_one(tmp_path):
    d = daemon_config(tmp_path / "d")
    out = subprocess.run(
        [sys.executable, "-m", "assistant", "--config", str(d.config), "status"],
        capture_output=True,
        text=True,
        env=d.env(),
        timeout=60,
    )
    assert out.returncode == 6
    assert "no daemon is running" in out.stderr and "assistant daemon" in out.stderr
    # Pausing with no daemon is remembered for its next start.
    out = subprocess.run(
        [sys.executable, "-m", "assistant", "--config", str(d.config), "pause"],
        capture_output=True,
        text=True,
        env=d.env(),
        timeout=60,
    )
    assert out.returncode == 0 and (d.data_dir / "paused").exists()


@pytest.mark.slow
def test_a_second_daemon_on_the_same_data_is_refused(running, recordings):
    second = subprocess.run(
        [sys.executable, "-m", "assistant", "--config", str(running.config), "daemon", "--source", str(recordings[1])],
        capture_output=True,
        text=True,
        env=running.env(),
        timeout=120,
    )
    assert second.returncode == 6
    assert "already uses" in second.stderr
    assert running.status()["state"] in ("listening", "source ended")
