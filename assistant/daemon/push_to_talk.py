"""`PushToTalk`: the microphone recorded for the assistant, kept out of the conversation.

A recording has a purpose: a spoken question (`QUESTION`), transcribed and answered, or a voice to
enroll (`ENROLLMENT`), a person speaking so the assistant learns their voice. Either way, while
it runs the capture thread hands every block to `PushToTalk.take` instead of the segmenter, so
none of it is heard, transcribed into the memory or stored. One recording at a time: there is one
microphone and one person at it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..audio.level import level_dbfs
from ..errors import InputError
from ..records import SAMPLE_RATE, RecordingState, SpeechSegment, Transcript

log = logging.getLogger(__name__)

QUESTION = "question"
ENROLLMENT = "enrollment"
# How each purpose is named in what the user reads.
_WHAT = {QUESTION: "a question", ENROLLMENT: "a voice to enroll"}
# A recording past its length limit waits for its stop; one nobody stops (the client that started
# it went away) is dropped this long after the limit, so the room is heard again.
ABANDONED_SECONDS = 60.0


@dataclass
class _Recording:
    """A recording in progress: the blocks the conversation never sees."""

    purpose: str
    started: float
    # Past this the recording is cut; it waits for its stop (or cancel) all the same.
    limit_seconds: float
    # Whose voice an enrollment records.
    name: str | None = None
    blocks: list[np.ndarray] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False
    # When the length limit was reached (time.monotonic()).
    cut_at: float | None = None
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


@dataclass(frozen=True)
class Recorded:
    """A finished recording: 16 kHz float32 samples, when it started, and whose voice (an enrollment)."""

    samples: np.ndarray
    started: float
    name: str | None


class PushToTalk:
    """Start, watch, cancel or stop a recording; stopping a question transcribes it with `transcribe`.

    `problem` says why the microphone delivers nothing now (unplugged, being reopened), or None: a
    recording is not started on a microphone that cannot hear it.
    """

    def __init__(
        self,
        *,
        microphone: bool,
        transcribe: Callable[[SpeechSegment], list[Transcript]],
        problem: Callable[[], str | None] = lambda: None,
    ) -> None:
        # A daemon listening to a file has no live speaker to record.
        self._microphone = microphone
        self._transcribe = transcribe
        self._problem = problem
        self._recording: _Recording | None = None

    @property
    def recording(self) -> bool:
        """Something is being recorded (or has reached its length limit and waits for its stop)."""
        return self._recording is not None

    def take(self, block: np.ndarray) -> bool:
        """(Capture thread.) Keep `block` for the recording; False when there is none, and the
        block belongs to the conversation."""
        recording = self._recording
        if recording is None:
            return False
        # Past the length limit the recording is cut, but the speaker is still talking to the
        # assistant, not the room: nothing reaches the conversation until they stop.
        if not recording.done.is_set():
            recording.add(block)
            if recording.seconds >= recording.limit_seconds:
                recording.cut_at = time.monotonic()
                recording.done.set()
        elif recording.cut_at is not None and time.monotonic() - recording.cut_at > ABANDONED_SECONDS:
            self._recording = None
            log.warning(
                "%s reached its length limit %.0f s ago and was never stopped; dropped, the room is heard again",
                _WHAT[recording.purpose].capitalize(),
                ABANDONED_SECONDS,
            )
            return False
        return True

    def start(self, purpose: str = QUESTION, *, limit_seconds: float, name: str | None = None) -> None:
        """Record for `purpose` (an enrollment records `name`'s voice) for at most `limit_seconds`."""
        if purpose not in _WHAT:
            raise ValueError(f"a recording is for {' or '.join(_WHAT)}, not {purpose!r}")
        if not self._microphone:
            raise InputError(f"recording {_WHAT[purpose]} needs the microphone; this daemon listens to a file")
        current = self._recording
        if current is not None and not current.done.is_set():
            raise InputError(f"push-to-talk is already recording {_WHAT[current.purpose]}")
        problem = self._problem()
        if problem is not None:
            raise InputError(f"the microphone cannot record now: {problem}")
        self._recording = _Recording(purpose, time.time(), limit_seconds, name)

    def state(self) -> RecordingState:
        recording = self._recording
        if recording is None:
            return RecordingState(recording=False, seconds=0.0, level_dbfs=None)
        return RecordingState(
            recording=True,
            seconds=round(recording.seconds, 2),
            level_dbfs=recording.level(),
            purpose=recording.purpose,
            limit_seconds=recording.limit_seconds,
        )

    def cancel(self, purpose: str = QUESTION) -> None:
        """Drop the recording for `purpose`; nothing of it is kept."""
        recording = self._current(purpose)
        self._recording = None
        recording.cancelled = True
        recording.done.set()

    def finish(self, purpose: str) -> Recorded:
        """End the recording for `purpose` and hand over what it holds; an empty one is refused."""
        recording = self._current(purpose)
        recording.done.set()
        self._recording = None
        if not recording.blocks:
            raise InputError(f"push-to-talk heard nothing while recording {_WHAT[purpose]}")
        samples = np.concatenate(recording.blocks).astype(np.float32) / 32768.0
        return Recorded(samples, recording.started, recording.name)

    def stop(self) -> str:
        """End the question being recorded and return what was said; nothing of it is stored."""
        recorded = self.finish(QUESTION)
        samples = recorded.samples
        segment = SpeechSegment(samples, recorded.started, recorded.started + len(samples) / SAMPLE_RATE)
        text = " ".join(t.text.strip() for t in self._transcribe(segment)).strip()
        if not text:
            raise InputError("push-to-talk heard no words")
        return text

    def _current(self, purpose: str) -> _Recording:
        """The recording for `purpose`; refused when there is none, or the one running is for something
        else (a question's stop must not end an enrollment, nor the other way round)."""
        recording = self._recording
        if recording is None:
            raise InputError(f"push-to-talk is not recording {_WHAT[purpose]}")
        if recording.purpose != purpose:
            raise InputError(
                f"push-to-talk is recording {_WHAT[recording.purpose]}, not {_WHAT[purpose]}; stop or cancel that first"
            )
        return recording
