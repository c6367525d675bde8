"""Cut a stream of audio blocks into speech segments with webrtcvad.

webrtcvad judges each 10/20/30 ms frame speech or not; those judgements are noisy (stray
"speech" frames in fan or street noise, unvoiced consonants judged silence), so a segment:

- starts when most frames of a short onset window are voiced, and reaches back `pre_roll_ms`
  before the first voiced frame of that window, so the first syllable is not clipped;
- ends once a `hangover_ms` window is (nearly) all unvoiced; it keeps a tail of at most
  min(pre_roll_ms, hangover_ms) after its last voiced frame, and the rest of the silence stays
  available as pre-roll for the next segment (no sample is in two segments);
- is dropped when its speech (first to last voiced frame) is shorter than `min_segment_ms` or
  too sparse in voiced frames to be speech (clicks, coughs, bursts of noise);
- is split when it reaches `max_segment_ms`: at the quietest stretch (lowest smoothed RMS
  energy) in its last third, which falls between words rather than in one; the rest carries on
  as the next segment.

Memory is bounded by `max_segment_ms` of audio whatever the length of the stream.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np
import webrtcvad

from ..records import SAMPLE_RATE, AudioBlock, SpeechSegment

if TYPE_CHECKING:
    from ..config import VadOptions

# Onset: this share of the frames of the last ONSET_MS must be voiced. On brown and white noise
# at aggressiveness 2 and 30 ms frames, webrtcvad's voiced frames never filled more than 80% of
# any 300 ms window (10 minutes each, measured here), while speech fills 100%.
ONSET_MS = 300
ONSET_RATIO = 0.9
# End: a hangover window with at most this share of voiced frames is silence (stray voiced
# frames in background noise must not hold a segment open forever).
HANGOVER_VOICED_RATIO = 0.1
# A kept segment has at least this share of voiced frames between its first and last voiced
# frame; speech with ordinary pauses sits near 0.9, noise that slipped past the onset near 0.1.
MIN_VOICED_RATIO = 0.5
# The quietest point for a split is judged on energy averaged over this long: a single quiet
# frame can be the closure of a stop consonant inside a word; a gap between words lasts longer.
SPLIT_SMOOTH_MS = 90
# Block start times further than this from where the previous block ended mean audio is missing.
_GAP_TOLERANCE = 0.002


@dataclass(frozen=True)
class _Frame:
    offset: int  # first sample, counted from the timeline's origin
    samples: np.ndarray  # int16
    voiced: bool
    rms: float


class Segmenter:
    """Streaming speech segmentation: `feed` blocks as they come, `flush` at the end of the stream.

    `tail_pad_ms` (default min(pre_roll_ms, hangover_ms)) is the audio kept after the last voiced
    frame; `split_search_ms` (default a third of max_segment_ms) is how far back from the maximum
    length a split point is looked for.
    """

    def __init__(
        self,
        options: VadOptions,
        *,
        tail_pad_ms: int | None = None,
        split_search_ms: int | None = None,
    ) -> None:
        if options.frame_ms not in (10, 20, 30):
            raise ValueError(f"frame_ms must be 10, 20 or 30 (what webrtcvad accepts); got {options.frame_ms}")
        if not 0 <= options.aggressiveness <= 3:
            raise ValueError(f"aggressiveness must be 0 to 3; got {options.aggressiveness}")
        if options.min_segment_ms >= options.max_segment_ms:
            raise ValueError(
                f"min_segment_ms ({options.min_segment_ms}) must be below max_segment_ms ({options.max_segment_ms})"
            )
        if options.max_segment_ms < 3 * options.frame_ms:
            raise ValueError(f"max_segment_ms must hold at least three frames; got {options.max_segment_ms}")
        self.options = options
        frame_ms = options.frame_ms
        self.frame_samples = SAMPLE_RATE * frame_ms // 1000
        self._vad = webrtcvad.Vad(options.aggressiveness)
        self._pre_frames = math.ceil(options.pre_roll_ms / frame_ms)
        self._onset_frames = max(1, round(ONSET_MS / frame_ms))
        self._onset_needed = math.ceil(ONSET_RATIO * self._onset_frames)
        self._hang_frames = max(1, round(options.hangover_ms / frame_ms))
        self._hang_allowed = math.floor(HANGOVER_VOICED_RATIO * self._hang_frames)
        tail_ms = min(options.pre_roll_ms, options.hangover_ms) if tail_pad_ms is None else tail_pad_ms
        self._tail_frames = math.ceil(tail_ms / frame_ms)
        self._min_frames = max(1, math.ceil(options.min_segment_ms / frame_ms))
        self._max_frames = options.max_segment_ms // frame_ms
        search_ms = options.max_segment_ms // 3 if split_search_ms is None else split_search_ms
        self._search_frames = min(self._max_frames - 1, max(1, search_ms // frame_ms))
        self._smooth_frames = max(1, round(SPLIT_SMOOTH_MS / frame_ms))
        #: Segments judged too short or too sparse to be speech, for statistics.
        self.dropped = 0
        self._reset()

    def _reset(self) -> None:
        self._origin: float | None = None  # epoch time of the timeline's sample 0
        self._consumed = 0  # samples of the timeline already cut into frames
        self._pending = np.zeros(0, dtype=np.int16)  # less than a frame, waiting for the next block
        self._flags: deque[bool] = deque(maxlen=max(self._onset_frames, self._hang_frames))
        self._ring: deque[_Frame] = deque(maxlen=self._pre_frames + self._onset_frames)
        self._segment: list[_Frame] | None = None

    # --- the stream -------------------------------------------------------------------------

    def feed(self, block: AudioBlock) -> list[SpeechSegment]:
        """Take one block; return the segments it completed (often none)."""
        if not len(block.samples):
            # A break: no silence will come to close what is open, so it ends here.
            return self.flush()
        out: list[SpeechSegment] = []
        if self._origin is not None:
            expected = self._origin + (self._consumed + len(self._pending)) / SAMPLE_RATE
            if abs(block.start - expected) > _GAP_TOLERANCE:
                # Audio is missing (a microphone came back): what came before ends here.
                out.extend(self.flush())
        if self._origin is None:
            self._origin = block.start
        samples = block.samples
        if samples.dtype != np.int16 or samples.ndim != 1:
            raise ValueError(f"blocks must hold 1-D int16 samples; got {samples.dtype} with shape {samples.shape}")
        data = np.concatenate([self._pending, samples]) if len(self._pending) else samples
        n = len(data) // self.frame_samples
        if n:
            frames = data[: n * self.frame_samples].reshape(n, self.frame_samples)
            rms = np.sqrt(np.mean(np.square(frames, dtype=np.float32), axis=1))
            is_speech = self._vad.is_speech
            for i in range(n):
                frame = frames[i]
                voiced = is_speech(frame.tobytes(), SAMPLE_RATE)
                self._step(_Frame(self._consumed, frame, voiced, float(rms[i])), out)
                self._consumed += self.frame_samples
        self._pending = data[n * self.frame_samples :].copy()
        return out

    def flush(self) -> list[SpeechSegment]:
        """End of the stream (or of a stretch of it): close any open segment and start afresh."""
        out: list[SpeechSegment] = []
        if self._segment is not None:
            if len(self._pending):
                # Less than a frame, too short to judge, but it is the end of what was said.
                self._segment.append(_Frame(self._consumed, self._pending, False, 0.0))
            self._close(out, at_end=True)
        self._reset()
        return out

    def run(self, blocks: Iterable[AudioBlock]) -> Iterator[SpeechSegment]:
        """Segment a whole stream: every block, then the flush."""
        for block in blocks:
            yield from self.feed(block)
        yield from self.flush()

    # --- one frame at a time ---------------------------------------------------------------

    def _step(self, frame: _Frame, out: list[SpeechSegment]) -> None:
        self._flags.append(frame.voiced)
        if self._segment is None:
            self._ring.append(frame)
            if self._recent_voiced(self._onset_frames) >= self._onset_needed:
                self._start()
            return
        self._segment.append(frame)
        if len(self._segment) >= self._max_frames:
            self._split(out)
        elif self._recent_voiced(self._hang_frames) <= self._hang_allowed:
            self._close(out)

    def _recent_voiced(self, count: int) -> int:
        flags = self._flags
        return sum(islice(flags, max(0, len(flags) - count), None))

    def _start(self) -> None:
        frames = list(self._ring)
        window_start = max(0, len(frames) - self._onset_frames)
        # The onset window can reach back into the segment just closed (a hangover shorter than the
        # window); then the ring holds fewer voiced frames than counted, possibly none.
        first_voiced = next((i for i in range(window_start, len(frames)) if frames[i].voiced), len(frames) - 1)
        self._segment = frames[max(0, first_voiced - self._pre_frames) :]
        self._ring.clear()

    def _close(self, out: list[SpeechSegment], *, at_end: bool = False) -> None:
        frames = self._segment or []
        self._segment = None
        voiced = [i for i, f in enumerate(frames) if f.voiced]
        end = min(len(frames), voiced[-1] + 1 + self._tail_frames) if voiced else 0
        self._emit(frames[:end], out)
        if not at_end:
            # The silence after the tail may be the pre-roll of whatever is said next.
            self._ring.extend(frames[end:])

    def _split(self, out: list[SpeechSegment]) -> None:
        frames = self._segment or []
        energy = np.array([f.rms for f in frames], dtype=np.float64)
        smooth = np.convolve(energy, np.ones(self._smooth_frames) / self._smooth_frames, mode="same")
        lo = len(frames) - 1 - self._search_frames
        region = smooth[lo : len(frames) - 1]
        # The latest of equally quiet points keeps the first part as long as possible.
        cut = lo + len(region) - 1 - int(np.argmin(region[::-1]))
        self._emit(frames[: cut + 1], out)
        self._segment = frames[cut + 1 :]

    def _emit(self, frames: list[_Frame], out: list[SpeechSegment]) -> None:
        voiced = [i for i, f in enumerate(frames) if f.voiced]
        if not voiced:
            if frames:
                self.dropped += 1
            return
        span = voiced[-1] - voiced[0] + 1
        if span < self._min_frames or len(voiced) < MIN_VOICED_RATIO * span:
            self.dropped += 1
            return
        assert self._origin is not None
        samples = np.concatenate([f.samples for f in frames]).astype(np.float32) / 32768.0
        start = self._origin + frames[0].offset / SAMPLE_RATE
        out.append(SpeechSegment(samples=samples, start=start, end=start + len(samples) / SAMPLE_RATE))


def speech_segments(blocks: Iterable[AudioBlock], options: VadOptions) -> Iterator[SpeechSegment]:
    """The whole audio stage after the source: webrtcvad segments, then silero's check if enabled."""
    segments = Segmenter(options).run(blocks)
    if not options.silero:
        yield from segments
        return
    from .silero import SileroCheck

    yield from SileroCheck(options.silero_threshold).filter(segments)
