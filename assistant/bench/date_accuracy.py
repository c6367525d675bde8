"""Date accuracy: whether a temporal answer names the time its gold answer names, however it is worded.

Token F1 rewards copying the gold answer's words: "21 May 2023" scores 0.5 against "the Sunday
before 25 May 2023" although it is that Sunday. This scorer resolves the gold answer and the
reply to calendar spans and compares those, so no answer needs the gold's wording.

Resolving a text (`find_times`), relative to the anchor, the moment the question's evidence was
said (LoCoMo session stamps are read as UTC, so its day is the session's date):

* Absolute dates in the common writings: "7 May 2023", "7th of May, 2023", "May 7, 2023",
  "Sunday 7 May 2023", "2023-05-07", "May 2023", "May, 2023", "2022". Without a year, a day or
  a month is its occurrence nearest the anchor; a month alone needs its capital ("in may" is
  the verb as often as the month).
* Times relative to a date the text names: "the Sunday before 25 May 2023", "the day after X",
  "the week before / after / of X", "the weekend before / of X", "two weekends before X",
  "three days / two weeks / a month / a year before X", "a few days before X".
* Times relative to the anchor ("yesterday", "last Friday", "two weeks ago", "last year", "a
  few days ago"): the product's resolver (`memory.dates.find_expressions`); only the spans it
  returns are used, never its wording.

Each time is a span of days with a unit, the unit its length says: a day, a weekend, a week, a
month, a year, or a window (a vague count, "a few days before X", or any other length). "The
week before X" is read both ways people mean it: the calendar week before X's week or the seven
days before X; the span runs from that calendar week's Monday to the day before X. "n weeks
before X" likewise ends n-1 weeks before X.

Scoring (`score_date`):

* The gold answer is date-scorable when it names exactly one span (the same span named twice is
  one), no longer than a year, and, if a window, no longer than `MAX_WINDOW_DAYS`: "a few days
  before X" is scorable; "a few years ago" and a length such as "4 years" (no date) are not.
* The reply's first time in reading order is its answer (stricter than any time it names: a
  reply listing several dates does not get to pick). A reply that names no time, or one whose
  first time cannot be pinned down ("two weeks before May 2023"), misses.
* It matches when its span lies within the gold's: a gold day needs that day; a gold week a day
  of it or the week; a gold month a day, week or the month; a gold year anything in that year.
  A coarser reply (the month for a gold day) misses.
"""

from __future__ import annotations

import re
from calendar import month_name
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from ..memory.dates import find_expressions

# A vague window longer than this ("several weeks before X", "a few years ago") cannot tell a
# right reply from a wrong one; a month still can ("a couple of weeks before X" is 22 days).
MAX_WINDOW_DAYS = 31

_MONTHS = tuple(m.lower() for m in month_name)[1:]  # "january" ... "december"
_ABBREVIATIONS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9}
_ABBREVIATIONS |= {"oct": 10, "nov": 11, "dec": 12}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Longer names first, so that "Sept" is not read as "Sep" and a stray "t".
_MON = "|".join(sorted([*_MONTHS, *_ABBREVIATIONS], key=len, reverse=True))
_FULL_MON = "|".join(_MONTHS)
_WD = "|".join(_WEEKDAYS)
_TH = r"(?:st|nd|rd|th)?"

_ABSOLUTE = re.compile(
    r"\b(?:"
    r"(?:(?:" + _WD + r"),?\s+)?(?:the\s+)?(?:"
    r"(?P<iy>\d{4})-(?P<im>\d{1,2})-(?P<id>\d{1,2})"
    r"|(?P<d1>\d{1,2})" + _TH + r"\s+(?:of\s+)?(?P<m1>" + _MON + r")\.?(?:,?\s+(?P<y1>\d{4}))?"
    r"|(?P<m2>" + _MON + r")\.?\s+(?:the\s+)?(?P<d2>\d{1,2})" + _TH + r"(?!\d)(?:,?\s+(?P<y2>\d{4}))?"
    r")"
    r"|(?P<m3>" + _MON + r")\.?,?\s+(?P<y3>\d{4})"
    r"|(?P<m4>" + _FULL_MON + r")"
    r"|(?P<y4>(?:19|20)\d{2})"
    r")\b",
    re.IGNORECASE,
)

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_NUMBERS |= {"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
# Vague counts as the (nearest, farthest) number of units they may mean.
_VAGUE = {"a couple of": (1, 3), "a couple": (1, 3), "a few": (2, 6), "few": (2, 6), "several": (3, 9)}
_COUNT = r"a\s+couple\s+of|a\s+couple|a\s+few|few|several|\d{1,3}|" + "|".join(_NUMBERS)
# What comes before an absolute date to make a time relative to it: "the Sunday before ",
# "two weeks after ", "the week of ".
_RELATIVE_HEAD = re.compile(
    r"\b(?:the\s+)?(?:"
    r"(?P<wd>" + _WD + r")"
    r"|(?P<unit>weekend|week|month|year|day)"
    r"|(?P<count>" + _COUNT + r")\s+(?P<units>weekends?|weeks?|months?|years?|days?)"
    r")\s+(?P<rel>before|after|prior\s+to|of)\s+",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Span:
    """A time a text names: the days first..last (both included) and what kind of time it is."""

    first: date
    last: date
    unit: str  # day, weekend, week, month, year or window

    def within(self, other: Span) -> bool:
        return other.first <= self.first and self.last <= other.last

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1


@dataclass(frozen=True)
class Found:
    start: int
    end: int
    words: str
    span: Span | None  # None: a time that cannot be pinned down ("two weeks before May 2023")


@dataclass(frozen=True)
class DateScore:
    unit: str | None  # the gold's unit; None when the gold is not date-scorable
    match: bool | None  # None when not scorable or there is no reply


# --- calendar helpers ----------------------------------------------------------------------


def _month(year: int, month: int, shift: int = 0) -> Span:
    index = year * 12 + month - 1 + shift
    first = date(index // 12, index % 12 + 1, 1)
    after = date((index + 1) // 12, (index + 1) % 12 + 1, 1)
    return Span(first, after - timedelta(days=1), "month")


def _year(year: int) -> Span:
    return Span(date(year, 1, 1), date(year, 12, 31), "year")


def _day(d: date) -> Span:
    return Span(d, d, "day")


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _weekend(saturday: date) -> Span:
    return Span(saturday, saturday + timedelta(days=1), "weekend")


def _month_number(name: str) -> int:
    key = name.lower()
    return _MONTHS.index(key) + 1 if key in _MONTHS else _ABBREVIATIONS[key]


def _nearest_day(month: int, day: int, anchor: date) -> date | None:
    candidates = []
    for year in (anchor.year - 1, anchor.year, anchor.year + 1):
        try:
            candidates.append(date(year, month, day))
        except ValueError:  # 29 February in a common year
            continue
    return min(candidates, key=lambda c: abs((c - anchor).days)) if candidates else None


# --- absolute dates ------------------------------------------------------------------------


def _absolute(m: re.Match[str], anchor: date) -> Span | None:
    """The span of an absolute date; None when the words are no date after all."""
    g = m.group
    try:
        if g("iy"):
            return _day(date(int(g("iy")), int(g("im")), int(g("id"))))
        if g("d1") or g("d2"):
            month, day = _month_number(g("m1") or g("m2")), int(g("d1") or g("d2"))
            year = g("y1") or g("y2")
            d = date(int(year), month, day) if year else _nearest_day(month, day, anchor)
            return _day(d) if d else None
    except ValueError:  # 31 April
        return None
    if g("m3"):
        return _month(int(g("y3")), _month_number(g("m3")))
    if g("m4"):
        if not g("m4")[0].isupper():
            return None
        month = _month_number(g("m4"))
        here = anchor.year * 12 + anchor.month - 1
        year = min((anchor.year + k for k in (-1, 0, 1)), key=lambda y: abs(y * 12 + month - 1 - here))
        return _month(year, month)
    return _year(int(g("y4")))


# --- relative to a named date ----------------------------------------------------------------


def _count(words: str) -> tuple[int, int] | None:
    key = " ".join(words.lower().split())
    if key in _VAGUE:
        return _VAGUE[key]
    n = int(key) if key.isdigit() else _NUMBERS.get(key)
    return (n, n) if n else None


def _weeks_before(base: date, near: int, far: int) -> Span:
    """From the Monday of the week `far` weeks before `base` to the day `near` - 1 weeks before it."""
    unit = "week" if near == far else "window"
    return Span(_monday(base - timedelta(weeks=far)), base - timedelta(weeks=near - 1, days=1), unit)


def _weeks_after(base: date, near: int, far: int) -> Span:
    unit = "week" if near == far else "window"
    last = _monday(base + timedelta(weeks=far)) + timedelta(days=6)
    return Span(base + timedelta(weeks=near - 1, days=1), last, unit)


def _shifted(unit: str, near: int, far: int, sign: int, base: Span) -> Span | None:
    """`near`..`far` `unit`s before (sign -1) or after (+1) `base`; None when it cannot be pinned."""
    day = base.first if sign < 0 else base.last
    if unit == "month":
        a, b = _month(day.year, day.month, sign * near), _month(day.year, day.month, sign * far)
        return Span(min(a.first, b.first), max(a.last, b.last), "month" if near == far else "window")
    if unit == "year":
        a, b = _year(day.year + sign * near), _year(day.year + sign * far)
        return Span(min(a.first, b.first), max(a.last, b.last), "year" if near == far else "window")
    if base.unit != "day":  # "two weeks before May 2023": no day to count from
        return None
    if unit == "day":
        a, b = day + timedelta(days=sign * near), day + timedelta(days=sign * far)
        return Span(min(a, b), max(a, b), "day" if near == far else "window")
    if unit == "week":
        return _weeks_before(day, near, far) if sign < 0 else _weeks_after(day, near, far)
    # Weekends: the nearest one wholly before (after) the day, then a week on for each more.
    if sign < 0:
        nearest = day - timedelta(days=2)
        nearest -= timedelta(days=(nearest.weekday() - 5) % 7)
    else:
        nearest = day + timedelta(days=1)
        nearest += timedelta(days=(5 - nearest.weekday()) % 7)
    a, b = nearest + timedelta(weeks=sign * (near - 1)), nearest + timedelta(weeks=sign * (far - 1))
    if near == far:
        return _weekend(a)
    return Span(min(a, b), max(a, b) + timedelta(days=1), "window")


def _relative(head: re.Match[str], base: Span) -> Span | None:
    rel = head.group("rel").lower().split()[0]
    if wd := head.group("wd"):
        if rel == "of" or base.unit != "day":
            return None
        target = _WEEKDAYS.index(wd.lower())
        if rel == "after":
            d = base.last + timedelta(days=1)
            return _day(d + timedelta(days=(target - d.weekday()) % 7))
        d = base.first - timedelta(days=1)
        return _day(d - timedelta(days=(d.weekday() - target) % 7))
    if unit := head.group("unit"):
        unit, near, far = unit.lower(), 1, 1
    else:
        counted = _count(head.group("count"))
        if counted is None:
            return None
        unit, (near, far) = head.group("units").lower().rstrip("s"), counted
    if rel == "of":
        if head.group("count") or base.unit != "day":
            return base if head.group("unit") and unit in ("day", base.unit) else None
        if unit == "week":
            return Span(_monday(base.first), _monday(base.first) + timedelta(days=6), "week")
        if unit == "weekend":
            return _weekend(_monday(base.first) + timedelta(days=5))
        if unit == "month":
            return _month(base.first.year, base.first.month)
        if unit == "year":
            return _year(base.first.year)
        return base
    return _shifted(unit, near, far, 1 if rel == "after" else -1, base)


# --- relative to the anchor ------------------------------------------------------------------


def _anchored(since: float, until: float) -> Span:
    """The span of a time the product's resolver found, in UTC days, and the unit its length says."""
    first = datetime.fromtimestamp(since, UTC).date()
    last = datetime.fromtimestamp(until - 1, UTC).date()
    if until - since <= 24 * 3600:  # a day or a part of one ("last night" runs past midnight)
        return _day(first)
    span = Span(first, last, "window")
    if span.days == 2 and first.weekday() == 5:
        return _weekend(first)
    if span.days == 7 and first.weekday() == 0:
        return Span(first, last, "week")
    for calendar in (_month(first.year, first.month), _year(first.year)):
        if (first, last) == (calendar.first, calendar.last):
            return calendar
    return span


# --- finding times ---------------------------------------------------------------------------


def find_times(text: str, said_at: float) -> list[Found]:
    """The times `text` names, in reading order, resolved as said at `said_at` (epoch seconds, UTC)."""
    anchor = datetime.fromtimestamp(said_at, UTC).date()
    found: list[Found] = []
    for head in _RELATIVE_HEAD.finditer(text):
        m = _ABSOLUTE.match(text, head.end())
        if m is None:
            continue
        base = _absolute(m, anchor)
        span = _relative(head, base) if base is not None else None
        found.append(Found(head.start(), m.end(), text[head.start() : m.end()], span))
    for m in _ABSOLUTE.finditer(text):
        span = _absolute(m, anchor)
        if span is not None:
            found.append(Found(m.start(), m.end(), m.group(0), span))
    for e in find_expressions(text, said_at, UTC):
        found.append(Found(e.start, e.end, e.words, _anchored(e.since, e.until)))
    # Where two overlap, the longer wins: "the week before 9 June 2023" is one time, not two.
    found.sort(key=lambda f: (f.start, f.start - f.end))
    kept: list[Found] = []
    for f in found:
        if kept and f.start < kept[-1].end:
            continue
        kept.append(f)
    return kept


def gold_span(gold: str, said_at: float) -> Span | None:
    """The one span a gold answer names, or None when it is not date-scorable."""
    spans = {f.span for f in find_times(gold, said_at)}
    if len(spans) != 1:
        return None
    span = spans.pop()
    if span is None or span.days > 366:
        return None
    if span.unit == "window" and span.days > MAX_WINDOW_DAYS:
        return None
    return span


def reply_span(reply: str, said_at: float) -> Span | None:
    """The first time a reply names; None when it names none, or none that can be pinned down."""
    found = find_times(reply, said_at)
    return found[0].span if found else None


def score_date(prediction: str | None, gold: str, said_at: float) -> DateScore:
    """Whether `prediction` names a time within the one `gold` names, both resolved at `said_at`."""
    target = gold_span(gold, said_at)
    if target is None:
        return DateScore(None, None)
    if prediction is None:
        return DateScore(target.unit, None)
    answer = reply_span(prediction, said_at)
    return DateScore(target.unit, answer is not None and answer.within(target))
