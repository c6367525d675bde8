"""Config reload (SIGHUP): what a running daemon takes from a re-read config, and what waits for a restart."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from ..config import Settings, load_settings
from ..errors import ConfigError
from . import systemd

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


def reload_config_file(
    apply: Callable[[Settings], list[str]], config_file: Path | None, overrides: dict[str, object] | None
) -> None:
    """SIGHUP's work: read the config as at start and `apply` it (the daemon's `reload`, which
    returns what waits for a restart); a bad file leaves the old settings in place."""
    systemd.reloading()
    try:
        fresh = load_settings(config_file, overrides=overrides)
        pending = apply(fresh)
    except ConfigError as exc:
        log.error("config not reloaded, the old one stays: %s", exc)
    else:
        log.info("config reloaded%s", f"; restart to apply {', '.join(pending)}" if pending else "")
    systemd.ready("listening")
