"""Turn whatever a source delivers (any rate, any channel count, float frames) into 16 kHz mono int16.

One converter lives as long as one continuous stretch of audio: the resampler keeps filter state
between chunks, so a stream cut into blocks converts to the same samples as the whole stream at
once, with no clicks at block edges. A source calls `flush` at the end of the stretch (end of
file, microphone lost) so the samples the filter still holds are not lost.
"""

from __future__ import annotations

import numpy as np
import soxr

from ..records import SAMPLE_RATE


def float_to_int16(samples: np.ndarray) -> np.ndarray:
    """Float samples in [-1, 1] to int16; 16-bit input read as float comes back bit-exact."""
    return np.clip(np.rint(samples * 32768.0), -32768, 32767).astype(np.int16)


class Converter:
    """Streaming downmix + resample to SAMPLE_RATE + int16 for one continuous stretch of audio."""

    def __init__(self, in_rate: float, channels: int) -> None:
        if in_rate <= 0:
            raise ValueError(f"sample rate must be positive; got {in_rate}")
        if channels < 1:
            raise ValueError(f"channel count must be at least 1; got {channels}")
        self.in_rate = float(in_rate)
        self.channels = channels
        # soxr's stream resampler is polyphase, keeps its state across chunks and compensates its
        # own delay, so output sample k is input time k / SAMPLE_RATE (timestamps stay exact).
        self._resampler = (
            None
            if self.in_rate == SAMPLE_RATE
            else soxr.ResampleStream(self.in_rate, SAMPLE_RATE, 1, dtype="float32", quality="HQ")
        )

    def convert(self, frames: np.ndarray) -> np.ndarray:
        """`frames` float32, shape (n, channels) or (n,) for mono; returns int16 mono at SAMPLE_RATE."""
        mono = self._downmix(frames)
        if self._resampler is not None:
            mono = self._resampler.resample_chunk(mono)
        return float_to_int16(mono)

    def flush(self) -> np.ndarray:
        """The samples the resampler still holds at the end of the stretch."""
        if self._resampler is None:
            return np.zeros(0, dtype=np.int16)
        return float_to_int16(self._resampler.resample_chunk(np.zeros(0, dtype=np.float32), last=True))

    def _downmix(self, frames: np.ndarray) -> np.ndarray:
        if frames.ndim == 1:
            if self.channels != 1:
                raise ValueError(f"expected {self.channels} channels, got a 1-D array")
            return np.ascontiguousarray(frames, dtype=np.float32)
        if frames.shape[1] != self.channels:
            raise ValueError(f"expected {self.channels} channels, got {frames.shape[1]}")
        if self.channels == 1:
            return np.ascontiguousarray(frames[:, 0], dtype=np.float32)
        return frames.mean(axis=1, dtype=np.float32)
