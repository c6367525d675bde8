"""The factory that picks an audio source: the microphone, raw PCM on standard input, or a file.

The microphone loads PortAudio only when it is opened, so files and stdin work without it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .base import BATCH_BLOCK_MS, AudioSource
from .files import FileSource
from .microphone import Microphone
from .stdin import PcmStreamSource

if TYPE_CHECKING:
    from ..config import AudioOptions


def open_source(
    path: str | Path | None,
    options: AudioOptions,
    *,
    realtime: bool = False,
    start_time: float | None = None,
    stdin_rate: int = 16_000,
    stdin_channels: int = 1,
) -> AudioSource:
    """The microphone (`path` None), raw s16le PCM on stdin (`"-"`), or an audio file.

    `realtime` paces a file at wall-clock speed, as if it were being recorded; `start_time` (epoch
    seconds) stamps a file's or stdin's first sample (see each source for its default).
    """
    if path is None:
        return Microphone(options.device, block_ms=options.block_ms)
    if str(path) == "-":
        return PcmStreamSource(
            sys.stdin.buffer,
            sample_rate=stdin_rate,
            channels=stdin_channels,
            block_ms=BATCH_BLOCK_MS,
            start_time=start_time,
            description="standard input",
        )
    return FileSource(
        path, block_ms=options.block_ms if realtime else BATCH_BLOCK_MS, realtime=realtime, start_time=start_time
    )
