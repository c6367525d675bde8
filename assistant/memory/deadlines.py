"""Deadlines in what was said: the words ("by Thursday", "before five", "tomorrow morning") and
the day they name, read where and when they were said.

The words are kept as said; the day is worked out only where they name one day: "by Thursday"
said on a Monday is that week's Thursday, "in two days" two days on, "before five" the same day.
A span ("next week", "this weekend") names no single day and gets none.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from .dates import find_expressions, first_weekday_after


def _any(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTH = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_PART_OF_DAY = r"(?:\s+(?:morning|afternoon|evening|night))?"
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)"
_HOUR = _any(r"\d{1,2}(?::\d{2})?\s*(?:am|pm|o'clock)", r"\d{1,2}:\d{2}", r"one|two|three|four|five|six|seven")
_HOUR = _any(_HOUR, r"eight|nine|ten|eleven|twelve|noon|midday|lunch(?:time)?")
# What follows "by", "before" or "until" in a deadline.
_WHEN = _any(
    r"(?:the\s+)?end\s+of\s+(?:the\s+)?(?:day|week|month|year)",
    r"(?:next|this)\s+" + _any(_WEEKDAY, "week", "weekend", "month"),
    _WEEKDAY + _PART_OF_DAY,
    r"tomorrow" + _PART_OF_DAY,
    r"tonight|today",
    r"(?:the\s+)?" + _ORDINAL + r"(?:\s+of\s+" + _MONTH + r")?",
    _MONTH + r"\s+\d{1,2}(?:st|nd|rd|th)?",
    r"\d{1,2}(?:st|nd|rd|th)?\s+" + _MONTH,
    _HOUR,
)
_COUNT = r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+couple\s+of|a\s+few)"
# A deadline as it was said: "by Thursday", "before five", "tomorrow morning", "in two days".
SAID_DEADLINE = re.compile(
    r"\b"
    + _any(
        r"(?:by|before|until|till|no\s+later\s+than)\s+" + _WHEN,
        r"(?:on\s+)?(?:next|this)\s+" + _any(_WEEKDAY, "week", "weekend", "month"),
        r"on\s+" + _WEEKDAY,
        r"tomorrow" + _PART_OF_DAY,
        r"tonight|later\s+today|this\s+(?:morning|afternoon|evening)",
        r"first\s+thing\s+(?:tomorrow|in\s+the\s+morning)",
        r"(?:in|within)\s+" + _COUNT + r"\s+(?:minutes?|hours?|days?|weeks?)",
        r"after\s+(?:lunch|work|school|the\s+meeting)",
    )
    + r"\b",
    re.IGNORECASE,
)

# The longest a day lasts (across a DST change): a span no longer names one day.
_DAY = 25 * 3600
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Deadlines that fall on the day they were said: a time of day, "tonight", "after lunch".
_SAME_DAY = re.compile(
    r"\b(?:today|tonight|noon|midday|lunch(?:time)?|work|school|meeting|morning|afternoon|evening"
    r"|end\s+of\s+(?:the\s+)?day|\d{1,2}(?::\d{2})?\s*(?:am|pm|o'clock)|\d{1,2}:\d{2}"
    r"|(?:by|before|until|till)\s+(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d{1,2})"
    r"|(?:minutes?|hours?))\b",
    re.IGNORECASE,
)
_IN_DAYS = re.compile(
    r"\bin\s+(?P<n>\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?P<unit>days?|weeks?)\b",
    re.IGNORECASE,
)
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_COUNTS |= {"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def due_date(due: str | None, said_at: float, zone: tzinfo) -> str | None:
    """The day a deadline said at `said_at` names (YYYY-MM-DD in `zone`), when it names one day:
    "tomorrow", "by Thursday" (the next Thursday after the day it was said), "in two days",
    "before five" (the same day). None for a span ("next week") or what it cannot read."""
    if not due:
        return None
    said = datetime.fromtimestamp(said_at, zone).date()
    for e in find_expressions(due, said_at, zone):
        # A day, or part of one ("tonight" runs past midnight); not a week or a weekend.
        return datetime.fromtimestamp(e.since, zone).date().isoformat() if e.until - e.since <= _DAY else None
    words = due.lower().split()
    for n, name in enumerate(_WEEKDAYS):
        if name in words:
            return first_weekday_after(said, n).isoformat()
    counted = _IN_DAYS.search(due)
    if counted is not None:
        n = int(counted["n"]) if counted["n"].isdigit() else _COUNTS[counted["n"].lower()]
        return (said + timedelta(days=n * (7 if counted["unit"].lower().startswith("week") else 1))).isoformat()
    if _SAME_DAY.search(due):
        return said.isoformat()
    return None
