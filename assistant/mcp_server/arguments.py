"""What the tools accept: the JSON Schema a client sees, and times read in the configured zone.

The schema refuses a value of the wrong kind before a tool runs (the SDK answers with a tool
error naming the field). What only the value itself can say wrong (an impossible date, a window
that ends before it starts) is checked here, before anything is sent to the daemon.

The types are strict: `"speaker": true` is not speaker 1, nor `"confirm": "yes"` a confirmation.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, Strict, StringConstraints

from ..errors import InputError
from ..zones import TIME_FORMS, check_window, parse_when

# As the daemon's API bounds them, so a value it would refuse is refused here with the field's name.
MAX_TIME_CHARS = 64
MAX_SPEAKER_CHARS = 200
MAX_TRANSCRIPT_LINES = 5000

Question = Annotated[
    str,
    StringConstraints(strict=True, min_length=1, max_length=100_000, pattern=r"\S"),
    Field(description="What to ask, in the user's words."),
]
When = Annotated[
    Annotated[str, StringConstraints(strict=True, min_length=1, max_length=MAX_TIME_CHARS)]
    | Annotated[float, Strict()]
    | None,
    Field(
        description=f"A time: {TIME_FORMS}. Without an offset it is read in the memory's time zone.",
    ),
]
SpeakerKey = Annotated[
    Annotated[str, StringConstraints(strict=True, min_length=1, max_length=MAX_SPEAKER_CHARS, pattern=r"\S")]
    | Annotated[int, Strict(), Field(ge=1)]
    | None,
    Field(description="Only what this speaker said: a name (as `speakers` lists them) or a speaker id."),
]
Limit = Annotated[
    int, Strict(), Field(ge=1, le=MAX_TRANSCRIPT_LINES, description="At most this many lines, the newest.")
]
Words = Annotated[
    str | None,
    StringConstraints(strict=True, min_length=1, max_length=1000, pattern=r"\S"),
    Field(description="Every utterance, and every memory, that contains these words."),
]
Day = Annotated[
    str | None,
    StringConstraints(strict=True, min_length=1, max_length=MAX_TIME_CHARS),
    Field(description="A day: YYYY-MM-DD, today or yesterday, in the memory's time zone (default today)."),
]
Flag = Annotated[bool, Strict()]


def read_window(
    since: str | float | None, until: str | float | None, zone: tzinfo
) -> tuple[float | None, float | None]:
    """`since` and `until` as seconds since the epoch, a time without an offset read in `zone`
    (the one answers show times in). A time that is none, or a window that ends before it
    starts, is a tool error naming the argument, so the model can correct its call."""
    bounds = []
    for name, value in (("since", since), ("until", until)):
        try:
            bounds.append(None if value is None else parse_when(value, zone))
        except ValueError as exc:
            raise ToolError(f"{name}: {exc}") from None
    start, end = bounds
    try:
        check_window(start, end, zone=zone)
    except InputError as exc:
        raise ToolError(str(exc)) from None
    return start, end
