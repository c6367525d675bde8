"""A second opinion on each segment from the silero VAD that ships inside faster-whisper.

webrtcvad is cheap but lets through some noise (music, a clattering keyboard, noise at low
aggressiveness); Whisper turns such segments into invented text ("Thank you."). Silero is a
small neural model and much harder to fool, but costs more, so it only looks at what webrtcvad
already kept: a segment in which it finds no speech never reaches the recogniser.

faster-whisper carries the model (`assets/silero_vad_v6.onnx`) and runs it with onnxruntime on
one CPU thread; importing it is deferred to the first check. onnxruntime must load before usearch
or the process crashes; `store/vectors.py` imports it first for every program that opens a memory.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import replace

from ..records import SAMPLE_RATE, SpeechSegment

log = logging.getLogger(__name__)


class SileroCheck:
    """Drop segments with less than `min_speech_ms` of speech above `threshold`; optionally trim the rest.

    With `trim`, a kept segment is cut to the speech silero found, with `pad_ms` of audio kept on
    either side (never beyond the segment), and its start and end move with it.
    """

    def __init__(
        self,
        threshold: float = 0.5,
        *,
        min_speech_ms: int = 250,
        pad_ms: int = 300,
        trim: bool = False,
    ) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be between 0 and 1; got {threshold}")
        from faster_whisper.vad import VadOptions, get_vad_model

        self._options = VadOptions(
            threshold=threshold,
            min_speech_duration_ms=min_speech_ms,
            # Pauses inside one segment are webrtcvad's business; silero only says where speech is.
            min_silence_duration_ms=100,
            speech_pad_ms=pad_ms,
        )
        self.trim = trim
        #: Segments seen and dropped, for statistics.
        self.checked = 0
        self.dropped = 0
        # Load the ONNX model now, so the first segment does not pay for it.
        get_vad_model()

    def speech_spans(self, segment: SpeechSegment) -> list[tuple[int, int]]:
        """Sample ranges of `segment` (padded by pad_ms) that silero judges to be speech."""
        from faster_whisper.vad import get_speech_timestamps

        if not len(segment.samples):
            return []
        spans = get_speech_timestamps(segment.samples, self._options, sampling_rate=SAMPLE_RATE)
        return [(int(s["start"]), int(s["end"])) for s in spans]

    def check(self, segment: SpeechSegment) -> SpeechSegment | None:
        """The segment (trimmed if asked), or None when silero hears no speech in it."""
        self.checked += 1
        spans = self.speech_spans(segment)
        if not spans:
            self.dropped += 1
            log.debug("silero: no speech in %.2f s segment at %.2f; dropped", segment.duration, segment.start)
            return None
        if not self.trim:
            return segment
        first, last = spans[0][0], spans[-1][1]
        if first == 0 and last >= len(segment.samples):
            return segment
        start = segment.start + first / SAMPLE_RATE
        return replace(
            segment,
            samples=segment.samples[first:last].copy(),
            start=start,
            end=start + (last - first) / SAMPLE_RATE,
        )

    def filter(self, segments: Iterable[SpeechSegment]) -> Iterator[SpeechSegment]:
        for segment in segments:
            kept = self.check(segment)
            if kept is not None:
                yield kept
