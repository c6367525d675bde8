"""Resolve relative time words against the moment, and the place, they were said.

"I went yesterday" said on 8 May 2023 means 7 May 2023, but a small LLM reading the context
rarely does that arithmetic. When a line goes into an answer's context, each relative
expression gets a phrase written beside it that the answerer can copy into its answer:
"yesterday (Sunday 7 May 2023)". The stored text is never changed; the day a line was said
is shown apart, above it (`day_heading`), so the time of saying and the time meant never mix.

Days are the speaker's days: an utterance's `time` is a UTC instant, and "yesterday" is the
local calendar day before the one it was said on, in the configured zone (`time_zone`; the
system's when unset). Every span is local midnight to local midnight, so a day across a DST
change lasts 23 or 25 hours.

Each expression is written as the calendar span it means, in plain words, whatever way it was
said; a reader (the answering model, or a person) never has to count days:

* A single day is its weekday and date: yesterday, tonight, last night, this morning, last
  Friday, next Tues, this Friday, the day before yesterday, three days ago -> "Monday 7 August
  2023". A night is dated by its evening: "last night" said at 00:30 on 14 August is
  "Sunday 13 August 2023".
* A week is named by its Monday and a weekend by its Saturday: last week, the week before,
  two weeks ago -> "the week of Monday 31 July 2023"; this weekend -> "the weekend of
  Saturday 19 August 2023".
* Months and years are named: last month -> "July 2023", last May -> "May 2023", last year ->
  "2022".
* Vague counts keep their vagueness, anchored to the day said: a few days ago -> "a few days
  before Monday 14 August 2023".
* A weekday alone in a sentence about the future is a plan, the first such day after the day
  said: "we will book a table for Friday" -> "Friday 18 August 2023" (`find_planned_days`).
* A day named by its date without a year is given its year: "the fourteenth of May" ->
  "Tuesday 14 May 2024" (`find_named_days`).

Weeks run Monday to Sunday; a weekend is Saturday 00:00 to Monday 00:00. "next Friday" and
"this Friday" mean the coming Friday (a week on when said on a Friday, for "next"); "next
weekend" is the first weekend that starts after the day it was said. Parts of a day: morning
00:00-12:00, afternoon 12:00-18:00, evening 18:00-24:00, night 18:00-06:00; "tonight" said
before 06:00 is the night already under way.

Not dates: "next to", "the last one", "this may be", "the last week of June" (a determiner
before last/next/this makes it a description, not a time relative to now), "the week before
the wedding" (relative to something else; a bare "the week before" counts only at the end
of a clause).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

from ..sentences import sentence_spans
from .words import words

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# Month names that are also everyday words ("this may be", "in march order", "an august
# body") count only when capitalised or followed by a year.
_HOMOGRAPHS = {"may", "march", "august"}
# Before last/next/this these make a description ("my last week at work", "the next day"),
# not a time relative to now. "her" and "that" are left out: far more often an object ("I saw
# her last week", "I did that last year").
_DETERMINERS = {"the", "a", "an", "my", "your", "his", "its", "our", "their", "every", "each", "whose"}
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
    "eleven": 11,
    "twelve": 12,
}
# Vague counts: the phrase they keep, and the (nearest, farthest) number of units they span.
_VAGUE = {
    "a couple of": ("a couple of", 1, 3),
    "a couple": ("a couple of", 1, 3),
    "a few": ("a few", 2, 6),
    "few": ("a few", 2, 6),
    "several": ("several", 3, 9),
}
# Parts of a day as (first hour, hours long).
_PARTS = {"morning": (0, 12), "afternoon": (12, 6), "evening": (18, 6), "night": (18, 12)}

_WD = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_WEEKDAY_NUMBER = {w.lower(): i for i, w in enumerate(_WEEKDAYS)}  # "friday" -> 4
# After last/next/this, a weekday may be written short ("last Fri", "next Tues"). Longer forms
# first, so that "Tues" is not read as "Tue" and a stray "s".
_WD_SHORT = "tues|tue|weds|wed|thurs|thur|thu|mon|fri|sat|sun"
# Short forms that are words of their own ("we sat", "the sun"): only with a capital.
_SHORT_HOMOGRAPHS = {"mon", "wed", "sat", "sun"}
# "This past weekend", "this past Friday": the last one.
_REL = r"last|next|this\s+past|this"
_MON = "january|february|march|april|may|june|july|august|september|october|november|december"
_PART = "morning|afternoon|evening|night"
_COUNT = (
    r"a\s+couple\s+of|a\s+couple|a\s+few|few|several|\d{1,3}"
    r"|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
)
_CLAUSE_END = r"(?=\s*(?:[.,;:!?)\"\u201d]|$)|\s+(?:and|but|so|then|when|or)\b)"

_EXPR = re.compile(
    r"\b(?:"
    r"(?P<dby>the\s+day\s+before\s+yesterday)"
    r"|(?P<dat>the\s+day\s+after\s+tomorrow)"
    r"|the\s+(?P<wbl>weekend|week)\s+before\s+last"
    r"|(?P<wb>the\s+week\s+before)" + _CLAUSE_END + r"|(?P<lastnight>last\s+night)"
    r"|(?P<tonight>tonight)"
    r"|(?P<day>yesterday|today|tomorrow)(?:\s+(?P<day_part>" + _PART + r"))?"
    r"|this\s+(?P<this_part>morning|afternoon|evening)"
    r"|(?P<wkday>" + _WD + r")\s+(?:of\s+)?(?P<wkrel>last|next|this)\s+week"
    r"|(?P<wrel>" + _REL + r")\s+(?P<wday>" + _WD + "|" + _WD_SHORT + r")(?:\s+(?P<wday_part>" + _PART + r"))?"
    r"|(?P<rel>" + _REL + r")\s+(?P<unit>weekend|week|month|year|" + _MON + r")"
    r"|(?P<count>" + _COUNT + r")\s+(?P<ago_unit>days?|weeks?|months?|years?)\s+ago"
    r")\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TimeExpression:
    """A relative time expression found in a text, and what it means where it was said."""

    start: int  # character offsets of `words` in the text
    end: int
    words: str  # as written: "last Friday"
    phrase: str  # what it means, as a calendar date: "Friday 11 August 2023"
    since: float  # the span it refers to, [since, until), in epoch seconds
    until: float


# --- calendar helpers ----------------------------------------------------------------------


def _fmt_day(d: date) -> str:
    return f"{_WEEKDAYS[d.weekday()]} {d.day} {_MONTHS[d.month - 1]} {d.year}"


def _fmt_week(monday: date) -> str:
    return f"the week of {_fmt_day(monday)}"


def _fmt_weekend(saturday: date) -> str:
    return f"the weekend of {_fmt_day(saturday)}"


def _fmt_month(d: date) -> str:
    return f"{_MONTHS[d.month - 1]} {d.year}"


def _at(d: date, zone: tzinfo) -> float:
    """The instant day `d` begins in `zone` (a skipped midnight maps to the moment clocks jump)."""
    return datetime(d.year, d.month, d.day, tzinfo=zone).timestamp()


def _hour(d: date, hour: int, zone: tzinfo) -> float:
    """The instant local `hour`:00 (24 and over run into the next days) begins on day `d`."""
    extra, hour = divmod(hour, 24)
    d = d + timedelta(days=extra)
    return datetime(d.year, d.month, d.day, hour, tzinfo=zone).timestamp()


def _days(first: date, count: int, zone: tzinfo) -> tuple[float, float]:
    return _at(first, zone), _at(first + timedelta(days=count), zone)


def _part(d: date, part: str | None, zone: tzinfo) -> tuple[float, float]:
    if part is None:
        return _days(d, 1, zone)
    first, hours = _PARTS[part.lower()]
    return _hour(d, first, zone), _hour(d, first + hours, zone)


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _month_start(d: date, delta: int = 0) -> date:
    index = d.year * 12 + d.month - 1 + delta
    return date(index // 12, index % 12 + 1, 1)


def _month_span(first: date, zone: tzinfo, months: int = 1) -> tuple[float, float]:
    return _at(first, zone), _at(_month_start(first, months), zone)


def _year_span(year: int, zone: tzinfo, years: int = 1) -> tuple[float, float]:
    return _at(date(year, 1, 1), zone), _at(date(year + years, 1, 1), zone)


def _count(word: str) -> tuple[str, int, int] | None:
    """A count as (phrase words, nearest, farthest); exact counts have nearest == farthest."""
    key = " ".join(word.lower().split())
    if key in _VAGUE:
        return _VAGUE[key]
    n = int(key) if key.isdigit() else _NUMBERS.get(key)
    return None if n is None or n < 1 else ("", n, n)


def _previous_word(text: str, start: int) -> str:
    match = re.search(r"(\w+)\s+$", text[max(0, start - 40) : start])
    return match.group(1).lower() if match else ""


# --- resolving -----------------------------------------------------------------------------

_Resolved = tuple[str, float, float]


def _resolve(m: re.Match[str], local: datetime, zone: tzinfo) -> _Resolved | None:
    """The phrase and span of one match; None when it is not a time after all."""
    said = local.date()
    g = m.group
    if g("dby") or g("dat"):
        d = said + timedelta(days=-2 if g("dby") else 2)
        return (_fmt_day(d), *_days(d, 1, zone))
    if g("wbl"):
        if g("wbl").lower() == "week":
            monday = _monday(said) - timedelta(weeks=2)
            return (_fmt_week(monday), *_days(monday, 7, zone))
        saturday = _monday(said) + timedelta(days=5 - 14)
        return (_fmt_weekend(saturday), *_days(saturday, 2, zone))
    if g("wb"):
        monday = _monday(said) - timedelta(weeks=1)
        return (_fmt_week(monday), *_days(monday, 7, zone))
    if g("lastnight"):
        d = said - timedelta(days=1)
        return (_fmt_day(d), *_part(d, "night", zone))
    if g("tonight"):
        # Said in the small hours, "tonight" is the night already under way.
        d = said - timedelta(days=1) if local.hour < 6 else said
        return (_fmt_day(d), *_part(d, "night", zone))
    if day := g("day"):
        d = said + timedelta(days={"yesterday": -1, "today": 0, "tomorrow": 1}[day.lower()])
        return (_fmt_day(d), *_part(d, g("day_part"), zone))
    if part := g("this_part"):
        return (_fmt_day(said), *_part(said, part, zone))
    if wkday := g("wkday"):
        # "Wednesday of next week": that weekday in the week named.
        monday = _monday(said) + timedelta(weeks={"last": -1, "this": 0, "next": 1}[g("wkrel").lower()])
        d = monday + timedelta(days=[w.lower() for w in _WEEKDAYS].index(wkday.lower()))
        return (_fmt_day(d), *_days(d, 1, zone))
    if wday := g("wday"):
        if wday.lower() in _SHORT_HOMOGRAPHS and wday[0].islower():
            return None
        name = next(w for w in _WEEKDAYS if w.lower().startswith(wday.lower()[:3]))
        return _weekday(_relation(g("wrel")), name, said, zone, g("wday_part"))
    if unit := g("unit"):
        return _relative_unit(_relation(g("rel")), unit, said, zone)
    counted = _count(g("count"))
    if counted is None:
        return None
    return _ago(counted, g("ago_unit").lower().rstrip("s"), said, zone)


def _relation(words: str) -> str:
    """The relation written before a weekday or a unit: last, next or this ("this past" is last)."""
    words = words.lower()
    return "last" if words.endswith("past") else words


def _weekday(rel: str, name: str, said: date, zone: tzinfo, part: str | None) -> _Resolved:
    target = _WEEKDAYS.index(name)
    if rel == "last":
        d = said - timedelta(days=(said.weekday() - target) % 7 or 7)
        return (_fmt_day(d), *_part(d, part, zone))
    ahead = (target - said.weekday()) % 7
    d = said + timedelta(days=ahead or 7) if rel == "next" else said + timedelta(days=ahead)
    return (_fmt_day(d), *_part(d, part, zone))


def _relative_unit(rel: str, unit: str, said: date, zone: tzinfo) -> _Resolved | None:
    key = unit.lower()
    if key == "week":
        monday = _monday(said) + timedelta(weeks={"last": -1, "this": 0, "next": 1}[rel])
        return (_fmt_week(monday), *_days(monday, 7, zone))
    if key == "weekend":
        saturday = _monday(said) + timedelta(days=5)
        if rel == "last":
            saturday -= timedelta(weeks=1)
        elif rel == "next" and said.weekday() >= 5:  # the first weekend that starts after the day said
            saturday += timedelta(weeks=1)
        return (_fmt_weekend(saturday), *_days(saturday, 2, zone))
    step = {"last": -1, "this": 0, "next": 1}[rel]
    if key == "month":
        first = _month_start(said, step)
        return (_fmt_month(first), *_month_span(first, zone))
    if key == "year":
        return (str(said.year + step), *_year_span(said.year + step, zone))
    if key in _HOMOGRAPHS and unit[0].islower():
        return None
    month = [m.lower() for m in _MONTHS].index(key) + 1
    year = said.year
    if rel == "last" and month >= said.month:
        year -= 1
    elif rel == "next" and month <= said.month:
        year += 1
    first = date(year, month, 1)
    return (_fmt_month(first), *_month_span(first, zone))


def _ago(counted: tuple[str, int, int], unit: str, said: date, zone: tzinfo) -> _Resolved:
    vague, near, far = counted
    anchor = _fmt_day(said)
    if unit == "day":
        if vague:
            first = said - timedelta(days=far)
            return (f"{vague} days before {anchor}", *_days(first, far - near + 1, zone))
        d = said - timedelta(days=near)
        return (_fmt_day(d), *_days(d, 1, zone))
    if unit == "week":
        first = _monday(said - timedelta(weeks=far))
        weeks = far - near + 1
        return (f"{vague} weeks before {anchor}" if vague else _fmt_week(first), *_days(first, 7 * weeks, zone))
    if unit == "month":
        first = _month_start(said, -far)
        span = _month_span(first, zone, far - near + 1)
        return (f"{vague} months before {anchor}" if vague else _fmt_month(first), *span)
    span = _year_span(said.year - far, zone, far - near + 1)
    return (f"{vague} years before {anchor}" if vague else str(said.year - far), *span)


def find_expressions(text: str, said_at: float, zone: tzinfo) -> list[TimeExpression]:
    """The relative time expressions in `text`, resolved as said at `said_at` in `zone`, in order."""
    local = datetime.fromtimestamp(said_at, zone)
    found = []
    for m in _EXPR.finditer(text):
        if (m.group("rel") or m.group("wrel") or m.group("lastnight")) and _previous_word(
            text, m.start()
        ) in _DETERMINERS:
            continue
        try:
            resolved = _resolve(m, local, zone)
        except (ValueError, OverflowError):  # a count that runs off the calendar ("999 years ago")
            continue
        if resolved is not None:
            found.append(TimeExpression(m.start(), m.end(), m.group(0), *resolved))
    return found


# A day named by its date: "14 May", "the 14th of May", "the fourteenth of May", "May 14th",
# "May fourteenth", with or without a year.
_ORDINAL_WORDS = {
    w: i + 1
    for i, w in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
        "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth twenty-first "
        "twenty-second twenty-third twenty-fourth twenty-fifth twenty-sixth twenty-seventh twenty-eighth "
        "twenty-ninth thirtieth thirty-first".split()
    )
}
_DAY_WORD = "|".join(sorted(_ORDINAL_WORDS, key=len, reverse=True))
_DAY_NUMBER = r"\d{1,2}(?:st|nd|rd|th)?|" + _DAY_WORD
# A word ordinal before a month counts only with "of" ("the first of May", not "my first May"). A
# weekday said with the date ("Tuesday 22 September", "Tuesday, the 22nd of September") is part of
# it: one day, noted once.
_NAMED_DAY = re.compile(
    r"\b(?:(?:" + _WD + r"),?\s+)?"
    r"(?:(?:the\s+)?(?:(?P<d1>\d{1,2}(?:st|nd|rd|th)?)\s+(?:of\s+)?|(?P<w1>" + _DAY_WORD + r")\s+of\s+)"
    r"(?P<m1>" + _MON + r")"
    r"|(?P<m2>" + _MON + r")\s+(?:the\s+)?(?P<d2>" + _DAY_NUMBER + r"))"
    r"(?:,?\s+(?P<year>(?:19|20)\d{2}))?\b",
    re.IGNORECASE,
)


def _day_number(word: str) -> int:
    word = word.lower()
    return _ORDINAL_WORDS[word] if word in _ORDINAL_WORDS else int(re.sub(r"\D", "", word))


# A bare day after one named with its month takes that month: "we fly out on the fourteenth of
# May and come back on the nineteenth". Only after a preposition and at the end of a clause, so
# "the second time" and "I was the first" stay what they are.
_BARE_DAY = re.compile(
    r"\b(?:on|by|until|till|to|from|before|after)\s+(?P<the>the)\s+(?P<d>\d{1,2}(?:st|nd|rd|th)|"
    + _DAY_WORD
    + r")"
    + _CLAUSE_END,
    re.IGNORECASE,
)


def _nearest(month: int, day: int, near: date) -> date:
    """The date `day` `month` nearest `near` (ValueError when no year near has it: 31 April)."""
    return min(
        (date(y, month, day) for y in (near.year - 1, near.year, near.year + 1) if _valid(y, month, day)),
        key=lambda c: abs((c - near).days),
    )


def find_named_days(text: str, said_at: float, zone: tzinfo) -> list[TimeExpression]:
    """The days `text` names by their date, in order. Without a year, a date is the occurrence
    nearest the day it was said: "the fourteenth of May" said in November is next May's, said in
    June this May's (the words alone do not say whether a plan or a memory is meant)."""
    said = datetime.fromtimestamp(said_at, zone).date()
    found: list[TimeExpression] = []
    for m in _NAMED_DAY.finditer(text):
        month_name = m.group("m1") or m.group("m2")
        # A birth date's year is not this year's or the next: without one, no day can be named.
        born = re.search(r"\bborn\s+(?:on\s+)?$", text[max(0, m.start() - 20) : m.start()], re.IGNORECASE)
        if born and not m.group("year"):
            continue
        # "you may 2x ..." is no date: a month that is also a word, before its day, is one only
        # when capitalised.
        if m.group("m2") and month_name.lower() in _HOMOGRAPHS and month_name[0].islower():
            continue
        month, day = _month_number(month_name), _day_number(m.group("d1") or m.group("w1") or m.group("d2"))
        try:
            d = date(int(m.group("year")), month, day) if m.group("year") else _nearest(month, day, said)
        except ValueError:  # 31 April, or 29 February in no year near
            continue
        found.append(TimeExpression(m.start(), m.end(), m.group(0), _fmt_day(d), *_days(d, 1, zone)))
    if not found:
        return found
    for m in _BARE_DAY.finditer(text):
        start, end = m.start("the"), m.end("d")
        named = [e for e in found if e.end <= start]
        if not named or any(e.start < end and start < e.end for e in found):
            continue
        # Nearest the day named before it, not the day said: "the fourteenth of May and the
        # nineteenth" said in November are both next May's, though this May is nearer.
        before = datetime.fromtimestamp(named[-1].since, zone).date()
        try:
            d = _nearest(before.month, _day_number(m.group("d")), before)
        except ValueError:
            continue
        found.append(TimeExpression(start, end, text[start:end], _fmt_day(d), *_days(d, 1, zone)))
    return sorted(found, key=lambda e: e.start)


# A weekday named alone ("for Friday", "by Thursday evening") in a sentence about the future
# is a plan: the first such day after the day it was said (a week on when said that weekday),
# as a deadline's day is read (`deadlines.due_date`). Without a future word the words do not
# say which Friday ("I saw her on Friday"), so the day is left as said; "every Friday" is a
# habit, "Fridays" several days, and "last/next/this Friday" are `find_expressions`'.
_LONE_WEEKDAY = re.compile(r"\b(?P<wd>" + _WD + r")(?:\s+(?P<part>" + _PART + r"))?\b(?!['\u2019]s)", re.IGNORECASE)
# What makes a sentence about the future: a future auxiliary, the present progressive used for an
# arrangement ("he's coming on Thursday", "we are meeting on Monday"), or a future time said in it
# ("I'm off from tomorrow and back in on Monday").
_FUTURE = re.compile(
    r"\b(?:will|shall|going\s+to|gonna|tomorrow|next\s+week)\b|\w['\u2019]ll\b"
    r"|\b(?:am|is|are)\s+\w+ing\b|\w['\u2019](?:m|s|re)\s+\w+ing\b",
    re.IGNORECASE,
)
_LONE_ORDINAL = re.compile(
    r"\b(?:on|by|until|till|from|for)\s+(?P<the>the)\s+(?P<d>\d{1,2}(?:st|nd|rd|th))\b(?!\s+(?:of\s+)?(?:"
    + _MON
    + r"))",
    re.IGNORECASE,
)
_NOT_ONE_DAY = {"the", "a", "last", "next", "this", "every", "each", "most", "some", "any", "other", "those", "these"}


def first_weekday_after(said: date, weekday: int) -> date:
    """The first day after `said` that is `weekday` (Monday 0): a week on when `said` is one."""
    return said + timedelta(days=(weekday - said.weekday() - 1) % 7 + 1)


def find_planned_days(text: str, said_at: float, zone: tzinfo) -> list[TimeExpression]:
    """The weekdays, and days of the month, `text` names alone in sentences about the future, each
    as the date it means: "we will book a table for Friday evening" said on Thursday 26 November
    2026 -> "Friday 27 November 2026" (its evening the span); "she's coming on the 25th" -> the
    next 25th."""
    said = datetime.fromtimestamp(said_at, zone).date()
    found: list[TimeExpression] = []
    for start, end in sentence_spans(text):
        if not _FUTURE.search(text, start, end):
            continue
        for m in _LONE_WEEKDAY.finditer(text, start, end):
            before = words(text[start : m.start()])
            if before and before[-1] in _NOT_ONE_DAY:  # "every Friday", "every other Friday"
                continue
            d = first_weekday_after(said, _WEEKDAY_NUMBER[m.group("wd").lower()])
            found.append(TimeExpression(m.start(), m.end(), m.group(0), _fmt_day(d), *_part(d, m.group("part"), zone)))
        # "on the 25th" with no month: the next day of that number.
        for m in _LONE_ORDINAL.finditer(text, start, end):
            number = int(re.sub(r"\D", "", m.group("d")))
            ahead = [_month_start(said, k) for k in range(3)]
            days = [date(f.year, f.month, number) for f in ahead if _valid(f.year, f.month, number)]
            if d := next((d for d in days if d > said), None):
                start, end = m.start("the"), m.end("d")
                found.append(TimeExpression(start, end, text[start:end], _fmt_day(d), *_days(d, 1, zone)))
    return found


def _valid(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def annotate(text: str, said_at: float, zone: tzinfo | None = None) -> str:
    """`text` with each time it refers to followed by that time as a calendar date, in parentheses:
    "last Friday (Friday 11 August 2023)", "the fourteenth of May (Tuesday 14 May 2024)". A day
    written with its year is a calendar date already and is left as it is. `zone` None = UTC."""
    zone = zone or UTC
    found = find_expressions(text, said_at, zone)
    found += find_planned_days(text, said_at, zone)
    found += [e for e in find_named_days(text, said_at, zone) if not re.search(r"\d{4}", e.words)]
    # A date already in parentheses is a note, written here or by the speaker: not annotated again.
    noted = [(m.start(), m.end()) for m in re.finditer(r"\([^()]*\)", text)]
    # Of two that begin together, the longer ("Wednesday of next week", not "Wednesday").
    expressions = sorted(found, key=lambda e: (e.start, -e.end))
    out, pos = [], 0
    for e in expressions:
        if e.start < pos or any(a < e.start < b for a, b in noted):  # overlaps one already annotated
            continue
        if e.words.lower() == e.phrase.lower():
            continue
        note = f" ({e.phrase})"
        out.append(text[pos : e.end])
        if not text.startswith(note, e.end):  # already annotated
            out.append(note)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def day_heading(t: float, zone: tzinfo) -> str:
    """The local date of `t`: "Monday 14 August 2023"."""
    return _fmt_day(datetime.fromtimestamp(t, zone).date())


# --- questions -----------------------------------------------------------------------------

# A question that asks for a time ("When did ...?", "How long ago ...?") names times only to
# describe the event it asks about, never to bound when its answer was said.
_ASKS_WHEN = re.compile(
    r"^\W*(?:when\b|since\s+when\b|until\s+when\b|how\s+long\b|how\s+many\s+(?:hours|days|weeks|months|years)\b"
    r"|(?:what|which)\s+(?:time|date|day|week|weekend|month|year|season)s?\b)",
    re.IGNORECASE,
)
_SINCE = re.compile(r"\bsince\s+", re.IGNORECASE)
_WEEKDAY_AT = re.compile(r"(?P<wd>" + _WD + r")\b", re.IGNORECASE)
_ON_WEEKDAY = re.compile(r"\bon\s+(?P<wd>" + _WD + r")\b", re.IGNORECASE)
_RECENT = re.compile(
    r"\b(?:in|over|during|within)\s+the\s+(?:last|past)\s+(?:(?P<count>" + _COUNT + r")\s+)?"
    r"(?P<unit>hours?|days?|weeks?|months?|years?)\b",
    re.IGNORECASE,
)
_ORDINAL = r"(?:st|nd|rd|th)?"
_ABSOLUTE = re.compile(
    r"\b(?:(?P<prep>in|during|throughout|of|on)\s+)?(?:"
    r"(?P<iso_y>\d{4})-(?P<iso_m>\d{1,2})-(?P<iso_d>\d{1,2})"
    r"|(?P<d1>\d{1,2})" + _ORDINAL + r"\s+(?:of\s+)?(?P<m1>" + _MON + r")(?:,?\s+(?P<y1>\d{4}))?"
    r"|(?P<m2>" + _MON + r")\s+(?P<d2>\d{1,2})" + _ORDINAL + r"(?:,?\s+(?P<y2>\d{4}))?"
    r"|(?P<m3>" + _MON + r")(?:,?\s+(?P<y3>\d{4}))?"
    r"|(?P<y4>(?:19|20)\d{2})"
    r")\b",
    re.IGNORECASE,
)
_Span = tuple[float, float]


def _month_number(name: str) -> int:
    return [m.lower() for m in _MONTHS].index(name.lower()) + 1


def _absolute(m: re.Match[str], today: date, zone: tzinfo, *, since: bool = False) -> _Span | None:
    """The span of an absolute date in a question; a date without its year is its latest
    occurrence up to today. None when it is no date ("you may", a bare number)."""
    g = m.group
    month_name = g("m1") or g("m2") or g("m3")
    year = g("y1") or g("y2") or g("y3") or g("iso_y")
    prep = (g("prep") or "").lower()
    # Questions are often typed in lower case: "in may" is the month, a bare "may" the verb.
    dated = year or g("d1") or g("d2") or since or prep in ("in", "during", "throughout")
    if month_name and month_name.lower() in _HOMOGRAPHS and month_name[0].islower() and not dated:
        return None
    if g("iso_y"):
        d = date(int(g("iso_y")), int(g("iso_m")), int(g("iso_d")))
        return _days(d, 1, zone)
    if g("d1") or g("d2"):
        month, day = _month_number(month_name), int(g("d1") or g("d2"))
        d = date(int(year) if year else today.year, month, day)
        if not year and d > today:
            d = date(today.year - 1, month, day)
        return _days(d, 1, zone)
    # A bare month may be a word and a bare year any number: only a preposition ("in May",
    # "during 2022"), "since", or a year ("May 2023") makes them a time.
    if not (prep or since or year):
        return None
    if g("m3"):
        month = _month_number(month_name)
        y = int(year) if year else (today.year if month <= today.month else today.year - 1)
        return _month_span(date(y, month, 1), zone)
    if prep == "on":
        return None
    return _year_span(int(g("y4")), zone)


def _recent(m: re.Match[str], now: float, zone: tzinfo) -> _Span | None:
    counted = _count(m.group("count")) if m.group("count") else ("", 1, 1)
    if counted is None:
        return None
    n = counted[2]
    unit = m.group("unit").lower().rstrip("s")
    local = datetime.fromtimestamp(now, zone)
    if unit in ("hour", "day", "week"):
        hours = {"hour": 1, "day": 24, "week": 24 * 7}[unit] * n
        return now - hours * 3600, now
    months = n * (12 if unit == "year" else 1)
    first = _month_start(local.date(), -months)
    # The same day and time of month `months` back (clamped to that month's length).
    day = min(local.day, (_month_start(first, 1) - timedelta(days=1)).day)
    return local.replace(year=first.year, month=first.month, day=day).timestamp(), now


def _since(text: str, pos: int, now: float, zone: tzinfo) -> tuple[int, float] | None:
    """What follows "since" at `pos`: (where it ends, when it began)."""
    today = datetime.fromtimestamp(now, zone).date()
    if m := _EXPR.match(text, pos):
        found = find_expressions(m.group(0), now, zone)
        return (pos + found[0].end, found[0].since) if found else None
    if m := _WEEKDAY_AT.match(text, pos):
        back = (today.weekday() - _WEEKDAY_NUMBER[m.group("wd").lower()]) % 7
        return m.end(), _at(today - timedelta(days=back), zone)
    if (m := _ABSOLUTE.match(text, pos)) and not m.group("prep"):
        try:
            span = _absolute(m, today, zone, since=True)
        except ValueError:  # 31 February
            return None
        return (m.end(), span[0]) if span else None
    return None


def question_window(question: str, now: float, zone: tzinfo) -> tuple[float, float] | None:
    """The window [since, until) of when the things a question asks about were said, from its
    own words, relative to `now` (when it is asked); None when it names no such time.

    "what did Sam say last week?" -> last week; "since Monday" -> Monday 00:00 to now; "in May"
    -> the latest May up to now. Several times give the smallest window holding them all.
    Ignored: questions that ask for a time ("When did Caroline go ...?"), times that only
    describe something ("last week's episode"), and times still to come (nothing has been said
    then yet).
    """
    if _ASKS_WHEN.match(question):
        return None
    today = datetime.fromtimestamp(now, zone).date()
    spans: list[_Span] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    def add(start: int, end: int, span: _Span | None) -> None:
        if span is not None and free(start, end) and span[0] < now:
            spans.append(span)
            taken.append((start, end))

    for m in _SINCE.finditer(question):
        if (found := _since(question, m.end(), now, zone)) is not None:
            add(m.start(), found[0], (found[1], now))
    for m in _RECENT.finditer(question):
        add(m.start(), m.end(), _recent(m, now, zone))
    for e in find_expressions(question, now, zone):
        if not re.match(r"['\u2019]s\b", question[e.end :]):
            add(e.start, e.end, (e.since, e.until))
    for m in _ON_WEEKDAY.finditer(question):
        back = (today.weekday() - _WEEKDAY_NUMBER[m.group("wd").lower()]) % 7 or 7
        add(m.start(), m.end(), _days(today - timedelta(days=back), 1, zone))
    for m in _ABSOLUTE.finditer(question):
        try:
            add(m.start(), m.end(), _absolute(m, today, zone))
        except ValueError:  # 31 February
            continue
    if not spans:
        return None
    return min(s for s, _ in spans), max(u for _, u in spans)
