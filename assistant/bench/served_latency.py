"""`assistant bench served`: what answering through an OpenAI-compatible server costs against the same model here.

One memory hears a conversation (extractive formation: no LLM writes it). Each question is
recalled once, then answered twice from that same prepared question: by the model loaded in this
process and by the server at the URL given, the one that goes first alternating from question to
question (so neither side always finds the CPU's caches warm), each answer streamed as `assistant
ask` streams it. Run the server on the same GGUF and thread count as this process (`llm.n_threads`)
and the ratio is the hop's cost alone: HTTP, the JSON stream, and the server's own settings.

A question the relevance gate answers without the model ("not mentioned") has no time to compare;
it is counted and left out of the medians.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..config import Settings
from ..memory.api import Memory, PreparedQuestion
from ..records import Answer
from ..transcripts import Conversation
from .host import Machine, machine

FORMAT = "assistant-bench-served/1"


@dataclass(frozen=True)
class Timing:
    first_token_ms: float  # from the start of the answer to its first streamed piece
    whole_ms: float  # to the finished answer
    text: str


@dataclass(frozen=True)
class Asked:
    number: int  # the question's index in the conversation
    question: str
    # None when the memory answered without the model (nothing relevant held).
    local: Timing | None
    served: Timing | None
    served_first: bool


@dataclass(frozen=True)
class Summary:
    asked: int
    answered_by_model: int
    local_first_token_ms: float | None
    local_whole_ms: float | None
    served_first_token_ms: float | None
    served_whole_ms: float | None
    # Served over in-process: the ratio of the whole answers' medians, and the median of each question's ratio.
    ratio_of_medians: float | None
    median_of_ratios: float | None
    same_answers: int


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise(rows: list[Asked]) -> Summary:
    timed = [(r.local, r.served) for r in rows if r.local is not None and r.served is not None]
    local = [a.whole_ms for a, _ in timed]
    served = [b.whole_ms for _, b in timed]
    lm, sm = _median(local), _median(served)
    return Summary(
        asked=len(rows),
        answered_by_model=len(timed),
        local_first_token_ms=_median([a.first_token_ms for a, _ in timed]),
        local_whole_ms=lm,
        served_first_token_ms=_median([b.first_token_ms for _, b in timed]),
        served_whole_ms=sm,
        ratio_of_medians=sm / lm if lm and sm is not None else None,
        median_of_ratios=_median([b.whole_ms / a.whole_ms for a, b in timed if a.whole_ms > 0]),
        same_answers=sum(a.text == b.text for a, b in timed),
    )


def _timed(memory: Memory, prepared: PreparedQuestion) -> Timing | None:
    start = time.perf_counter()
    first: float | None = None
    for item in memory.answer_stream(prepared):
        if isinstance(item, Answer):
            if prepared.prompt is None:
                return None
            end = (time.perf_counter() - start) * 1000
            return Timing(first if first is not None else end, end, item.text)
        if first is None:
            first = (time.perf_counter() - start) * 1000
    raise AssertionError("answer_stream ended without an answer")  # pragma: no cover


@dataclass(frozen=True)
class ServedRun:
    url: str
    llm: str
    conversation: str
    utterances: int
    rows: tuple[Asked, ...]
    summary: Summary
    machine: Machine
    seconds: float


def served_settings(settings: Settings, url: str) -> Settings:
    """The same settings, answering through the server at `url` (models.llm still counts the tokens)."""
    return replace(settings, llm=replace(settings.llm, backend="openai", base_url=url))


def run_served_latency(
    settings: Settings,
    conversation: Conversation,
    url: str,
    *,
    questions: int,
    work_dir: Path,
    progress: Callable[[str], None] | None = None,
) -> ServedRun:
    """`settings` must answer in process (llm.backend llama-cpp); its data directory is replaced by `work_dir`."""
    t0 = time.perf_counter()
    say = progress or (lambda _m: None)
    memory_opts = replace(settings.memory, distill=replace(settings.memory.distill, mode="extractive"))
    local_settings = replace(
        settings,
        paths=replace(settings.paths, data_dir=str(work_dir)),
        memory=memory_opts,
        llm=replace(settings.llm, backend="llama-cpp"),
    )
    host = machine()
    local = Memory(local_settings)
    served: Memory | None = None
    try:
        say(f"hearing {conversation.name} ({len(conversation.utterances)} utterances)")
        local.add_many(conversation.utterances)
        # A second view of the same database whose model is the server; it only answers (answer_stream
        # touches no table), from the questions the first one prepares.
        served = Memory(served_settings(local_settings, url))
        # Loading the weights and the server's first connection are not what is compared.
        _ = local.llm
        served.llm.probe()
        rows: list[Asked] = []
        for number, q in enumerate(conversation.questions[:questions]):
            # The memory's own clock, not the wall's: the conversation is an old one replayed.
            prepared = local.prepare(q.question, use=False, now=local.store.clock)
            served_first = number % 2 == 1
            sides = (served, local) if served_first else (local, served)
            first, second = (_timed(side, prepared) for side in sides)
            here, there = (second, first) if served_first else (first, second)
            rows.append(Asked(number, q.question, here, there, served_first))
            say(f"question {number + 1}/{min(questions, len(conversation.questions))}")
    finally:
        if served is not None:
            served.close()
        local.close()
    return ServedRun(
        url=url,
        llm=local_settings.models.llm,
        conversation=conversation.name,
        utterances=len(conversation.utterances),
        rows=tuple(rows),
        summary=summarise(rows),
        machine=host,
        seconds=time.perf_counter() - t0,
    )


def served_json(run: ServedRun, command: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "meta": {
            "command": command,
            "url": run.url,
            "llm": run.llm,
            "conversation": run.conversation,
            "utterances": run.utterances,
            "seconds": round(run.seconds, 1),
            "date": run.machine.date,
            "machine": run.machine.describe(),
        },
        "summary": asdict(run.summary),
        "questions": [asdict(r) for r in run.rows],
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def served_markdown(run: ServedRun, command: str) -> str:
    s = run.summary
    lines = [
        f"# Served against in-process answers ({run.machine.date})",
        "",
        f"`{command}`",
        "",
        f"{run.llm} here, the server at {run.url}; {run.conversation}'s first {s.asked} questions, "
        f"{s.answered_by_model} answered by the model; {run.machine.describe()}.",
        "",
        "| in-process median, first token / whole (ms) | served median, first token / whole (ms) "
        "| served / in-process: ratio of medians | median of per-question ratios | same answers |",
        "|---|---|---|---|---|",
        f"| {_ms(s.local_first_token_ms)} / {_ms(s.local_whole_ms)} "
        f"| {_ms(s.served_first_token_ms)} / {_ms(s.served_whole_ms)} "
        f"| {_x(s.ratio_of_medians)} | {_x(s.median_of_ratios)} | {s.same_answers}/{s.answered_by_model} |",
        "",
    ]
    return "\n".join(lines)
