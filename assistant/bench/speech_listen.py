"""One listening pass: the real chain (VAD, Whisper, voices, memory) on one recording, into a
fresh memory, noting each utterance it files, when it filed it, and what each stage cost."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..audio.sources import open_source
from ..config import Settings
from ..listening import Heard, Listener, enroll
from ..memory.api import Memory
from ..records import AudioBlock, Piece
from ..speech.diarize import diarizer_from_settings
from ..speech.transcribe import Transcriber
from .synth_conversation import Recording


@dataclass(frozen=True)
class HeardPiece:
    """An utterance the chain filed: times are seconds into the recording."""

    start: float
    end: float
    speaker: str  # the store's name for the voice ("Speaker 1")
    text: str
    filed_at: float  # when it became searchable, on the recording's clock (real-time pass)
    # The unit voice embedding the diarizer attributed it by (None: too short to embed).
    voice: np.ndarray | None = field(default=None, compare=False, repr=False)
    # Who the online pass said it was, before any re-clustering moved it ("" when not noted).
    online: str = ""


@dataclass(frozen=True)
class StageSeconds:
    """Seconds each stage took (VAD includes decoding the file), and the audio they covered."""

    audio: float
    vad: float
    stt: float
    diarization: float
    memory: float
    chain: float

    def rtf(self) -> RealTimeFactors:
        a = self.audio or 1.0
        return RealTimeFactors(self.vad / a, self.stt / a, self.diarization / a, self.memory / a, self.chain / a)


@dataclass(frozen=True)
class RealTimeFactors:
    """Seconds of work per second of audio, per stage and for the whole chain."""

    vad: float
    stt: float
    diarization: float
    memory: float
    chain: float


@dataclass(frozen=True)
class ListenPass:
    pieces: tuple[HeardPiece, ...]
    seconds: StageSeconds
    segments: int
    speakers: int  # voices the chain told apart


@dataclass(frozen=True)
class _Filed:
    piece: Piece
    heard: Heard
    at: float  # time.monotonic() once filed


class _Recorder(Listener):
    """The real chain, noting each utterance it files with its time span and the moment it was filed.

    `Heard` carries no end time, and the delay needs the moment each piece became searchable,
    so the pieces are caught as the filing step (`Listener._file`) returns them.
    """

    def __init__(self, memory: Memory, transcriber: Transcriber, settings: Settings) -> None:
        super().__init__(memory, transcriber, diarizer_from_settings(settings))
        self.filed: list[_Filed] = []

    def _file(self, piece: Piece, known: dict[str, int]) -> Heard:
        heard = super()._file(piece, known)
        self.filed.append(_Filed(piece, heard, time.monotonic()))
        return heard


def listen(
    settings: Settings,
    transcriber: Transcriber,
    recording: Recording,
    data_dir: Path,
    *,
    start_time: float,
    realtime: bool,
    on_audio: Callable[[float], None] | None = None,
    enrolled: Mapping[str, np.ndarray] | None = None,
) -> ListenPass:
    """Run the whole chain on `recording` into a fresh memory at `data_dir`; the voices in
    `enrolled` (name -> 16 kHz speech of that person alone) are enrolled first, as a user would."""
    settings = replace(settings, paths=replace(settings.paths, data_dir=str(data_dir)))
    clock0: float | None = None

    def timed(blocks: Iterable[AudioBlock]) -> Iterator[AudioBlock]:
        nonlocal clock0
        for block in blocks:
            if clock0 is None:
                # A paced source hands a block over once its last sample is "recorded".
                clock0 = time.monotonic() - (block.duration if realtime else 0.0)
            yield block

    with (
        Memory(settings) as memory,
        open_source(recording.path, settings.audio, realtime=realtime, start_time=start_time) as source,
    ):
        listener = _Recorder(memory, transcriber, settings)
        listener.warm_up()
        for name, samples in (enrolled or {}).items():
            enroll(memory, listener.diarizer, name, samples)
        if enrolled:
            listener.reload_voices()
        report = listener.run(timed(source.blocks()), settings, on_audio=on_audio)
        names = {sp.id: sp.name for sp in memory.speakers()}
        # Who said each utterance in the end: the session's re-clustering may have moved it since.
        final = {u.id: u.speaker for u in memory.store.utterances(f.heard.utterance.id for f in listener.filed)}
    origin = clock0 if clock0 is not None else time.monotonic()
    pieces = tuple(
        HeardPiece(
            f.piece.start - start_time,
            f.piece.end - start_time,
            final.get(f.heard.utterance.id) or names.get(f.heard.speaker_id, str(f.heard.speaker_id)),
            f.heard.utterance.text,
            f.at - origin,
            f.piece.embedding,
            f.heard.utterance.speaker,
        )
        for f in listener.filed
    )
    seconds = StageSeconds(
        report.audio_seconds,
        report.vad_seconds,
        report.stt_seconds,
        report.diarize_seconds,
        report.memory_seconds,
        report.wall_seconds,
    )
    return ListenPass(pieces, seconds, report.segments, len(report.speakers))
