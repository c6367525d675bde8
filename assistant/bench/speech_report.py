"""The results of the speech benchmark: pooled over conversations, as JSON and as a Markdown table."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from .speech_listen import RealTimeFactors, StageSeconds
from .speech_metrics import DiarizationError
from .speech_run import SpeechRun
from .speech_scoring import COLLAR_SECONDS
from .stats import percentile

FORMAT = "assistant-bench-speech/1"


@dataclass(frozen=True)
class Totals:
    """Pooled over conversations: errors over all reference words, time over all audio."""

    audio_seconds: float
    turns: int
    overlapped: int
    wer: float
    attribution: float
    der: float
    der_no_collar: float
    rtf: RealTimeFactors
    delay_p50: float | None
    delay_p95: float | None
    delay_turns: int
    delay_missed: int
    # Split by what follows a turn: a pause of at least the VAD hangover (the segment closes) or
    # not (the turn waits for the next one to end).
    delay_p50_after_pause: float | None
    delay_after_pause_turns: int
    delay_p50_run_on: float | None
    delay_run_on_turns: int


def _pooled_der(ders: Sequence[DiarizationError]) -> float:
    speech = sum(d.speech for d in ders)
    return sum(d.missed + d.false_alarm + d.confusion for d in ders) / speech if speech else 0.0


def totals(run: SpeechRun) -> Totals:
    convs = run.conversations
    ref_words = sum(c.errors.reference_words for c in convs)
    errors = sum(c.errors.substitutions + c.errors.deletions + c.errors.insertions for c in convs)
    aligned = sum(c.attribution.words for c in convs)
    stages = [c.listened.seconds for c in convs]
    seconds = StageSeconds(
        audio=sum(s.audio for s in stages),
        vad=sum(s.vad for s in stages),
        stt=sum(s.stt for s in stages),
        diarization=sum(s.diarization for s in stages),
        memory=sum(s.memory for s in stages),
        chain=sum(s.chain for s in stages),
    )
    timed = [d for c in convs if c.delays for d in c.delays.turns]
    delays = [d.delay for d in timed]
    paused = [d.delay for d in timed if d.pause_after is None or d.pause_after >= run.hangover]
    run_on = [d.delay for d in timed if d.pause_after is not None and d.pause_after < run.hangover]
    return Totals(
        audio_seconds=seconds.audio,
        turns=sum(len(c.recording.turns) for c in convs),
        overlapped=sum(sum(t.overlapped for t in c.recording.turns) for c in convs),
        wer=errors / ref_words if ref_words else 0.0,
        attribution=sum(c.attribution.correct for c in convs) / aligned if aligned else 0.0,
        der=_pooled_der([c.der for c in convs]),
        der_no_collar=_pooled_der([c.der_no_collar for c in convs]),
        rtf=seconds.rtf(),
        delay_p50=statistics.median(delays) if delays else None,
        delay_p95=percentile(delays, 0.95) if delays else None,
        delay_turns=len(delays),
        delay_missed=sum(c.delays.missed for c in convs if c.delays),
        delay_p50_after_pause=statistics.median(paused) if paused else None,
        delay_after_pause_turns=len(paused),
        delay_p50_run_on=statistics.median(run_on) if run_on else None,
        delay_run_on_turns=len(run_on),
    )


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def _rtf(r: RealTimeFactors) -> dict[str, float | None]:
    return {k: _r(v, 4) for k, v in asdict(r).items()}


def speech_json(run: SpeechRun) -> dict[str, Any]:
    t = totals(run)
    conversations = []
    for c in run.conversations:
        rec = c.recording
        conversations.append(
            {
                "name": c.name,
                "audio_seconds": _r(rec.duration),
                "speech_seconds": _r(sum(x.duration for x in rec.turns)),
                "turns": len(rec.turns),
                "overlapped": sum(x.overlapped for x in rec.turns),
                "silent_lines": list(rec.silent),
                "voices": {cast.speaker: asdict(cast.voice) for cast in rec.cast},
                "word_errors": asdict(c.errors),
                "attribution": asdict(c.attribution),
                "der": asdict(c.der),
                "der_no_collar": asdict(c.der_no_collar),
                "speakers": {"reference": len(rec.cast), "found": c.listened.speakers},
                "segments": c.listened.segments,
                "utterances": len(c.listened.pieces),
                "stage_seconds": asdict(c.listened.seconds),
                "rtf": _rtf(c.listened.seconds.rtf()),
                "realtime": None
                if c.delays is None or c.realtime is None
                else {
                    "audio_seconds": _r(c.realtime.seconds.audio),
                    "turns": len(c.delays.turns) + c.delays.missed,
                    "missed": c.delays.missed,
                    "delay_p50": _r(c.delays.p50),
                    "delay_p95": _r(c.delays.p95),
                    "delays": [asdict(d) for d in c.delays.turns],
                },
                "turn_results": [asdict(x) for x in c.turns],
                "reference": [asdict(x) for x in rec.turns],
                # The voice embedding stays out: 256 numbers a piece say nothing to a reader.
                "pieces": [
                    {f.name: getattr(p, f.name) for f in fields(p) if f.name != "voice"} for p in c.listened.pieces
                ],
            }
        )
    return {
        "format": FORMAT,
        "meta": {
            "data": run.data,
            "stt": run.stt,
            "distill_mode": run.distill_mode,
            "turns": run.turns,
            "overlap": run.overlap,
            "seed": run.seed,
            "realtime_turns": run.realtime_turns,
            "pacing": asdict(run.pacing),
            "collar": COLLAR_SECONDS,
            "hangover": run.hangover,
            "seconds": _r(run.seconds, 1),
            "date": run.machine.date,
            "machine": run.machine.describe(),
        },
        "overall": {
            "audio_seconds": _r(t.audio_seconds),
            "turns": t.turns,
            "overlapped": t.overlapped,
            "wer": _r(t.wer),
            "attribution": _r(t.attribution),
            "der": _r(t.der),
            "der_no_collar": _r(t.der_no_collar),
            "rtf": _rtf(t.rtf),
            "delay_p50": _r(t.delay_p50),
            "delay_p95": _r(t.delay_p95),
            "delay_turns": t.delay_turns,
            "delay_missed": t.delay_missed,
            "delay_p50_after_pause": _r(t.delay_p50_after_pause),
            "delay_after_pause_turns": t.delay_after_pause_turns,
            "delay_p50_run_on": _r(t.delay_p50_run_on),
            "delay_run_on_turns": t.delay_run_on_turns,
        },
        "conversations": conversations,
    }


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}m{s:02d}s"


def speech_markdown(run: SpeechRun) -> str:
    t = totals(run)
    lines = [
        f"## Speech benchmark ({run.stt}, {run.machine.date})",
        "",
        f"Data {run.data}; the first {run.turns} turns of each conversation, {run.overlap:.0%} of speaker "
        "changes overlapped, "
        f"pauses {run.pacing.min_gap}-{run.pacing.max_gap} s, seed {run.seed}; distillation {run.distill_mode}; "
        f"{run.machine.describe()}; {run.seconds:.0f} s in all.",
        "",
        "| conversation | audio | turns (overlapped) | WER | attribution | DER | DER, no collar "
        "| speakers found | delay p50 | delay p95 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in run.conversations:
        rec = c.recording
        d = c.delays
        lines.append(
            f"| {c.name} | {_minutes(rec.duration)} | {len(rec.turns)} ({sum(x.overlapped for x in rec.turns)}) "
            f"| {_f(c.errors.wer)} | {_f(c.attribution.accuracy)} | {_f(c.der.der)} | {_f(c.der_no_collar.der)} "
            f"| {c.listened.speakers} of {len(rec.cast)} | {_f(d.p50 if d else None, 2)} s "
            f"| {_f(d.p95 if d else None, 2)} s |"
        )
    lines.append(
        f"| **all** | {_minutes(t.audio_seconds)} | {t.turns} ({t.overlapped}) | {_f(t.wer)} | {_f(t.attribution)} "
        f"| {_f(t.der)} | {_f(t.der_no_collar)} | | {_f(t.delay_p50, 2)} s | {_f(t.delay_p95, 2)} s |"
    )
    lines += [
        "",
        "Real-time factor (stage seconds / audio seconds, the unpaced pass):",
        "",
        "| conversation | VAD | speech to text | diarization | memory | whole chain |",
        "|---|---|---|---|---|---|",
    ]
    for c in run.conversations:
        r = c.listened.seconds.rtf()
        lines.append(
            f"| {c.name} | {_f(r.vad, 4)} | {_f(r.stt)} | {_f(r.diarization)} | {_f(r.memory)} | {_f(r.chain)} |"
        )
    r = t.rtf
    lines.append(f"| **all** | {_f(r.vad, 4)} | {_f(r.stt)} | {_f(r.diarization)} | {_f(r.memory)} | {_f(r.chain)} |")
    lines += [
        "",
        f"WER over all reference words; attribution over recognised words after the best voice-to-speaker "
        f"mapping; DER with a {COLLAR_SECONDS} s collar around reference turn edges. Delays: end of a turn's "
        f"speech to its words being searchable, with the first {run.realtime_turns} turns of each conversation "
        f"fed in real time ({t.delay_turns} turns measured, {t.delay_missed} not recognised). Median delay of "
        f"turns followed by a pause of at least the VAD hangover ({run.hangover} s): "
        f"{_f(t.delay_p50_after_pause, 2)} s ({t.delay_after_pause_turns} turns); of turns followed by a shorter "
        f"pause or an overlap, which wait in one segment for the next turn to end: {_f(t.delay_p50_run_on, 2)} s "
        f"({t.delay_run_on_turns} turns).",
    ]
    return "\n".join(lines)
