"""One interface for every place audio comes from: the microphone, a file, raw PCM on stdin.

A source yields `AudioBlock`s (16 kHz mono int16, stamped with the epoch time of their first
sample) until its audio ends; the live microphone never ends on its own. Blocks of one source are
contiguous in time except where audio was really missing (a microphone that was unplugged), which
shows as a jump in `start`; the segmenter closes any open segment at such a jump.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from types import TracebackType
from typing import Self

from ..records import AudioBlock

# Reading a file or a pipe in bigger blocks than a device costs less per second of audio; a file
# paced "as if live" uses the device's block length instead so it behaves like one.
BATCH_BLOCK_MS = 250


class AudioSource(ABC):
    """A stream of `AudioBlock`s; iterate it (once) and close it when done."""

    #: What the source reads, for log lines and error messages ("microphone 'USB Mic'", a path).
    description: str = "audio"
    #: Why no audio is arriving now (a lost device being reopened); None while it flows.
    problem: str | None = None

    @abstractmethod
    def blocks(self) -> Iterator[AudioBlock]:
        """Yield the source's audio in order; raises `InputError` (or a subclass) when it cannot."""

    def __iter__(self) -> Iterator[AudioBlock]:
        return self.blocks()

    def close(self) -> None:  # noqa: B027 - sources without resources need nothing here
        """Release the device or file; safe to call twice, and from another thread for the microphone."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
