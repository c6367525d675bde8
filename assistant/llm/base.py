"""What every language model the assistant talks to offers, wherever it runs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

Message = dict[str, str]


@dataclass
class Usage:
    """What the model has been asked to do, for the benchmarks' cost columns."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatModel(Protocol):
    """A chat model: in this process (`local.LLM`) or behind an HTTP server (`served.OpenAIChat`)."""

    # Where it runs, for the status line: cpu, cuda, or served.
    device: str
    usage: Usage

    @property
    def name(self) -> str:
        """The model file, or the served model and its server."""
        ...

    @property
    def problem(self) -> str | None:
        """Why the model cannot be used now (a server that does not answer), else None."""
        ...

    def chat(self, messages: list[Message], *, max_tokens: int, schema: dict[str, Any] | None = None) -> str:
        """The whole reply; with `schema`, a JSON text that the schema admits."""
        ...

    def stream(self, messages: list[Message], *, max_tokens: int) -> Iterator[str]:
        """The reply piece by piece as the model writes it."""
        ...

    def probe(self) -> None:
        """Check that the model can be reached; raises `LLMUnreachable` when it cannot."""
        ...

    def close(self) -> None: ...
