"""The streaming LoCoMo benchmark (DESIGN.md §8): every system hears the same stream, one utterance at a
time, and is asked each question once its evidence has streamed past, and again at the end.

A question is probed at the end of the session that holds its last evidence turn (or `delay`
sessions later): questions come after a conversation, not in the middle of a sentence, and all
questions probed at one point see the same state, so a baseline whose context does not depend on
the question (full, recent-window, recent) has it read once by llama.cpp and reused from its prompt
cache; `full` keeps its own cache from one probe point to the next and reads only what is new.

Probes observe: by default a probe's retrieval leaves no mark on a memory (prostream's use counts),
so the end-of-stream probe sees the memory the stream made, as every baseline does. `probes_use`
asks the old way, each probe counting as a use. A recall-only run builds every context exactly as
usual and stops before the LLM: formation, evidence recall, context tokens and retrieval latency,
in minutes.
"""

from __future__ import annotations

import logging
import re
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import locations
from ..config import Settings
from ..embed import export_dir, load_embedder
from ..errors import InputError
from ..llm import LLM, load_llm, load_tokenizer
from ..models import resolve
from ..transcripts import Conversation, Question, read_conversations
from .checkpoint import ProbeLog
from .host import Machine, machine
from .locomo_metrics import score_answer, score_temporal_date
from .systems import LOCOMO_SYSTEMS, SYSTEMS, Answerer, Environment, FormationCost, System

log = logging.getLogger(__name__)

_DIA_ID = re.compile(r"D(\d+):(\d+)")
PROBES = ("evidence", "end")
# `--llm openai:URL`: answer with the model served at URL.
SERVED = "openai:"
# Called with a conversation and its systems, by name, once its stream has ended and been probed.
AtEnd = Callable[[Conversation, Mapping[str, System]], None]


@dataclass(frozen=True)
class Probe:
    conversation: str
    number: int  # the question's index in the conversation's qa list
    question: Question
    evidence: frozenset[int]  # stream positions of the gold evidence turns
    unresolved: tuple[str, ...]  # evidence ids the stream does not hold (LoCoMo has a few typos)
    at: int  # ask right after the utterance at this stream position
    # When the last gold evidence turn was said (the probe point's turn when none is found):
    # the day that relative dates in the gold answer, and in a reply, are counted from.
    said_at: float


@dataclass(frozen=True)
class ProbeResult:
    system: str
    conversation: str
    number: int
    category: int
    probe: str
    question: str
    gold: str
    # The answer and its scores; None in a recall-only run, which asks no LLM.
    prediction: str | None
    f1: float | None
    bleu1: float | None
    rouge_l: float | None
    # Shares of the gold evidence turns; None when the question names none the stream holds.
    formation: float | None
    evidence_recall: float | None
    context_tokens: int
    retrieval_ms: float
    answer_ms: float | None
    # Temporal questions (category 2) whose gold answer names one date: that date's unit (day,
    # weekend, week, month, year, window) and whether the reply names a time within it
    # (`date_accuracy`). None elsewhere, and the match None without an answer. Computed again
    # on resume, so checkpoint rows written before these fields existed still load.
    date_unit: str | None = None
    date_match: float | None = None
    # The relevance of the nearest line the system recalled (prostream's abstention threshold is
    # read against it); None for a system without one.
    relevance: float | None = None
    # For a question about one person, the nearest line about them as a share of the nearest
    # line (`answer.min_person_share` is read against it); None otherwise.
    person_share: float | None = None


@dataclass(frozen=True)
class MemorySample:
    position: int
    memory_tokens: int
    database_bytes: int


@dataclass
class SystemTotals:
    """One system's cost over one conversation."""

    utterances: int = 0
    ingest_ms: list[float] = field(default_factory=list)
    end_of_stream_ms: float = 0.0
    memory_tokens: int = 0
    database_bytes: int = 0
    formation: FormationCost = field(default_factory=FormationCost)
    samples: list[MemorySample] = field(default_factory=list)


@dataclass(frozen=True)
class ConversationRun:
    name: str
    utterances: int
    questions: int
    totals: dict[str, SystemTotals]


@dataclass(frozen=True)
class LocomoRun:
    data: str
    systems: tuple[str, ...]
    answer_llm: str
    distill_llm: str
    distill_mode: str
    delay: int
    limit: int | None
    categories: tuple[int, ...]
    seconds: float
    conversations: tuple[ConversationRun, ...]
    results: tuple[ProbeResult, ...]
    descriptions: dict[str, str]
    machine: Machine
    resumed: int = 0  # answers taken from the checkpoint rather than asked in this process
    recall_only: bool = False  # contexts built, no answers generated
    probes_use: bool = False  # every probe counted as a use of what it retrieved


def default_data(settings: Settings) -> Path | None:
    """The configured LoCoMo file, tried against the working directory, then the project checkout."""
    if not settings.bench.locomo_data:
        return None
    configured = Path(settings.bench.locomo_data).expanduser()
    candidates = [configured] if configured.is_absolute() else [Path.cwd() / configured]
    if not configured.is_absolute():
        candidates.append(locations.project_root() / configured)
    return next((c for c in candidates if c.is_file()), None)


def _session(ref: str | None) -> int | None:
    m = _DIA_ID.fullmatch(ref or "")
    return int(m.group(1)) if m else None


def plan_probes(
    conv: Conversation, *, delay: int = 0, categories: Sequence[int] = (), limit: int | None = None
) -> list[Probe]:
    positions = {ref: i for i, ref in enumerate(conv.refs) if ref}
    session_end: dict[int, int] = {}
    for i, ref in enumerate(conv.refs):
        s = _session(ref)
        if s is not None:
            session_end[s] = i
    last = len(conv.utterances) - 1
    probes: list[Probe] = []
    for number, q in enumerate(conv.questions):
        if categories and q.category not in categories:
            continue
        ids = [f"D{a}:{b}" for e in q.evidence for a, b in _DIA_ID.findall(e)]
        found = frozenset(positions[i] for i in ids if i in positions)
        unresolved = tuple(i for i in ids if i not in positions)
        if found:
            s = _session(conv.refs[max(found)])
            later = [k for k in sorted(session_end) if s is not None and k >= s]
            at = session_end[later[delay]] if s is not None and delay < len(later) else last
            at = max(at, max(found))
        else:
            at = last
        said_at = conv.utterances[max(found) if found else at].time
        probes.append(Probe(conv.name, number, q, found, unresolved, at, said_at))
        if limit is not None and len(probes) >= limit:
            break
    return probes


def _share(part: frozenset[int] | set[int], whole: frozenset[int]) -> float | None:
    return len(whole & part) / len(whole) if whole else None


class _Answering:
    """The answering model, opened at its first answer (never, in a recall-only run) and shared by the systems."""

    def __init__(self, settings: Settings) -> None:
        # The same cached loaders as Memory's, so the prostream system shares these instances.
        source = resolve(settings, "llm").source
        tokenizer = load_tokenizer(source)
        max_tokens = settings.memory.answer.max_tokens
        self.answerer = Answerer(lambda: load_llm(source, settings.llm), tokenizer, max_tokens, settings.llm.n_ctx)
        trained = tokenizer.trained_context()
        if trained is None:
            log.warning("%s does not state its trained context; full gets llm.n_ctx (%d)", source, settings.llm.n_ctx)
        long = replace(settings.llm, n_ctx=trained or settings.llm.n_ctx)
        # Opened apart from load_llm's cache: its KV cache is full's alone, and it is closed after the run.
        self.long_answerer = Answerer(lambda: LLM(source, long), tokenizer, max_tokens, long.n_ctx)
        embedder = resolve(settings, "embedder").source
        self.embedder = load_embedder(
            embedder, settings.embedder.device, settings.embedder.threads, export_dir(settings.models_dir)
        )

    def close(self) -> None:
        if self.long_answerer.loaded:
            self.long_answerer.llm.close()


def bench_settings(settings: Settings, answer_llm: str | None) -> Settings:
    """The answering model may differ from the product's; distillation keeps the model it would use.

    `openai:URL` answers with the model an OpenAI-compatible server at URL serves (llm.backend
    openai, so `llm` distillation goes there too); models.llm still counts the tokens.
    """
    models = settings.models
    distill = models.distill_llm or models.llm
    if answer_llm is not None and answer_llm.startswith(SERVED):
        served = replace(settings.llm, backend="openai", base_url=answer_llm.removeprefix(SERVED))
        return replace(settings, llm=served, models=replace(models, distill_llm=distill))
    return replace(settings, models=replace(models, llm=answer_llm or models.llm, distill_llm=distill))


def answer_llm_name(settings: Settings) -> str:
    """The answering model as the report names it."""
    return f"{SERVED}{settings.llm.base_url}" if settings.llm.backend == "openai" else settings.models.llm


def run_locomo(
    settings: Settings,
    data: Path,
    conversations: Sequence[Conversation],
    *,
    systems: Sequence[str] = LOCOMO_SYSTEMS,
    limit: int | None = None,
    categories: Sequence[int] = (),
    delay: int = 0,
    answer_llm: str | None = None,
    work_dir: Path | None = None,
    progress: Callable[[int, str], None] | None = None,
    checkpoint: Path | None = None,
    recall_only: bool = False,
    probes_use: bool = False,
    at_end: AtEnd | None = None,
) -> LocomoRun:
    """Stream `conversations` (read from `data`, see `select_conversations`) into every system and
    probe each question twice. `progress(steps, label)` is called as work is done; `count_steps`
    says how many steps there are. With `checkpoint`, every answer is written there as it comes,
    and answers already there (from a stopped run with the same options) are not asked again.
    `recall_only` builds each context and skips the answer (the answering LLM is never loaded);
    `probes_use` lets each probe count as a use of what it retrieved, as asking once did.
    `at_end(conversation, systems)` is called after each conversation's end-of-stream probes,
    while its systems are still open (`bench longterm` asks its own probes there).
    """
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise InputError(f"unknown system(s) {', '.join(unknown)}; choose from {', '.join(SYSTEMS)}")
    if delay < 0:
        raise InputError(f"--delay must be 0 or more sessions, got {delay}")
    if work_dir is not None:
        used = [work_dir / c.name for c in conversations if (work_dir / c.name).exists()]
        if any(any(d.iterdir()) for d in used):
            raise InputError(
                f"{work_dir} holds the memories of an earlier run, and every system must start empty: "
                "remove it or pass another --work-dir (a --checkpoint resumes a run without them)"
            )
    settings = bench_settings(settings, answer_llm)
    host = machine()
    started = time.perf_counter()
    shared = _Answering(settings)
    runs: list[ConversationRun] = []
    results: list[ProbeResult] = []
    descriptions = {name: SYSTEMS[name].description for name in systems}
    identity = {
        "data": str(data),
        "conversations": [c.name for c in conversations],
        "systems": list(systems),
        "answer_llm": answer_llm_name(settings),
        "distill_llm": settings.models.distill_llm or settings.models.llm,
        "distill_mode": settings.memory.distill.mode,
        "delay": delay,
        "limit": limit,
        "categories": list(categories),
        "answers": "none" if recall_only else "llm",
        "probes_use": probes_use,
    }
    log_file = ProbeLog(checkpoint, identity, ProbeResult) if checkpoint is not None else None
    resumed = len(log_file) if log_file is not None else 0
    try:
        with tempfile.TemporaryDirectory(prefix="assistant-bench-") as tmp:
            root = work_dir or Path(tmp)
            for conv in conversations:
                probes = plan_probes(conv, delay=delay, categories=categories, limit=limit)
                run, found = _run_conversation(
                    settings,
                    shared,
                    conv,
                    probes,
                    systems,
                    root / conv.name,
                    progress,
                    log_file,
                    recall_only=recall_only,
                    probes_use=probes_use,
                    at_end=at_end,
                )
                runs.append(run)
                results.extend(found)
    finally:
        shared.close()
        if log_file is not None:
            log_file.close()
    return LocomoRun(
        data=str(data),
        systems=tuple(systems),
        answer_llm=answer_llm_name(settings),
        distill_llm=settings.models.distill_llm or settings.models.llm,
        distill_mode=settings.memory.distill.mode,
        delay=delay,
        limit=limit,
        categories=tuple(categories),
        seconds=time.perf_counter() - started,
        conversations=tuple(runs),
        results=tuple(results),
        descriptions=descriptions,
        machine=host,
        resumed=resumed,
        recall_only=recall_only,
        probes_use=probes_use,
    )


def select_conversations(data: Path, names: Sequence[str]) -> list[Conversation]:
    convs = [c for c in read_conversations(data) if c.questions]
    if not convs:
        raise InputError(f"{data}: no LoCoMo conversations with questions (is it in the published layout?)")
    if names:
        known = {c.name for c in convs}
        missing = [n for n in names if n not in known]
        if missing:
            raise InputError(f"{data}: no conversation(s) {', '.join(missing)}; it holds {', '.join(sorted(known))}")
        convs = [c for c in convs if c.name in names]
    return convs


def count_steps(conversations: Sequence[Conversation], limit: int | None, categories: Sequence[int], delay: int) -> int:
    """Progress units: one per utterance streamed, one per question probed (each probe asks every system)."""
    return sum(
        len(conv.utterances) + 2 * len(plan_probes(conv, delay=delay, categories=categories, limit=limit))
        for conv in conversations
    )


def _run_conversation(
    settings: Settings,
    shared: _Answering,
    conv: Conversation,
    probes: list[Probe],
    names: Sequence[str],
    work_dir: Path,
    progress: Callable[[int, str], None] | None,
    log_file: ProbeLog[ProbeResult] | None = None,
    *,
    recall_only: bool = False,
    probes_use: bool = False,
    at_end: AtEnd | None = None,
) -> tuple[ConversationRun, list[ProbeResult]]:
    systems: dict[str, System] = {}
    totals = {name: SystemTotals() for name in names}
    results: list[ProbeResult] = []
    by_point: dict[int, list[Probe]] = {}
    for p in probes:
        by_point.setdefault(p.at, []).append(p)
    session_ends = {i for i, ref in enumerate(conv.refs) if _session(ref) != _session(_next(conv.refs, i))}
    try:
        for name in names:
            (work_dir / name).mkdir(parents=True, exist_ok=True)
            env = Environment(
                settings, shared.embedder, shared.answerer, shared.long_answerer, work_dir / name, probes_use
            )
            systems[name] = SYSTEMS[name](env)

        def ask(point: list[Probe], probe_kind: str) -> None:
            # Systems outer, questions inner: a context that does not depend on the question is read once.
            for name, system in systems.items():
                held = system.remembered()
                for p in point:
                    done = log_file.get((name, conv.name, p.number, probe_kind)) if log_file is not None else None
                    if done is not None:
                        # With --probes-use, asking leaves a mark on some memories: leave the same mark.
                        system.replay(p.question.question)
                        unit, match = _date_score(p, done.prediction)
                        results.append(replace(done, date_unit=unit, date_match=match))
                        continue
                    result = _probe(system, name, p, probe_kind, held, answer=not recall_only)
                    results.append(result)
                    if log_file is not None:
                        log_file.add(result)
            if progress:
                progress(len(point), f"{conv.name}: {probe_kind} probes")

        for pos, u in enumerate(conv.utterances):
            for name, system in systems.items():
                t0 = time.perf_counter()
                system.add(pos, u)
                totals[name].ingest_ms.append((time.perf_counter() - t0) * 1000)
                totals[name].utterances += 1
            if pos in session_ends:
                for name, system in systems.items():
                    totals[name].samples.append(MemorySample(pos, system.memory_tokens(), system.database_bytes()))
            if progress:
                progress(1, f"{conv.name}: streaming")
            if pos in by_point:
                ask(by_point[pos], "evidence")
        for name, system in systems.items():
            t0 = time.perf_counter()
            system.end_of_stream()
            totals[name].end_of_stream_ms = (time.perf_counter() - t0) * 1000
        if probes:
            ask(probes, "end")
        if at_end is not None:
            at_end(conv, systems)
        for name, system in systems.items():
            t = totals[name]
            t.memory_tokens = system.memory_tokens()
            t.database_bytes = system.database_bytes()
            t.formation = system.formation_cost()
    finally:
        for system in systems.values():
            system.close()
    return ConversationRun(conv.name, len(conv.utterances), len(probes), totals), results


def _next(refs: tuple[str | None, ...], i: int) -> str | None:
    return refs[i + 1] if i + 1 < len(refs) else None


def _probe(system: System, name: str, p: Probe, kind: str, held: set[int], *, answer: bool = True) -> ProbeResult:
    context = system.context(p.question.question)
    text: str | None = None
    answer_ms: float | None = None
    f1 = bleu1 = rouge_l = None
    if answer:
        text, answer_ms = system.answer(p.question.question, context)
        score = score_answer(text, p.question.answer, p.question.category)
        f1, bleu1, rouge_l = score.f1, score.bleu1, score.rouge_l
        log.debug("%s %s #%d: %r -> %r (f1 %.2f)", name, kind, p.number, p.question.question, text, score.f1)
    date_unit, date_match = _date_score(p, text)
    return ProbeResult(
        system=name,
        conversation=p.conversation,
        number=p.number,
        category=p.question.category,
        probe=kind,
        question=p.question.question,
        gold=p.question.answer,
        prediction=text,
        f1=f1,
        bleu1=bleu1,
        rouge_l=rouge_l,
        formation=_share(held, p.evidence),
        evidence_recall=_share(context.positions, p.evidence),
        context_tokens=context.tokens,
        retrieval_ms=context.retrieval_ms,
        answer_ms=answer_ms,
        date_unit=date_unit,
        date_match=date_match,
        relevance=context.relevance,
        person_share=context.person_share,
    )


def _date_score(p: Probe, prediction: str | None) -> tuple[str | None, float | None]:
    score = score_temporal_date(prediction, p.question.answer, p.question.category, p.said_at)
    return score.unit, None if score.match is None else float(score.match)
