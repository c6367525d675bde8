from datetime import UTC, datetime

import pytest

from assistant.memory.dates import annotate

# Monday 8 May 2023, 13:56 UTC (the first LoCoMo session).
SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a support group yesterday.", "yesterday (7 May 2023)"),
        ("We fly tomorrow", "tomorrow (9 May 2023)"),
        ("I ran a race last Saturday", "last Saturday (6 May 2023)"),
        ("See you next Monday", "next Monday (15 May 2023)"),
        ("this Friday works", "this Friday (12 May 2023)"),
        ("I painted that last year", "last year (2022)"),
        ("camping next month", "next month (June 2023)"),
        ("We met 4 years ago", "4 years ago (2019)"),
        ("a few days ago", "a few days ago (5 May 2023)"),
        ("two weeks ago", "two weeks ago (week of 24 April 2023)"),
        ("Last week was busy", "Last week (week of 1 May 2023)"),
        ("a month ago", "a month ago (April 2023)"),
    ],
)
def test_relative_expressions_get_their_dates(text, expected):
    assert expected in annotate(text, SAID)


def test_text_without_relative_dates_is_unchanged():
    text = "On 14 May we fly to Lisbon; the yesterdays of history are gone."
    assert annotate(text, SAID) == text
