"""`PushToTalk`: a spoken question recorded from the microphone, kept out of the conversation.

While a question is recorded, the capture thread hands every block to `PushToTalk.take`
instead of the segmenter, so none of it is heard, transcribed into the memory or stored.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..audio.level import level_dbfs
from ..errors import InputError
from ..records import SAMPLE_RATE, RecordingState, SpeechSegment, Transcript


@dataclass
class _Recording:
    """A push-to-talk question being recorded: the blocks the conversation never sees."""

    started: float
    blocks: list[np.ndarray] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False
    # Kept as blocks arrive: the capture thread checks the length limit at every block, and
    # summing the blocks there would grow with the recording.
    samples: int = 0

    def add(self, block: np.ndarray) -> None:
        self.blocks.append(block)
        self.samples += len(block)

    @property
    def seconds(self) -> float:
        return self.samples / SAMPLE_RATE

    def level(self) -> float | None:
        """The level of the last tenth of a second recorded; None before the first block."""
        if not self.blocks:
            return None
        # Microphone blocks are 30 ms by default; the last eight cover a tenth of a second at any
        # block length down to 12.5 ms, without joining the whole recording at every poll.
        tail = np.concatenate(self.blocks[-8:])[-(SAMPLE_RATE // 10) :]
        return round(level_dbfs(tail), 1)


class PushToTalk:
    """Start, watch, cancel or stop a spoken question; stopping transcribes it with `transcribe`."""

    def __init__(self, *, microphone: bool, transcribe: Callable[[SpeechSegment], list[Transcript]]) -> None:
        # A daemon listening to a file has no live speaker to record.
        self._microphone = microphone
        self._transcribe = transcribe
        self._recording: _Recording | None = None

    @property
    def recording(self) -> bool:
        """A question is being recorded (or has reached its length limit and waits for stop)."""
        return self._recording is not None

    def take(self, block: np.ndarray, max_seconds: float) -> bool:
        """(Capture thread.) Keep `block` for the question being recorded; False when there is
        none, and the block belongs to the conversation."""
        recording = self._recording
        if recording is None:
            return False
        # Past the length limit the question is cut, but the speaker is still talking to the
        # assistant, not the room: nothing reaches the conversation until they stop.
        if not recording.done.is_set():
            recording.add(block)
            if recording.seconds >= max_seconds:
                recording.done.set()
        return True

    def start(self) -> None:
        if not self._microphone:
            raise InputError("push-to-talk needs the microphone; this daemon listens to a file")
        if self._recording is not None and not self._recording.done.is_set():
            raise InputError("push-to-talk is already recording")
        self._recording = _Recording(time.time())

    def state(self) -> RecordingState:
        recording = self._recording
        if recording is None:
            return RecordingState(recording=False, seconds=0.0, level_dbfs=None)
        return RecordingState(recording=True, seconds=round(recording.seconds, 2), level_dbfs=recording.level())

    def cancel(self) -> None:
        recording, self._recording = self._recording, None
        if recording is None:
            raise InputError("push-to-talk is not recording")
        recording.cancelled = True
        recording.done.set()

    def stop(self) -> str:
        """End the recording and return what was said; nothing of it is stored."""
        recording = self._recording
        if recording is None:
            raise InputError("push-to-talk is not recording")
        recording.done.set()
        self._recording = None
        if not recording.blocks:
            raise InputError("push-to-talk heard nothing")
        samples = np.concatenate(recording.blocks).astype(np.float32) / 32768.0
        segment = SpeechSegment(samples, recording.started, recording.started + len(samples) / SAMPLE_RATE)
        text = " ".join(t.text.strip() for t in self._transcribe(segment)).strip()
        if not text:
            raise InputError("push-to-talk heard no words")
        return text
