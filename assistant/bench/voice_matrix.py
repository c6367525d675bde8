"""The voice matrix: speaker attribution over many synthetic speaker sets, not one tuned pair.

`assistant bench speech --matrix` speaks the same kind of conversation with each set of voices
in `voice_matrix_sets.py` (espeak-ng voices and variants, pitch and rate spread; male-male, female-female and mixed
pairs, three and four speakers, short back-channel replies, frequent overlaps, a long monologue),
listens to each with the shipped chain into a fresh memory, and scores speaker count,
attribution, DER and WER per set. The report is the distribution over sets (median and worst):
a diarizer tuned on one pair shows its limits on the others.

The words come from the LoCoMo file (consecutive spoken lines, a different stretch per set); who
says each line is decided by the set's turn pattern, seeded, so every run hears the same audio.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import InputError
from ..speech.transcribe import transcriber_from_settings
from .host import Machine, machine
from .speech_listen import listen
from .speech_metrics import Attribution
from .speech_scoring import ConversationResult, oracle_attribution, score
from .synth_conversation import Pacing, build_recording, remove_parts
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
    """Speak and hear every set; `settings` is the chain to measure (see `speech_run.bench_settings`)."""
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
            speakers = len({t.speaker for t in recording.turns})
            results.append(SetResult(speaker_set, speakers, found, result, oracle_attribution(recording, heard.pieces)))
    return MatrixRun(str(data), settings.models.stt, turns, seed, time.perf_counter() - started, host, tuple(results))
