"""Relative dates resolved in the speaker's zone: a table of hand-worked cases.

Every expected span below was worked out by hand from the zone's rules (not by running the
code): Europe/Lisbon is WET (UTC+0) in winter and WEST (UTC+1) from 01:00 UTC on Sun 26 March
2023 to 01:00 UTC on Sun 29 October 2023; America/New_York is EST (UTC-5) in winter and EDT
(UTC-4) from 07:00 UTC on Sun 12 March 2023 to 06:00 UTC on Sun 5 November 2023.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from assistant.config import load_settings
from assistant.errors import ConfigError
from assistant.memory.archive import markdown_chunks
from assistant.memory.dates import annotate, day_heading, find_expressions, find_planned_days, question_window
from assistant.records import Evidence
from assistant.zones import format_time, local_zone

LISBON = ZoneInfo("Europe/Lisbon")
NEW_YORK = ZoneInfo("America/New_York")
ZONES = {"Lisbon": LISBON, "New_York": NEW_YORK, "UTC": ZoneInfo("UTC")}


def local(zone: str, *parts: int) -> float:
    """The instant of a wall-clock time in a zone."""
    return datetime(*parts, tzinfo=ZONES[zone]).timestamp()


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


# Monday 14 August 2023, 10:00 in Lisbon (WEST, 09:00 UTC).
MON_14_AUG = ("Lisbon", 2023, 8, 14, 10, 0)

# (words said, zone and local time said, words matched, phrase, span start UTC, span end UTC)
CASES = [
    # Single days are their date; a Lisbon day in summer runs 23:00 UTC to 23:00 UTC.
    ("yesterday", MON_14_AUG, "yesterday", "Sunday 13 August 2023", "2023-08-12T23:00", "2023-08-13T23:00"),
    ("I went today", MON_14_AUG, "today", "Monday 14 August 2023", "2023-08-13T23:00", "2023-08-14T23:00"),
    ("tomorrow", MON_14_AUG, "tomorrow", "Tuesday 15 August 2023", "2023-08-14T23:00", "2023-08-15T23:00"),
    (
        "the day before yesterday",
        MON_14_AUG,
        "the day before yesterday",
        "Saturday 12 August 2023",
        "2023-08-11T23:00",
        "2023-08-12T23:00",
    ),
    ("3 days ago", MON_14_AUG, "3 days ago", "Friday 11 August 2023", "2023-08-10T23:00", "2023-08-11T23:00"),
    (
        "yesterday morning",
        MON_14_AUG,
        "yesterday morning",
        "Sunday 13 August 2023",
        "2023-08-12T23:00",
        "2023-08-13T11:00",
    ),
    ("this evening", MON_14_AUG, "this evening", "Monday 14 August 2023", "2023-08-14T17:00", "2023-08-14T23:00"),
    # A night is dated by its evening and runs 18:00 to 06:00.
    ("last night", MON_14_AUG, "last night", "Sunday 13 August 2023", "2023-08-13T17:00", "2023-08-14T05:00"),
    ("tonight", MON_14_AUG, "tonight", "Monday 14 August 2023", "2023-08-14T17:00", "2023-08-15T05:00"),
    # Said at 01:30 WEST (00:30 UTC), "tonight" is the night already under way.
    (
        "tonight",
        ("Lisbon", 2023, 8, 14, 1, 30),
        "tonight",
        "Sunday 13 August 2023",
        "2023-08-13T17:00",
        "2023-08-14T05:00",
    ),
    # Weekdays: last/next anchored to the day said; "this" is the coming one, dated.
    (
        "I ran a race last Friday",
        MON_14_AUG,
        "last Friday",
        "Friday 11 August 2023",
        "2023-08-10T23:00",
        "2023-08-11T23:00",
    ),
    (
        "next Friday",
        MON_14_AUG,
        "next Friday",
        "Friday 18 August 2023",
        "2023-08-17T23:00",
        "2023-08-18T23:00",
    ),
    (
        "next Friday",
        ("Lisbon", 2023, 8, 18, 10, 0),
        "next Friday",
        "Friday 25 August 2023",
        "2023-08-24T23:00",
        "2023-08-25T23:00",
    ),
    (
        "last Friday",
        ("Lisbon", 2023, 8, 18, 10, 0),
        "last Friday",
        "Friday 11 August 2023",
        "2023-08-10T23:00",
        "2023-08-11T23:00",
    ),
    ("this Friday works", MON_14_AUG, "this Friday", "Friday 18 August 2023", "2023-08-17T23:00", "2023-08-18T23:00"),
    # Weekdays written short, and "this past" for "last".
    (
        "Last Fri I took my nephews to a climbing wall",
        MON_14_AUG,
        "Last Fri",
        "Friday 11 August 2023",
        "2023-08-10T23:00",
        "2023-08-11T23:00",
    ),
    (
        "I joined a new group last Tues.",
        MON_14_AUG,
        "last Tues",
        "Tuesday 8 August 2023",
        "2023-08-07T23:00",
        "2023-08-08T23:00",
    ),
    (
        "see you next thurs",
        MON_14_AUG,
        "next thurs",
        "Thursday 17 August 2023",
        "2023-08-16T23:00",
        "2023-08-17T23:00",
    ),
    (
        "This past Friday I ran",
        MON_14_AUG,
        "This past Friday",
        "Friday 11 August 2023",
        "2023-08-10T23:00",
        "2023-08-11T23:00",
    ),
    (
        "We hiked this past weekend",
        MON_14_AUG,
        "this past weekend",
        "the weekend of Saturday 12 August 2023",
        "2023-08-11T23:00",
        "2023-08-13T23:00",
    ),
    (
        "last Friday night",
        MON_14_AUG,
        "last Friday night",
        "Friday 11 August 2023",
        "2023-08-11T17:00",
        "2023-08-12T05:00",
    ),
    # Weekends: Saturday 00:00 to Monday 00:00.
    (
        "this weekend",
        MON_14_AUG,
        "this weekend",
        "the weekend of Saturday 19 August 2023",
        "2023-08-18T23:00",
        "2023-08-20T23:00",
    ),
    (
        "this weekend",
        ("Lisbon", 2023, 8, 20, 10, 0),
        "this weekend",
        "the weekend of Saturday 19 August 2023",
        "2023-08-18T23:00",
        "2023-08-20T23:00",
    ),
    (
        "last weekend",
        MON_14_AUG,
        "last weekend",
        "the weekend of Saturday 12 August 2023",
        "2023-08-11T23:00",
        "2023-08-13T23:00",
    ),
    (
        "last weekend",
        ("Lisbon", 2023, 8, 20, 10, 0),
        "last weekend",
        "the weekend of Saturday 12 August 2023",
        "2023-08-11T23:00",
        "2023-08-13T23:00",
    ),
    (
        "next weekend",
        ("Lisbon", 2023, 8, 19, 10, 0),
        "next weekend",
        "the weekend of Saturday 26 August 2023",
        "2023-08-25T23:00",
        "2023-08-27T23:00",
    ),
    (
        "the weekend before last",
        MON_14_AUG,
        "the weekend before last",
        "the weekend of Saturday 5 August 2023",
        "2023-08-04T23:00",
        "2023-08-06T23:00",
    ),
    # Weeks run Monday to Monday.
    (
        "Last week was busy",
        MON_14_AUG,
        "Last week",
        "the week of Monday 7 August 2023",
        "2023-08-06T23:00",
        "2023-08-13T23:00",
    ),
    ("next week", MON_14_AUG, "next week", "the week of Monday 21 August 2023", "2023-08-20T23:00", "2023-08-27T23:00"),
    (
        "this week's episode",
        ("Lisbon", 2023, 8, 16, 10, 0),
        "this week",
        "the week of Monday 14 August 2023",
        "2023-08-13T23:00",
        "2023-08-20T23:00",
    ),
    (
        "two weeks ago",
        MON_14_AUG,
        "two weeks ago",
        "the week of Monday 31 July 2023",
        "2023-07-30T23:00",
        "2023-08-06T23:00",
    ),
    (
        "the week before last",
        MON_14_AUG,
        "the week before last",
        "the week of Monday 31 July 2023",
        "2023-07-30T23:00",
        "2023-08-06T23:00",
    ),
    (
        "I saw her the week before.",
        MON_14_AUG,
        "the week before",
        "the week of Monday 7 August 2023",
        "2023-08-06T23:00",
        "2023-08-13T23:00",
    ),
    (
        "a week ago",
        MON_14_AUG,
        "a week ago",
        "the week of Monday 7 August 2023",
        "2023-08-06T23:00",
        "2023-08-13T23:00",
    ),
    # Vague counts stay vague: a few days = two to six days back.
    (
        "a few days ago",
        MON_14_AUG,
        "a few days ago",
        "a few days before Monday 14 August 2023",
        "2023-08-07T23:00",
        "2023-08-12T23:00",
    ),
    (
        "a couple of weeks ago",
        MON_14_AUG,
        "a couple of weeks ago",
        "a couple of weeks before Monday 14 August 2023",
        "2023-07-23T23:00",
        "2023-08-13T23:00",
    ),
    # Months and years are named; January in Lisbon is UTC+0.
    ("last month", MON_14_AUG, "last month", "July 2023", "2023-06-30T23:00", "2023-07-31T23:00"),
    ("camping next month", MON_14_AUG, "next month", "September 2023", "2023-08-31T23:00", "2023-09-30T23:00"),
    ("two months ago", MON_14_AUG, "two months ago", "June 2023", "2023-05-31T23:00", "2023-06-30T23:00"),
    (
        "last month",
        ("Lisbon", 2024, 1, 15, 10, 0),
        "last month",
        "December 2023",
        "2023-12-01T00:00",
        "2024-01-01T00:00",
    ),
    ("I painted that last year", MON_14_AUG, "last year", "2022", "2022-01-01T00:00", "2023-01-01T00:00"),
    ("I saw her last year", MON_14_AUG, "last year", "2022", "2022-01-01T00:00", "2023-01-01T00:00"),
    ("We met 4 years ago", MON_14_AUG, "4 years ago", "2019", "2019-01-01T00:00", "2020-01-01T00:00"),
    ("last May", MON_14_AUG, "last May", "May 2023", "2023-04-30T23:00", "2023-05-31T23:00"),
    ("next May", MON_14_AUG, "next May", "May 2024", "2024-04-30T23:00", "2024-05-31T23:00"),
    # Across DST. New York springs forward on Sun 12 March 2023: said at 00:30 EDT the next
    # day (04:30 UTC), yesterday is 23 hours long, from 00:00 EST to 00:00 EDT.
    (
        "yesterday",
        ("New_York", 2023, 3, 13, 0, 30),
        "yesterday",
        "Sunday 12 March 2023",
        "2023-03-12T05:00",
        "2023-03-13T04:00",
    ),
    (
        "last Sunday",
        ("New_York", 2023, 3, 13, 0, 30),
        "last Sunday",
        "Sunday 12 March 2023",
        "2023-03-12T05:00",
        "2023-03-13T04:00",
    ),
    # Lisbon falls back on Sun 29 October 2023: that day is 25 hours long.
    (
        "yesterday",
        ("Lisbon", 2023, 10, 30, 9, 0),
        "yesterday",
        "Sunday 29 October 2023",
        "2023-10-28T23:00",
        "2023-10-30T00:00",
    ),
    # Last week spans Lisbon's spring-forward (Sun 26 March): 7 days less an hour.
    (
        "last week",
        ("Lisbon", 2023, 3, 29, 12, 0),
        "last week",
        "the week of Monday 20 March 2023",
        "2023-03-20T00:00",
        "2023-03-26T23:00",
    ),
    # Last night, across the spring-forward night: 18:00 WET to 06:00 WEST.
    (
        "last night",
        ("Lisbon", 2023, 3, 26, 8, 0),
        "last night",
        "Saturday 25 March 2023",
        "2023-03-25T18:00",
        "2023-03-26T05:00",
    ),
    # Last weekend across New York's fall-back (Sun 5 November): 49 hours.
    (
        "last weekend",
        ("New_York", 2023, 11, 6, 9, 0),
        "last weekend",
        "the weekend of Saturday 4 November 2023",
        "2023-11-04T04:00",
        "2023-11-06T05:00",
    ),
    # Near midnight the local date is not the UTC date. 21:00 EDT on Sun 13 August is 01:00 UTC
    # on the 14th: yesterday is the 12th there, not the 13th.
    (
        "yesterday",
        ("New_York", 2023, 8, 13, 21, 0),
        "yesterday",
        "Saturday 12 August 2023",
        "2023-08-12T04:00",
        "2023-08-13T04:00",
    ),
    # 00:30 WEST on Mon 14 August is 23:30 UTC on the 13th: yesterday is the 13th, not the 12th.
    (
        "yesterday",
        ("Lisbon", 2023, 8, 14, 0, 30),
        "yesterday",
        "Sunday 13 August 2023",
        "2023-08-12T23:00",
        "2023-08-13T23:00",
    ),
]


@pytest.mark.parametrize(("text", "said", "words", "phrase", "since", "until"), CASES)
def test_hand_worked_cases(
    text: str, said: tuple[str, int, int, int, int, int], words: str, phrase: str, since: str, until: str
) -> None:
    zone, *parts = said
    (found,) = find_expressions(text, local(zone, *parts), ZONES[zone])
    assert (found.words, found.phrase) == (words, phrase)
    assert text[found.start : found.end] == words
    assert (found.since, found.until) == (utc(since), utc(until)), (
        datetime.fromtimestamp(found.since, UTC),
        datetime.fromtimestamp(found.until, UTC),
    )


@pytest.mark.parametrize(
    "text",
    [
        "The cafe next to the station",
        "That was the last one",
        "This may be the last time",
        "You may go, and we march on",
        "the last week of June",
        "We met the week before the wedding",
        "At last, Friday came",
        "It was years ago",
        "the yesterdays of history",
        "my last day at work",
        "the next day we left",
        "every last Friday of the month",
        "Lastly, one day I will go",
        "over the last year",
        "It was his last week at work",
        # Short weekdays that are words of their own count only with a capital.
        "The one who came last sat down",
        "I was never the last sun worshipper",
        "Friends came last, Frisbees first",
    ],
)
def test_words_that_are_not_dates(text: str) -> None:
    assert find_expressions(text, local(*MON_14_AUG), LISBON) == []
    assert annotate(text, local(*MON_14_AUG), LISBON) == text


def test_annotate_writes_the_phrase_beside_the_words() -> None:
    said = local(*MON_14_AUG)
    text = "I went last Friday, and again yesterday."
    expected = "I went last Friday (Friday 11 August 2023), and again yesterday (Sunday 13 August 2023)."
    assert annotate(text, said, LISBON) == expected
    # Annotating twice adds nothing: a line may pass through more than one context builder.
    assert annotate(expected, said, LISBON) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Said on Monday 14 August 2023: a date without its year is the occurrence nearest then.
        ("We fly out on the fourteenth of May.", "We fly out on the fourteenth of May (Sunday 14 May 2023)."),
        ("Back on the 3rd of February", "Back on the 3rd of February (Saturday 3 February 2024)"),
        ("The fair is on December 2nd", "The fair is on December 2nd (Saturday 2 December 2023)"),
        ("I moved on 20 july", "I moved on 20 july (Thursday 20 July 2023)"),
        # Written out already, it is left as it is.
        ("It was on 14 May 2023.", "It was on 14 May 2023."),
        # Not a day: a word ordinal without "of", a month that is a verb, no month, no such day,
        # a birthday with no year (the year of a birth is not this one's).
        ("My first May in Berlin", "My first May in Berlin"),
        ("you may 2 times over", "you may 2 times over"),
        ("back on the nineteenth", "back on the nineteenth"),
        # ...but after a day named with its month, a bare day takes that month.
        (
            "We fly out on the fourteenth of May and come back on the nineteenth.",
            "We fly out on the fourteenth of May (Sunday 14 May 2023) "
            "and come back on the nineteenth (Friday 19 May 2023).",
        ),
        (
            "On May 3rd I left, the second time I was the first.",
            "On May 3rd (Wednesday 3 May 2023) I left, the second time I was the first.",
        ),
        # Said in August, "the third of February" is next February's, and so is the day after it.
        (
            "From the 3rd of February to the fifth, I'm away.",
            "From the 3rd of February (Saturday 3 February 2024) to the fifth (Monday 5 February 2024), I'm away.",
        ),
        ("the 31st of April", "the 31st of April"),
        ("She was born on the 3rd of June.", "She was born on the 3rd of June."),
        # A relative and a named day in one line.
        (
            "Last Friday we set the twenty-first of December.",
            "Last Friday (Friday 11 August 2023) we set the twenty-first of December (Thursday 21 December 2023).",
        ),
    ],
)
def test_annotate_writes_the_date_a_named_day_means(text: str, expected: str) -> None:
    said = local(*MON_14_AUG)
    assert annotate(text, said, LISBON) == expected
    assert annotate(expected, said, LISBON) == expected


def test_a_date_with_its_year_is_left_as_written() -> None:
    # Already a calendar date: nothing to add, whatever the order of its parts.
    said = local(*MON_14_AUG)
    for text in ("It opened May 5, 2021 downtown", "It was on 14 May 2023.", "the 5th of May 2021"):
        assert annotate(text, said, LISBON) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Said on Monday 14 August 2023: a weekday alone in a plan is the first one after that day.
        (
            "Then we will book a table for Friday evening at seven.",
            "Then we will book a table for Friday evening (Friday 18 August 2023) at seven.",
        ),
        ("I'll send the slides by Thursday.", "I'll send the slides by Thursday (Thursday 17 August 2023)."),
        # Said on a Monday, "Monday" in a plan is a week on, as a deadline's is (`deadlines.due_date`).
        ("We are going to meet on Monday.", "We are going to meet on Monday (Monday 21 August 2023)."),
        # Only the sentence about the future.
        (
            "I saw her on Friday. We'll meet again on Tuesday.",
            "I saw her on Friday. We'll meet again on Tuesday (Tuesday 15 August 2023).",
        ),
        # Not one day: said of the past or in no tense, a habit, several days, a day's something,
        # and the relative weekdays `find_expressions` has already written out.
        ("I saw her on Friday.", "I saw her on Friday."),
        ("Friday works for me.", "Friday works for me."),
        # An arrangement in the present progressive, or beside a future time, is about the future.
        ("He's coming on Thursday morning.", "He's coming on Thursday morning (Thursday 17 August 2023)."),
        (
            "I'm off from tomorrow and back in on Monday.",
            "I'm off from tomorrow (Tuesday 15 August 2023) and back in on Monday (Monday 21 August 2023).",
        ),
        # A weekday in a named week, and a day of the month said alone in a plan.
        ("The demo is on Wednesday of next week.", "The demo is on Wednesday of next week (Wednesday 23 August 2023)."),
        ("My mum is arriving on the 25th.", "My mum is arriving on the 25th (Friday 25 August 2023)."),
        ("She is flying in on the 3rd.", "She is flying in on the 3rd (Sunday 3 September 2023)."),
        # Said of the past, neither is resolved.
        ("I saw her on the 3rd.", "I saw her on the 3rd."),
        ("We will run every Friday and every other Sunday.", "We will run every Friday and every other Sunday."),
        ("Fridays will be busy.", "Fridays will be busy."),
        ("I will watch Friday's match.", "I will watch Friday's match."),
        (
            "We will go next Friday.",
            "We will go next Friday (Friday 18 August 2023).",
        ),
        # A weekday said with its date is one day, noted once (not the weekday and the date apart).
        (
            "The car will be ready on Thursday 24 August.",
            "The car will be ready on Thursday 24 August (Thursday 24 August 2023).",
        ),
        (
            "It will be ready by Thursday, the 24th of August, or Friday.",
            "It will be ready by Thursday, the 24th of August (Thursday 24 August 2023), "
            "or Friday (Friday 18 August 2023).",
        ),
    ],
)
def test_annotate_writes_the_date_a_planned_weekday_means(text: str, expected: str) -> None:
    said = local(*MON_14_AUG)
    assert annotate(text, said, LISBON) == expected
    assert annotate(expected, said, LISBON) == expected


def test_a_planned_evening_spans_the_evening() -> None:
    (friday,) = find_planned_days("We will eat out on Friday evening.", local(*MON_14_AUG), LISBON)
    assert (friday.words, friday.phrase) == ("Friday evening", "Friday 18 August 2023")
    assert (friday.since, friday.until) == (local("Lisbon", 2023, 8, 18, 18, 0), local("Lisbon", 2023, 8, 19, 0, 0))


def test_annotate_without_a_zone_is_utc() -> None:
    # 23:30 UTC on Sunday 13 August is already Monday in Lisbon.
    said = utc("2023-08-13T23:30")
    assert annotate("yesterday", said) == "yesterday (Saturday 12 August 2023)"
    assert annotate("yesterday", said, LISBON) == "yesterday (Sunday 13 August 2023)"


def test_day_heading_is_the_local_date() -> None:
    assert day_heading(utc("2023-08-13T23:30"), LISBON) == "Monday 14 August 2023"
    assert day_heading(utc("2023-08-13T23:30"), NEW_YORK) == "Sunday 13 August 2023"


# --- question windows ------------------------------------------------------------------------

# Asked on Monday 14 August 2023 at 10:00 in Lisbon unless a case says otherwise.
NOW = local(*MON_14_AUG)
WEDNESDAY = local("Lisbon", 2023, 8, 16, 15, 0)


@pytest.mark.parametrize(
    ("question", "now", "zone", "since", "until"),
    [
        ("What did Sam say last week?", NOW, LISBON, "2023-08-06T23:00", "2023-08-13T23:00"),
        ("What did Sam say yesterday?", NOW, LISBON, "2023-08-12T23:00", "2023-08-13T23:00"),
        ("What did we talk about this morning?", NOW, LISBON, "2023-08-13T23:00", "2023-08-14T11:00"),
        ("What did Ingrid say last Friday?", NOW, LISBON, "2023-08-10T23:00", "2023-08-11T23:00"),
        ("what did Sam tell me two days ago", NOW, LISBON, "2023-08-11T23:00", "2023-08-12T23:00"),
        ("What was said since Monday?", WEDNESDAY, LISBON, "2023-08-13T23:00", "2023-08-16T14:00"),
        ("What has Sam said since last week?", WEDNESDAY, LISBON, "2023-08-06T23:00", "2023-08-16T14:00"),
        ("What did we discuss in May 2023?", NOW, LISBON, "2023-04-30T23:00", "2023-05-31T23:00"),
        ("What did Sam say on 7 May 2023?", NOW, LISBON, "2023-05-06T23:00", "2023-05-07T23:00"),
        ("What did Sam say on May 7, 2023?", NOW, LISBON, "2023-05-06T23:00", "2023-05-07T23:00"),
        ("What did Sam say in 2022?", NOW, LISBON, "2022-01-01T00:00", "2023-01-01T00:00"),
        # A month without its year is its latest occurrence up to now.
        ("What did Sam say in August?", NOW, LISBON, "2023-07-31T23:00", "2023-08-31T23:00"),
        ("What did Sam say in December?", NOW, LISBON, "2022-12-01T00:00", "2023-01-01T00:00"),
        ("what did sam say in may?", NOW, LISBON, "2023-04-30T23:00", "2023-05-31T23:00"),
        ("What did Sam say in the last three days?", NOW, LISBON, "2023-08-11T09:00", "2023-08-14T09:00"),
        # "last Friday's dinner" describes the dinner; "yesterday" bounds when it was said.
        ("What did Sam say yesterday about last Friday's dinner?", NOW, LISBON, "2023-08-12T23:00", "2023-08-13T23:00"),
        # Asked at 00:30 EDT the day after New York's spring-forward: a 23-hour yesterday.
        (
            "What did Sam say yesterday?",
            local("New_York", 2023, 3, 13, 0, 30),
            NEW_YORK,
            "2023-03-12T05:00",
            "2023-03-13T04:00",
        ),
    ],
)
def test_question_windows(question: str, now: float, zone: ZoneInfo, since: str, until: str) -> None:
    assert question_window(question, now, zone) == (utc(since), utc(until))


@pytest.mark.parametrize(
    "question",
    [
        "When did Ingrid go to the choir rehearsal?",
        "When did Ingrid go to the rehearsal last week?",
        "How long ago did Sam move, last year?",
        "What year did Tomás plant the olive tree?",
        "What did Sam say about the trip?",
        "What did Sam say about next week's trip?",
        "What will happen next month?",
        "What may Sam have said?",
        "What did Sam say on 31 February?",
    ],
)
def test_questions_that_bound_no_time(question: str) -> None:
    assert question_window(question, NOW, LISBON) is None


# --- zones, settings and display -------------------------------------------------------------


def test_local_zone_names_and_refuses() -> None:
    assert local_zone("Europe/Lisbon") == LISBON
    for bad in ("Mars/Olympus_Mons", "", "Europe", "../etc/passwd"):
        with pytest.raises(ConfigError, match="unknown time zone"):
            local_zone(bad)


def test_the_system_zone_follows_tz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    assert local_zone(None) == NEW_YORK
    assert format_time(utc("2023-08-14T09:00")) == "2023-08-14 05:00 EDT"


def test_time_zone_setting_is_validated_with_file_line_and_key(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("memory:\n  retention_days: null\ntime_zone: Mars/Olympus_Mons\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config, user_file=tmp_path / "absent.yaml")
    assert f"{config}:3: time_zone must be an IANA time zone name" in str(info.value)
    config.write_text("time_zone: Europe/Lisbon\n")
    settings = load_settings(config, user_file=tmp_path / "absent.yaml")
    assert settings.time_zone == "Europe/Lisbon" and settings.zone == LISBON
    assert load_settings(user_file=tmp_path / "absent.yaml").time_zone is None


def test_citations_show_local_time_and_zone() -> None:
    evidence = Evidence(1, "Sam", utc("2023-08-14T09:00"), "hello")
    assert evidence.cite(LISBON) == "Sam, 2023-08-14 10:00 WEST: \u201chello\u201d"
    assert format_time(utc("2023-01-14T09:00"), LISBON) == "2023-01-14 09:00 WET"
    assert format_time(utc("2023-08-14T02:00"), NEW_YORK) == "2023-08-13 22:00 EDT"


def test_markdown_export_shows_local_days_and_times() -> None:
    doc = {
        "selection": {},
        "nodes": [],
        "speakers": [{"id": 1, "name": "Sam"}],
        "utterances": [{"id": 1, "speaker_id": 1, "text": "hi", "time": utc("2023-08-14T02:00")}],
    }
    text = "".join(markdown_chunks(doc, NEW_YORK))
    assert "### 2023-08-13" in text and "- 22:00:00 EDT **Sam**: hi" in text
