"""Config reload (SIGHUP): what a running daemon takes from a re-read config, and what waits for a restart."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Settings, load_settings
from ..errors import ConfigError
from . import systemd

if TYPE_CHECKING:
    from .daemon import Daemon

log = logging.getLogger(__name__)

# What a running daemon cannot swap: its models are loaded, its sockets bound and its audio
# pipeline built once, at start.
RESTART_ONLY: tuple[tuple[str, Callable[[Settings], object]], ...] = (
    ("models", lambda s: s.models),
    ("paths", lambda s: s.paths),
    ("llm", lambda s: s.llm),
    ("daemon.socket", lambda s: s.daemon.socket),
    ("daemon.tcp", lambda s: s.daemon.tcp),
    ("audio", lambda s: s.audio),
    ("vad", lambda s: s.vad),
)


def needs_restart(old: Settings, new: Settings) -> list[str]:
    """The changed settings (by their config key) that take effect only at the next start."""
    return [key for key, section in RESTART_ONLY if section(old) != section(new)]


class SettingsReload:
    """Hands a re-read configuration to the running daemon's parts."""

    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon

    def apply(self, settings: Settings) -> list[str]:
        """Apply `settings`; returns the changes that need a restart to take effect."""
        daemon = self._daemon
        old = daemon.settings
        pending = needs_restart(old, settings)

        def apply_to_memory() -> None:
            # On the writer: it is the only thread that touches the memory.
            daemon.memory.settings = settings
            daemon.memory.engine.options = settings.memory
            daemon.listener.transcriber.options = settings.stt
            daemon.listener.diarizer.options = settings.diarization

        daemon.writer.call(apply_to_memory)
        daemon.quiet_hours.set(settings.daemon.quiet_hours)
        # The sockets stay bound where they are, so the settings keep saying where that is.
        bound = replace(settings.daemon, socket=old.daemon.socket, tcp=old.daemon.tcp)
        daemon.settings = replace(settings, daemon=bound)
        return pending


def reload_config_file(daemon: Daemon, config_file: Path | None, overrides: dict[str, object] | None) -> None:
    """SIGHUP's work: read the config as at start and apply it; a bad file leaves the old settings in place."""
    systemd.reloading()
    try:
        fresh = load_settings(config_file, overrides=overrides)
        pending = daemon.reload(fresh)
    except ConfigError as exc:
        log.error("config not reloaded, the old one stays: %s", exc)
    else:
        log.info("config reloaded%s", f"; restart to apply {', '.join(pending)}" if pending else "")
    systemd.ready("listening")
