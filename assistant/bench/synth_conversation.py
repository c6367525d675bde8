"""Multi-speaker recordings of written conversations, spoken by espeak-ng and assembled with sox
(`synth_speech.py`), each with the truth of who speaks when.

Each speaker gets an espeak-ng voice of its own (alternately male and female: the voice encoder
does not tell two synthetic male voices apart, see BENCHMARKS.md "Voice matrix"). Turns follow
each other after a random pause, and a share of them start before the previous turn has ended,
as people cut in. Every turn is cut to its audible speech first, so the time span recorded for it
is exactly where its voice is in the recording: that is the reference the speech benchmark scores
diarization and delays against.

Overlaps only ever involve two consecutive turns, so the recording is two tracks (even and odd
turns) mixed together; a turn never starts before the turn two back has ended.

`speak_turns` makes the plainer recordings the tests listen to: turns one after another, each
after a set pause, espeak-ng's output kept whole.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf

from ..errors import AssistantError
from ..records import SAMPLE_RATE
from .synth_speech import audible_span, check_tools, espeak, silence, sox, to_16k

# Audio kept either side of a turn's audible speech, so sox's resampler does not clip its edges.
EDGE_SECONDS = 0.05


@dataclass(frozen=True)
class Voice:
    """An espeak-ng voice: `name` for -v, pitch 0-99 for -p, words per minute for -s."""

    name: str
    pitch: int
    speed: int

    def options(self) -> tuple[str, str, str, str]:
        return ("-p", str(self.pitch), "-s", str(self.speed))


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


def cast_voices(speakers: Sequence[str], chosen: Mapping[str, Voice] | None = None) -> tuple[Casting, ...]:
    """One voice per speaker, in order of first appearance: the chosen one, else the next of `VOICES`."""
    order = list(dict.fromkeys(speakers))
    chosen = chosen or {}
    missing = [s for s in order if chosen and s not in chosen]
    if missing:
        raise ValueError(f"no voice chosen for {', '.join(missing)}")
    return tuple(Casting(s, chosen.get(s) or VOICES[i % len(VOICES)]) for i, s in enumerate(order))


def _speak(line: Line, index: int, voice: Voice, work: Path) -> _Clip | None:
    """espeak-ng the line, then cut it to its audible speech (plus edges) at SAMPLE_RATE."""
    raw = espeak(work / f"line{index:05d}-raw.wav", line.text, voice.name, *voice.options())
    bounds = audible_span(raw)
    if bounds is None:
        return None
    rate = sf.info(raw).samplerate
    begin = max(0.0, bounds[0] / rate - EDGE_SECONDS)
    length = (bounds[1] + 1) / rate + EDGE_SECONDS - begin
    clip = to_16k(raw, work / f"line{index:05d}.wav", "trim", f"{begin:.6f}", f"{length:.6f}")
    # Measured again after resampling, so the reference spans are exact in the recording's samples.
    found = audible_span(clip)
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
        sox(clip.path, padded, "pad", f"{offset - track_end[k]}s")
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
            sox(*parts, track)
            joined.append(track)
    # Each track at half volume, so an overlap cannot clip; then the peak is brought back to -1 dBFS.
    mix = ["-m", "-v", "0.5", joined[0], "-v", "0.5", joined[1]] if len(joined) == 2 else [joined[0]]
    sox(*mix, out, "pad", "0", f"{pacing.tail}", "gain", "-n", "-1")
    return Recording(out, sf.info(out).frames / rate, tuple(turns), cast, tuple(silent))


def remove_parts(directory: Path, name: str) -> None:
    """Drop the per-line files `build_recording` left beside the recording."""
    shutil.rmtree(directory / f"{name}-parts", ignore_errors=True)


# --- turn by turn ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """A turn said after `pause` seconds of silence, in an espeak-ng voice given as its arguments."""

    speaker: str
    text: str
    voice: tuple[str, ...]  # -v's voice, then options of its own: ("en-us", "-s", "160")
    pause: float = 0.0


@dataclass(frozen=True)
class SpokenTurns:
    path: Path
    turns: tuple[SpokenTurn, ...]


def speak_turns(
    directory: Path, turns: Sequence[Turn], *, name: str = "conversation", tail: float = 0.0
) -> SpokenTurns:
    """Say `turns` one after another into `directory/name.wav` (16 kHz mono), then `tail` seconds of silence.

    Unlike `build_recording`, each turn keeps all of espeak-ng's output, the digital silence it
    pads speech with included, and nobody cuts in: a plain recording for the tests, whose
    expectations were measured on exactly this audio. The spans are still where each voice is.
    """
    directory.mkdir(parents=True, exist_ok=True)
    pauses: dict[float, Path] = {}

    def pause(seconds: float) -> Path:
        if seconds not in pauses:
            pauses[seconds] = silence(directory / f"{name}-pause-{seconds}.wav", seconds)
        return pauses[seconds]

    parts: list[Path] = []
    spoken: list[SpokenTurn] = []
    at = 0  # samples before the next part
    for i, turn in enumerate(turns):
        if turn.pause > 0:
            parts.append(pause(turn.pause))
            at += sf.info(parts[-1]).frames
        voice, *options = turn.voice
        raw = espeak(directory / f"{name}-{i}-raw.wav", turn.text, voice, *options)
        parts.append(to_16k(raw, directory / f"{name}-{i}.wav"))
        span = audible_span(parts[-1])
        if span is None:
            raise AssistantError(f"{name}: espeak-ng made no audible speech of turn {i} ({turn.text!r})")
        first, last = span
        spoken.append(
            SpokenTurn(
                index=i,
                speaker=turn.speaker,
                text=turn.text,
                voice=" ".join(turn.voice),
                start=(at + first) / SAMPLE_RATE,
                end=(at + last + 1) / SAMPLE_RATE,
                overlapped=False,
            )
        )
        at += sf.info(parts[-1]).frames
    if tail > 0:
        parts.append(pause(tail))
    out = directory / f"{name}.wav"
    sox(*parts, out)
    return SpokenTurns(out, tuple(spoken))
