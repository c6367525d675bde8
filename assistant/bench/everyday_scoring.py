"""Scoring the everyday set: does a reply say what it must, avoid what it must not, decline when it should?

A question's `must` is a list of items, each a list of alternatives: every item needs one of its
alternatives in the reply. `must_not` lists what may not appear. An alternative is plain text,
matched as whole words regardless of case; a calendar day (`Day`), matched in any common
writing of that date; or a number (`Number`), matched with or without thousands separators.

The decline detector here is the scorer's own, kept apart from the memory's on purpose: a test
that borrowed the code under test to judge it could not catch that code's mistakes (a reply
stating that a cause "is unknown" is an answer, not a decline).
"""

from __future__ import annotations

import re
import unicodedata
from calendar import month_name
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

_MONTHS = tuple(month_name)[1:]  # "January" ... "December"


@dataclass(frozen=True)
class Day:
    """A calendar day the reply must (or must not) name, however it writes it."""

    day: date

    def __str__(self) -> str:
        return f"{self.day.day} {_MONTHS[self.day.month - 1]} {self.day.year}"


@dataclass(frozen=True)
class Number:
    """An amount the reply must (or must not) state: 2100 matches "2100", "2,100", "2 100", "€2,100"."""

    value: Decimal

    def __str__(self) -> str:
        return format(self.value, ",f")


Alternative = str | Day | Number


@dataclass(frozen=True)
class Verdict:
    right: bool
    # Why it is wrong, in words a reader of the table follows; empty when right.
    why: str
    declined: bool


def normalise(text: str) -> str:
    """NFC, case-folded, typographic apostrophes and dashes made plain, whitespace collapsed.

    Accents stay: "Siobhan" is not how Siobhán writes her name, and the set checks that names
    outside ASCII survive the memory.
    """
    text = unicodedata.normalize("NFC", text).casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u2013", "-").replace("\u2014", "-")
    return " ".join(text.split())


def _ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def day_writings(d: date) -> list[str]:
    """The ways a reply may write `d`: "16 October", "16th of Oct", "October 16th", "16/10/2025", "2025-10-16"."""
    month = _MONTHS[d.month - 1]
    names = (month, month[:3], month[:3] + ".")
    days = (str(d.day), _ordinal(d.day))
    out = [f"{n} {m}" for n in days for m in names]
    out += [f"{n} of {m}" for n in days for m in names]
    out += [f"{m} {n}" for n in days for m in names]
    out += [f"{m} the {_ordinal(d.day)}" for m in names]
    out += [d.isoformat(), f"{d.day}/{d.month}/{d.year}", f"{d.day:02d}/{d.month:02d}/{d.year}"]
    out += [f"{d.day}.{d.month}.{d.year}", f"{d.day:02d}.{d.month:02d}.{d.year}"]
    return out


def number_writings(value: Decimal) -> list[str]:
    """`value` as a reply may write it: bare digits, or with a comma or a space between thousands."""
    whole, _, fraction = format(value, "f").partition(".")
    tail = [f".{fraction}", f",{fraction}"] if fraction else [""]
    grouped = f"{int(whole):,}"
    heads = {whole, grouped, grouped.replace(",", " ")}
    return [h + t for h in sorted(heads) for t in tail]


def _pattern(alt: Alternative) -> re.Pattern[str]:
    if isinstance(alt, Day):
        writings = day_writings(alt.day)
    elif isinstance(alt, Number):
        # No digit may run on: 1,800 is not inside 21,800, nor 14 inside 2014 or 14.5.
        body = "|".join(re.escape(normalise(w)) for w in number_writings(alt.value))
        return re.compile(rf"(?<![\d.,])(?:{body})(?![.,]?\d)")
    else:
        writings = [alt]
    body = "|".join(re.escape(normalise(w)) for w in sorted(writings, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)")


def mentions(reply: str, alt: Alternative) -> bool:
    """Whether `reply` says `alt` (a phrase as whole words, a day in any writing, a number in any grouping)."""
    return _pattern(alt).search(normalise(reply)) is not None


# A reply that says the memory holds nothing on the question. First-person "don't know" only:
# "the plumber doesn't know what caused it" is an answer.
_DECLINES = re.compile(
    r"(?<!\w)(?:"
    r"not mentioned|(?:was|is|were|are)n't mentioned|(?:was|is|were|are) not mentioned|never mentioned|no mention"
    r"|(?:did|does|has|have)(?:n't| not) (?:mention|say|said|come up)|never (?:said|came up)"
    r"|i (?:don't|do not|can't|cannot|couldn't|could not) (?:know|tell|say|find|recall|remember)"
    r"|i'm not sure|i am not sure|i have no (?:information|record|idea)|i don't have"
    r"|no information|not in (?:my|the) (?:memory|notes|conversation)|nothing (?:about|on|was said)"
    r"|there is no (?:mention|record|information)|not (?:stated|specified|said)"
    r")(?!\w)"
)


def is_decline(reply: str) -> bool:
    """Whether `reply` declines: says the thing was not mentioned, or that it does not know."""
    return not reply.strip() or _DECLINES.search(normalise(reply)) is not None


def score(reply: str, must: list[list[Alternative]], must_not: list[Alternative], expect: str) -> Verdict:
    """Judge one reply. `expect` is "answer" (a decline is wrong) or "decline" (an answer is wrong)."""
    declined = is_decline(reply)
    problems: list[str] = []
    if expect == "decline" and not declined:
        problems.append("should have said it was not mentioned")
    if expect == "answer" and declined:
        problems.append("declined")
    for item in must:
        if not any(mentions(reply, alt) for alt in item):
            problems.append("lacks " + " / ".join(f'"{alt}"' for alt in item))
    for alt in must_not:
        if mentions(reply, alt):
            problems.append(f'says "{alt}"')
    return Verdict(not problems, "; ".join(problems), declined)


def parse_alternative(raw: object, where: str) -> Alternative:
    """One alternative from the questions file: a string, {date: YYYY-MM-DD} or {number: N}."""
    if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
        return str(raw)
    if isinstance(raw, dict) and len(raw) == 1:
        ((key, value),) = raw.items()
        if key == "date":
            try:
                return Day(value if isinstance(value, date) else date.fromisoformat(str(value)))
            except ValueError:
                raise ValueError(f"{where}: {value!r} is not a YYYY-MM-DD date") from None
        if key == "number":
            try:
                return Number(Decimal(str(value)))
            except InvalidOperation:
                raise ValueError(f"{where}: {value!r} is not a number") from None
    raise ValueError(f"{where}: {raw!r} is neither text, {{date: YYYY-MM-DD}} nor {{number: N}}")
