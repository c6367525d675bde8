"""What every system under test offers the harness, and the answer frame they all share.

A system hears the stream one utterance at a time and answers a question from whatever it
kept. The harness knows each utterance by its position in the stream; a system reports the
positions it quoted to the LLM (evidence recall) and those it still holds (formation).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from ...config import Settings
from ...embed import TextEncoder
from ...llm import ChatModel, Tokenizer
from ...memory.answer import Reply, frame, respond
from ...memory.context import Candidate, render
from ...records import Evidence, Utterance


@dataclass(frozen=True)
class Context:
    """What a system hands the LLM for one question, built without the LLM."""

    text: str  # the context block the frame puts between the instructions and the question
    # Stream positions of the utterances quoted in it (evidence recall).
    positions: frozenset[int]
    tokens: int
    retrieval_ms: float
    # Whatever else the system needs to answer from it (prostream: its PreparedQuestion).
    prepared: object = None
    # How near the question its nearest line comes (prostream's abstention reads it); None for a
    # system that has no such score.
    relevance: float | None = None
    # For a question about one person, the nearest line about them as a share of the nearest line
    # (prostream's abstention reads it too); None otherwise.
    person_share: float | None = None


@dataclass(frozen=True)
class FormationCost:
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Answerer:
    """An LLM the systems answer with, through the same prompt frame and token cap.

    The model is opened at the first answer, so a recall-only run never loads its weights;
    the tokenizer (which counts context tokens) is all it needs.
    """

    def __init__(
        self,
        open_llm: Callable[[], ChatModel],
        tokenizer: Tokenizer,
        max_tokens: int,
        n_ctx: int,
    ) -> None:
        self._open = open_llm
        self._llm: ChatModel | None = None
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.n_ctx = n_ctx  # the window of the model `open_llm` opens

    @property
    def llm(self) -> ChatModel:
        if self._llm is None:
            self._llm = self._open()
        return self._llm

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def answer(self, context: str, question: str) -> tuple[str, float]:
        """The reply to `question` from `context`, through the memory's own answer flow (`respond`)."""
        llm = self.llm  # opened outside the timing: loading is no part of an answer
        started = time.perf_counter()
        reply = ""
        for item in respond(llm, frame(context, question), self.max_tokens):
            if isinstance(item, Reply):
                reply = item.text
        return reply, (time.perf_counter() - started) * 1000

    def frame_tokens(self, question: str) -> int:
        """Tokens of the frame around an empty context, the chat template's markers included."""
        text = "".join(m["content"] for m in frame("", question))
        return self.tokenizer.count(text) + 16


def render_lines(utterances: Sequence[Utterance], zone: tzinfo) -> str:
    """The baselines' context, shown exactly as the memory shows its lines: by day, in time order,
    each with its speaker and the times it refers to as calendar dates (`memory/context.py`)."""
    return render([Candidate(Evidence.of(u)) for u in utterances], zone)


@dataclass(frozen=True)
class Environment:
    """What a system may use: the settings, the shared embedder and answerers, its own directory."""

    settings: Settings
    embedder: TextEncoder
    answerer: Answerer  # the answering model at llm.n_ctx, shared by every system
    # The same model opened apart at the context length it was trained with, for `full`: its KV
    # cache then holds the conversation between probes, untouched by the other systems' prompts.
    long_answerer: Answerer
    work_dir: Path
    # Probes mark what they retrieve as used (the memory's use counts), as a user's question does;
    # off, a probe only observes (prostream is the only system with such state).
    probes_use: bool = False


class System(ABC):
    """A memory under test. Subclasses set `name`, a one-line `description` and `answerer`.

    The harness asks in two halves: `context` (retrieval, timed as such) and `answer` (the LLM),
    which a recall-only run skips.
    """

    name: str = ""
    description: str = ""
    answerer: Answerer

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
    def context(self, question: str) -> Context:
        """Retrieve what the LLM would read for `question`; no LLM call."""

    def answer(self, question: str, context: Context) -> tuple[str, float]:
        """The answer to `question` from `context`, and the milliseconds it took."""
        return self.answerer.answer(context.text, question)

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
