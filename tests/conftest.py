from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant import locations
from assistant.config import load_settings
from assistant.llm import LOAD_LOG_ENV
from assistant.memory.api import Memory
from assistant.records import Level
from assistant.store.migrations import line_triggers

# Models are installed once per machine (`assistant models install`); tests read them from the
# real location while everything else they write goes to a temporary directory.
MODELS_DIR = str(locations.default_models_dir())


# --- which tests load the LLM's weights ----------------------------------------------------------
# assistant/llm/local.py appends a line to $ASSISTANT_LLM_LOAD_LOG for every load of the weights, in this
# process or in any subprocess (daemons, `assistant ask`), which inherit the variable. A run that
# deselects the slow tests must load none: that is what the `slow` marker promises.

_LOADS: list[str] = []  # a test's node id for each load, in the process that reports (the controller under -n)
_LOG_AT = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    fd, path = tempfile.mkstemp(prefix="assistant-llm-loads-", suffix=".log")
    os.close(fd)
    os.environ[LOAD_LOG_ENV] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    Path(os.environ.pop(LOAD_LOG_ENV, "")).unlink(missing_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    item.stash[_LOG_AT] = Path(os.environ[LOAD_LOG_ENV]).stat().st_size
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "teardown":
        # The loads go with the test's report, so a run split over processes (pytest -n) still
        # counts them where it reports. A module's shared daemon loads during its first test's
        # setup, and counts for that test.
        with Path(os.environ[LOAD_LOG_ENV]).open("rb") as fh:
            fh.seek(item.stash[_LOG_AT])
            report.user_properties.append(("llm_loads", len(fh.read().splitlines())))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for key, value in report.user_properties:
        if key == "llm_loads":
            _LOADS.extend([report.nodeid] * value)


# --- which modules share a process under -n ------------------------------------------------------
# Two LLMs generating at once on the two-core machine take 3.2x as long each as one alone, and one
# thread generates as fast as two (measured 2026-11-28 with llama-cpp-python alone: the 1.5B, two
# chat completions of a 600-token prompt, 11.4 s on two threads, 11.5 s on one, 23.5 s on one
# while the other core runs a Python loop, 36.5 s each for two processes at once): the two cores
# share what bounds it. So the modules that generate most in this process run one after the other
# on one worker, while the other worker takes everything else.
GENERATE_IN_TURN = frozenset(
    f"tests/{name}.py"
    for name in ("test_everyday", "test_digest", "test_answers", "test_bench_locomo", "test_bench_scale")
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class GenerateInTurn(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            # One work unit; --dist loadfile queues units by their number of tests, and this one
            # is among the largest, so a worker takes it at the start.
            return "the modules that generate" if module in GENERATE_IN_TURN else module

    return GenerateInTurn(config, log)


def _no_slow(config: pytest.Config) -> bool:
    # Under -n the controller judges the whole run; a worker sees only its part.
    return "not slow" in (config.option.markexpr or "") and not hasattr(config, "workerinput")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _no_slow(session.config) and _LOADS and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    loads = Counter(_LOADS)
    terminalreporter.write_line(f"LLM weights loaded {sum(loads.values())} times")
    for test, count in loads.most_common():
        terminalreporter.write_line(f"  {count}x {test}")
    if loads and _no_slow(config):
        terminalreporter.write_line("error: -m 'not slow' loaded the LLM: mark those tests slow", red=True)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def overrides(data_dir: Path, **sections: Any) -> dict[str, Any]:
    merged: dict[str, Any] = {"paths": {"data_dir": str(data_dir), "models_dir": MODELS_DIR}}
    for key, value in sections.items():
        merged[key] = value
    return merged


def open_memory(
    data_dir: Path,
    *,
    mode: str = "extractive",
    budget: int | dict[str, Any] | None = None,
    llm: str | None = None,
    distill_llm: str | None = None,
    **memory: Any,
) -> Memory:
    """A memory in `data_dir` with the given `memory:` settings; `llm` and `distill_llm` replace the
    default models (the answering one, and the one that distils)."""
    mem_over: dict[str, Any] = {"distill": {"mode": mode}, **memory}
    if budget is not None:
        mem_over["budget"] = budget if isinstance(budget, dict) else {"token_budget": budget}
    sections: dict[str, Any] = {"memory": mem_over}
    models = {key: value for key, value in (("llm", llm), ("distill_llm", distill_llm)) if value is not None}
    if models:
        sections["models"] = models
    settings = load_settings(user_file=data_dir / "no-user-config.yaml", overrides=overrides(data_dir, **sections))
    return Memory(settings)


@pytest.fixture
def memory(tmp_path):
    mem = open_memory(tmp_path / "data")
    yield mem
    mem.close()


def undo_held_lines(db: Any) -> None:
    """Take a database back to before migration 0007 (the held lines' table), as an older
    assistant left it, triggers included."""
    for (name,) in db.all("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'memory_lines%'"):
        db.execute(f"DROP TRIGGER {name}")
    for statement in line_triggers(held_lines=False):
        db.execute(statement)
    db.execute("DROP TRIGGER held_lines_speaker")
    db.execute("DROP TABLE held_lines")
    db.execute("DELETE FROM migrations WHERE name = '0007_held_lines'")


def check_invariants(mem: Memory) -> None:
    """What must hold after every step, whatever the stream."""
    store = mem.store
    total = store.total_tokens()
    assert total <= mem.settings.memory.budget.token_budget, (total, mem.settings.memory.budget.token_budget)
    db = store.db
    # Parents with no children never survive; only scenes are roots; events hang under scenes.
    assert (
        db.scalar(
            "SELECT count(*) FROM nodes p WHERE level != 'amu' AND NOT EXISTS "
            "(SELECT 1 FROM nodes c WHERE c.parent_id = p.id)"
        )
        == 0
    )
    assert (
        db.scalar(
            "SELECT count(*) FROM nodes c JOIN nodes p ON p.id = c.parent_id WHERE "
            "(c.level = 'event' AND p.level != 'scene') OR (c.level = 'amu' AND p.level != 'event')"
        )
        == 0
    )
    # Provenance points at archived utterances, and every event and unit has some.
    assert (
        db.scalar(
            "SELECT count(*) FROM node_sources s LEFT JOIN utterances u ON u.id = s.utterance_id WHERE u.id IS NULL"
        )
        == 0
    )
    assert (
        db.scalar(
            "SELECT count(*) FROM nodes n WHERE level != 'scene' AND NOT EXISTS "
            "(SELECT 1 FROM node_sources s WHERE s.node_id = n.id)"
        )
        == 0
    )
    assert db.scalar("PRAGMA foreign_key_check") is None
    # The lexical index holds exactly the lines the memory holds: those the tree rests on and
    # those its buffers hold, each once, with the archived words.
    held = {
        r[0]
        for r in db.all(
            "SELECT utterance_id FROM node_sources UNION SELECT utterance_id FROM stsb "
            "UNION SELECT utterance_id FROM pending_utterances"
        )
    }
    indexed = db.all("SELECT m.rowid, m.text, u.text FROM memory_lines m LEFT JOIN utterances u ON u.id = m.rowid")
    assert sorted(r[0] for r in indexed) == sorted(held)
    assert all(r[1] == r[2] for r in indexed)
    # ... and so does the table that narrows them by speaker and time, with the archive's values.
    narrowed = db.all(
        "SELECT h.utterance_id, h.speaker_id = u.speaker_id AND h.time = u.time FROM held_lines h "
        "LEFT JOIN utterances u ON u.id = h.utterance_id"
    )
    assert sorted(r[0] for r in narrowed) == sorted(held)
    assert all(r[1] for r in narrowed)
    # The in-process index and sqlite-vec describe the same nodes with the same vectors.
    rows = db.all("SELECT n.id, n.level, v.embedding FROM nodes n JOIN node_vectors v ON v.node_id = n.id")
    assert len(rows) == store.node_count() == db.scalar("SELECT count(*) FROM node_vectors")
    for level in Level:
        ids = sorted(r[0] for r in rows if r[1] == level.value)
        assert sorted(store.index[level].keys()) == ids
    for nid, level, blob in rows:
        assert np.allclose(store.index[Level(level)].get([nid])[0], np.frombuffer(blob, dtype=np.float32), atol=1e-6)
