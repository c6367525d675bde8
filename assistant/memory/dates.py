"""Resolve relative time words against the moment they were said.

"I went yesterday" said on 8 May 2023 means 7 May 2023, but a small LLM reading the context
rarely does that arithmetic. When a line goes into an answer's context, each relative
expression gets its date written beside it: "yesterday (7 May 2023)". The stored text is
never changed.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
}

_PATTERN = re.compile(
    r"\b(?:(?P<simple>yesterday|today|tonight|tomorrow)"
    r"|(?P<rel>last|next|this)\s+(?P<unit>week|weekend|month|year|" + "|".join(_WEEKDAYS) + r")"
    r"|(?P<n>\d+|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(?P<ago_unit>days?|weeks?|months?|years?)\s+ago)\b",
    re.IGNORECASE,
)


def _fmt(d: date) -> str:
    return f"{d.day} {d.strftime('%B %Y')}"


def _month(d: date, delta: int) -> str:
    index = d.year * 12 + d.month - 1 + delta
    return date(index // 12, index % 12 + 1, 1).strftime("%B %Y")


def _week_of(d: date) -> str:
    monday = d - timedelta(days=d.weekday())
    return f"week of {_fmt(monday)}"


def resolve(match: re.Match[str], said: date) -> str | None:
    """The date (or span) an expression refers to, as text; None when it cannot be pinned down."""
    if simple := match.group("simple"):
        offset = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}[simple.lower()]
        return _fmt(said + timedelta(days=offset))
    if rel := match.group("rel"):
        rel, unit = rel.lower(), match.group("unit").lower()
        step = {"last": -1, "next": 1, "this": 0}[rel]
        if unit in _WEEKDAYS:
            target = _WEEKDAYS.index(unit)
            if rel == "last":
                back = (said.weekday() - target) % 7 or 7
                return _fmt(said - timedelta(days=back))
            ahead = (target - said.weekday()) % 7
            ahead = ahead or 7 if rel == "next" else ahead
            return _fmt(said + timedelta(days=ahead))
        if unit in ("week", "weekend"):
            return _week_of(said + timedelta(weeks=step))
        if unit == "month":
            return _month(said, step)
        return str(said.year + step)
    n = _NUMBERS.get(match.group("n").lower()) if not match.group("n").isdigit() else int(match.group("n"))
    unit = match.group("ago_unit").lower().rstrip("s")
    if n is None:
        return None
    if unit == "day":
        return _fmt(said - timedelta(days=n))
    if unit == "week":
        return _week_of(said - timedelta(weeks=n))
    if unit == "month":
        return _month(said, -n)
    return str(said.year - n)


def annotate(text: str, said_at: float) -> str:
    """`text` with each relative time expression followed by the date it means, in parentheses."""
    said = datetime.fromtimestamp(said_at, tz=UTC).date()

    def replace(match: re.Match[str]) -> str:
        resolved = resolve(match, said)
        return f"{match.group(0)} ({resolved})" if resolved else match.group(0)

    return _PATTERN.sub(replace, text)
