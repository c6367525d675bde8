"""What the clients of `assistant bench daemon` do to the daemon, each on a thread: read the live
transcript (fast, or slowly enough to fall behind), poll /status, ask questions."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

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
    utterances: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    skipped: int = 0
    hello: dict[str, Any] | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        # The stream sends nothing while nobody speaks, so a silence over 30 s ends this reader with
        # an error (reported as live_stream_error). The limit is what earlier reports ran with.
        self._client = self.daemon.client(timeout=30, read=30)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="live-reader", daemon=True)

    def start(self) -> LiveReader:
        self._thread.start()
        return self

    def _read(self) -> None:
        try:
            with self._client.stream("GET", "/utterances/stream") as response:
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    kind = event.get("type")
                    if kind == "utterance":
                        self.utterances.append((time.time(), event))
                    elif kind == "skipped":
                        self.skipped += int(event.get("count", 0))
                    elif kind == "hello":
                        self.hello = event
                    if self.interval and self._stop.wait(self.interval):
                        return
        except (httpx.TransportError, httpx.StreamError) as exc:
            if not self._stop.is_set():
                self.error = f"{type(exc).__name__}: {exc}"

    def close(self) -> None:
        self._stop.set()
        self._client.close()
        self._thread.join(5)


@dataclass
class StatusPoller:
    """/status every STATUS_EVERY seconds: the lag and queue it reports, and how long it took."""

    daemon: DaemonProcess
    samples: list[dict[str, Any]] = field(default_factory=list)
    failures: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="status-poller", daemon=True)

    def start(self) -> StatusPoller:
        self._thread.start()
        return self

    def _poll(self) -> None:
        with self.daemon.client(timeout=120, read=120) as c:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                try:
                    s = c.get("/status").json()
                except (httpx.TransportError, ValueError):
                    self.failures += 1
                else:
                    self.samples.append(
                        {
                            "at": time.time(),
                            "ms": (time.perf_counter() - t0) * 1000,
                            "lag": float(s["lag_seconds"]),
                            "queued": int(s["queued_segments"]) + int(s["spooled_segments"]),
                            "status": s,
                        }
                    )
                self._stop.wait(STATUS_EVERY)

    def last(self) -> dict[str, Any] | None:
        return self.samples[-1]["status"] if self.samples else None

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
        with (
            daemon.client(timeout=60, read=ASK_TIMEOUT) as c,
            c.stream("POST", "/ask", json={"question": question}) as response,
        ):
            if response.status_code != 200:
                result.error = f"HTTP {response.status_code}: {response.read().decode(errors='replace')[:200]}"
                return result
            for line in response.iter_lines():
                if not line.strip():
                    continue
                event = json.loads(line)
                if event["type"] == "token" and result.first_token is None:
                    result.first_token = time.perf_counter() - t0
                elif event["type"] == "answer":
                    result.answer = time.perf_counter() - t0
                    result.knows = bool(event["knows"])
                    result.used_llm = int(event["context_tokens"]) > 0
                    result.text = str(event["text"])
                elif event["type"] == "error":
                    result.error = str(event["error"])
    except (httpx.TransportError, httpx.StreamError, ValueError, KeyError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    return result
