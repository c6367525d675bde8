"""The listening chain: an audio source, speech segments, transcripts, attributed pieces, then the memory.

Speakers live in the store; the diarizer works on a copy of their voices whose ids are the
store's speaker ids (as strings). A voice heard for the first time becomes a store speaker
labelled "Speaker N" until the user names it. Each utterance and the voice that said it land
in one transaction, so a crash never leaves words attributed to a voice the store forgot.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .audio.files import FileSource
from .audio.vad import speech_segments
from .config import ReclusterOptions, Settings
from .errors import AssistantError, InputError
from .memory.api import Memory
from .memory.speakers import is_automatic_name
from .records import (
    SAMPLE_RATE,
    AudioBlock,
    Piece,
    Relabelled,
    Speaker,
    SpeechSegment,
    Transcript,
    Utterance,
    Voiceprint,
)
from .speech.diarize import Diarizer, diarizer_from_settings, normalise_volume, voiced_mask
from .speech.recluster import VoiceSample, plan_moves
from .speech.transcribe import Transcriber, transcriber_from_settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Heard:
    """One utterance the chain filed: who (store speaker id and name), what, when."""

    speaker_id: int
    utterance: Utterance
    similarity: float


@dataclass
class ListenReport:
    audio_seconds: float = 0.0
    segments: int = 0
    utterances: int = 0
    speakers: set[int] = field(default_factory=set)
    relabelled: int = 0  # utterances the re-clustering moved to another speaker
    relabelled_to: set[int] = field(default_factory=set)  # the speakers it moved them to
    # Seconds spent in each stage (the source's decoding and the VAD are counted together).
    vad_seconds: float = 0.0
    stt_seconds: float = 0.0
    diarize_seconds: float = 0.0
    memory_seconds: float = 0.0
    wall_seconds: float = 0.0

    def real_time_factor(self, seconds: float) -> float:
        return seconds / self.audio_seconds if self.audio_seconds else 0.0


class Listener:
    def __init__(
        self,
        memory: Memory,
        transcriber: Transcriber,
        diarizer: Diarizer,
        recluster: ReclusterOptions | None = None,
    ) -> None:
        self.memory = memory
        self.transcriber = transcriber
        self.diarizer = diarizer
        self.recluster_options = recluster if recluster is not None else diarizer.options.recluster
        # The session's recent utterances with their voices, and the speech filed since the last pass.
        self._window: deque[VoiceSample] = deque(maxlen=self.recluster_options.window)
        self._unclustered_seconds = 0.0
        self._pinned: set[int] = set()  # utterances a person reassigned: never moved again
        # Told of every relabelling once it is stored (the daemon's live transcript).
        self.on_relabel: Callable[[Relabelled], None] | None = None
        # The names people gave voices, for Whisper to spell their way (replaced whole, so the
        # transcription thread reads one tuple or the other, never half of each).
        self.names: tuple[str, ...] = ()
        self.reload_voices()

    @classmethod
    def from_settings(cls, memory: Memory, settings: Settings) -> Listener:
        return cls(memory, transcriber_from_settings(settings), diarizer_from_settings(settings))

    def reload_voices(self) -> None:
        """Give the diarizer the store's voices (at start, and after a rename, merge or enrollment),
        and Whisper the names people gave them."""
        load_voices(self.memory, self.diarizer)
        if self.transcriber.options.hotwords_from_speakers:
            self.names = tuple(n for n in self.memory.speaker_names() if not is_automatic_name(n))

    def transcribe(self, segment: SpeechSegment) -> list[Transcript]:
        """Whisper's text for a segment, with the known names as hotwords."""
        return self.transcriber.transcribe(segment, self.names)

    def warm_up(self) -> None:
        self.diarizer.warm_up()

    # --- one segment -------------------------------------------------------------------------

    def hear(self, segment: SpeechSegment, report: ListenReport | None = None) -> list[Heard]:
        """Transcribe, attribute and remember one segment of speech."""
        report = report if report is not None else ListenReport()
        t0 = time.perf_counter()
        transcripts = self.transcribe(segment)
        report.stt_seconds += time.perf_counter() - t0
        return self.attribute(segment, transcripts, report)

    def attribute(
        self, segment: SpeechSegment, transcripts: list[Transcript], report: ListenReport | None = None
    ) -> list[Heard]:
        """Tell who said each piece of a transcribed segment, then remember the pieces.

        Split from `hear` so a daemon can transcribe on one thread and file on its writer thread.
        """
        report = report if report is not None else ListenReport()
        t1 = time.perf_counter()
        pieces = self.diarizer.diarize(segment, transcripts) if transcripts else []
        t2 = time.perf_counter()
        # One new voice may say several pieces of this segment: map its diarizer id once.
        known: dict[str, int] = {}
        heard = [self._file(piece, known) for piece in pieces if piece.text.strip()]
        if heard and self._unclustered_seconds >= self.recluster_options.every_seconds:
            done = self.recluster()
            report.relabelled += sum(len(r.utterance_ids) for r in done)
            report.relabelled_to.update(r.speaker_id for r in done)
            # What this segment filed may have moved too: hand on who said it now.
            now = {uid: r for r in done for uid in r.utterance_ids}
            heard = [
                replace(
                    h,
                    speaker_id=now[h.utterance.id].speaker_id,
                    utterance=replace(h.utterance, speaker=now[h.utterance.id].speaker),
                )
                if h.utterance.id in now
                else h
                for h in heard
            ]
        if heard and self.memory.engine.inline_distill:
            # Distillation (LLM calls) runs after the write, as everywhere else, not inside it.
            self.memory.engine.distill_pending()
        t3 = time.perf_counter()
        report.segments += 1
        report.utterances += len(heard)
        report.speakers.update(h.speaker_id for h in heard)
        report.diarize_seconds += t2 - t1
        report.memory_seconds += t3 - t2
        return heard

    def _file(self, piece: Piece, known: dict[str, int]) -> Heard:
        seconds = max(0.0, piece.end - piece.start)
        with self.memory.atomic():
            if piece.speaker not in known:
                known[piece.speaker] = self._store_speaker(piece.speaker)
            speaker_id = known[piece.speaker]
            voice = next((s for s in self.diarizer.speakers() if s.id == str(speaker_id)), None)
            # Distillation (LLM calls) runs after the write, as everywhere else, not inside it.
            name, said = self.memory.file_heard(
                speaker_id,
                piece.text,
                piece.start,
                voice=(voice.centroid, voice.seconds) if voice is not None else None,
                said_with=(piece.embedding, seconds) if piece.embedding is not None else None,
            )
        if said is not None and said.id is not None and piece.embedding is not None and self.recluster_options.enabled:
            self._window.append(VoiceSample(said.id, speaker_id, piece.embedding, seconds, piece.start))
            self._unclustered_seconds += seconds
        # The stored utterance carries its id; a repeat of one already stored has none.
        return Heard(speaker_id, said or Utterance(name, piece.text, piece.start), piece.similarity)

    # --- revising earlier labels -------------------------------------------------------------

    def recluster(self) -> list[Relabelled]:
        """Cluster the recent utterances' voices again and move those the clustering gives to
        another speaker (see `recluster.py`); the diarizer then continues from the revised voices."""
        self._unclustered_seconds = 0.0
        if not self.recluster_options.enabled or not self._window:
            return []
        present = {u.id: u for u in self.memory.stored_utterances(s.utterance_id for s in self._window)}
        current = {sp.id: sp for sp in self.memory.speakers()}
        ids = {sp.name: sp.id for sp in current.values()}
        # The window follows what the store says now: forgotten lines leave it, corrected ones
        # carry their new speaker.
        samples = [
            replace(s, speaker_id=ids[present[s.utterance_id].speaker])
            for s in self._window
            if s.utterance_id in present and present[s.utterance_id].speaker in ids
        ]
        fixed = {sp.id for sp in current.values() if sp.enrolled or not is_automatic_name(sp.name)}
        anchors = {i: current[i].voice for i in fixed if current[i].voice is not None}
        moves = plan_moves(samples, self.recluster_options, fixed, frozenset(self._pinned), anchors)
        done: list[Relabelled] = []
        if moves:
            try:
                with self.memory.atomic():
                    for move in moves:
                        target = move.speaker_id if move.speaker_id is not None else self.memory.new_speaker()
                        # Speakers emptied by one move may be another's target: removed at the end.
                        result = self.memory.reassign(move.utterance_ids, target, why="recluster", remove_empty=False)
                        if result.moved:
                            done.append(Relabelled(result.moved, result.speaker.id, result.speaker.name))
                        if move.speaker_id is None:
                            self.memory.give_voice(target, move.centroid, move.seconds)
                    self.memory.remove_empty_speakers()
            except AssistantError:
                # Revising labels must never stop the listening: the online labels stand.
                log.exception("re-clustering failed; the labels stay as they were")
                done = []
            log.info("re-clustering moved %d utterance(s)", sum(len(r.utterance_ids) for r in done))
            self.reload_voices()
        moved_to = {uid: r.speaker_id for r in done for uid in r.utterance_ids}
        self._window = deque(
            (replace(s, speaker_id=moved_to.get(s.utterance_id, s.speaker_id)) for s in samples),
            maxlen=self.recluster_options.window,
        )
        for r in done:
            if self.on_relabel:
                self.on_relabel(r)
        return done

    def pin(self, utterance_ids: Iterable[int]) -> None:
        """A person said who said these: the re-clustering leaves them where they are."""
        self._pinned.update(utterance_ids)

    def _store_speaker(self, diarizer_id: str) -> int:
        """The store id behind a diarizer id; a voice heard for the first time gets a store speaker."""
        if diarizer_id.isdigit():
            return int(diarizer_id)
        speaker_id = self.memory.new_speaker()
        # From now on the diarizer knows this voice by its store id.
        self.diarizer.load(
            replace(sp, id=str(speaker_id)) if sp.id == diarizer_id else sp for sp in self.diarizer.speakers()
        )
        return speaker_id

    # --- a whole source ----------------------------------------------------------------------

    def run(
        self,
        blocks: Iterable[AudioBlock],
        settings: Settings,
        *,
        on_heard: Callable[[Heard], None] | None = None,
        on_audio: Callable[[float], None] | None = None,
    ) -> ListenReport:
        """Listen until the source ends, then file what the sensing buffer holds."""
        report = ListenReport()
        started = time.perf_counter()

        def counted(source: Iterable[AudioBlock]) -> Iterator[AudioBlock]:
            for block in source:
                report.audio_seconds += block.duration
                if on_audio:
                    on_audio(report.audio_seconds)
                yield block

        segments = speech_segments(counted(blocks), settings.vad)
        while True:
            t = time.perf_counter()
            segment = next(segments, None)
            report.vad_seconds += time.perf_counter() - t
            if segment is None:
                break
            for heard in self.hear(segment, report):
                if on_heard:
                    on_heard(heard)
        t = time.perf_counter()
        self.memory.flush()
        report.memory_seconds += time.perf_counter() - t
        report.wall_seconds = time.perf_counter() - started
        return report


def load_voices(memory: Memory, diarizer: Diarizer) -> None:
    """The store's voices, as the diarizer knows them: ids are store ids as strings."""
    diarizer.load(
        Voiceprint(str(sp.id), sp.name, sp.voice, sp.speech_seconds, sp.enrolled)
        for sp in memory.speakers()
        if sp.voice is not None and np.any(sp.voice)
    )


# Less speech than this makes a voice its owner matches less surely: Resemblyzer's authors build
# voices from 5 to 30 s, and the diarizer's matching thresholds were calibrated on longer speech.
MIN_ENROLL_SPEECH_SECONDS = 5.0
# A recording of one person alone runs seconds to minutes; a longer file is most likely something
# else (a whole meeting), and would be decoded whole and embedded on the daemon's writer thread.
MAX_ENROLL_SECONDS = 600.0


def speech_seconds(samples: np.ndarray) -> float:
    """How much of a 16 kHz float32 recording is speech, as the diarizer finds it (pauses are cut
    out before a voice is embedded)."""
    if len(samples) == 0:
        return 0.0
    return float(voiced_mask(normalise_volume(samples)).sum()) / SAMPLE_RATE


def enroll(memory: Memory, diarizer: Diarizer, name: str, samples: np.ndarray) -> Speaker:
    """Teach the memory a named voice from a recording of that person alone (16 kHz float32).

    An existing speaker of that name (or id) gains the speech; otherwise a speaker is created. A
    recording with less than `MIN_ENROLL_SPEECH_SECONDS` of speech is refused, saying how much it held.
    """
    name = memory.enrollment_name(name)
    recorded, speech = len(samples) / SAMPLE_RATE, speech_seconds(samples)
    if speech < MIN_ENROLL_SPEECH_SECONDS:
        raise InputError(
            f"too short to enroll {name!r}: {speech:.1f} s of speech in {recorded:.1f} s recorded; "
            f"enrolling needs at least {MIN_ENROLL_SPEECH_SECONDS:.0f} s of them speaking (about 20 s is best)"
        )
    existing = memory.find_speaker(int(name) if name.isdigit() else name)
    load_voices(memory, diarizer)
    voice = diarizer.enroll(str(existing.id) if existing else name, samples)
    return memory.enroll(name, voice.centroid, voice.seconds, recorded)


def read_recording(path: str | Path) -> np.ndarray:
    """A recording to enroll, whole, as 16 kHz float32 samples (any format and rate libsndfile reads)."""
    with FileSource(path) as source:
        if source.duration > MAX_ENROLL_SECONDS:
            raise InputError(
                f"{path}: {source.duration / 60:.1f} minutes long; a recording to enroll holds one person "
                f"alone, at most {MAX_ENROLL_SECONDS / 60:.0f} minutes (about 20 s is best)"
            )
        blocks = [b.samples for b in source.blocks()]
    return (np.concatenate(blocks) if blocks else np.zeros(0, np.int16)).astype(np.float32) / 32768.0
