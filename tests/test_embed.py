"""The sentence embedder under onnxruntime gives sentence-transformers' vectors, and falls back to it."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from assistant.config import load_settings
from assistant.embed import Embedder, OnnxEmbedder, load_embedder, onnx_file, onnx_layout, prepare_onnx
from assistant.models import resolve

from .conftest import overrides

# Lengths on both sides of a batch's padding, words the tokenizer splits, and a text longer than
# the model's 256 tokens (truncated the same way by both).
TEXTS = [
    "We fly out on the fourteenth of May and come back on the nineteenth.",
    "Zoë found a flat in Málaga for 1.450 € a month, near the Ærø ferry office.",
    "",
    "ok",
    "The boiler man said the cause of the leak is unknown; he comes back Tuesday at 8:30. " * 25,
    "Priya's sister will take Biscuit while we're away.",
] * 7  # 42: more than one batch of 32, mixed lengths in each


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("embed")
    settings = load_settings(user_file=root / "no-user-config.yaml", overrides=overrides(root))
    path = resolve(settings, "embedder").path
    assert path is not None and path.is_dir()
    return path


def test_onnx_gives_the_vectors_sentence_transformers_gives(model_dir: Path, tmp_path: Path):
    exported = prepare_onnx(model_dir, tmp_path)
    assert exported == onnx_file(model_dir, tmp_path) and exported.is_file()
    layout = onnx_layout(model_dir)
    assert layout is not None and layout.pooling == "mean" and layout.max_tokens == 256

    onnx = OnnxEmbedder(model_dir, exported, layout, threads=1)
    torch = Embedder(str(model_dir), device="cpu", threads=1)
    assert onnx.dim == torch.dim == 384
    got, want = onnx.encode(TEXTS, batch_size=32), torch.encode(TEXTS, batch_size=32)
    assert got.dtype == np.float32 and got.shape == want.shape == (len(TEXTS), 384)
    assert np.abs(got - want).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # One at a time gives what a batch gives: padding changes nothing.
    assert np.abs(onnx.encode_one(TEXTS[1]) - got[1]).max() < 1e-5
    assert onnx.encode([]).shape == (0, 384)

    # Made once: a second prepare finds it; other weights (a changed file) get a file of their own.
    stamp = exported.stat().st_mtime_ns
    assert prepare_onnx(model_dir, tmp_path) == exported and exported.stat().st_mtime_ns == stamp
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    assert onnx_file(copy, tmp_path) != exported


def _variant(model_dir: Path, root: Path, change: str) -> Path:
    """A copy of the model whose modules differ as `change` says."""
    copy = root / change
    shutil.copytree(model_dir, copy)
    modules = json.loads((copy / "modules.json").read_text())
    if change == "dense":
        modules.insert(2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    elif change == "max-pooling":
        pooling = copy / modules[1]["path"] / "config.json"
        config = json.loads(pooling.read_text())
        config.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
        pooling.write_text(json.dumps(config))
    elif change == "no-fast-tokenizer":
        (copy / "tokenizer.json").unlink()
    (copy / "modules.json").write_text(json.dumps(modules))
    return copy


@pytest.mark.parametrize("change", ["dense", "max-pooling", "no-fast-tokenizer"])
def test_a_layout_onnx_would_not_reproduce_is_left_to_sentence_transformers(model_dir, tmp_path, change):
    variant = _variant(model_dir, tmp_path, change)
    assert onnx_layout(variant) is None
    assert prepare_onnx(variant, tmp_path / "exports") is None
    assert not (tmp_path / "exports").exists()


def test_without_an_export_it_still_loads_with_torch(model_dir, tmp_path, caplog):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the exports would go")
    with caplog.at_level(logging.WARNING, logger="assistant.embed"):
        embedder = load_embedder.__wrapped__(str(model_dir), "cpu", 1, blocked)
    assert isinstance(embedder, Embedder)
    assert "loading it with torch" in caplog.text
    assert embedder.encode(["hello"]).shape == (1, 384)
