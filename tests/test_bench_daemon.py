"""`assistant bench daemon`, run for real on a short recording with a few clients."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MODELS_DIR


@pytest.mark.slow
def test_bench_daemon_measures_a_real_daemon_with_and_without_load(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    # The conftest points XDG_DATA_HOME at a temporary directory; the models stay where they are.
    config.write_text(f"paths:\n  models_dir: {MODELS_DIR}\n")
    out, md, keep = tmp_path / "daemon.json", tmp_path / "daemon.md", tmp_path / "work"
    args = [sys.executable, "-m", "assistant", "--config", str(config), "bench", "daemon"]
    args += ["--clients", "3", "--questions-per-client", "1", "--turns", "4", "--slow-interval", "1"]
    args += ["--keep", str(keep), "--json", str(out), "--markdown", str(md)]
    # Its own session: the bench starts its daemons as its children, and if this test gives up on
    # it, the whole group (bench and daemons, and nothing else) is ended below.
    bench = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = bench.communicate(timeout=900)
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
            bench.wait()
    text = output.decode(errors="replace")
    assert bench.returncode == 0, text[-5000:]
    assert "# Daemon under load" in text and md.read_text().startswith("# Daemon under load")

    report = json.loads(out.read_text())
    assert report["format"] == "assistant-bench-daemon/1"
    meta = report["meta"]
    assert (meta["clients"], meta["questions_per_client"], meta["turns"]) == (3, 1, 4)
    assert meta["llm"] == "qwen2.5-coder-0.5b-instruct" and meta["cpus"] >= 1
    assert "bench daemon" in meta["command"] and meta["audio_seconds"] > 5

    idle, loaded = report["passes"]["idle"], report["passes"]["load"]
    for run in (idle, loaded):
        ingest = run["ingest"]
        # Clean synthetic speech with pauses between turns: every turn is heard and acknowledged.
        assert ingest["turns"] == 4 and ingest["missed_turns"] == [], ingest
        assert ingest["acknowledged_utterances"] >= 4
        for d in ingest["delays"]:
            # Acknowledged after the turn ended (at least the VAD's hangover), and not absurdly late.
            assert 0.3 < d["delay"] < 120, d
        assert 0 < ingest["delay"]["p50"] <= ingest["delay"]["p95"] <= ingest["delay"]["max"]
        status = run["status"]
        assert status["polls"] > 5 and status["failed_polls"] == 0
        assert status["lag_max"] >= 0 and status["queued_max"] >= 0
        daemon = run["daemon"]
        # Whisper, the embedder, spaCy and the LLM are loaded: hundreds of MiB at least.
        assert 200 < daemon["rss_mib"] <= daemon["peak_rss_mib"]
        assert daemon["utterances"] >= 4 and daemon["speakers"] >= 1
        assert run["live_stream_error"] is None
    assert "load" not in idle and "slow_subscriber" not in idle

    load = loaded["load"]
    assert (load["asked"], load["answered"], load["error_count"]) == (3, 3, 0), load
    assert load["started_at"] > 0 and load["seconds"] > 0
    assert 0 < load["first_token"]["p50"] <= load["answer"]["p50"]
    assert load["first_token"]["n"] == load["answer"]["n"] == 3
    for ask in load["asks"]:
        assert ask["question"] and ask["text"] and 0 < ask["first_token"] <= ask["answer"]
    slow = loaded["slow_subscriber"]
    assert slow["complete"] and slow["expected"] == loaded["ingest"]["acknowledged_utterances"]
    assert slow["lines"] + slow["skipped"] >= slow["expected"] and slow["error"] is None

    comparison = report["comparison"]
    assert comparison["missed_turns_idle"] == comparison["missed_turns_load"] == 0
    assert comparison["stalled"] is False
    assert comparison["lag_max_load"] == loaded["status"]["lag_max"]
    # The same recording both times, so the same turns (and ends of speech) are compared.
    ends = [(t["index"], t["end"]) for t in report["recording"]]
    assert [(d["index"], d["end"]) for d in idle["ingest"]["delays"]] == ends
    assert [(d["index"], d["end"]) for d in loaded["ingest"]["delays"]] == ends
    # Each pass kept its daemon's log, and neither daemon failed inside.
    for name in ("idle", "load"):
        log = (keep / name / "daemon.log").read_text()
        assert "stopped" in log and "Traceback" not in log
