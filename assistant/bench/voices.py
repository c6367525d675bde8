"""Multi-speaker recordings of written conversations, spoken by espeak-ng and assembled with sox.

Each speaker gets an espeak-ng voice of its own (alternately male and female: the voice encoder
does not tell two synthetic male voices apart, see BENCHMARKS.md "Listening chain"). Turns follow
each other after a random pause, and a share of them start before the previous turn has ended,
as people cut in. Every turn is cut to its audible speech first, so the time span recorded for it
is exactly where its voice is in the recording: that is the reference the speech benchmark scores
diarization and delays against.

Overlaps only ever involve two consecutive turns, so the recording is two tracks (even and odd
turns) mixed together; a turn never starts before the turn two back has ended.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from ..errors import AssistantError
from ..records import SAMPLE_RATE

# What each tool is called in Debian's archive (they are system packages, not pip ones).
TOOLS = {"espeak-ng": "espeak-ng", "sox": "sox"}
# espeak-ng pads its output with digital silence; anything louder than this is speech.
AUDIBLE = 0.01
# Audio kept either side of a turn's audible speech, so sox's resampler does not clip its edges.
EDGE_SECONDS = 0.05


class ToolMissing(AssistantError):
    """A program the recordings are made with is not installed."""


@dataclass(frozen=True)
class Voice:
    """An espeak-ng voice: `name` for -v, pitch 0-99 for -p, words per minute for -s."""

    name: str
    pitch: int
    speed: int


# Male and female alternate so that the first two speakers (LoCoMo has two) are clearly different
# voices; a third and fourth speaker get another accent and pitch, but sound closer to the first two.
VOICES: tuple[Voice, ...] = (
    Voice("en-us", 45, 165),
    Voice("en+f3", 65, 175),
    Voice("en-gb+m3", 30, 150),
    Voice("en+f4", 75, 160),
)


@dataclass(frozen=True)
class Line:
    """One turn of a written conversation."""

    speaker: str
    text: str


@dataclass(frozen=True)
class Pacing:
    """How turns are spaced: pauses drawn uniformly from [min_gap, max_gap] seconds; a share
    `overlap` of the turns that change speaker start early, by [min_overlap, max_overlap] seconds
    (at most half of either turn)."""

    min_gap: float = 0.3
    max_gap: float = 2.0
    overlap: float = 0.1
    min_overlap: float = 0.2
    max_overlap: float = 1.0
    lead: float = 1.0
    tail: float = 1.5

    def __post_init__(self) -> None:
        if not 0 <= self.min_gap <= self.max_gap:
            raise ValueError(f"pauses need 0 <= min_gap <= max_gap; got {self.min_gap}, {self.max_gap}")
        if not 0 <= self.overlap <= 1:
            raise ValueError(f"overlap is a share of turns, 0 to 1; got {self.overlap}")
        if not 0 < self.min_overlap <= self.max_overlap:
            raise ValueError(
                f"overlaps need 0 < min_overlap <= max_overlap; got {self.min_overlap}, {self.max_overlap}"
            )


@dataclass(frozen=True)
class Casting:
    speaker: str
    voice: Voice


@dataclass(frozen=True)
class SpokenTurn:
    """A turn as it sits in the recording: `start`/`end` are its first and last audible sample (seconds)."""

    index: int  # position in the lines the recording was built from
    speaker: str
    text: str
    voice: str
    start: float
    end: float
    overlapped: bool  # starts before the previous turn ends

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Recording:
    path: Path
    duration: float
    turns: tuple[SpokenTurn, ...]
    cast: tuple[Casting, ...]
    silent: tuple[int, ...]  # indices of lines espeak-ng made no audible sound for (left out)


@dataclass(frozen=True)
class _Clip:
    line: int
    path: Path
    samples: int  # length of the clip at SAMPLE_RATE
    first: int  # first and last audible sample inside the clip
    last: int


def check_tools() -> None:
    """Fail early, naming the Debian package to install, when espeak-ng or sox is missing."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        packages = " ".join(TOOLS[t] for t in missing)
        raise ToolMissing(
            f"{' and '.join(missing)} not found on PATH; the speech benchmark speaks and mixes its recordings "
            f"with them: install the Debian package(s) with `sudo apt-get install {packages}`"
        )


def _run(args: Sequence[str | Path]) -> None:
    try:
        subprocess.run([str(a) for a in args], check=True, capture_output=True)
    except FileNotFoundError:
        check_tools()
        raise
    except subprocess.CalledProcessError as exc:
        reason = exc.stderr.decode("utf-8", "replace").strip() or f"exit status {exc.returncode}"
        raise AssistantError(f"{args[0]} failed: {reason}") from None


def _sox(args: Sequence[str | Path]) -> None:
    # -D: no dither. sox dithers randomly when it writes 16-bit samples, and a ±1 LSB change where
    # speech fades out can move a turn's last audible sample by tens of milliseconds between runs.
    _run(["sox", "-D", *args])


def cast_voices(speakers: Sequence[str], chosen: Mapping[str, Voice] | None = None) -> tuple[Casting, ...]:
    """One voice per speaker, in order of first appearance: the chosen one, else the next of `VOICES`."""
    order = list(dict.fromkeys(speakers))
    chosen = chosen or {}
    missing = [s for s in order if chosen and s not in chosen]
    if missing:
        raise ValueError(f"no voice chosen for {', '.join(missing)}")
    return tuple(Casting(s, chosen.get(s) or VOICES[i % len(VOICES)]) for i, s in enumerate(order))


def _audible(path: Path) -> tuple[int, int] | None:
    audio, _rate = sf.read(path, dtype="float32", always_2d=True)
    loud = np.flatnonzero(np.abs(audio[:, 0]) > AUDIBLE)
    return (int(loud[0]), int(loud[-1])) if len(loud) else None


def _speak(line: Line, index: int, voice: Voice, work: Path) -> _Clip | None:
    """espeak-ng the line, then cut it to its audible speech (plus edges) at SAMPLE_RATE."""
    text = work / f"line{index:05d}.txt"
    # The text goes through a file: a line starting with "-" would read as an option.
    text.write_text(line.text, encoding="utf-8")
    raw = work / f"line{index:05d}-raw.wav"
    _run(["espeak-ng", "-v", voice.name, "-p", str(voice.pitch), "-s", str(voice.speed), "-f", text, "-w", raw])
    bounds = _audible(raw)
    if bounds is None:
        return None
    rate = sf.info(raw).samplerate
    begin = max(0.0, bounds[0] / rate - EDGE_SECONDS)
    length = (bounds[1] + 1) / rate + EDGE_SECONDS - begin
    clip = work / f"line{index:05d}.wav"
    _sox([raw, "-r", str(SAMPLE_RATE), "-b", "16", "-c", "1", clip, "trim", f"{begin:.6f}", f"{length:.6f}"])
    # Measured again after resampling, so the reference spans are exact in the recording's samples.
    found = _audible(clip)
    if found is None:
        return None
    return _Clip(index, clip, sf.info(clip).frames, found[0], found[1])


def build_recording(
    lines: Sequence[Line],
    directory: Path,
    *,
    name: str = "conversation",
    pacing: Pacing | None = None,
    seed: int | str = 0,
    voices: Mapping[str, Voice] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Recording:
    """Speak `lines` into `directory/name.wav` (16 kHz mono), spaced and overlapped by `pacing`.

    Each speaker gets `voices[speaker]` when given, else the next voice of `VOICES`.

    Random draws are made in the same order for every line, so the recording of the first N lines
    is the start of the recording of all of them (same seed). `progress(1)` is called per line.
    """
    check_tools()
    pacing = pacing or Pacing()
    directory.mkdir(parents=True, exist_ok=True)
    work = directory / f"{name}-parts"
    work.mkdir(exist_ok=True)
    cast = cast_voices([line.speaker for line in lines], voices)
    voices = {c.speaker: c.voice for c in cast}
    rng = random.Random(f"{seed}:{name}")
    rate = SAMPLE_RATE
    track_end = [0, 0]  # sample where each track's last clip ends
    tracks: list[list[Path]] = [[], []]
    turns: list[SpokenTurn] = []
    silent: list[int] = []
    prev: SpokenTurn | None = None
    prev_start = prev_end = 0  # samples: audible span of the previous turn
    for i, line in enumerate(lines):
        # Drawn for every line, used or not, so a prefix of the lines gets the same timing.
        cut_in, gap, early = rng.random(), rng.uniform(pacing.min_gap, pacing.max_gap), rng.random()
        clip = _speak(line, i, voices[line.speaker], work)
        if progress:
            progress(1)
        if clip is None:
            silent.append(i)
            continue
        k = len(turns) % 2
        speech = clip.last - clip.first + 1
        if prev is None:
            start = int(pacing.lead * rate)
        elif cut_in < pacing.overlap and line.speaker != prev.speaker:
            span = pacing.min_overlap + early * (pacing.max_overlap - pacing.min_overlap)
            limit = min(span * rate, (prev_end - prev_start) / 2, speech / 2)
            start = prev_end - int(limit)
        else:
            start = prev_end + int(gap * rate)
        # The clip must not start before this track's previous clip (the turn two back) has ended.
        start = max(start, track_end[k] + clip.first)
        offset = start - clip.first
        padded = work / f"line{i:05d}-padded.wav"
        _sox([clip.path, padded, "pad", f"{offset - track_end[k]}s"])
        tracks[k].append(padded)
        track_end[k] = offset + clip.samples
        end = start + speech - 1
        turn = SpokenTurn(
            index=i,
            speaker=line.speaker,
            text=line.text,
            voice=voices[line.speaker].name,
            start=start / rate,
            end=(end + 1) / rate,
            overlapped=prev is not None and start <= prev_end,
        )
        turns.append(turn)
        prev, prev_start, prev_end = turn, start, end
    out = directory / f"{name}.wav"
    if not turns:
        raise AssistantError(f"{name}: espeak-ng made no audible speech from any of its {len(lines)} lines")
    joined = []
    for k, parts in enumerate(tracks):
        if parts:
            track = work / f"track{k}.wav"
            _sox([*parts, track])
            joined.append(track)
    # Each track at half volume, so an overlap cannot clip; then the peak is brought back to -1 dBFS.
    mix = ["-m", "-v", "0.5", joined[0], "-v", "0.5", joined[1]] if len(joined) == 2 else [joined[0]]
    _sox([*mix, out, "pad", "0", f"{pacing.tail}", "gain", "-n", "-1"])
    return Recording(out, sf.info(out).frames / rate, tuple(turns), cast, tuple(silent))


def remove_parts(directory: Path, name: str) -> None:
    """Drop the per-line files `build_recording` left beside the recording."""
    shutil.rmtree(directory / f"{name}-parts", ignore_errors=True)
