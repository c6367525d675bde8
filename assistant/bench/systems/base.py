"""What every system under test offers the harness, and the answer frame they all share.

A system hears the stream one utterance at a time and answers a question from whatever it
kept. The harness knows each utterance by its position in the stream; a system reports the
positions it quoted to the LLM (evidence recall) and those it still holds (formation).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...config import Settings
from ...embed import Embedder
from ...llm import LLM, Tokenizer
from ...memory.answer import as_evidence, cite_line, frame, strip_citations
from ...memory.records import Utterance


@dataclass(frozen=True)
class Reply:
    text: str
    # Stream positions of the utterances quoted in the context the LLM read.
    context: frozenset[int]
    context_tokens: int
    retrieval_ms: float
    answer_ms: float


@dataclass(frozen=True)
class FormationCost:
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Answerer:
    """The one LLM every system answers with, through the same prompt frame and token cap."""

    def __init__(self, llm: LLM, tokenizer: Tokenizer, max_tokens: int) -> None:
        self.llm = llm
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens

    def answer(self, context: str, question: str) -> tuple[str, float]:
        started = time.perf_counter()
        raw = self.llm.chat(frame(context, question), max_tokens=self.max_tokens)
        return strip_citations(raw) or raw.strip(), (time.perf_counter() - started) * 1000

    def frame_tokens(self, question: str) -> int:
        """Tokens of the frame around an empty context, the chat template's markers included."""
        text = "".join(m["content"] for m in frame("", question))
        return self.tokenizer.count(text) + 16


def render_lines(heading: str, utterances: Sequence[Utterance]) -> str:
    """Numbered, dated lines: the baselines' context, in the same form the memory quotes sources."""
    lines = [cite_line(n, as_evidence(u)) for n, u in enumerate(utterances, start=1)]
    return f"## {heading}:\n" + ("\n".join(lines) or "(empty)")


@dataclass(frozen=True)
class Environment:
    """What a system may use: the settings, the shared embedder and answerer, its own directory."""

    settings: Settings
    embedder: Embedder
    answerer: Answerer
    work_dir: Path


class System(ABC):
    """A memory under test. Subclasses set `name` and a one-line `description`."""

    name: str = ""
    description: str = ""

    @abstractmethod
    def __init__(self, env: Environment) -> None: ...

    @abstractmethod
    def add(self, position: int, utterance: Utterance) -> None:
        """Hear one utterance (the harness times this call)."""

    def end_of_stream(self) -> None:
        """The stream is over: file whatever waits (the harness times this as ingest too)."""
        return None

    @abstractmethod
    def remembered(self) -> set[int]:
        """Stream positions of the utterances the memory still represents (formation)."""

    @abstractmethod
    def ask(self, question: str) -> Reply: ...

    def replay(self, question: str) -> None:  # noqa: B027 - a memory that asking does not change needs nothing
        """Change the memory as asking `question` would, without the answer (a resumed run's skipped question)."""

    @abstractmethod
    def memory_tokens(self) -> int: ...

    def database_bytes(self) -> int:
        return 0

    def formation_cost(self) -> FormationCost:
        return FormationCost()

    def close(self) -> None:
        """Release files and handles."""
        return None
