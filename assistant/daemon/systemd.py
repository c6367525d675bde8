"""The daemon's side of systemd: readiness and status notifications, the watchdog, journal log levels.

Everything here is the plain protocol of sd_notify(3), sd_watchdog_enabled(3) and sd-daemon(3),
with no dependency: outside systemd (a terminal, the tests) each call quietly does nothing, so
the daemon calls them unconditionally.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

# A failing notify socket would otherwise log on every watchdog ping, twice a WatchdogSec.
_send_failed_logged = False
_send_lock = threading.Lock()


def _notify_address() -> str | None:
    value = os.environ.get("NOTIFY_SOCKET", "")
    if not value:
        return None
    if value.startswith("@"):
        # Linux abstract namespace: the name starts with a NUL byte instead of '@'.
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    # systemd ≥ 254 can also hand out vsock:… addresses (VMs); a service on a user manager never gets one.
    _log_send_failure_once(f"NOTIFY_SOCKET={value!r} is neither a path nor an abstract socket")
    return None


def _log_send_failure_once(message: str) -> None:
    global _send_failed_logged
    with _send_lock:
        if _send_failed_logged:
            return
        _send_failed_logged = True
    log.warning("cannot notify systemd: %s (further failures are not logged)", message)


def notify(*fields: str) -> bool:
    """Send `fields` (e.g. "READY=1", "STATUS=loading models") to the service manager as one datagram.

    Returns True when the datagram was sent, False when not run under systemd or when sending
    failed; a failure is logged once and never raised, since losing a status line must not stop
    the daemon (a lost WATCHDOG=1 is what the watchdog is there to notice).
    """
    address = _notify_address()
    if address is None or not fields:
        return False
    payload = "\n".join(fields).encode("utf-8")
    try:
        # A fresh socket per call, as sd_notify does: the watchdog thread and the main thread
        # send concurrently, and nothing is gained by keeping one open between pings.
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(payload, address)
    except OSError as exc:
        _log_send_failure_once(f"{os.environ.get('NOTIFY_SOCKET')}: {exc}")
        return False
    return True


def monotonic_usec() -> str:
    """The MONOTONIC_USEC=… field systemd ≥ 253 wants next to RELOADING=1 (it ties the reload to a moment)."""
    return f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}"


def ready(status: str | None = None) -> bool:
    """Start-up is complete: `systemctl start` returns and units ordered after this one start."""
    return notify("READY=1", *([f"STATUS={status}"] if status else []))


def reloading() -> bool:
    """A reload (SIGHUP) began; send ready() when it is done."""
    return notify("RELOADING=1", monotonic_usec())


def stopping(status: str | None = None) -> bool:
    """Shutdown began, so systemd shows "deactivating" instead of thinking the service died."""
    return notify("STOPPING=1", *([f"STATUS={status}"] if status else []))


def status(text: str) -> bool:
    """One line shown by `systemctl --user status assistant`."""
    return notify(f"STATUS={text}")


def failed(errno: int, status: str | None = None) -> bool:
    """Report why the daemon is about to exit with an error (shown as the unit's StatusErrno)."""
    return notify(f"ERRNO={errno}", *([f"STATUS={status}"] if status else []))


def watchdog_seconds() -> float | None:
    """The watchdog timeout systemd expects pings within, or None when no watchdog applies to this process.

    WATCHDOG_PID names the process the timeout is meant for; a child that inherited the
    environment (e.g. a helper started by the daemon) must not ping on its parent's behalf.
    """
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if pid:
        try:
            if int(pid) != os.getpid():
                return None
        except ValueError:
            return None
    try:
        value = int(usec)
    except ValueError:
        return None
    return value / 1_000_000 if value > 0 else None


class Watchdog:
    """A daemon thread that sends WATCHDOG=1 every half timeout while `healthy()` says so.

    The pings come from a thread of their own, so `healthy` is what ties them to real work: it
    should check that the pipeline and writer threads are alive and no call has been stuck past
    its deadline. While it returns False (or raises) no pings go out, and after WatchdogSec
    systemd kills the service with SIGABRT and Restart=on-failure starts it again. Pings resume if
    it recovers in time.

    systemd arms the watchdog when start-up completes (READY=1) or at the first ping, whichever
    comes first; starting this before the models load is therefore fine only if `healthy`
    returns True while they load.
    """

    def __init__(self, healthy: Callable[[], bool], timeout: float | None = None) -> None:
        self.healthy = healthy
        # WatchdogSec in seconds; None (the default) reads it from the environment systemd set.
        self.timeout = timeout if timeout is not None else watchdog_seconds()
        self.pings = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.timeout is not None and self.timeout > 0

    def start(self) -> Watchdog:
        if not self.enabled or self._thread is not None:
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="systemd-watchdog", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Watchdog:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        assert self.timeout is not None
        period = self.timeout / 2
        was_healthy = True
        while True:
            try:
                ok = bool(self.healthy())
            except Exception:
                # A health check that crashes is as good as a wedged pipeline: let systemd restart us.
                log.exception("watchdog health check failed")
                ok = False
            if ok:
                if notify("WATCHDOG=1"):
                    self.pings += 1
                if not was_healthy:
                    log.warning("watchdog: healthy again, pings resumed")
            elif was_healthy:
                log.error(
                    "watchdog: unhealthy, pings withheld; systemd restarts the service after %.0f s", self.timeout
                )
            was_healthy = ok
            if self._stop.wait(period):
                return


# sd-daemon(3) priorities; logging has no NOTICE, and CRITICAL maps to crit.
_PRIORITIES = ((logging.CRITICAL, 2), (logging.ERROR, 3), (logging.WARNING, 4), (logging.INFO, 6))


def _priority(levelno: int) -> int:
    for threshold, prio in _PRIORITIES:
        if levelno >= threshold:
            return prio
    return 7


class JournalFormatter(logging.Formatter):
    """`<N>name: message` with the prefix on every line, so a traceback keeps the record's priority.

    journald splits a stream on newlines and reads the prefix per line (SyslogLevelPrefix=, on by
    default); it adds its own timestamp, so none is written here.
    """

    def __init__(self) -> None:
        super().__init__("%(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{_priority(record.levelno)}>"
        return "\n".join(prefix + line for line in super().format(record).splitlines() or [""])


def stderr_is_journal() -> bool:
    """True when fd 2 is the journal stream systemd set up (JOURNAL_STREAM is "device:inode" of it).

    Comparing with fstat keeps the prefixes out of a terminal or a pipe that a child inherited
    JOURNAL_STREAM into (systemd.exec(5) asks for exactly this check).
    """
    value = os.environ.get("JOURNAL_STREAM", "")
    try:
        dev, ino = (int(part) for part in value.split(":"))
        st = os.fstat(sys.stderr.fileno())
    except (ValueError, OSError, AttributeError):
        return False
    return (st.st_dev, st.st_ino) == (dev, ino)


def journal_logging(level: int) -> None:
    """Configure the root logger for the daemon: priority-prefixed lines under the journal, else a stderr format."""
    handler = logging.StreamHandler(sys.stderr)
    if stderr_is_journal():
        handler.setFormatter(JournalFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # force: `assistant` already called basicConfig before the daemon subcommand runs.
    logging.basicConfig(level=level, handlers=[handler], force=True)
