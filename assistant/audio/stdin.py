"""Raw PCM from a byte stream (stdin, a pipe from `arecord`, `sox`, `ffmpeg`): signed 16-bit little-endian."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from ..errors import InputError
from ..records import SAMPLE_RATE, AudioBlock
from .base import BATCH_BLOCK_MS, AudioSource
from .resample import Converter

log = logging.getLogger(__name__)

_SAMPLE_BYTES = 2


class PcmStreamSource(AudioSource):
    """Interleaved s16le PCM at `sample_rate` with `channels` channels, as 16 kHz mono blocks.

    The stream carries no header, so rate and channel count must be stated. `start_time` stamps the
    first sample; left None, it is the moment the first bytes arrive (a pipe is usually live).
    """

    def __init__(
        self,
        stream: BinaryIO,
        *,
        sample_rate: int = SAMPLE_RATE,
        channels: int = 1,
        block_ms: int = BATCH_BLOCK_MS,
        start_time: float | None = None,
        description: str = "PCM stream",
    ) -> None:
        if sample_rate <= 0:
            raise ValueError(f"sample_rate must be positive; got {sample_rate}")
        if channels < 1:
            raise ValueError(f"channels must be at least 1; got {channels}")
        if block_ms <= 0:
            raise ValueError(f"block_ms must be positive; got {block_ms}")
        self.stream = stream
        self.sample_rate = sample_rate
        self.channels = channels
        self.block_ms = block_ms
        self.start_time = start_time
        self.description = description

    def _read_exactly(self, size: int) -> bytes:
        # A pipe hands over whatever is ready; keep reading until the block is whole or input ends.
        parts: list[bytes] = []
        missing = size
        while missing > 0:
            try:
                data = self.stream.read(missing)
            except OSError as exc:
                raise InputError(f"{self.description}: read failed: {exc.strerror or exc}") from None
            if not data:
                break
            parts.append(data)
            missing -= len(data)
        return b"".join(parts)

    def blocks(self) -> Iterator[AudioBlock]:
        frame_bytes = _SAMPLE_BYTES * self.channels
        block_bytes = max(1, self.sample_rate * self.block_ms // 1000) * frame_bytes
        passthrough = self.sample_rate == SAMPLE_RATE and self.channels == 1
        converter = None if passthrough else Converter(self.sample_rate, self.channels)
        t0 = self.start_time
        emitted = 0
        while True:
            data = self._read_exactly(block_bytes)
            if t0 is None:
                # The first block has just been recorded, so it started one block's length ago.
                t0 = time.time() - len(data) / frame_bytes / self.sample_rate
            last = len(data) < block_bytes
            whole = len(data) - len(data) % frame_bytes
            if whole < len(data):
                log.warning(
                    "%s: dropped %d trailing bytes at the end (not a whole %d-byte sample frame)",
                    self.description,
                    len(data) - whole,
                    frame_bytes,
                )
            pcm = np.frombuffer(data[:whole], dtype="<i2")
            if converter is None:
                samples = pcm.astype(np.int16)
            else:
                frames = pcm.reshape(-1, self.channels).astype(np.float32) / 32768.0
                samples = converter.convert(frames)
                if last:
                    samples = np.concatenate([samples, converter.flush()])
            if len(samples):
                yield AudioBlock(samples=samples, start=t0 + emitted / SAMPLE_RATE)
                emitted += len(samples)
            if last:
                return
