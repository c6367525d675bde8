"""Time zones: the one a setting names or the system's, utterance times shown in one, and the
times a user gives (`--since 2026-11-16`) read in one.

An utterance's `time` is a UTC instant; people read it in their own zone (`time_zone` in the
config, the system's when unset), with the zone named.
"""

from __future__ import annotations

import math
import os
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import ConfigError, InputError


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


# The years a datetime holds, a day in from either end so that showing a bound in any time zone
# stays inside them: a bound outside could be neither compared as a date nor shown.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC).timestamp()
LATEST = datetime(9999, 12, 30, tzinfo=UTC).timestamp()
TIME_FORMS = (
    "an ISO-8601 date (2026-11-16) or date and time (2026-11-16T09:00 or 2026-11-16 09:00, "
    "optionally with an offset such as Z or +01:00), or seconds since the epoch"
)


def parse_when(value: object, zone: tzinfo = UTC) -> float:
    """A time limiting what a question or search recalls, as seconds since the epoch.

    One rule for every client (the CLI's --since/--until, the TUI's filter row, the API's
    `since`/`until`): a number is seconds since the epoch; a string is that number written out,
    or an ISO-8601 date or date and time, read in `zone` unless it names its own offset. Recall
    passes the configured zone (`time_zone`), the one answers show times in, so "2026-11-16"
    is the user's own day. A ValueError says what was wrong; the caller says where.
    """
    shown = _shown(value)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{shown} is not a time; give {TIME_FORMS}")
    if isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                when = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"{shown} is not a time; give {TIME_FORMS}") from None
            seconds = (when if when.tzinfo is not None else when.replace(tzinfo=zone)).timestamp()
    else:
        try:
            seconds = float(value)
        except OverflowError:  # an integer with hundreds of digits
            seconds = math.inf
    if not EARLIEST <= seconds <= LATEST:  # NaN fails this too
        raise ValueError(f"{shown} is outside the years 1 to 9999")
    return seconds


def _shown(value: object) -> str:
    # An error echoes what it refused, but a pasted page (or a 400-digit number) only in part.
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_window(
    since: float | None,
    until: float | None,
    names: tuple[str, str] = ("since", "until"),
    zone: tzinfo | None = None,
) -> None:
    """Refuse an empty window before anything is sent or loaded, naming the bounds as the user gave them."""
    if since is not None and until is not None and since >= until:
        raise InputError(
            f"{names[0]} ({format_time(since, zone)}) must be before {names[1]} ({format_time(until, zone)})"
        )


def parse_day(value: str, zone: tzinfo, now: float) -> str:
    """A day as people name one (YYYY-MM-DD, "today" or "yesterday", in `zone` as of `now`) as
    YYYY-MM-DD; an InputError says what a day looks like."""
    text = value.strip().lower()
    today = datetime.fromtimestamp(now, zone).date()
    if text in ("today", "yesterday"):
        return (today - timedelta(days=1 if text == "yesterday" else 0)).isoformat()
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise InputError(f"{_shown(value)} is not a day: give YYYY-MM-DD (2026-11-16), today or yesterday") from None
