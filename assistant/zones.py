"""Time zones: the one a setting names or the system's, and utterance times shown in one.

An utterance's `time` is a UTC instant; people read it in their own zone (`time_zone` in the
config, the system's when unset), with the zone named.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import ConfigError


def local_zone(name: str | None) -> tzinfo:
    """The zone named by an IANA name ("Europe/Lisbon"); None = the system's local zone.

    A name that is not a zone raises ConfigError saying so.
    """
    if name is None:
        return _system_zone(os.environ.get("TZ"))
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ConfigError(
            f"unknown time zone {name!r}: give an IANA name such as Europe/Lisbon, America/New_York or UTC "
            "(null = the system's zone)"
        ) from None


@lru_cache(maxsize=8)
def _system_zone(tz_env: str | None) -> tzinfo:
    """The zone the C library uses: $TZ when set, else /etc/localtime, else UTC (as libc does).

    Cached per $TZ value: /etc/localtime changing under a running process is not followed.
    """
    if tz_env:
        spec = tz_env.removeprefix(":")
        try:
            if spec.startswith("/"):
                with open(spec, "rb") as f:
                    return ZoneInfo.from_file(f, key=spec)
            return ZoneInfo(spec)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            # A POSIX rule string ("CET-1CEST,M3.5.0,M10.5.0/3"): only libc reads it, so take
            # its current offset (right until its next DST change).
            return datetime.now().astimezone().tzinfo or UTC
    localtime = Path("/etc/localtime")
    try:
        parts = localtime.resolve(strict=True).parts
        if "zoneinfo" in parts:
            key = "/".join(parts[len(parts) - parts[::-1].index("zoneinfo") :])
            try:
                return ZoneInfo(key)
            except (ZoneInfoNotFoundError, ValueError, OSError):
                pass
        with localtime.open("rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    except (OSError, ValueError):
        return UTC


def format_time(t: float, zone: tzinfo | None = None) -> str:
    """An utterance time as people read it in citations, in `zone` (None = the system's) and
    naming it: "2023-08-14 10:00 WEST"."""
    return datetime.fromtimestamp(t, tz=zone or local_zone(None)).strftime("%Y-%m-%d %H:%M %Z")
