"""The daemon's single writer: every call that touches the memory runs on one thread, in order.

SQLite wants one writer, and the memory keeps state in Python (the sensing buffer) that must
move with the tables. Calls are short (store an utterance, retrieve for a question, mount a
distilled block); slow work (transcription, the LLM) happens on other threads around them.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Writer:
    def __init__(self) -> None:
        self._calls: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="memory-writer", daemon=True)
        # When the call now running began; None while idle (the watchdog looks for wedged calls).
        self.busy_since: float | None = None

    def start(self) -> None:
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._calls.put((lambda: fn(*args, **kwargs), future))
        return future

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if threading.current_thread() is self._thread:
            return fn(*args, **kwargs)
        return self.submit(fn, *args, **kwargs).result()

    def stop(self, timeout: float | None = None) -> None:
        """Finish the calls already queued, then end the thread."""
        self._calls.put(None)
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stuck_for(self) -> float:
        since = self.busy_since
        return 0.0 if since is None else time.monotonic() - since

    def _run(self) -> None:
        while (item := self._calls.get()) is not None:
            fn, future = item
            if not future.set_running_or_notify_cancel():
                continue
            self.busy_since = time.monotonic()
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who decides
                future.set_exception(exc)
            finally:
                self.busy_since = None
