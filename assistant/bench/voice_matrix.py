"""The voice matrix: speaker attribution over many synthetic speaker sets, not one tuned pair.

`assistant bench speech --matrix` speaks the same kind of conversation with each set of voices
below (espeak-ng voices and variants, pitch and rate spread; male-male, female-female and mixed
pairs, three and four speakers, short back-channel replies, frequent overlaps, a long monologue),
listens to each with the shipped chain into a fresh memory, and scores speaker count,
attribution, DER and WER per set. The report is the distribution over sets (median and worst):
a diarizer tuned on one pair shows its limits on the others.

The words come from the LoCoMo file (consecutive spoken lines, a different stretch per set); who
says each line is decided by the set's turn pattern, seeded, so every run hears the same audio.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import InputError
from ..speech.transcribe import transcriber_from_settings
from .host import Machine, machine
from .locomo import read_conversations
from .speech import (
    _PHOTO,
    COLLAR_SECONDS,
    ConversationResult,
    StageSeconds,
    listen,
    normalise,
    score,
)
from .voices import Line, Pacing, Voice, build_recording, check_tools, remove_parts

FORMAT = "assistant-bench-voice-matrix/1"
LABELS = ("A", "B", "C", "D")
# Short replies a listener gives while the other talks; Whisper and the voice encoder both get
# little to work with, which is the point of the back-channel set.
BACKCHANNEL = ("Yeah.", "Right.", "Okay, sure.", "Oh wow.", "Mm-hm, I see.", "Really?", "Totally.", "Nice.")


@dataclass(frozen=True)
class SpeakerSet:
    """Voices and how they take turns.

    `pattern`: "alternate" (A, B, A, B), "guest" (A and B alternate, every fifth turn a third
    voice), "round" (each turn a different voice than the last, drawn at random), "backchannel"
    (alternate, and every other turn of B a short reply), "monologue" (A speaks six lines in a
    row, then B one).
    """

    name: str
    kind: str  # what the set tests, for the report
    voices: tuple[Voice, ...]
    pattern: str = "alternate"
    overlap: float = 0.1


SETS: tuple[SpeakerSet, ...] = (
    SpeakerSet("us-m/gb-f", "mixed pair", (Voice("en-us+m3", 40, 160), Voice("en-gb+f2", 60, 170))),
    SpeakerSet("us-m/gb-m", "male pair", (Voice("en-us", 45, 165), Voice("en-gb", 35, 150))),
    SpeakerSet("scot-m/nyc-m", "male pair", (Voice("en-gb-scotland+m1", 40, 155), Voice("en-us-nyc+m4", 55, 175))),
    SpeakerSet(
        "m2 low/m2 high", "one voice, pitch and rate apart", (Voice("en-us+m2", 30, 145), Voice("en-us+m2", 70, 190))
    ),
    SpeakerSet("f3/gb-f4", "female pair", (Voice("en+f3", 65, 175), Voice("en-gb+f4", 75, 160))),
    SpeakerSet("us-f1/029-f5", "female pair", (Voice("en-us+f1", 55, 165), Voice("en-029+f5", 70, 180))),
    SpeakerSet("rp-m5/us-f2", "mixed pair", (Voice("en-gb-x-rp+m5", 40, 160), Voice("en-us+f2", 65, 170))),
    SpeakerSet(
        "klatt2/gb-f1", "mixed pair, another synthesis", (Voice("en-us+klatt2", 45, 160), Voice("en-gb+f1", 60, 170))
    ),
    SpeakerSet(
        "trio, guest",
        "three speakers, a guest every fifth turn",
        (Voice("en-us", 45, 165), Voice("en+f3", 65, 175), Voice("en-gb+m3", 30, 150)),
        pattern="guest",
    ),
    SpeakerSet(
        "trio, round",
        "three speakers in any order",
        (Voice("en-029+m5", 45, 160), Voice("en-gb+f1", 65, 170), Voice("en-us+m7", 35, 150)),
        pattern="round",
    ),
    SpeakerSet(
        "quartet",
        "four speakers in any order",
        (
            Voice("en-us", 45, 165),
            Voice("en+f3", 65, 175),
            Voice("en-gb-scotland+m2", 35, 150),
            Voice("en-gb+f4", 75, 160),
        ),
        pattern="round",
    ),
    SpeakerSet(
        "back-channel", "short replies", (Voice("en-us+m4", 45, 165), Voice("en-gb+f3", 65, 175)), pattern="backchannel"
    ),
    SpeakerSet(
        "overlaps", "four in ten changes cut in", (Voice("en-gb+m1", 40, 160), Voice("en-us+f4", 70, 170)), overlap=0.4
    ),
    SpeakerSet(
        "monologue",
        "one long speaker, short turns of another",
        (Voice("en-us-nyc+m6", 40, 160), Voice("en+f2", 65, 175)),
        pattern="monologue",
    ),
)


def speaker_order(pattern: str, speakers: int, turns: int, rng: random.Random) -> list[int]:
    """Who speaks each turn (indices into the set's voices)."""
    if pattern in ("alternate", "backchannel"):
        return [i % 2 for i in range(turns)]
    if pattern == "guest":
        if speakers < 3:
            raise ValueError("the guest pattern needs three voices")
        order, host = [], 0
        for i in range(turns):
            if i % 5 == 4:
                order.append(2)
            else:
                order.append(host)
                host = 1 - host
        return order
    if pattern == "round":
        # Drawn again until every voice speaks: a set that never hears one tests nothing about it.
        for _ in range(1000):
            order = [0]
            while len(order) < turns:
                order.append(rng.choice([s for s in range(speakers) if s != order[-1]]))
            if len(set(order)) == speakers:
                return order
        raise ValueError(f"{turns} turns are too few for {speakers} voices taking turns at random")
    if pattern == "monologue":
        return [0 if i % 7 < 6 else 1 for i in range(turns)]
    raise ValueError(f"unknown turn pattern {pattern!r}")


def spoken_lines(data: Path) -> list[str]:
    """Every line of the LoCoMo file that has words to speak, in order."""
    lines = []
    for conv in read_conversations(data):
        for u in conv.utterances:
            text = _PHOTO.sub("", u.text)
            if normalise(text):
                lines.append(text)
    return lines


def set_script(speaker_set: SpeakerSet, index: int, source: Sequence[str], turns: int, seed: int) -> list[Line]:
    """The lines one set speaks: its own stretch of `source`, given out by its turn pattern."""
    if turns < 2 * len(speaker_set.voices):
        raise InputError(f"--turns must be at least {2 * len(speaker_set.voices)} for set {speaker_set.name!r}")
    rng = random.Random(f"{seed}:{speaker_set.name}")
    order = speaker_order(speaker_set.pattern, len(speaker_set.voices), turns, rng)
    start = (index * turns) % len(source)
    lines = []
    b_turns = 0
    for i, who in enumerate(order):
        text = source[(start + i) % len(source)]
        if speaker_set.pattern == "backchannel" and who == 1:
            b_turns += 1
            if b_turns % 2 == 0:
                text = rng.choice(BACKCHANNEL)
        lines.append(Line(LABELS[who], text))
    return lines


@dataclass(frozen=True)
class SetResult:
    speaker_set: SpeakerSet
    speakers: int  # voices in the recording
    found: int  # distinct voices among the utterances the chain filed
    result: ConversationResult

    @property
    def count_exact(self) -> bool:
        return self.found == self.speakers


@dataclass(frozen=True)
class MatrixRun:
    data: str
    stt: str
    turns: int
    seed: int
    seconds: float
    machine: Machine
    sets: tuple[SetResult, ...]


def run_matrix(
    settings: Settings,
    data: Path,
    *,
    turns: int,
    seed: int,
    sets: Sequence[SpeakerSet] = SETS,
    audio_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> MatrixRun:
    """Speak and hear every set; `settings` is the chain to measure (see `speech.bench_settings`)."""
    check_tools()
    # Refused before anything is spoken, not after the sets before it were heard.
    least = max(2 * len(s.voices) for s in sets)
    if turns < least:
        raise InputError(f"--turns must be at least {least} for these sets (two turns per voice)")
    source = spoken_lines(data)
    if len(source) < turns:
        raise InputError(f"{data}: {len(source)} spoken lines, fewer than --turns {turns}")
    host = machine()
    started = time.perf_counter()
    transcriber = transcriber_from_settings(settings)
    results = []
    with tempfile.TemporaryDirectory(prefix="assistant-voice-matrix-") as tmp:
        root = Path(tmp)
        audio = audio_dir or root / "audio"
        for position, speaker_set in enumerate(sets):
            # A set speaks the same words whether heard alone (--sets) or with the others.
            index = SETS.index(speaker_set) if speaker_set in SETS else position
            name = f"set{index:02d}"
            if progress:
                progress(f"{speaker_set.name}: speaking")
            lines = set_script(speaker_set, index, source, turns, seed)
            voices = {LABELS[i]: v for i, v in enumerate(speaker_set.voices)}
            recording = build_recording(
                lines, audio, name=name, pacing=Pacing(overlap=speaker_set.overlap), seed=seed, voices=voices
            )
            remove_parts(audio, name)
            if progress:
                progress(f"{speaker_set.name}: listening")
            heard = listen(settings, transcriber, recording, root / name, start_time=0.0, realtime=False)
            result = score(speaker_set.name, recording, heard, None, None)
            found = len({p.speaker for p in heard.pieces})
            results.append(SetResult(speaker_set, len({t.speaker for t in recording.turns}), found, result))
    return MatrixRun(str(data), settings.models.stt, turns, seed, time.perf_counter() - started, host, tuple(results))


@dataclass(frozen=True)
class MatrixSummary:
    sets: int
    count_exact: int
    attribution_median: float
    attribution_worst: float
    der_median: float
    der_worst: float
    wer_median: float
    audio_seconds: float
    chain_rtf: float  # pooled: stage seconds over audio seconds, all sets


def summarise(run: MatrixRun) -> MatrixSummary:
    if not run.sets:
        raise ValueError("no speaker sets were heard")
    attribution = [s.result.attribution.accuracy for s in run.sets]
    der = [s.result.der.der for s in run.sets]
    wer = [s.result.errors.wer for s in run.sets]
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
            "collar": COLLAR_SECONDS,
            "seconds": _r(run.seconds, 1),
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "machine": asdict(run.machine),
        },
        "summary": {k: _r(v, 4) if isinstance(v, float) else v for k, v in asdict(summary).items()},
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


def matrix_markdown(run: MatrixRun) -> str:
    summary = summarise(run)
    rows = [
        f"Voice matrix: {summary.sets} speaker sets, {run.turns} turns each, {run.stt}, seed {run.seed}, "
        f"{summary.audio_seconds / 60:.1f} min of audio, {run.seconds / 60:.1f} min wall.",
        "",
        "| set | what it tests | voices found | attribution | DER (collar 0.25 s) | confusion | missed | WER | RTF |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in run.sets:
        d = s.result.der
        confusion, missed = (d.confusion / d.speech, d.missed / d.speech) if d.speech else (0.0, 0.0)
        rows.append(
            f"| {s.speaker_set.name} | {s.speaker_set.kind} | {s.found} of {s.speakers} | "
            f"{s.result.attribution.accuracy:.3f} | {d.der:.3f} | {confusion:.3f} | {missed:.3f} | "
            f"{s.result.errors.wer:.3f} | {_chain_rtf(s.result.listened.seconds):.3f} |"
        )
    rows += [
        "",
        "| measure | result |",
        "|---|---|",
        f"| speaker count exact | {summary.count_exact} of {summary.sets} |",
        f"| attribution median / worst | {summary.attribution_median:.3f} / {summary.attribution_worst:.3f} |",
        f"| DER median / worst | {summary.der_median:.3f} / {summary.der_worst:.3f} |",
        f"| WER median | {summary.wer_median:.3f} |",
        f"| chain real-time factor (pooled) | {summary.chain_rtf:.3f} |",
    ]
    return "\n".join(rows) + "\n"
