"""What the clients of `assistant bench daemon` do to the daemon, each on a thread: read the live
transcript (fast, or slowly enough to fall behind), poll /status, ask questions."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..errors import AssistantError
from ..records import Answer, Connected, HeardLine, Skipped, Status
from .daemon_process import DaemonProcess

STATUS_EVERY = 0.5  # seconds between /status polls
# An answer waits for the LLM behind every question asked before it; with 20 clients and the
# 0.5B model on two cores that is minutes, not seconds.
ASK_TIMEOUT = 1800.0


@dataclass
class LiveReader:
    """The live transcript on a thread: each line with the wall-clock time it arrived.

    `interval` > 0 makes a slow reader: it waits that long after every line it reads, so lines
    pile up behind it (in the socket's buffers, then the daemon's per-subscriber backlog).
    """

    daemon: DaemonProcess
    interval: float = 0.0
    utterances: list[tuple[float, HeardLine]] = field(default_factory=list)
    skipped: int = 0
    hello: Connected | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        # The stream sends nothing while nobody speaks, so a silence over 30 s ends this reader with
        # an error (reported as live_stream_error). The limit is what earlier reports ran with.
        self._client = self.daemon.service(timeout=30, read=30)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="live-reader", daemon=True)

    def start(self) -> LiveReader:
        self._thread.start()
        return self

    def _read(self) -> None:
        try:
            for event in self._client.utterances():
                if isinstance(event, HeardLine):
                    self.utterances.append((time.time(), event))
                elif isinstance(event, Skipped):
                    self.skipped += event.count
                elif isinstance(event, Connected):
                    self.hello = event
                if self.interval and self._stop.wait(self.interval):
                    return
        except AssistantError as exc:
            if not self._stop.is_set():
                self.error = f"{type(exc).__name__}: {exc}"

    def close(self) -> None:
        self._stop.set()
        self._client.close()
        self._thread.join(5)


@dataclass(frozen=True)
class Sample:
    """One /status poll: when it was answered (wall clock), how long it took, and what it said."""

    at: float
    ms: float
    status: Status

    @property
    def lag(self) -> float:
        return self.status.lag_seconds

    @property
    def queued(self) -> int:
        return self.status.queued_segments + self.status.spooled_segments


@dataclass
class StatusPoller:
    """/status every STATUS_EVERY seconds: the lag and queue it reports, and how long it took."""

    daemon: DaemonProcess
    samples: list[Sample] = field(default_factory=list)
    failures: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="status-poller", daemon=True)

    def start(self) -> StatusPoller:
        self._thread.start()
        return self

    def _poll(self) -> None:
        with self.daemon.service(timeout=120, read=120) as service:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                try:
                    s = service.status()
                except (AssistantError, ValueError):
                    self.failures += 1
                else:
                    self.samples.append(Sample(time.time(), (time.perf_counter() - t0) * 1000, s))
                self._stop.wait(STATUS_EVERY)

    def last(self) -> Status | None:
        return self.samples[-1].status if self.samples else None

    def close(self) -> None:
        self._stop.set()
        self._thread.join(130)


@dataclass
class AskResult:
    client: int
    question: str
    sent: float  # wall-clock
    first_token: float | None = None  # seconds after sending
    answer: float | None = None
    knows: bool | None = None
    used_llm: bool | None = None  # false: nothing relevant in memory, answered without the LLM
    text: str = ""
    error: str | None = None


def ask(daemon: DaemonProcess, client: int, question: str) -> AskResult:
    """Ask `question` on a connection of its own, timing the first streamed token and the answer."""
    result = AskResult(client, question, time.time())
    t0 = time.perf_counter()
    try:
        with daemon.service(timeout=60, read=ASK_TIMEOUT) as service:
            for piece in service.ask(question):
                if isinstance(piece, Answer):
                    result.answer = time.perf_counter() - t0
                    result.knows = piece.knows
                    result.used_llm = piece.context_tokens > 0
                    result.text = piece.text
                elif result.first_token is None:
                    result.first_token = time.perf_counter() - t0
    except (AssistantError, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    return result
