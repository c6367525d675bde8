"""`assistant bench scale`: does per-step cost stay flat as the stream grows?

Seed 000 (Appendix A.4) claims that with a hard token budget the tree's node count is bounded
by T_max / c_min, so the cost of one step (ingesting an utterance, answering a retrieval) does
not grow with the length of the stream. This benchmark shows it or refutes it with a table:
one synthetic stream (`synthetic.py`) is fed to a fresh memory one utterance at a time, each
`Memory.add` its own transaction as the live daemon does, and at each requested size (1,000,
10,000, 100,000 utterances by default: one stream with cumulative checkpoints, so the largest
run yields every point) it records ingest time per utterance, retrieval latency, memory
tokens, node counts, database bytes and memory use. The ratio of the largest size's timings to
the smallest's is the answer: near 1 means bounded. Until the tree first fills T_max it is meant
to grow, and its cost may grow with it, so the ratio from the first size at which the memory is
full is reported as well: that is the regime the claim is about.

Ingest timings at every size cover the same number of utterances (the last `window` before the
checkpoint), so each point describes the memory's behaviour at that size rather than a mix of
its whole history. Most utterances only embed, archive and buffer; one in three or so closes a
block that is then distilled, mounted and budgeted; so the median is the cheap step, the p95
the step that distils, and the mean the amortised cost, and all three are reported.

`extractive` distillation (no LLM) makes a 100,000-utterance run a matter of an hour or two
on two cores (about 45-55 ms per utterance, measured to 2,000); `llm` runs the real prompts
(seconds per block) and is only practical for small sizes there. The output says which ran.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import DistillOptions, Settings, load_settings
from ..embed import TextEncoder
from ..errors import InputError
from ..memory.api import Memory, PreparedQuestion
from ..memory.engine import clean_utterance, split_long
from ..records import Utterance
from .host import machine
from .scale_result import ScalePoint, ScaleResult
from .stats import percentile
from .synthetic import Probe, SyntheticStream

DEFAULT_SIZES = (1_000, 10_000, 100_000)
# Ingest timings per point: the last this-many utterances before each checkpoint (fewer when the
# smallest size is smaller), the same count at every size so the distributions compare.
DEFAULT_WINDOW = 1_000
# Utterances between the timed windows are embedded this many at a time, ahead of their steps.
EMBED_AHEAD = 2_000

_MODES: tuple[str, ...] = next(f.metadata["choices"] for f in dataclasses.fields(DistillOptions) if f.name == "mode")


def _checkpoints(sizes: Sequence[int]) -> list[int]:
    if not sizes:
        raise InputError("bench scale needs at least one stream size")
    bad = [s for s in sizes if not isinstance(s, int) or isinstance(s, bool) or s < 1]
    if bad:
        raise InputError(f"stream sizes must be positive whole numbers of utterances; got {bad}")
    return sorted(set(sizes))


def _settings_for(settings: Settings, distill_mode: str, data_dir: Path) -> Settings:
    memory = settings.memory
    memory = dataclasses.replace(memory, distill=dataclasses.replace(memory.distill, mode=distill_mode))
    # What the bounded memory keeps is what is measured: the probes never fall back to the archive
    # (`memory.answer.archive_fallback`), which holds every line of the stream.
    memory = dataclasses.replace(memory, answer=dataclasses.replace(memory.answer, archive_fallback=False))
    paths = dataclasses.replace(settings.paths, data_dir=str(data_dir))
    return dataclasses.replace(settings, paths=paths, memory=memory)


def kept_argument(arg: str) -> tuple[Path, int, int]:
    """DIR:UTTERANCES[:SEED], as the scripts that read a kept memory name one: its directory, how
    many utterances it was streamed to, and the stream's seed (0 when left out)."""
    where, n, *seed = arg.split(":")
    return Path(where), int(n), int(seed[0]) if seed else 0


def reopen_kept(
    data_dir: Path,
    utterances: int,
    *,
    seed: int = 0,
    speakers: int = 36,
    distill_mode: str = "extractive",
    settings: Settings | None = None,
) -> tuple[Memory, SyntheticStream]:
    """A memory that `run_scale` kept in `data_dir` (`--work-dir`) after `utterances` steps,
    opened as the run opened it, and the run's stream moved on to where the memory stopped: what
    measures the same memory again, or goes on with its stream, outside the run."""
    stream = SyntheticStream(seed, speakers=speakers)
    for _ in stream.take(utterances):
        pass
    memory = Memory(_settings_for(settings or load_settings(None), distill_mode, data_dir))
    return memory, stream


def check_kept_lines(memory: Memory, said: Sequence[str], line_ids: Iterable[int], kept: str) -> dict[int, str]:
    """The memory's lines `line_ids` by number, checked to be the stream's utterances `said`.

    The memory numbers lines in the order the stream said them, from 1 (line i is `said[i - 1]`),
    and a script that reads the stream's record of a line by its number trusts that only once it
    is checked: a memory streamed from another seed, or cut shorter, fails here, naming `kept` and
    the line."""
    ids = sorted(set(line_ids))
    texts = {u.id: u.text for u in memory.store.utterances(ids)}
    for line in ids:
        if not 0 < line <= len(said) or texts.get(line) != said[line - 1]:
            raise InputError(f"{kept}: line {line} is not the stream's utterance {line - 1}")
    return texts


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kibibytes, macOS bytes.
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def _filler_end(done: int, checkpoints: Sequence[int], window: int) -> int:
    """The last utterance before the timed window of the checkpoint that `done` leads to."""
    upcoming = next(c for c in checkpoints if c >= done)
    return upcoming - window


class _EmbeddedAhead:
    """The memory's embedder, answering from vectors computed ahead in batches where it has them."""

    def __init__(self, inner: TextEncoder, max_chars: int) -> None:
        self.inner, self.max_chars = inner, max_chars
        self.dim = inner.dim
        self._ready: dict[str, np.ndarray] = {}
        self.used = 0

    def prepare(self, utterances: Sequence[Utterance] | deque[Utterance]) -> None:
        """Embed what these utterances' steps will ask for, keyed by the exact lines the engine embeds."""
        lines = [p.line for u in utterances for p in split_long(clean_utterance(u), self.max_chars)]
        todo = list(dict.fromkeys(lines))
        self._ready = dict(zip(todo, self.inner.encode(todo, batch_size=64), strict=True))

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
        if texts and all(t in self._ready for t in texts):
            self.used += len(texts)
            return np.vstack([self._ready[t] for t in texts])
        return self.inner.encode(texts, batch_size=batch_size)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


def _warm_up(memory: Memory) -> None:
    """Load what a daemon loads before it listens, so the first points do not time model loading."""
    distiller = memory.engine.distiller  # spaCy, and the LLM in llm mode
    distiller.extractor.extract([Utterance("Sam", "The Lisbon trip moves to the 14th of May.", 0.0)])
    memory.search("When is the Lisbon trip?")


# Where the line that last stated a probe's value was when the probe was asked: in the context
# (a hit), recalled but cut from it, recalled but the answer declined unasked (no context at all:
# `answer.min_relevance`, `answer.min_person_share`), held but not recalled, or let go from the
# memory (the archive keeps it, but prostream's recall does not read the archive). Each names the
# first stage that lost it: a line recall never reached was lost there, whatever the answer did next.
WHERE_LATEST = ("context", "cut", "declined", "not_recalled", "pruned")


def _where_latest(memory: Memory, probe: Probe, recalled: list[int], context: str | None) -> str:
    """Which stage lost the probe's latest line (`WHERE_LATEST`), "context" when its value was kept;
    `context` None when the answer declined without one."""
    if context is not None and probe.found_in(context):
        return "context"
    # The stream stamps an utterance with its time rounded to a tenth of a second, the fact unrounded.
    said = memory.store.utterance_ids_between(probe.time - 0.1, probe.time + 0.1, None)
    latest = [u.id for u in memory.store.utterances(said) if u.id is not None and probe.found_in(u.text)]
    held = memory.store.held_ids_among(latest)
    if not held:
        return "pruned"
    if not any(uid in recalled for uid in held):
        return "not_recalled"
    return "cut" if context is not None else "declined"


@dataclass(frozen=True)
class ProbeCheck:
    """What the context a fact-update probe would be answered from says of its fact."""

    held: bool  # the latest stated value is there
    stale: bool  # a superseded value is there
    where: str  # the stage that lost the latest line (`WHERE_LATEST`), "context" when held
    context_tokens: int

    @property
    def outcome(self) -> str:
        return f"{self.where}+stale" if self.stale else self.where


def check_probe(memory: Memory, probe: Probe, prepared: PreparedQuestion) -> ProbeCheck:
    """Read the context `prepared` (the probe's question, prepared by `memory`) would hand the LLM."""
    # The hit check reads the context the LLM would be handed (cut to its token limit), not
    # everything recall returned: a fact cut away is a fact the answer cannot use.
    prompt = prepared.prompt
    text = "\n".join(m["content"] for m in prompt.messages) if prompt is not None else None
    recalled = [r.evidence.utterance_id for r in prepared.retrieval.lines]
    return ProbeCheck(
        held=text is not None and probe.found_in(text),
        stale=text is not None and probe.stale_in(text),
        where=_where_latest(memory, probe, recalled, text),
        context_tokens=prompt.context_tokens if prompt is not None else 0,
    )


def _measure(
    memory: Memory,
    stream: SyntheticStream,
    *,
    done: int,
    window: int,
    ingest_ms: deque[float],
    mounted: deque[int],
    calls: deque[int],
    queries: int,
    started: float,
) -> ScalePoint:
    stats = memory.stats()
    probes = stream.probes(queries, recent=window)
    retrieval_ms: list[float] = []
    context_tokens: list[int] = []
    hits = stale = 0
    where: dict[str, int] = {}
    for probe in probes:
        # Retrieval is all an answer does before the model reads: recall and the context built
        # from it. The probes observe (use=False), so measuring changes nothing that is measured.
        t0 = time.perf_counter()
        prepared = memory.prepare(probe.question, use=False, now=memory.store.clock)
        retrieval_ms.append((time.perf_counter() - t0) * 1000)
        check = check_probe(memory, probe, prepared)
        hits += check.held
        stale += check.stale
        where[check.outcome] = where.get(check.outcome, 0) + 1
        context_tokens.append(check.context_tokens)
    n = len(probes)
    times = list(ingest_ms)
    return ScalePoint(
        utterances=done,
        window=len(times),
        ingest_ms_median=percentile(times, 0.5),
        ingest_ms_p95=percentile(times, 0.95),
        ingest_ms_mean=float(np.mean(times)) if times else 0.0,
        blocks_mounted=sum(mounted),
        llm_calls=sum(calls),
        queries=n,
        retrieval_ms_median=percentile(retrieval_ms, 0.5),
        retrieval_ms_p95=percentile(retrieval_ms, 0.95),
        hit_rate=hits / n if n else 0.0,
        stale_rate=stale / n if n else 0.0,
        context_tokens_median=percentile(context_tokens, 0.5),
        latest_line=tuple(sorted(where.items())),
        memory_tokens=stats.tokens,
        token_budget=stats.token_budget,
        scenes=stats.scenes,
        events=stats.events,
        amus=stats.amus,
        pending_blocks=stats.pending_blocks,
        archived_utterances=stats.utterances,
        database_bytes=stats.database_bytes,
        rss_mb=_rss_mb(),
        peak_rss_mb=_peak_rss_mb(),
        elapsed_s=time.perf_counter() - started,
    )


def run_scale(
    settings: Settings,
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    distill_mode: str = "extractive",
    queries: int = 50,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    data_dir: str | Path | None = None,
    window: int | None = None,
    speakers: int = 36,
    embed_ahead: bool = True,
) -> ScaleResult:
    """Stream max(sizes) synthetic utterances into a fresh memory, measuring at each size.

    `settings` supply the models and every memory knob (T_max included); the distillation mode
    and the data directory are replaced, and the archive fallback is off. Without `data_dir` the
    database lives in a temporary directory removed afterwards; a `data_dir` given must not hold a
    memory already, since a used memory would measure something else. `progress(done, total)` is
    called after every utterance.

    With `embed_ahead`, the utterances between the timed windows (only there) are embedded in
    batches before their steps: the state each window measures is the same (up to float rounding;
    a test compares them), and the filler goes faster, since embedding is most of a step on a CPU
    (52 of 74 s over 1,500 steps in a profile). The timed windows always embed inline, as the
    daemon does.
    """
    checkpoints = _checkpoints(sizes)
    if distill_mode not in _MODES:
        raise InputError(f"distillation mode must be one of {', '.join(_MODES)}; got {distill_mode!r}")
    if queries < 1:
        raise InputError(f"bench scale needs at least one probe question per size; got {queries}")
    window = min(window or DEFAULT_WINDOW, checkpoints[0])
    if window < 1:
        raise InputError(f"the ingest timing window must be at least one utterance; got {window}")
    host = machine()
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            where = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="assistant-scale-")))
        else:
            where = Path(data_dir).expanduser()
            if (where / "memory.db").exists():
                raise InputError(f"{where / 'memory.db'} already exists: bench scale needs an empty data directory")
        run_settings = _settings_for(settings, distill_mode, where)
        # Entered after the directory, so the memory closes before the directory is removed.
        memory = stack.enter_context(Memory(run_settings))
        _warm_up(memory)
        llm = memory.engine.distiller.llm
        stream = SyntheticStream(seed, speakers=speakers)
        ahead = _EmbeddedAhead(memory.engine.embedder, memory.settings.memory.ingest.max_utterance_chars)
        if embed_ahead:
            memory.engine.embedder = ahead
        queued: deque[Utterance] = deque()
        ingest_ms: deque[float] = deque(maxlen=window)
        mounted: deque[int] = deque(maxlen=window)
        calls: deque[int] = deque(maxlen=window)
        wanted = set(checkpoints)
        total = checkpoints[-1]
        points: list[ScalePoint] = []
        stream_started = time.perf_counter()
        for done in range(1, total + 1):
            if not queued:
                filler_end = _filler_end(done, checkpoints, window) if embed_ahead else 0
                if done <= filler_end:
                    queued.extend(stream.take(min(EMBED_AHEAD, filler_end - done + 1)))
                    ahead.prepare(queued)
                else:
                    queued.extend(stream.take(1))
            u = queued.popleft()
            calls_before = llm.usage.calls if llm is not None else 0
            t0 = time.perf_counter()
            report = memory.add(u.speaker, u.text, u.time)
            ingest_ms.append((time.perf_counter() - t0) * 1000)
            mounted.append(report.blocks_mounted)
            calls.append(llm.usage.calls - calls_before if llm is not None else 0)
            if done in wanted:
                points.append(
                    _measure(
                        memory,
                        stream,
                        done=done,
                        window=window,
                        ingest_ms=ingest_ms,
                        mounted=mounted,
                        calls=calls,
                        queries=queries,
                        started=stream_started,
                    )
                )
            if progress is not None:
                progress(done, total)
    models = settings.models
    return ScaleResult(
        points=tuple(points),
        distill_mode=distill_mode,
        seed=seed,
        speakers=speakers,
        queries=queries,
        models=(
            ("llm", models.llm),
            ("distill_llm", models.distill_llm or models.llm),
            ("embedder", models.embedder),
            ("entities", models.entities),
        ),
        machine=host,
        wall_s=time.perf_counter() - started,
        embedded_ahead=embed_ahead and ahead.used > 0,
    )
