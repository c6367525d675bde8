"""The language model: where it runs (`llm.backend`), and the tokenizer that measures the budget.

    local.py   llama-cpp: a GGUF file loaded into this process (`LLM`), and its `Tokenizer`
    served.py  openai: any OpenAI-compatible server, over HTTP (`OpenAIChat`)
    base.py    what both offer (`ChatModel`), and the `Usage` they count

The tokenizer is always local: the memory's token budget and the answer's context are counted
with models.llm's vocabulary, read from its GGUF file without the weights, whichever backend
answers.
"""

from __future__ import annotations

import functools

from ..config import LLMOptions
from .base import ChatModel, Message, Usage
from .local import LLM, LOAD_LOG_ENV, Tokenizer, gpu_offload_available, load_local_llm, load_tokenizer
from .served import OpenAIChat

__all__ = [
    "LLM",
    "LOAD_LOG_ENV",
    "ChatModel",
    "Message",
    "OpenAIChat",
    "Tokenizer",
    "Usage",
    "gpu_offload_available",
    "load_llm",
    "load_tokenizer",
]


def load_llm(source: str, options: LLMOptions) -> ChatModel:
    """The model that answers and distils: `source` (a GGUF file) loaded here, or the server llm.base_url names."""
    if options.backend == "openai":
        return _served(options)
    return load_local_llm(source, options)


@functools.lru_cache(maxsize=2)
def _served(options: LLMOptions) -> OpenAIChat:
    # One client per server, whatever model file names the tokenizer: answers and distillation
    # then share its connection pool and what it knows about the server's state.
    return OpenAIChat(options)
