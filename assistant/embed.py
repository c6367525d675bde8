"""The sentence embedder (f_Enc): text in, unit vectors out. Loaded once per process."""

from __future__ import annotations

import functools
import logging
import os
import threading
from typing import Protocol

import numpy as np

from .errors import ModelError

log = logging.getLogger(__name__)


class TextEncoder(Protocol):
    """What the memory asks of an embedder: unit vectors of a known size."""

    @property
    def dim(self) -> int: ...

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray: ...

    def encode_one(self, text: str) -> np.ndarray: ...


class Embedder:
    """A sentence-transformers model that returns L2-normalised float32 rows (cosine = dot)."""

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


@functools.lru_cache(maxsize=4)
def load_embedder(source: str, device: str = "auto", threads: int = 0) -> Embedder:
    log.info("loading sentence embedder %s on %s", source, device)
    return Embedder(source, device=device, threads=threads)


class LazyEmbedder:
    """The configured embedder, loaded on its first use.

    Importing torch and loading the model takes about 6 s on 2 cores. A command that only reads
    the memory (the speaker list, a speaker's lines, the tree) never encodes a sentence and need
    not wait for it; a memory that already exists records its vectors' size, so opening it needs
    no model. Whoever must have the model ready up front (the daemon) calls `load`.
    """

    def __init__(self, source: str, device: str = "auto", threads: int = 0, *, dim: int | None = None) -> None:
        self.name, self.device, self.threads = source, device, threads
        self._dim = dim
        self._model: Embedder | None = None

    @property
    def dim(self) -> int:
        return self._dim if self._dim is not None else self.load().dim

    def load(self) -> Embedder:
        if self._model is None:
            model = load_embedder(self.name, self.device, self.threads)
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
