"""What `assistant bench scale` measured at each size, and its verdict: is the per-step cost flat?"""

from __future__ import annotations

from dataclasses import dataclass

from .host import Machine

# A largest/smallest ratio at or below this reads as flat: timings on a shared two-core machine
# wander by tens of percent between runs, while growth with the stream would show as 10x or 100x.
FLAT_RATIO = 1.5
RATIO_KEYS = ("ingest_ms_median", "ingest_ms_p95", "ingest_ms_mean", "retrieval_ms_median", "retrieval_ms_p95")
# What the verdict reads: the medians and the amortised mean. The p95 of a few dozen queries on a
# shared machine is mostly noise (one preempted call moves it), so p95s are shown, not judged.
JUDGED_KEYS = ("ingest_ms_median", "ingest_ms_mean", "retrieval_ms_median")
# The memory counts as full once it holds this share of T_max: before that the tree still grows
# with the stream and so may its cost; from then on the budget is what keeps it bounded.
FULL_SHARE = 0.9


@dataclass(frozen=True)
class ScalePoint:
    """The memory after `utterances` utterances of the stream."""

    utterances: int
    # Ingest: milliseconds per `Memory.add` over the last `window` utterances before this point.
    window: int
    ingest_ms_median: float
    ingest_ms_p95: float
    ingest_ms_mean: float
    blocks_mounted: int  # blocks distilled and mounted within the window
    llm_calls: int  # distillation LLM calls within the window (0 in extractive mode)
    # Retrieval: `Memory.search` over probe questions about facts the stream stated recently.
    queries: int
    retrieval_ms_median: float
    retrieval_ms_p95: float
    hit_rate: float  # share of probes whose answer context holds the latest stated value
    stale_rate: float  # share whose context holds only a superseded value
    context_tokens_median: float
    # The memory itself.
    memory_tokens: int
    token_budget: int
    scenes: int
    events: int
    amus: int
    pending_blocks: int
    archived_utterances: int
    database_bytes: int  # database file plus its write-ahead log
    rss_mb: float | None  # resident memory now (None where /proc is not available)
    peak_rss_mb: float  # the process's high-water mark so far: it can only rise
    elapsed_s: float  # wall time since the stream started
    # Probes by where the line that last stated their value was (`scale.WHERE_LATEST`; "+stale"
    # when the context held only a superseded value): which stage loses the latest fact.
    latest_line: tuple[tuple[str, int], ...] = ()

    @property
    def nodes(self) -> int:
        return self.scenes + self.events + self.amus


@dataclass(frozen=True)
class ScaleResult:
    points: tuple[ScalePoint, ...]
    distill_mode: str
    seed: int
    speakers: int
    queries: int
    models: tuple[tuple[str, str], ...]  # (role, model as configured)
    machine: Machine
    wall_s: float
    # Whether utterances outside the timed windows were embedded ahead, in batches.
    embedded_ahead: bool = False

    @property
    def ratios(self) -> dict[str, float | None]:
        """Largest size over smallest for each timing; None with one size or a zero denominator."""
        if len(self.points) < 2:
            return dict.fromkeys(RATIO_KEYS)
        return _ratios(self.points[0], self.points[-1])

    @property
    def full_from(self) -> ScalePoint | None:
        """The first point at which the memory held FULL_SHARE of T_max, if a larger point follows it."""
        full = [p for p in self.points[:-1] if p.memory_tokens >= FULL_SHARE * p.token_budget]
        return full[0] if full else None

    @property
    def full_ratios(self) -> dict[str, float | None] | None:
        """Largest size over the first full one: the claim of Appendix A.4 is about this regime."""
        start = self.full_from
        return _ratios(start, self.points[-1]) if start is not None else None

    @property
    def flat(self) -> bool | None:
        """Whether the judged ratios (largest over smallest) are within FLAT_RATIO; None with one size."""
        return _flat(self.ratios)

    @property
    def flat_when_full(self) -> bool | None:
        """The same judgement from the first full size on; None when the budget never filled before the last size."""
        return _flat(self.full_ratios) if self.full_ratios is not None else None


def _ratios(small: ScalePoint, large: ScalePoint) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for k in RATIO_KEYS:
        lo, hi = getattr(small, k), getattr(large, k)
        out[k] = hi / lo if lo > 0 else None
    return out


def _flat(ratios: dict[str, float | None]) -> bool | None:
    judged = [ratios[k] for k in JUDGED_KEYS]
    if any(v is None for v in judged):
        return None
    return all(v is not None and v <= FLAT_RATIO for v in judged)
