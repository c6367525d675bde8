"""Scoring `assistant bench daemon`: when each spoken turn was acknowledged, how long the asks
took, and the same turns heard with and without the load, compared."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..records import HeardLine, Status
from .daemon_load_clients import AskResult, LiveReader, StatusPoller
from .daemon_load_plan import Plan
from .stats import percentile
from .synth_conversation import Recording

# An utterance stamped this far outside every turn's speech belongs to none (a stray piece).
MATCH_SLACK = 1.0


def turn_of(recording: Recording, offset: float) -> int | None:
    """The turn whose speech is nearest to `offset` (seconds into the recording), within MATCH_SLACK.

    Matched by time, not by words: Whisper mishears some synthetic turns badly enough that few of
    their words survive ("Rosa's closes at nine" came back as "Roses glow in at high"), and turns
    are at least a second apart, far more than the error in where a piece is stamped.
    """
    best, distance = None, MATCH_SLACK
    for i, turn in enumerate(recording.turns):
        d = max(turn.start - offset, 0.0, offset - turn.end)
        if d <= distance:
            best, distance = i, d
    return best


def acknowledgements(recording: Recording, heard: list[tuple[float, HeardLine]], t0: float) -> list[float | None]:
    """Per turn, when the last utterance holding its words was acknowledged (None: never).

    Each utterance carries the time its speech started, stamped by the daemon from the moment it
    started playing the file (`t0`, in epoch seconds; a turn heard as two pieces gets both).
    """
    done: list[float | None] = [None] * len(recording.turns)
    for received, event in heard:
        i = turn_of(recording, event.time - t0)
        if i is not None:
            done[i] = max(done[i] or 0.0, received)
    return done


def latency(values: list[float]) -> dict[str, float | int]:
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.5), 3),
        "p95": round(percentile(values, 0.95), 3),
        "max": round(max(values, default=0.0), 3),
    }


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}


@dataclass(frozen=True)
class ObservedPass:
    """What one pass saw: times are wall-clock seconds (`time.time()`)."""

    name: str
    recording: Recording
    plan: Plan
    load: bool
    started: float  # the daemon was started
    t0: float  # it first answered: the recording's first sample played about then
    wall: float  # seconds from start to stop
    fast: LiveReader
    slow: LiveReader | None
    poller: StatusPoller
    asks: list[AskResult]
    load_started: float | None
    load_ended: float | None
    rss_kib: int
    peak_kib: int
    final: Status  # /status once everything was heard


def score_pass(p: ObservedPass) -> dict[str, Any]:
    acked = acknowledgements(p.recording, p.fast.utterances, p.t0)
    heard = [
        {
            "acknowledged": round(at - p.t0, 3),
            "start": round(e.time - p.t0, 3),
            "turn": turn_of(p.recording, e.time - p.t0),
            "speaker": e.speaker,
            "text": e.text,
        }
        for at, e in p.fast.utterances
    ]
    # How far the daemon's stamps fall from the script's turn starts: the error of t0 (when the
    # daemon first answered) plus where Whisper puts a first word; small next to the delays.
    offsets = [h["start"] - p.recording.turns[h["turn"]].start for h in heard if h["turn"] is not None]
    delays = [
        {
            "index": turn.index,
            "speaker": turn.speaker,
            "end": round(turn.end, 3),
            "acknowledged": None if at is None else round(at - p.t0, 3),
            "delay": None if at is None else round(at - (p.t0 + turn.end), 3),
        }
        for turn, at in zip(p.recording.turns, acked, strict=True)
    ]
    # The turns whose speech ended while the questions were being answered: the ones load can stall.
    if p.load_started is not None and p.load_ended is not None:
        for d in delays:
            d["under_load"] = p.load_started - p.t0 <= d["end"] <= p.load_ended - p.t0
    measured = [d["delay"] for d in delays if d["delay"] is not None]
    samples = p.poller.samples
    during = [s for s in samples if p.load_started is None or (p.load_started <= s.at <= (p.load_ended or s.at))]
    report: dict[str, Any] = {
        "name": p.name,
        "wall_seconds": round(p.wall, 1),
        "ready_seconds": round(p.t0 - p.started, 1),
        "ingest": {
            "turns": len(p.recording.turns),
            "acknowledged_utterances": len(p.fast.utterances),
            "turns_acknowledged": len(measured),
            "missed_turns": [d["index"] for d in delays if d["delay"] is None],
            "delay": latency(measured),
            "delays": delays,
            "stamp_offset_p50": round(percentile(offsets, 0.5), 3),
            "utterances": heard,
        },
        "status": {
            "polls": len(samples),
            "failed_polls": p.poller.failures,
            "lag_max": round(max((s.lag for s in samples), default=0.0), 2),
            "queued_max": max((s.queued for s in samples), default=0),
            "lag_max_under_load": round(max((s.lag for s in during), default=0.0), 2) if p.load else None,
            "status_ms": latency([s.ms for s in samples]),
        },
        "daemon": {
            "rss_mib": round(p.rss_kib / 1024, 1),
            "peak_rss_mib": round(p.peak_kib / 1024, 1),
            "memory_tokens": p.final.memory.tokens,
            "utterances": p.final.memory.utterances,
            "speakers": len(p.final.speakers),
            "devices": p.final.devices,
        },
        "live_stream_error": p.fast.error,
    }
    if p.load:
        assert p.slow is not None and p.load_started is not None
        done = [a for a in p.asks if a.error is None and a.answer is not None]
        with_llm = [a for a in done if a.used_llm]
        under = [d["delay"] for d in delays if d.get("under_load") and d["delay"] is not None]
        report["load"] = {
            "clients": p.plan.clients,
            "questions_per_client": p.plan.questions_per_client,
            "started_at": round(p.load_started - p.t0, 2),
            "seconds": round((p.load_ended or p.load_started) - p.load_started, 1),
            "asked": len(p.asks),
            "answered": len(done),
            "errors": [a.error for a in p.asks if a.error is not None][:10],
            "error_count": sum(1 for a in p.asks if a.error is not None),
            "answered_by_llm": len(with_llm),
            "knows": sum(1 for a in done if a.knows),
            "first_token": latency([a.first_token for a in done if a.first_token is not None]),
            "answer": latency([a.answer for a in done if a.answer is not None]),
            "first_token_llm": latency([a.first_token for a in with_llm if a.first_token is not None]),
            "answer_llm": latency([a.answer for a in with_llm if a.answer is not None]),
            "asks": [_rounded(asdict(a)) | {"sent": round(a.sent - p.t0, 2)} for a in p.asks],
            "turns_under_load": len(under),
        }
        report["slow_subscriber"] = {
            "interval_seconds": p.plan.slow_interval,
            "lines": len(p.slow.utterances),
            "expected": len(p.fast.utterances),
            "skipped": p.slow.skipped,
            "complete": len(p.slow.utterances) + p.slow.skipped >= len(p.fast.utterances),
            "all_lines": len(p.slow.utterances) >= len(p.fast.utterances) and p.slow.skipped == 0,
            "error": p.slow.error,
        }
    return report


def compare(idle: dict[str, Any], loaded: dict[str, Any]) -> dict[str, Any]:
    """The same turns, heard with and without the load."""
    under = {d["index"] for d in loaded["ingest"]["delays"] if d.get("under_load")}
    idle_by = {d["index"]: d["delay"] for d in idle["ingest"]["delays"]}
    load_by = {d["index"]: d["delay"] for d in loaded["ingest"]["delays"]}
    paired = [i for i in sorted(under) if idle_by.get(i) is not None and load_by.get(i) is not None]
    a = [idle_by[i] for i in paired]
    b = [load_by[i] for i in paired]
    return {
        "turns_compared": len(paired),
        "delay_p50_idle": round(percentile(a, 0.5), 3),
        "delay_p50_load": round(percentile(b, 0.5), 3),
        "delay_p95_idle": round(percentile(a, 0.95), 3),
        "delay_p95_load": round(percentile(b, 0.95), 3),
        "delay_increase_p50": round(percentile([y - x for x, y in zip(a, b, strict=True)], 0.5), 3),
        "lag_max_idle": idle["status"]["lag_max"],
        "lag_max_load": loaded["status"]["lag_max"],
        "missed_turns_idle": len(idle["ingest"]["missed_turns"]),
        "missed_turns_load": len(loaded["ingest"]["missed_turns"]),
        # Stalled: under load, something heard was never acknowledged that was without it, or the
        # daemon stopped answering /status. Slower acknowledgement is what the delays above show.
        "stalled": len(loaded["ingest"]["missed_turns"]) > len(idle["ingest"]["missed_turns"])
        or loaded["status"]["failed_polls"] > 0,
    }
