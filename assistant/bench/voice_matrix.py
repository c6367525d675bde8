"""The voice matrix: speaker attribution over many synthetic speaker sets, not one tuned pair.

`assistant bench speech --matrix` speaks the same kind of conversation with each set of voices
in `voice_matrix_sets.py` (espeak-ng voices and variants, pitch and rate spread; male-male, female-female and mixed
pairs, three and four speakers, short back-channel replies, frequent overlaps, a long monologue),
listens to each with the shipped chain into a fresh memory, and scores speaker count,
attribution, DER and WER per set. The report is the distribution over sets (median and worst):
a diarizer tuned on one pair shows its limits on the others.

The words come from the LoCoMo file (consecutive spoken lines, a different stretch per set); who
says each line is decided by the set's turn pattern, seeded, so every run hears the same audio.

With `enrolled_seconds`, the household is enrolled before a set is heard, as a user enrolls from
the TUI or the CLI: each voice says other lines (from the far end of the file, never in a scored
stretch) alone for that long. In a set of three or more voices the last one is not enrolled: it
is the guest, who must open a voice of their own.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import Settings
from ..errors import InputError
from ..listening import MIN_ENROLL_SPEECH_SECONDS, read_recording
from ..records import SAMPLE_RATE
from ..speech.transcribe import Transcriber, transcriber_from_settings
from .host import Machine, machine
from .speech_listen import listen
from .speech_metrics import Attribution
from .speech_scoring import ConversationResult, attribution_of, oracle_attribution, score
from .synth_conversation import Line, Pacing, build_recording, remove_parts
from .synth_speech import check_tools
from .voice_matrix_sets import LABELS, SETS, SpeakerSet, set_script, spoken_lines


@dataclass(frozen=True)
class SetResult:
    speaker_set: SpeakerSet
    speakers: int  # voices in the recording
    found: int  # distinct voices among the utterances the chain filed
    result: ConversationResult
    # What the voice embeddings allow with everyone else's speaker known (`oracle_attribution`).
    oracle: Attribution | None
    # The labels the online pass gave, before re-clustering revised them: that mechanism's share.
    online: Attribution
    enrolled: tuple[str, ...] = ()  # the voices (set labels) enrolled before listening
    guest: str | None = None  # the set's voice left unenrolled, when others were enrolled

    @property
    def count_exact(self) -> bool:
        return self.found == self.speakers

    @property
    def guest_found(self) -> bool | None:
        """Did the guest's words go, in the main, to a voice of their own rather than to someone enrolled?"""
        if self.guest is None:
            return None
        heard_as = next((m.cluster for m in self.result.attribution.mapping if m.speaker == self.guest), None)
        return heard_as is not None and heard_as not in {enrolled_name(label) for label in self.enrolled}


@dataclass(frozen=True)
class MatrixRun:
    data: str
    stt: str
    turns: int
    seed: int
    seconds: float
    machine: Machine
    sets: tuple[SetResult, ...]
    enrolled_seconds: float = 0.0
    alone: Alone | None = None


@dataclass(frozen=True)
class Alone:
    """One person talking alone for minutes (dictating, reading aloud): the chain must hear one voice."""

    voice: str  # the espeak-ng voice
    seconds: float  # of audio
    pieces: int  # utterances filed
    found: int  # voices they were given


def enrolled_name(label: str) -> str:
    """The name an enrolled voice is given (the set's label, as a person would name it)."""
    return f"Voice {label}"


def enrolled_labels(speaker_set: SpeakerSet) -> tuple[str, ...]:
    """The voices a household enrolls: all of a pair; in bigger sets all but the last, the guest."""
    voices = LABELS[: len(speaker_set.voices)]
    return voices if len(voices) < 3 else voices[:-1]


# Lines each enrolled voice may say: enough for any enrollment length a user would record.
_ENROLL_LINES = 12


def enrollment_speech(
    speaker_set: SpeakerSet, index: int, source: Sequence[str], seconds: float, audio: Path, seed: int
) -> dict[str, np.ndarray]:
    """`seconds` of each enrolled voice alone (pauses between lines included, as in a recording a
    person makes), saying lines from the far end of `source`, which no scored stretch reaches."""
    speech: dict[str, np.ndarray] = {}
    for v, label in enumerate(enrolled_labels(speaker_set)):
        first = len(source) - (index * len(LABELS) + v + 1) * _ENROLL_LINES
        lines = [Line(label, source[(first + i) % len(source)]) for i in range(_ENROLL_LINES)]
        name = f"set{index:02d}-enroll-{label}"
        recording = build_recording(lines, audio, name=name, seed=seed, voices={label: speaker_set.voices[v]})
        remove_parts(audio, name)
        samples = read_recording(recording.path)
        if len(samples) < seconds * SAMPLE_RATE:
            raise InputError(
                f"--enrolled {seconds:g}: {speaker_set.name} voice {label} said only "
                f"{len(samples) / SAMPLE_RATE:.0f} s in {_ENROLL_LINES} lines; ask for less"
            )
        speech[enrolled_name(label)] = samples[: int(seconds * SAMPLE_RATE)]
    return speech


def run_matrix(
    settings: Settings,
    data: Path,
    *,
    turns: int,
    seed: int,
    sets: Sequence[SpeakerSet] = SETS,
    audio_dir: Path | None = None,
    enrolled_seconds: float = 0.0,
    alone_minutes: float = 0.0,
    progress: Callable[[str], None] | None = None,
) -> MatrixRun:
    """Speak and hear every set; `settings` is the chain to measure (see `speech_run.bench_settings`).
    With `enrolled_seconds` > 0 each set's household is enrolled first (see the module's docstring).
    With `alone_minutes` > 0, one voice then talks alone at least that long (`hear_alone`)."""
    check_tools()
    # Refused before anything is spoken, not after the sets before it were heard.
    least = max(2 * len(s.voices) for s in sets)
    if turns < least:
        raise InputError(f"--turns must be at least {least} for these sets (two turns per voice)")
    if 0 < enrolled_seconds < MIN_ENROLL_SPEECH_SECONDS:
        raise InputError(f"--enrolled {enrolled_seconds:g}: enrolling needs at least {MIN_ENROLL_SPEECH_SECONDS:g} s")
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
            household: dict[str, np.ndarray] = {}
            if enrolled_seconds > 0:
                if progress:
                    progress(f"{speaker_set.name}: enrolling")
                household = enrollment_speech(speaker_set, index, source, enrolled_seconds, audio, seed)
            if progress:
                progress(f"{speaker_set.name}: listening")
            heard = listen(
                settings, transcriber, recording, root / name, start_time=0.0, realtime=False, enrolled=household
            )
            result = score(speaker_set.name, recording, heard, None, None)
            found = len({p.speaker for p in heard.pieces})
            speakers = len({t.speaker for t in recording.turns})
            enrolled = enrolled_labels(speaker_set) if household else ()
            guest = LABELS[len(speaker_set.voices) - 1] if len(enrolled) not in (0, len(speaker_set.voices)) else None
            results.append(
                SetResult(
                    speaker_set,
                    speakers,
                    found,
                    result,
                    oracle_attribution(recording, heard.pieces),
                    attribution_of(recording, heard.pieces, [p.online for p in heard.pieces]),
                    enrolled,
                    guest,
                )
            )
        alone = None
        if alone_minutes > 0:
            if progress:
                progress(f"one voice alone for {alone_minutes:g} min: speaking and listening")
            alone = hear_alone(settings, transcriber, source, alone_minutes, audio, root / "alone", seed)
    return MatrixRun(
        str(data),
        settings.models.stt,
        turns,
        seed,
        time.perf_counter() - started,
        host,
        tuple(results),
        enrolled_seconds,
        alone,
    )


# Lines a voice says in a minute, at least (espeak-ng's lines of this text run 2-15 s, pauses included).
_LINES_PER_MINUTE = 10


def hear_alone(
    settings: Settings,
    transcriber: Transcriber,
    source: Sequence[str],
    minutes: float,
    audio: Path,
    work: Path,
    seed: int,
) -> Alone:
    """The matrix's monologue voice reads consecutive lines alone for at least `minutes`, pausing between
    them as a person dictating does, into a fresh memory: how many voices does the chain hear?"""
    voice = next(s for s in SETS if s.pattern == "monologue").voices[0]
    count = max(1, int(np.ceil(minutes * _LINES_PER_MINUTE)))
    lines = [Line("A", source[i % len(source)]) for i in range(count)]
    recording = build_recording(lines, audio, name="alone", seed=seed, voices={"A": voice})
    remove_parts(audio, "alone")
    if recording.duration < minutes * 60:
        raise InputError(f"{count} lines made {recording.duration / 60:.1f} min, short of {minutes:g} min")
    heard = listen(settings, transcriber, recording, work, start_time=0.0, realtime=False)
    return Alone(voice.name, recording.duration, len(heard.pieces), len({p.speaker for p in heard.pieces}))
