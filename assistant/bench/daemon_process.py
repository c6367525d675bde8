"""One real `assistant daemon` subprocess, on its own config and socket: started, asked, stopped.

`assistant bench daemon` measures daemons run this way, and the tests (tests/daemon_helpers.py)
run theirs on it too, adding a fake microphone. It lives in the package, not with the tests, so
that the benchmark runs from an installed package.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ..daemon.client import DaemonClient
from ..errors import AssistantError
from ..records import Status
from ..wire import from_json


class DaemonError(AssistantError):
    """The daemon failed to start, answer or stop; the message ends with the tail of its log."""

    def __init__(self, reason: str, log_tail: str) -> None:
        super().__init__(f"{reason}:\n{log_tail}")
        self.reason = reason


def settled(status: dict[str, Any]) -> bool:
    """The source is done and everything it said is transcribed, filed and distilled (of /status
    as JSON, as the tests read it; `Status.settled` of the record)."""
    return from_json(Status, status).settled


@dataclass
class DaemonProcess:
    root: Path  # its log goes here; its config usually names a data directory here too
    config: Path
    socket: Path  # the API's Unix socket, as the config names it
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.root / "daemon.log"

    def env(self) -> dict[str, str]:
        env = {**os.environ}
        env.setdefault("HF_HUB_OFFLINE", "1")  # the models are installed; never reach for the hub mid-run
        return env

    def launch(self, source: Path | None = None, *, stdin: Path | None = None, append_log: bool = False) -> None:
        """Start it on the file `source`; on `stdin` (raw 16 kHz mono s16le PCM, read as `--source -`);
        or with neither, on the microphone. Returns at once: see `wait_until_answering`."""
        args = [sys.executable, "-m", "assistant", "--config", str(self.config), "-v", "daemon"]
        if stdin is not None:
            args += ["--source", "-"]
        elif source is not None:
            args += ["--source", str(source)]
        with open(self.log, "ab" if append_log else "wb") as log, open(stdin or os.devnull, "rb") as pcm:
            self.process = subprocess.Popen(args, stdin=pcm, stdout=log, stderr=subprocess.STDOUT, env=self.env())

    def memory_kib(self) -> tuple[int, int]:
        """Resident memory now and its peak (VmRSS, VmHWM), in KiB; (0, 0) where /proc is missing."""
        if self.process is None:
            return 0, 0
        try:
            text = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return 0, 0
        found = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", text, flags=re.M))
        return int(found.get("VmRSS", 0)), int(found.get("VmHWM", 0))

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, as systemd stops it; SIGKILL if it is still there after `timeout` seconds.

        Its exit status: 0 for a clean stop, minus the signal's number when a signal ended it.
        """
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process is not None else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return -signal.SIGKILL

    def kill(self) -> None:
        """SIGKILL: no chance to flush or spool anything."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def kill_if_running(self) -> None:
        """What is left after a failure that skipped the clean stop."""
        if self.process is not None and self.process.poll() is None:
            self.kill()

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    # --- talking to it: the one client, and the raw HTTP the tests check the API with ----------

    def service(self, timeout: float = 60, read: float | None = None) -> DaemonClient:
        """Its `MemoryService`: the client every user of the daemon has. `read` as for `client`."""
        return DaemonClient(self.socket, timeout=timeout, read_timeout=read)

    def client(self, timeout: float = 60, read: float | None = None) -> httpx.Client:
        """A client of its API; `read` limits the wait for each piece of a reply (None: no limit, for streams)."""
        return httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.socket)),
            base_url="http://assistant",
            timeout=httpx.Timeout(timeout, read=read),
        )

    def status(self, read: float | None = None) -> dict[str, Any]:
        """Its /status; `read` as for `client`."""
        with self.client(read=read) as c:
            reply = c.get("/status")
            reply.raise_for_status()
            return reply.json()

    def wait_until_answering(self, timeout: float, poll: float) -> float:
        """Ask for /status every `poll` seconds until it answers; the wall-clock time it first did.

        A daemon on a file source starts reading it just before it starts answering, so this is
        about when the recording's first sample plays.
        """
        assert self.process is not None
        deadline = time.monotonic() + timeout
        # One client for every attempt: making one costs milliseconds, and `poll` may be less.
        with self.client(timeout=5, read=5) as c:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise DaemonError(f"the daemon exited with {self.process.returncode}", self.log_tail())
                try:
                    if c.get("/status").status_code == 200:
                        return time.time()
                except httpx.TransportError:
                    pass
                time.sleep(poll)
        raise DaemonError(f"the daemon did not answer within {timeout:.0f} s", self.log_tail())
