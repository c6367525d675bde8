"""Audio files (WAV, FLAC and whatever else libsndfile reads), streamed block by block.

A file is never read whole: an all-day recording decodes to gigabytes, so blocks are read into
one reused buffer and converted as they go, and memory stays flat whatever the file's length.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import soundfile as sf

from ..errors import InputError
from ..records import SAMPLE_RATE, AudioBlock
from .base import BATCH_BLOCK_MS, AudioSource
from .resample import Converter

log = logging.getLogger(__name__)


def _libsndfile_reason(exc: Exception) -> str:
    # LibsndfileError carries libsndfile's own words ("Format not recognised."); other errors
    # ("Error opening 'x': ...") repeat the path, which the message already names.
    reason = getattr(exc, "error_string", None) or str(exc)
    return reason.split(": ", 1)[-1].rstrip(".") if reason.startswith("Error") else reason.rstrip(".")


class FileSource(AudioSource):
    """An audio file of any rate, channel count and sample width, as 16 kHz mono int16 blocks.

    `start_time` stamps the first sample (epoch seconds). Left None, a file paced in real time is
    stamped as if it started now, and any other file by its modification time minus its length
    (a recorder writes the file as it records, so its mtime marks the end).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        block_ms: int = BATCH_BLOCK_MS,
        realtime: bool = False,
        start_time: float | None = None,
    ) -> None:
        if block_ms <= 0:
            raise ValueError(f"block_ms must be positive; got {block_ms}")
        self.path = Path(path)
        self.description = str(self.path)
        self.block_ms = block_ms
        self.realtime = realtime
        self.start_time = start_time
        self._file: sf.SoundFile | None = None
        self._open()

    def _open(self) -> None:
        """Open and check the file now, so a bad path fails before anything starts listening."""
        path = self.path
        if not path.exists():
            raise InputError(f"{path}: audio file not found")
        if path.is_dir():
            raise InputError(f"{path}: is a directory, not an audio file")
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror}") from None
        if size == 0:
            raise InputError(f"{path}: the file is empty (0 bytes), so it holds no audio")
        try:
            f = sf.SoundFile(path)
        except (sf.SoundFileError, RuntimeError, OSError) as exc:
            raise InputError(
                f"{path}: not a readable audio file ({_libsndfile_reason(exc)}); WAV, FLAC, OGG and the other "
                "formats libsndfile reads are supported"
            ) from None
        if f.samplerate <= 0 or f.channels <= 0:
            f.close()
            raise InputError(f"{path}: the header is corrupt ({f.samplerate} Hz, {f.channels} channels)")
        if f.frames == 0:
            f.close()
            raise InputError(f"{path}: holds no audio (the header says 0 samples)")
        self._file = f

    @property
    def duration(self) -> float:
        """Length in seconds, as the header states it."""
        f = self._require_open()
        return f.frames / f.samplerate

    def _require_open(self) -> sf.SoundFile:
        if self._file is None or self._file.closed:
            raise InputError(f"{self.path}: the source was closed")
        return self._file

    def blocks(self) -> Iterator[AudioBlock]:
        f = self._require_open()
        rate, channels = f.samplerate, f.channels
        if self.start_time is not None:
            t0 = self.start_time
        elif self.realtime:
            t0 = time.time()
        else:
            t0 = os.stat(self.path).st_mtime - f.frames / rate
        converter = Converter(rate, channels)
        frames_per_block = max(1, rate * self.block_ms // 1000)
        buffer = np.empty((frames_per_block, channels), dtype=np.float32)
        read_in = 0  # frames read, at the file's rate (paces real time)
        emitted = 0  # samples yielded, at SAMPLE_RATE (stamps blocks)
        clock0 = time.monotonic()
        while True:
            try:
                chunk = f.read(frames_per_block, dtype="float32", always_2d=True, out=buffer)
            except (sf.SoundFileError, RuntimeError) as exc:
                raise InputError(
                    f"{self.path}: corrupt audio after {read_in / rate:.2f} s ({_libsndfile_reason(exc)})"
                ) from None
            last = len(chunk) < frames_per_block
            samples = converter.convert(chunk) if len(chunk) else np.zeros(0, dtype=np.int16)
            if last:
                samples = np.concatenate([samples, converter.flush()])
            read_in += len(chunk)
            if self.realtime:
                # A live source hands a block over once its last sample has been recorded.
                delay = clock0 + read_in / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            if len(samples):
                yield AudioBlock(samples=samples, start=t0 + emitted / SAMPLE_RATE)
                emitted += len(samples)
            if last:
                break
        if read_in < f.frames:
            log.warning("%s: the header promises %d samples but only %d could be read", self.path, f.frames, read_in)

    def close(self) -> None:
        if self._file is not None and not self._file.closed:
            self._file.close()
