"""Speech segments waiting for transcription: in memory while it keeps up, on disk when it falls behind.

Nothing heard is dropped. Once a segment has gone to disk, later ones follow it there until
the disk queue drains, so segments are always transcribed in the order they were spoken. A
spooled segment is deleted as soon as its words are filed; segments left on disk by a crash
or a stop are the first thing the next start transcribes.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from ..atomic import atomic_bytes
from ..records import SAMPLE_RATE, SpeechSegment

log = logging.getLogger(__name__)

SUFFIX = ".wav"


@dataclass(frozen=True)
class Queued:
    segment: SpeechSegment
    # The file holding the segment when it was spooled; removed by `done` once it is filed.
    path: Path | None = None


@dataclass(frozen=True)
class QueueState:
    in_memory: int
    on_disk: int
    # Seconds of speech waiting, and the epoch time the oldest waiting segment began.
    seconds: float
    oldest_start: float | None


def _name(seq: int, segment: SpeechSegment) -> str:
    # The start time travels in the name (milliseconds since the epoch); the end follows from the length.
    return f"{seq:010d}-{round(segment.start * 1000)}{SUFFIX}"


def _parse(path: Path) -> tuple[int, float] | None:
    try:
        seq, start_ms = path.stem.split("-")
        return int(seq), int(start_ms) / 1000
    except ValueError:
        return None


class SegmentQueue:
    def __init__(self, spool_dir: Path, capacity: int) -> None:
        self.spool_dir = spool_dir
        self.capacity = capacity
        spool_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for tmp in spool_dir.glob(".*.tmp"):  # a write cut short by a crash: never acknowledged
            tmp.unlink(missing_ok=True)
        self._memory: deque[SpeechSegment] = deque()
        self._disk: deque[Path] = deque(sorted(p for p in spool_dir.glob(f"*{SUFFIX}") if _parse(p)))
        self._seq = max((_parse(p)[0] for p in self._disk), default=0)  # type: ignore[index]
        self._cond = threading.Condition()
        self._closed = False
        # After a stop's spool_all nothing stays in memory: a segment that arrives late (the capture's
        # last one, or one a transcription gave back) goes straight to disk.
        self._spooled = False
        # Items already given back: a stop and the transcription thread may both give back the same one.
        self._returned: list[Queued] = []
        if self._disk:
            log.info("%d spooled speech segment(s) from the last run will be transcribed first", len(self._disk))

    def put(self, segment: SpeechSegment) -> None:
        with self._cond:
            if self._spooled or self._disk or len(self._memory) >= self.capacity:
                self._disk.append(self._write(segment))
            else:
                self._memory.append(segment)
            self._cond.notify()

    def take(self, timeout: float | None = None) -> Queued | None:
        """The oldest waiting segment; None on timeout, or when closed and empty."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._memory or self._disk or self._closed, timeout):
                return None
            if self._memory:
                return Queued(self._memory.popleft())
            if self._disk:
                path = self._disk.popleft()
                return Queued(self._read(path), path)
            return None

    def done(self, item: Queued) -> None:
        """The segment's words are in the database: its audio on disk goes now."""
        if item.path is not None:
            item.path.unlink(missing_ok=True)

    def spool_all(self) -> int:
        """Move everything still in memory to disk (a stop): the next start picks it up."""
        with self._cond:
            moved = [self._write(s) for s in self._memory]
            self._memory.clear()
            self._disk.extendleft(reversed(moved))
            self._spooled = True
            return len(moved)

    def requeue(self, item: Queued) -> None:
        """Put back a segment that was taken but not filed (a stop in the middle of it); once only."""
        with self._cond:
            if any(r is item for r in self._returned):
                return
            self._returned.append(item)
            if item.path is not None:
                self._disk.appendleft(item.path)
            elif self._spooled:
                # Ahead of everything on disk, so the next start still hears it in the order spoken.
                first = min((p for p in map(_parse, self._disk) if p), default=(self._seq + 1, 0.0))[0]
                self._disk.appendleft(self._write(item.segment, seq=max(0, first - 1)))
            else:
                self._memory.appendleft(item.segment)

    def discard(self, since: float | None, until: float | None) -> int:
        """Drop waiting segments that start in [since, until) (a forget): audio and spool files."""

        def inside(start: float) -> bool:
            return (since is None or start >= since) and (until is None or start < until)

        with self._cond:
            kept = [s for s in self._memory if not inside(s.start)]
            dropped = len(self._memory) - len(kept)
            self._memory = deque(kept)
            for path in list(self._disk):
                parsed = _parse(path)
                if parsed and inside(parsed[1]):
                    self._disk.remove(path)
                    path.unlink(missing_ok=True)
                    dropped += 1
            return dropped

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def state(self) -> QueueState:
        with self._cond:
            seconds = sum(s.duration for s in self._memory)
            starts = [s.start for s in self._memory]
            for p in self._disk:
                parsed = _parse(p)
                if parsed:
                    starts.append(parsed[1])
                try:
                    seconds += max(0, p.stat().st_size - 44) / (2 * SAMPLE_RATE)
                except OSError:
                    pass
            return QueueState(len(self._memory), len(self._disk), seconds, min(starts, default=None))

    def _write(self, segment: SpeechSegment, seq: int | None = None) -> Path:
        if seq is None:
            self._seq += 1
            seq = self._seq
        path = self.spool_dir / _name(seq, segment)
        pcm = np.clip(np.round(segment.samples * 32767), -32768, 32767).astype(np.int16)
        with atomic_bytes(path, permissions=0o600) as fh:
            sf.write(fh, pcm, SAMPLE_RATE, format="WAV", subtype="PCM_16")
        return path

    def _read(self, path: Path) -> SpeechSegment:
        samples, rate = sf.read(path, dtype="float32")
        assert rate == SAMPLE_RATE, (path, rate)
        start = _parse(path)[1]  # type: ignore[index]
        return SpeechSegment(samples, start, start + len(samples) / SAMPLE_RATE)
