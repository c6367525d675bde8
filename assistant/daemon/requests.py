"""The API's request bodies (pydantic models), and how their fields are checked.

What the API answers with are the records of `assistant.records`, described by the models
`schema.model_of` generates from them; only a few small replies of its own (`Deleted`, an
error) are declared here.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from ..memory.speakers import MAX_ID
from ..zones import EARLIEST, LATEST, TIME_FORMS, check_window, parse_when

# Longer than any ISO-8601 time: a string past it is refused unread (and the schema says so).
MAX_TIME_CHARS = 64
MAX_SPEAKER_CHARS = 200


def _recall_time(value: object) -> float | str | None:
    # Checked here, so a malformed time is a 422 naming the field; read in the daemon's zone
    # by `Recall.limits` (the day either side of the year range covers any zone's offset).
    if value is None:
        return None
    if isinstance(value, str) and len(value) > MAX_TIME_CHARS:
        raise ValueError(f"a time is at most {MAX_TIME_CHARS} characters; got {len(value):,}")
    seconds = parse_when(value)
    return value if isinstance(value, str) else seconds


def _recall_speaker(value: object) -> str | int | None:
    # One message for any wrong kind: a plain union would list why each of its arms refused.
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= MAX_SPEAKER_CHARS and value.strip():
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_ID:
        return value
    raise ValueError(
        f"a speaker is a name (1 to {MAX_SPEAKER_CHARS} characters) or an id (a whole number from 1); got {value!r:.60}"
    )


# Both are checked before validation and described in the schema as the forms they accept.
RecallTime = Annotated[
    float | str | None,
    BeforeValidator(_recall_time),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": EARLIEST, "maximum": LATEST},
                {"type": "string", "minLength": 1, "maxLength": MAX_TIME_CHARS},
                {"type": "null"},
            ]
        }
    ),
]
RecallSpeaker = Annotated[
    str | int | None,
    BeforeValidator(_recall_speaker),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "minLength": 1, "maxLength": MAX_SPEAKER_CHARS, "pattern": r"\S"},
                {"type": "integer", "minimum": 1, "maximum": MAX_ID},
                {"type": "null"},
            ]
        }
    ),
]


class Recall(BaseModel):
    """What a question or a search may recall: a time window and one speaker, each optional."""

    # Strict: `"since": true` is not a time, nor `"speaker": 1.5` a speaker.
    model_config = ConfigDict(strict=True)

    since: RecallTime = Field(
        None,
        description=f"Only what was said at or after this time: {TIME_FORMS}. A time without an offset "
        "is the daemon's local time (time_zone).",
    )
    until: RecallTime = Field(None, description="Only what was said before this time (the same forms).")
    speaker: RecallSpeaker = Field(None, description="Only what this speaker said: a name, or an id.")

    def limits(self, zone: tzinfo) -> dict[str, Any]:
        """The keywords `Daemon.ask`/`search` (and `Memory.prepare`/`search`) take; a time without
        an offset is read in `zone`, the daemon's (`time_zone`), the one its answers show.
        An empty window is an InputError (400) that shows both bounds in that zone."""
        since = None if self.since is None else parse_when(self.since, zone)
        until = None if self.until is None else parse_when(self.until, zone)
        check_window(since, until, zone=zone)
        return {"since": since, "until": until, "speaker": self.speaker}


class Question(Recall):
    question: str = Field(min_length=1, max_length=100_000, description="What to ask the memory.")


class SpeakerName(BaseModel):
    name: str = Field(min_length=1, max_length=200)


class EnrollFile(BaseModel):
    name: str = Field(
        min_length=1, max_length=200, description="Whose voice: a new name, or an existing speaker's name or id."
    )
    path: str = Field(min_length=1, max_length=4096, description="A recording of that person alone, on this machine.")


class SpeakerMerge(BaseModel):
    keep: str = Field(min_length=1, max_length=200, description="Id or name of the speaker who stays.")
    other: str = Field(min_length=1, max_length=200, description="Id or name of the speaker merged into it.")


class Reassign(Recall):
    """Utterances said by someone else than their label says: by id, or by a time range and/or the
    speaker they carry now (`speaker`), or both."""

    to: str = Field(min_length=1, max_length=200, description="Id or name of the speaker who said them.")
    new_speaker: bool = Field(
        False, description="`to` names someone not heard apart until now: create that speaker for these lines."
    )
    utterance_ids: list[Annotated[int, Field(ge=1, le=MAX_ID)]] = Field(
        default_factory=list, max_length=10_000, description="The utterances, by id (as the live transcript gives)."
    )


class ExportRequest(BaseModel):
    # Strict: `"since": true` is not a time (lax parsing read it as 1.0; the fuzzer sent it).
    model_config = ConfigDict(strict=True)

    format: str = Field("json", pattern="^(json|markdown|jsonl)$")
    since: float | None = None
    until: float | None = None
    speaker: str | None = Field(None, min_length=1, max_length=200)


class ImportRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096, description="A JSON export on this machine.")


class ForgetRequest(BaseModel):
    # Strict, as ExportRequest: and `"everything": "yes"` must not read as true on a request that deletes.
    model_config = ConfigDict(strict=True)

    speaker: str | None = Field(None, min_length=1, max_length=200)
    since: float | None = None
    until: float | None = None
    text: str | None = Field(None, min_length=1, max_length=1000)
    everything: bool = False
    dry_run: bool = Field(True, description="Only say what would go (the default: forgetting is explicit).")


class Deleted(BaseModel):
    removed: list[int]


class ErrorOut(BaseModel):
    error: str
