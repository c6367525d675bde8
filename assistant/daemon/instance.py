"""The one daemon of a data directory: its lock (the single writer) and where its API socket is.

Kept apart from the server so the CLI can ask "is a daemon running?" without importing it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .. import locations
from ..config import Settings
from ..errors import AssistantError


class DaemonError(AssistantError):
    """The daemon is missing, already running, or cannot take its socket."""

    exit_code = 6


def socket_path(settings: Settings) -> Path:
    return Path(settings.daemon.socket).expanduser() if settings.daemon.socket else locations.default_socket()


def lock_path(settings: Settings) -> Path:
    return settings.data_dir / "daemon.lock"


def running_pid(settings: Settings) -> int | None:
    """The pid of the daemon that holds this data directory, or None when none does."""
    path = lock_path(settings)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        text = path.read_text().strip()
        return int(text) if text.isdigit() else -1
    finally:
        os.close(fd)
    return None


def take_lock(settings: Settings) -> int:
    path = lock_path(settings)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        pid = running_pid(settings)
        raise DaemonError(f"a daemon (pid {pid}) already uses {settings.data_dir}") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd
