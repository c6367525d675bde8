"""What the audio stage hands on: blocks of 16 kHz mono samples, then segments of speech."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Everything after the source runs at the rate webrtcvad, Whisper and the voice encoder share.
SAMPLE_RATE = 16_000


@dataclass(frozen=True)
class AudioBlock:
    """Consecutive samples from a source: int16, mono, SAMPLE_RATE.

    An empty block is a break: the audio stopped at `start` (a microphone was lost), so whatever
    was being said before it has ended.
    """

    samples: np.ndarray
    # Seconds since the epoch of the first sample (a file's blocks count from its start time).
    start: float

    @property
    def duration(self) -> float:
        return len(self.samples) / SAMPLE_RATE


@dataclass(frozen=True)
class SpeechSegment:
    """A stretch of audio the voice activity detector judged to be speech: float32 in [-1, 1]."""

    samples: np.ndarray
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start
