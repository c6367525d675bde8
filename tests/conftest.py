from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant import locations
from assistant.config import load_settings
from assistant.memory.api import Memory
from assistant.memory.records import Level

# Models are installed once per machine (`assistant models install`); tests read them from the
# real location while everything else they write goes to a temporary directory.
MODELS_DIR = str(locations.default_models_dir())
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev" / "locomo-dev.json"


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
    data_dir: Path, *, mode: str = "extractive", budget: int | dict[str, Any] | None = None, **memory: Any
) -> Memory:
    mem_over: dict[str, Any] = {"distill": {"mode": mode}, **memory}
    if budget is not None:
        mem_over["budget"] = budget if isinstance(budget, dict) else {"token_budget": budget}
    settings = load_settings(user_file=data_dir / "no-user-config.yaml", overrides=overrides(data_dir, memory=mem_over))
    return Memory(settings)


@pytest.fixture
def memory(tmp_path):
    mem = open_memory(tmp_path / "data")
    yield mem
    mem.close()


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
    # The in-process index and sqlite-vec describe the same nodes with the same vectors.
    rows = db.all("SELECT n.id, n.level, v.embedding FROM nodes n JOIN node_vectors v ON v.node_id = n.id")
    assert len(rows) == store.node_count() == db.scalar("SELECT count(*) FROM node_vectors")
    for level in Level:
        ids = sorted(r[0] for r in rows if r[1] == level.value)
        assert sorted(store.index[level].keys()) == ids
    for nid, level, blob in rows:
        assert np.allclose(store.index[Level(level)].get([nid])[0], np.frombuffer(blob, dtype=np.float32), atol=1e-6)
