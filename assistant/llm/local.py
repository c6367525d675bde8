"""The LLM in this process through llama-cpp-python: chat, streaming, and the tokenizer that measures the budget.

Each model file is loaded once per process. A tokenizer-only handle (`vocab_only`) serves the
token budget when no generation is needed, so extractive ingest never pays for the weights.

When the environment variable ASSISTANT_LLM_LOAD_LOG names a file, every load of the weights (an
`LLM`, not a `Tokenizer`) appends one line to it: the process id and the model. The test suite
sets it to show which tests load the LLM, so `pytest -m "not slow"` can prove it loads none.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

from ..config import LLMOptions
from ..cpus import usable_cpus
from ..errors import ModelError
from .base import Message, Usage

log = logging.getLogger(__name__)

LOAD_LOG_ENV = "ASSISTANT_LLM_LOAD_LOG"


def _llama_class() -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ModelError(f"llama-cpp-python is not installed ({exc}); pip install llama-cpp-python") from None
    return Llama


def _split_hub(source: str) -> tuple[str, str] | None:
    """`org/repo:file.gguf` names a file in a hub repository; a local path does not."""
    if os.path.exists(source) or ":" not in source:
        return None
    repo, filename = source.rsplit(":", 1)
    return (repo, filename) if "/" in repo and filename else None


def _open(source: str, **kwargs: Any) -> Any:
    llama = _llama_class()
    hub = _split_hub(source)
    try:
        if hub is not None:
            handle = llama.from_pretrained(repo_id=hub[0], filename=hub[1], **kwargs)
            _OPEN.append(handle)
            return handle
        if not os.path.isfile(source):
            raise ModelError(f"LLM file not found: {source}. `assistant models install` installs the default models")
        handle = llama(model_path=source, **kwargs)
        _OPEN.append(handle)
        return handle
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"cannot load the LLM {source!r}: {exc}") from exc


def gpu_offload_available() -> bool:
    try:
        from llama_cpp import llama_supports_gpu_offload
    except ImportError:  # pragma: no cover
        return False
    return bool(llama_supports_gpu_offload())


class Tokenizer:
    """Counts tokens exactly as the answering LLM does; loads only the vocabulary."""

    def __init__(self, source: str) -> None:
        self._llama = _open(source, vocab_only=True, verbose=False)
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def trained_context(self) -> int | None:
        """The context length the model was trained with (GGUF `<architecture>.context_length`).

        Read from the file's metadata: a vocabulary-only handle does not load the hyperparameters
        that llama.cpp's n_ctx_train() reports.
        """
        meta = self._llama.metadata
        value = meta.get(f"{meta.get('general.architecture', '')}.context_length")
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def truncate(self, text: str, max_tokens: int) -> str:
        """Cut `text` to at most `max_tokens` tokens, at a token boundary."""
        with self._lock:
            tokens = self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)
            if len(tokens) <= max_tokens:
                return text
            return self._llama.detokenize(tokens[:max_tokens]).decode("utf-8", errors="ignore")


class LLM:
    """A GGUF model loaded into this process (`llm.backend: llama-cpp`)."""

    # Weights in this process are always there once loaded.
    problem: str | None = None

    def __init__(self, source: str, options: LLMOptions) -> None:
        use_gpu = options.device == "cuda" or (options.device == "auto" and gpu_offload_available())
        if options.device == "cuda" and not gpu_offload_available():
            raise ModelError(
                "llm.device is cuda but llama-cpp-python was built without GPU support; "
                'reinstall it with CMAKE_ARGS="-DGGML_CUDA=on"'
            )
        self.device = "cuda" if use_gpu else "cpu"
        self.options = options
        self._llama = _open(
            source,
            n_ctx=options.n_ctx,
            n_threads=options.n_threads or usable_cpus(),
            n_gpu_layers=options.gpu_layers if use_gpu else 0,
            seed=options.seed,
            verbose=False,
        )
        self.name = source
        self.usage = Usage()
        self._lock = threading.Lock()
        _log_load(source)

    def count(self, text: str) -> int:
        with self._lock:
            return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def probe(self) -> None:
        """Nothing to reach: the weights are loaded."""

    def close(self) -> None:
        """Free the weights and the KV cache now: for an instance opened apart from `load_llm`'s cache
        (one at another n_ctx), which would otherwise live until the process ends."""
        with self._lock:
            if self._llama in _OPEN:
                _OPEN.remove(self._llama)
            close = getattr(self._llama, "close", None)
            if close is not None:
                close()

    def _kwargs(self, max_tokens: int, schema: dict[str, Any] | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": self.options.temperature,
            "seed": self.options.seed,
        }
        if schema is not None:
            # llama-cpp-python compiles the schema to a grammar, so the output always parses.
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        return kwargs

    def chat(self, messages: list[Message], *, max_tokens: int, schema: dict[str, Any] | None = None) -> str:
        with self._lock:
            out = self._llama.create_chat_completion(messages=messages, **self._kwargs(max_tokens, schema))
        usage = out.get("usage") or {}
        self.usage.calls += 1
        self.usage.prompt_tokens += int(usage.get("prompt_tokens", 0))
        self.usage.completion_tokens += int(usage.get("completion_tokens", 0))
        return str(out["choices"][0]["message"].get("content") or "").strip()

    def stream(self, messages: list[Message], *, max_tokens: int) -> Iterator[str]:
        """Yield the answer piece by piece as the model writes it."""
        with self._lock:
            chunks = self._llama.create_chat_completion(
                messages=messages, stream=True, **self._kwargs(max_tokens, None)
            )
            self.usage.calls += 1
            for chunk in chunks:
                piece = chunk["choices"][0].get("delta", {}).get("content")
                if piece:
                    self.usage.completion_tokens += 1
                    yield piece


def _log_load(source: str) -> None:
    path = os.environ.get(LOAD_LOG_ENV)
    if path:
        # One short append per load: lines from concurrent processes do not interleave.
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\t{source}\n")


_OPEN: list[Any] = []


@atexit.register
def _close_all() -> None:
    # llama.cpp's finalizers fail noisily when they run during interpreter teardown.
    for llama in _OPEN:
        close = getattr(llama, "close", None)
        if close is not None:
            close()
    _OPEN.clear()


@functools.lru_cache(maxsize=4)
def load_tokenizer(source: str) -> Tokenizer:
    return Tokenizer(source)


@functools.lru_cache(maxsize=2)
def load_local_llm(source: str, options: LLMOptions) -> LLM:
    log.info("loading LLM %s", source)
    return LLM(source, options)
