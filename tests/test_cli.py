"""The `assistant` command, run as a user would: real files, real models (in this process, see cli_runner)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .cli_runner import assistant
from .conftest import MODELS_DIR
from .requirements import LOCOMO_MALFORMED, LOCOMO_MINI

ROOT = Path(__file__).resolve().parents[1]


def run(
    args: list[str], tmp_path: Path, *, extra_config: str = "", process: bool = False
) -> subprocess.CompletedProcess[str]:
    """`assistant ARGS` on a data directory in `tmp_path`, extractive (see cli_runner for `process`)."""
    config = tmp_path / "cli-config.yaml"
    config.write_text(
        f"paths:\n  data_dir: {tmp_path / 'data'}\n  models_dir: {MODELS_DIR}\n"
        "memory:\n  distill:\n    mode: extractive\n" + extra_config
    )
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HF_HUB_OFFLINE": "1"}
    return assistant(["--config", str(config), *args], cwd=tmp_path, env=env, process=process)


def before_citations(printed: str) -> str:
    """An answer as `assistant ask` prints it, without the lines it cites ("  └ who, when: words")."""
    return printed.split("\n  \u2514 ", 1)[0].strip()


def test_ingest_then_memory_tree(tmp_path):
    sample = ROOT / "assistant" / "data" / "sample_conversation.jsonl"
    out = run(["ingest", str(sample)], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "22 utterances remembered" in out.stdout
    tree = run(["memory"], tmp_path)
    assert tree.returncode == 0, tree.stderr
    assert "/ 32,768 tokens" in tree.stdout and "Lisbon" in tree.stdout


def test_malformed_row_names_the_line_and_stores_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"speaker": "A", "text": "fine", "time": 1}) + "\n{oops\n")
    out = run(["ingest", str(bad)], tmp_path)
    assert out.returncode == 4
    assert f"error: {bad}:2: not valid JSON" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "data" / "memory.db").exists()


def test_missing_file_and_bad_config_are_clear_errors(tmp_path):
    out = run(["ingest", str(tmp_path / "nope.jsonl")], tmp_path)
    assert out.returncode == 4 and "no such file" in out.stderr
    out = run(["memory"], tmp_path, extra_config="  budget:\n    token_budget: -1\n")
    assert out.returncode == 2
    assert "cli-config.yaml:8: memory.budget.token_budget must be at least 1" in out.stderr


def test_only_selects_locomo_conversations(tmp_path):
    out = run(["ingest", str(LOCOMO_MINI), "--only", "conv-99"], tmp_path)
    assert out.returncode == 4, out.stderr
    assert f"error: {LOCOMO_MINI}: no conversation named conv-99 (it has mini-1, mini-2)" in out.stderr
    assert not (tmp_path / "data" / "memory.db").exists()
    out = run(["ingest", str(LOCOMO_MINI), "--only", "mini-2"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "mini-2: 6 utterances remembered" in out.stdout and "mini-1" not in out.stdout
    tree = run(["memory"], tmp_path)
    assert "6 utterances" in tree.stdout and "pottery" not in tree.stdout.lower()


def test_a_malformed_locomo_file_names_where_and_stores_nothing(tmp_path):
    out = run(["ingest", str(LOCOMO_MALFORMED)], tmp_path)
    assert out.returncode == 4
    assert f"error: {LOCOMO_MALFORMED} sample 0 session_2_date_time: session date 'the Sunday after'" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "data" / "memory.db").exists()


def test_models_status_lists_the_defaults(tmp_path):
    out = run(["models", "status"], tmp_path)
    assert out.returncode == 0, out.stderr
    for name in ("qwen2.5-coder-1.5b-instruct-q4km", "all-minilm-l6-v2", "en-core-web-sm"):
        assert name in out.stdout


def test_a_missing_model_says_how_to_get_it(tmp_path):
    empty = tmp_path / "no-models"
    empty.mkdir()
    config = tmp_path / "missing.yaml"
    config.write_text(f"paths:\n  data_dir: {tmp_path / 'data'}\n  models_dir: {empty}\n")
    out = subprocess.run(
        [sys.executable, "-m", "assistant", "--config", str(config), "memory"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HF_HUB_OFFLINE": "1"},
    )
    assert out.returncode == 3, out.stderr
    assert "assistant models install" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_ask_streams_an_answer_with_evidence(tmp_path):
    sample = ROOT / "assistant" / "data" / "sample_conversation.jsonl"
    assert run(["ingest", str(sample)], tmp_path).returncode == 0
    out = run(["ask", "--timings", "What is Priya allergic to?"], tmp_path)
    assert out.returncode == 0, out.stderr
    answer = before_citations(out.stdout)
    assert "peanut" in answer.lower(), out.stdout
    assert "\n  \u2514 Priya, 2026-11-16 12:31" in out.stdout[len(answer) :]
    assert "retrieval" in out.stderr and "context" in out.stderr
