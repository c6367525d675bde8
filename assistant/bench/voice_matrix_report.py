"""The voice matrix's results: the distribution over speaker sets (median and worst), as JSON and
as a Markdown table."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any

from .speech_listen import StageSeconds
from .speech_scoring import COLLAR_SECONDS
from .voice_matrix import MatrixRun

FORMAT = "assistant-bench-voice-matrix/1"


@dataclass(frozen=True)
class MatrixSummary:
    sets: int
    count_exact: int
    attribution_median: float
    attribution_worst: float
    der_median: float
    der_worst: float
    wer_median: float
    # Attribution a nearest-voice rule reaches knowing everyone else's speaker: the encoder's share
    # of what is left (None when no set had a voice embedding).
    oracle_median: float | None
    oracle_worst: float | None
    # The online pass's labels alone, before re-clustering: what the later mechanisms add.
    online_median: float
    online_worst: float
    # With a household enrolled: sets with a guest, and those whose guest got a voice of their own.
    guests: int
    guests_found: int
    audio_seconds: float
    chain_rtf: float  # pooled: stage seconds over audio seconds, all sets


def summarise(run: MatrixRun) -> MatrixSummary:
    if not run.sets:
        raise ValueError("no speaker sets were heard")
    attribution = [s.result.attribution.accuracy for s in run.sets]
    der = [s.result.der.der for s in run.sets]
    wer = [s.result.errors.wer for s in run.sets]
    oracle = [s.oracle.accuracy for s in run.sets if s.oracle is not None]
    online = [s.online.accuracy for s in run.sets]
    stages = [s.result.listened.seconds for s in run.sets]
    audio = sum(st.audio for st in stages)
    chain = sum(st.chain for st in stages)
    return MatrixSummary(
        sets=len(run.sets),
        count_exact=sum(s.count_exact for s in run.sets),
        attribution_median=statistics.median(attribution),
        attribution_worst=min(attribution),
        der_median=statistics.median(der),
        der_worst=max(der),
        wer_median=statistics.median(wer),
        oracle_median=statistics.median(oracle) if oracle else None,
        oracle_worst=min(oracle) if oracle else None,
        online_median=statistics.median(online),
        online_worst=min(online),
        guests=sum(s.guest is not None for s in run.sets),
        guests_found=sum(bool(s.guest_found) for s in run.sets),
        audio_seconds=audio,
        chain_rtf=chain / audio if audio else 0.0,
    )


def _r(x: float, digits: int = 3) -> float:
    return round(x, digits)


def matrix_json(run: MatrixRun) -> dict[str, Any]:
    summary = summarise(run)
    return {
        "format": FORMAT,
        "meta": {
            "data": run.data,
            "stt": run.stt,
            "turns": run.turns,
            "seed": run.seed,
            "enrolled_seconds": run.enrolled_seconds,
            "collar": COLLAR_SECONDS,
            "seconds": _r(run.seconds, 1),
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "machine": asdict(run.machine),
        },
        "summary": {k: _r(v, 4) if isinstance(v, float) else v for k, v in asdict(summary).items()},
        "alone": asdict(run.alone) if run.alone is not None else None,
        "sets": [
            {
                "name": s.speaker_set.name,
                "kind": s.speaker_set.kind,
                "pattern": s.speaker_set.pattern,
                "overlap": s.speaker_set.overlap,
                "voices": [asdict(v) for v in s.speaker_set.voices],
                "speakers": s.speakers,
                "found": s.found,
                "audio_seconds": _r(s.result.recording.duration, 1),
                "turns": len(s.result.recording.turns),
                "overlapped": sum(t.overlapped for t in s.result.recording.turns),
                "wer": _r(s.result.errors.wer),
                "attribution": _r(s.result.attribution.accuracy),
                "oracle_attribution": _r(s.oracle.accuracy) if s.oracle is not None else None,
                "online_attribution": _r(s.online.accuracy),
                "enrolled": list(s.enrolled),
                "guest": s.guest,
                "guest_found": s.guest_found,
                "der": _r(s.result.der.der),
                "der_missed": _r(s.result.der.missed / s.result.der.speech if s.result.der.speech else 0.0),
                "der_confusion": _r(s.result.der.confusion / s.result.der.speech if s.result.der.speech else 0.0),
                "der_no_collar": _r(s.result.der_no_collar.der),
                "chain_rtf": _r(_chain_rtf(s.result.listened.seconds), 4),
            }
            for s in run.sets
        ],
    }


def _chain_rtf(st: StageSeconds) -> float:
    return st.chain / st.audio if st.audio else 0.0


def _yes_no(x: bool | None) -> str:
    return "-" if x is None else ("yes" if x else "no")


def _maybe(x: float | None) -> str:
    return f"{x:.3f}" if x is not None else "-"


def matrix_markdown(run: MatrixRun) -> str:
    summary = summarise(run)
    enrolled = run.enrolled_seconds > 0
    mode = (
        f"the household enrolled from {run.enrolled_seconds:g} s per voice (in sets of three or more the last "
        "voice is a guest)"
        if enrolled
        else "nothing enrolled"
    )
    rows = [
        f"Voice matrix: {summary.sets} speaker sets, {run.turns} turns each, {run.stt}, seed {run.seed}, {mode}, "
        f"{summary.audio_seconds / 60:.1f} min of audio, {run.seconds / 60:.1f} min wall.",
        "",
        "| set | what it tests | voices found | online | attribution | oracle | DER (collar 0.25 s) | confusion "
        "| missed | WER | RTF |" + (" guest found |" if enrolled else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if enrolled else ""),
    ]
    for s in run.sets:
        d = s.result.der
        confusion, missed = (d.confusion / d.speech, d.missed / d.speech) if d.speech else (0.0, 0.0)
        rows.append(
            f"| {s.speaker_set.name} | {s.speaker_set.kind} | {s.found} of {s.speakers} | {s.online.accuracy:.3f} | "
            f"{s.result.attribution.accuracy:.3f} | {_maybe(s.oracle.accuracy if s.oracle else None)} | "
            f"{d.der:.3f} | {confusion:.3f} | {missed:.3f} | "
            f"{s.result.errors.wer:.3f} | {_chain_rtf(s.result.listened.seconds):.3f} |"
            + (f" {_yes_no(s.guest_found)} |" if enrolled else "")
        )
    rows += [
        "",
        "| measure | result |",
        "|---|---|",
        f"| speaker count exact | {summary.count_exact} of {summary.sets} |",
        f"| attribution median / worst | {summary.attribution_median:.3f} / {summary.attribution_worst:.3f} |",
        f"| the online pass alone, median / worst | {summary.online_median:.3f} / {summary.online_worst:.3f} |",
        f"| oracle attribution median / worst | {_maybe(summary.oracle_median)} / {_maybe(summary.oracle_worst)} |",
        f"| DER median / worst | {summary.der_median:.3f} / {summary.der_worst:.3f} |",
        f"| WER median | {summary.wer_median:.3f} |",
        f"| chain real-time factor (pooled) | {summary.chain_rtf:.3f} |",
    ]
    if summary.guests:
        rows.append(f"| guests found as a voice of their own | {summary.guests_found} of {summary.guests} |")
    if run.alone is not None:
        a = run.alone
        rows.append(
            f"| one voice ({a.voice}) alone for {a.seconds / 60:.1f} min | {a.found} voice(s) in {a.pieces} "
            "utterances |"
        )
    return "\n".join(rows) + "\n"
