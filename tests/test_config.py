from pathlib import Path

import pytest

from assistant.config import default_config_path, load_settings
from assistant.errors import ConfigError


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "config.yaml"
    p.write_text(text)
    return p


def test_defaults_hold_the_paper_parameters(tmp_path):
    s = load_settings(user_file=tmp_path / "absent.yaml")
    assert s.memory.stsb.drift_threshold == 0.7
    assert s.memory.stsb.capacity == 5
    assert s.memory.stsb.leading_window == 10
    assert s.memory.distill.concept_threshold == 0.85
    assert (s.memory.utility.alpha, s.memory.utility.beta) == (0.6, 0.4)
    assert (s.memory.retrieval.top_scenes, s.memory.retrieval.top_events, s.memory.retrieval.top_amus) == (5, 10, 3)
    assert s.memory.retrieval.min_similarity == 0.5


def test_every_default_knob_is_documented():
    """Each key in default.yaml has a comment in the lines just above it (its one home)."""
    lines = default_config_path().read_text().splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.endswith(":"):
            continue
        above = [ln.strip() for ln in lines[max(0, i - 12) : i]]
        # Knobs documented as a group share the comment above the group.
        assert any(a.startswith("#") for a in above), f"undocumented knob at line {i + 1}: {stripped}"


def test_user_file_and_config_file_layer(tmp_path, monkeypatch):
    user = tmp_path / "user.yaml"
    user.write_text("memory:\n  budget:\n    token_budget: 500\n")
    extra = _write(tmp_path, "memory:\n  stsb:\n    capacity: 7\n")
    s = load_settings(extra, user_file=user)
    assert s.memory.budget.token_budget == 500
    assert s.memory.stsb.capacity == 7
    assert s.memory.stsb.drift_threshold == 0.7


def test_xdg_config_home_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "assistant").mkdir()
    (tmp_path / "assistant" / "config.yaml").write_text("memory:\n  budget:\n    token_budget: 777\n")
    assert load_settings().memory.budget.token_budget == 777


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("memory:\n  budget:\n    token_budget: -5\n", "config.yaml:3: memory.budget.token_budget must be at least 1"),
        (
            "memory:\n  stsb:\n    drift_threshold: 1.5\n",
            "config.yaml:3: memory.stsb.drift_threshold must be at most 1",
        ),
        ("memory:\n  stsb:\n    capacity: five\n", "config.yaml:3: memory.stsb.capacity must be int"),
        ("memory:\n  stsbb:\n    capacity: 5\n", "config.yaml:2: unknown key 'memory.stsbb'"),
        ("llm:\n  device: tpu\n", "config.yaml:2: llm.device must be one of auto, cpu, cuda"),
        ("memory: [1, 2]\n", "memory must be a mapping"),
        ("memory:\n  stsb: {capacity: 3, min_block: 4}\n", "min_block (4) cannot exceed memory.stsb.capacity (3)"),
        ("memory:\n  budget:\n    token_budget: true\n", "must be int, got bool"),
        ("llm: {n_ctx: 512}\nmemory: {answer: {context_tokens: 500}}\n", "must fit in llm.n_ctx"),
        ("memory:\n  budget: {\n", "invalid YAML"),
    ],
)
def test_bad_values_are_refused_with_file_line_and_key(tmp_path, text, needle):
    with pytest.raises(ConfigError) as info:
        load_settings(_write(tmp_path, text), user_file=tmp_path / "absent.yaml")
    assert needle in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="configuration file not found"):
        load_settings(tmp_path / "nope.yaml", user_file=tmp_path / "absent.yaml")


def test_overrides_are_validated_too(tmp_path):
    with pytest.raises(ConfigError, match=r"memory\.budget\.token_budget must be at least 1"):
        load_settings(user_file=tmp_path / "absent.yaml", overrides={"memory": {"budget": {"token_budget": 0}}})
