"""`QuietHours`: the daily spans (`daemon.quiet_hours`, local time) when the daemon never listens."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from ..config import parse_quiet_hours


class QuietHours:
    """Spans such as "22:00-07:00"; a span whose end comes before its start runs past midnight."""

    def __init__(self, spans: Iterable[str]) -> None:
        self._spans: tuple[tuple[int, int], ...] = ()
        self.set(spans)

    def set(self, spans: Iterable[str]) -> None:
        """Take a new schedule (a config reload)."""
        # Parsed here, once: `now` runs for every block of audio. The config loader has checked
        # every span, so none parses to None. One assignment, so the capture thread never sees a
        # half-built schedule.
        self._spans = tuple(span for text in spans if (span := parse_quiet_hours(text)) is not None)

    def now(self) -> bool:
        """Inside one of the spans at this moment."""
        if not self._spans:
            return False
        now = datetime.now()
        minute = now.hour * 60 + now.minute
        return any(
            (start <= minute < end) if start <= end else (minute >= start or minute < end) for start, end in self._spans
        )
