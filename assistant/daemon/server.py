"""`assistant daemon`: load the models, bind the API socket, serve until SIGTERM.

Only one daemon runs per data directory: it takes an exclusive lock on `daemon.lock` there
(the single writer), and the CLI checks that lock before it opens the database itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import stat
import threading
from collections.abc import Callable, Generator
from functools import partial
from pathlib import Path

import uvicorn

from ..config import load_settings
from . import systemd
from .api import create_app, wrap
from .daemon import Daemon
from .instance import DaemonError, socket_path, take_lock
from .reload import reload_config_file

log = logging.getLogger(__name__)

# Seconds open requests (a live transcript, an answer) get to finish once SIGTERM arrives.
GRACEFUL_SECONDS = 3


def bind_unix(path: Path) -> socket.socket:
    """Bind the API socket: directory 0700 and socket 0600, both owned by us, or refuse."""
    directory = path.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = directory.stat()
    if info.st_uid != os.getuid():
        raise DaemonError(f"{directory} belongs to another user; refusing to put the API socket there")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(directory, 0o700)
    if path.exists() or path.is_symlink():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # a stale socket from a daemon that died
        else:
            raise DaemonError(f"another daemon answers on {path}")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # no window where the socket exists with wider permissions
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def bind_tcp(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))  # loopback only, whatever the config says
    except OSError as exc:
        sock.close()
        raise DaemonError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


class _Server(uvicorn.Server):
    """uvicorn, with our signals: TERM/INT stop it, HUP reloads the config; nothing is re-raised."""

    def __init__(self, config: uvicorn.Config, daemon: Daemon, reload_config: Callable[[], None]) -> None:
        super().__init__(config)
        self.daemon = daemon
        self.reload_config = reload_config

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def stop(signum: int, frame: object) -> None:
            log.info("signal %s: stopping", signal.Signals(signum).name)
            self.daemon.closing = True
            self.should_exit = True

        def reload(signum: int, frame: object) -> None:
            # The reload waits for the writer; never do that inside a signal handler.
            threading.Thread(target=self.reload_config, name="reload", daemon=True).start()

        handlers = {sig: signal.signal(sig, fn) for sig, fn in ((signal.SIGTERM, stop), (signal.SIGINT, stop))}
        handlers[signal.SIGHUP] = signal.signal(signal.SIGHUP, reload)
        try:
            yield
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)


def serve(config_file: Path | None, *, source: str | None = None, overrides: dict[str, object] | None = None) -> None:
    settings = load_settings(config_file, overrides=overrides)
    lock = take_lock(settings)
    sockets: list[socket.socket] = []
    daemon = Daemon(settings, source=source)
    try:
        systemd.status("loading models")
        daemon.load()
        path = socket_path(settings)
        sockets.append(bind_unix(path))
        if settings.daemon.tcp.enabled:
            sockets.append(bind_tcp(settings.daemon.tcp.port))
        daemon.start()

        app = wrap(create_app(daemon), daemon)
        config = uvicorn.Config(
            app, log_config=None, access_log=False, timeout_graceful_shutdown=GRACEFUL_SECONDS, lifespan="off"
        )
        server = _Server(config, daemon, partial(reload_config_file, daemon.reload, config_file, overrides))
        log.info("API on %s%s", path, f" and 127.0.0.1:{settings.daemon.tcp.port}" if len(sockets) > 1 else "")
        systemd.ready(f"listening on {daemon.status().source}")
        with systemd.Watchdog(daemon.healthy):
            server.run(sockets=sockets)
        systemd.stopping("draining")
    finally:
        daemon.stop()
        for sock in sockets:
            sock.close()
        if sockets:
            socket_path(settings).unlink(missing_ok=True)
        os.close(lock)
        log.info("stopped")
