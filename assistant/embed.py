"""The sentence embedder (f_Enc): text in, unit vectors out. Loaded once per process.

On the CPU, a sentence-transformers model of the common layout (a transformer, then mean or CLS
pooling) runs under onnxruntime. It is exported once from the same weights into the models
directory and gives the same vectors (within 1e-6). It loads in 0.3 s; importing torch,
transformers and sentence-transformers takes 4-6 s on 2 cores, paid by every process that encodes
(the daemon at each start, a CLI `ask`). Other layouts, hub ids and a GPU load with
sentence-transformers, as does a machine where the export fails.

The export's naming, writing and loading (`keyed_export`, `write_onnx`, `onnx_session`) serve the
speaker encoder's export too (speech/ge2e.py).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .atomic import atomic_bytes
from .devices import pick_device
from .errors import ModelError

if TYPE_CHECKING:
    import onnxruntime as ort
    import torch

log = logging.getLogger(__name__)

# Part of the exported file's name: a change to how the export is made makes a new one.
_EXPORT_FORMAT = "1"
_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "config.json", "tokenizer.json")


class TextEncoder(Protocol):
    """What the memory asks of an embedder: unit vectors of a known size."""

    @property
    def dim(self) -> int: ...

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray: ...

    def encode_one(self, text: str) -> np.ndarray: ...


class Embedder:
    """A sentence-transformers model that returns L2-normalised float32 rows (cosine = dot).

    What loads a hub id, a layout the ONNX path does not cover, or a model on a GPU.
    """

    def __init__(self, source: str, *, device: str = "cpu", threads: int = 0) -> None:
        # A local directory must never trigger a hub lookup; a hub id is the user's explicit choice.
        if os.path.isdir(source):
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # a weights progress bar on every start is noise in a CLI
            if device == "auto":
                device = "cuda" if torch.cuda.is_available() else "cpu"
            if threads and device == "cpu":
                torch.set_num_threads(threads)

            self._model = SentenceTransformer(source, device=device)
        except Exception as exc:
            raise ModelError(
                f"cannot load the sentence embedder {source!r}: {exc}. "
                f"`assistant models install` installs the default one"
            ) from exc
        self.name = source
        self.device = device
        getter = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = getter()
        self.dim = int(dim) if dim else int(self.encode(["probe"]).shape[1])
        # torch modules are not safe to call from several threads at once.
        self._lock = threading.Lock()

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        with getattr(self, "_lock", threading.Lock()):
            vectors = self._model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return np.asarray(vectors, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


@dataclass(frozen=True)
class OnnxLayout:
    """What the ONNX path must reproduce of a sentence-transformers model's modules."""

    pooling: str  # "mean" over the unpadded tokens, or the first ("cls") token
    max_tokens: int  # sentence-transformers' max_seq_length: longer texts are truncated


def onnx_layout(model_dir: Path) -> OnnxLayout | None:
    """The layout, when `model_dir` is a sentence-transformers model the ONNX path reproduces exactly.

    That is a transformer and a pooling module, optionally followed by normalisation (vectors are
    normalised here in any case), with a fast tokenizer's `tokenizer.json`. Anything else (a dense
    projection, max pooling, a custom module) is None: sentence-transformers loads it.
    """
    try:
        modules = json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))
        types = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
        if types[:2] != ["Transformer", "Pooling"] or any(t != "Normalize" for t in types[2:]):
            return None
        pooling = json.loads((model_dir / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
        config = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v is True}
    chosen = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}
    if len(modes) != 1 or (mode := chosen.get(modes.pop())) is None:
        return None
    if not (model_dir / "tokenizer.json").is_file() or not isinstance(config.get("max_seq_length"), int):
        return None
    return OnnxLayout(mode, config["max_seq_length"])


def export_dir(models_dir: Path) -> Path:
    """Where exports are kept: beside the installed models (`paths.models_dir`), a place the user
    writes to, where the packaged weights' own directory may not be."""
    return models_dir / "onnx"


def keyed_export(cache_dir: Path, kind: str, version: str, source: Path, files: Iterable[Path]) -> Path:
    """Where the export of `source` lives in `cache_dir`: named by the export format's `version`,
    `source`'s resolved path and the size and mtime of each of `files` that exists, so another model,
    these weights replaced, or a change to how exports are made gets a file of its own."""
    key = hashlib.sha256(f"{version}\0{source.resolve()}".encode())
    for path in files:
        if path.is_file():
            stat = path.stat()
            key.update(f"\0{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return cache_dir / f"{kind}-{key.hexdigest()[:16]}.onnx"


def onnx_file(model_dir: Path, cache_dir: Path) -> Path:
    """Where `model_dir`'s export lives (`keyed_export`)."""
    return keyed_export(cache_dir, "embedder", _EXPORT_FORMAT, model_dir, [model_dir / name for name in _WEIGHTS])


def write_onnx(
    module: torch.nn.Module,
    sample: tuple[torch.Tensor, ...],
    path: Path,
    *,
    input_names: list[str],
    output_names: list[str],
    dynamic_axes: dict[str, dict[int, str]],
) -> Path:
    """Export `module`, traced on `sample`, to `path` (with torch, once); written whole or not at all."""
    import torch

    graph = io.BytesIO()
    # The tracer warns that shapes and checks become constants, and torch that this exporter is the
    # legacy one; the graphs still take any size along `dynamic_axes` (the tests compare each with
    # its torch model).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, sample, graph, input_names=input_names, output_names=output_names,
            dynamic_axes=dynamic_axes, opset_version=17, dynamo=False,
        )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_bytes(path) as fh:
        fh.write(graph.getvalue())
    return path


def onnx_session(path: Path, threads: int = 0) -> ort.InferenceSession:
    """An onnxruntime session on the CPU; `threads` 0 leaves onnxruntime's default (a thread per core)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # its warnings about unused initialisers are noise here
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def export_onnx(model_dir: Path, path: Path) -> Path:
    """Export the transformer's token states to `path` (with torch, once); written whole or not at all."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    names = ["input_ids", "attention_mask"]
    if getattr(model.config, "type_vocab_size", 0):
        names.append("token_type_ids")

    class TokenStates(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, inputs, strict=True))).last_hidden_state

    sample = tuple(torch.ones((2, 8), dtype=torch.long) for _ in names)
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "states"]}
    return write_onnx(TokenStates(), sample, path, input_names=names, output_names=["states"], dynamic_axes=axes)


def prepare_onnx(model_dir: Path, cache_dir: Path) -> Path | None:
    """The export for `model_dir`, made now if it is missing; None when the layout is not covered."""
    if onnx_layout(model_dir) is None:
        return None
    path = onnx_file(model_dir, cache_dir)
    if not path.is_file():
        log.info("exporting the sentence embedder %s to %s (once)", model_dir, path)
        export_onnx(model_dir, path)
    return path


class OnnxEmbedder:
    """A sentence-transformers model run under onnxruntime: the same vectors, without torch."""

    def __init__(self, model_dir: Path, path: Path, layout: OnnxLayout, *, threads: int = 0) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(layout.max_tokens)
        self._tokenizer.no_padding()
        self._session = onnx_session(path, threads)
        self._inputs = [i.name for i in self._session.get_inputs()]
        self._pooling = layout.pooling
        self.name = str(model_dir)
        self.device = "cpu"
        self.dim = int(self.encode(["probe"]).shape[1])

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        # Longest first, as sentence-transformers batches: each batch pads to a similar length.
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        rows: list[np.ndarray] = [np.empty(0)] * len(texts)
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            width = max(len(encodings[i].ids) for i in batch)
            arrays = {name: np.zeros((len(batch), width), dtype=np.int64) for name in self._inputs}
            for row, i in enumerate(batch):
                e, n = encodings[i], len(encodings[i].ids)
                arrays["input_ids"][row, :n] = e.ids
                arrays["attention_mask"][row, :n] = e.attention_mask
                if "token_type_ids" in arrays:
                    arrays["token_type_ids"][row, :n] = e.type_ids
            states = self._session.run(None, arrays)[0]
            if self._pooling == "cls":
                pooled = states[:, 0]
            else:
                mask = arrays["attention_mask"][..., None].astype(np.float32)
                pooled = (states * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            for row, i in enumerate(batch):
                rows[i] = pooled[row]
        return np.stack(rows).astype(np.float32, copy=False)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


@functools.lru_cache(maxsize=4)
def load_embedder(
    source: str, device: str = "auto", threads: int = 0, cache_dir: Path | None = None
) -> Embedder | OnnxEmbedder:
    """The embedder for `source`: under onnxruntime on a CPU when its layout allows and `cache_dir`
    (where the export is kept) is given, else with sentence-transformers."""
    model_dir = Path(source)
    layout = onnx_layout(model_dir) if cache_dir is not None and model_dir.is_dir() else None
    if layout is not None and cache_dir is not None and pick_device(device) == "cpu":
        try:
            path = prepare_onnx(model_dir, cache_dir)
            assert path is not None  # the layout was checked above
            log.info("loading sentence embedder %s with onnxruntime", source)
            return OnnxEmbedder(model_dir, path, layout, threads=threads)
        # onnxruntime's errors derive from Exception alone; whatever fails here (no onnx package,
        # an unwritable models directory, a failed export) the same model still loads with torch.
        except Exception as exc:  # noqa: BLE001
            log.warning("cannot run the sentence embedder under onnxruntime (%s); loading it with torch", exc)
    log.info("loading sentence embedder %s on %s", source, device)
    return Embedder(source, device=device, threads=threads)


class LazyEmbedder:
    """The configured embedder, loaded on its first use.

    Loading the model takes 0.3 s under onnxruntime, 4-6 s with torch on 2 cores. A command that
    only reads the memory (the speaker list, a speaker's lines, the tree) never encodes a sentence
    and need not wait for it; a memory that already exists records its vectors' size, so opening
    it needs no model. Whoever must have the model ready up front (the daemon) calls `load`.
    """

    def __init__(
        self,
        source: str,
        device: str = "auto",
        threads: int = 0,
        *,
        dim: int | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.name, self.device, self.threads, self.cache_dir = source, device, threads, cache_dir
        self._dim = dim
        self._model: Embedder | OnnxEmbedder | None = None

    @property
    def dim(self) -> int:
        return self._dim if self._dim is not None else self.load().dim

    def load(self) -> Embedder | OnnxEmbedder:
        if self._model is None:
            model = load_embedder(self.name, self.device, self.threads, self.cache_dir)
            if self._dim is not None and model.dim != self._dim:
                raise ModelError(
                    f"the sentence embedder {self.name!r} gives {model.dim} dimensions, but this memory's vectors "
                    f"have {self._dim}: set models.embedder back to the model it was built with"
                )
            self._model, self._dim = model, model.dim
        return self._model

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.load().encode(texts, batch_size=batch_size)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]
