"""The API's request and response bodies (pydantic models), and how their fields are checked.

All of them live here, together: the routes import them, and the OpenAPI description is built
from them.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from ..memory.api import MemoryStats
from ..memory.speakers import MAX_ID
from .client import EARLIEST, LATEST, TIME_FORMS, check_window, parse_when

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


class SpeakerMerge(BaseModel):
    keep: str = Field(min_length=1, max_length=200, description="Id or name of the speaker who stays.")
    other: str = Field(min_length=1, max_length=200, description="Id or name of the speaker merged into it.")


class SpeakerOut(BaseModel):
    id: int
    name: str
    utterances: int
    speech_seconds: float
    enrolled: bool


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


class UtteranceOut(BaseModel):
    utterance_id: int
    speaker: str
    time: float
    text: str


class MergeSuggestionOut(BaseModel):
    keep: SpeakerOut = Field(description="The one with more speech, to keep.")
    other: SpeakerOut
    cosine: float = Field(description="How alike the two voices are (cosine of their centroids).")


class ReassignOut(BaseModel):
    speaker: SpeakerOut
    moved: list[int] = Field(description="Utterances that changed speaker.")
    removed_speakers: list[int] = Field(description="Automatically labelled speakers left with nothing, removed.")


class StatusOut(BaseModel):
    state: str = Field(
        description="starting, listening, paused, quiet hours, source lost, source ended, source failed or stopping"
    )
    paused: bool
    idle: bool = Field(description="nothing heard is waiting to be transcribed or filed")
    source: str
    source_problem: str | None = Field(description="why the source delivers no audio now (a device being reopened)")
    lag_seconds: float
    queued_segments: int
    spooled_segments: int
    queued_seconds: float
    acknowledged: int
    # The memory's own record: a dataclass FastAPI describes and serialises as it is.
    memory: MemoryStats
    speakers: list[SpeakerOut]
    models: dict[str, str]
    devices: dict[str, str]
    uptime_seconds: float
    push_to_talk: bool


class NodeOut(BaseModel):
    id: int
    level: str
    text: str
    tokens: int
    utility: float
    frequency: int
    start_time: float | None
    end_time: float | None
    children: list[NodeOut]


class PathOut(BaseModel):
    score: float
    scene: str
    event: NodeOut
    units: list[NodeOut]
    sources: list[dict[str, Any]]


class FilterOut(BaseModel):
    since: float | None = Field(description="seconds since the epoch: only lines said at or after it")
    until: float | None = Field(description="seconds since the epoch: only lines said before it")
    speaker: str | None = Field(description="only this speaker's lines (their name)")
    inferred: list[str] = Field(
        description="the bounds read from the question's own words (since, until, speaker), not given by the caller"
    )


class LineOut(BaseModel):
    utterance_id: int
    speaker: str
    time: float
    text: str
    score: float
    found_by: list[str] = Field(description="the retrieval arms that found it (lexical, dense, tree, buffer, ...)")


class SearchOut(BaseModel):
    question: str
    relevance: float = Field(description="best cosine between the question and anything found")
    filter: FilterOut = Field(description="the window and speaker the recall was limited to")
    lines: list[LineOut] = Field(description="the recalled lines, most relevant first, each inside the filter")
    paths: list[PathOut]
    short_term: list[dict[str, Any]]


class ExportRequest(BaseModel):
    # Strict: `"since": true` is not a time (lax parsing read it as 1.0; the fuzzer sent it).
    model_config = ConfigDict(strict=True)

    format: str = Field("json", pattern="^(json|markdown|jsonl)$")
    since: float | None = None
    until: float | None = None
    speaker: str | None = Field(None, min_length=1, max_length=200)


class ImportRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096, description="A JSON export on this machine.")


class ImportOut(BaseModel):
    mode: str
    speakers: int
    utterances: int
    duplicates: int
    nodes: int
    seconds: float


class ForgetRequest(BaseModel):
    # Strict, as ExportRequest: and `"everything": "yes"` must not read as true on a request that deletes.
    model_config = ConfigDict(strict=True)

    speaker: str | None = Field(None, min_length=1, max_length=200)
    since: float | None = None
    until: float | None = None
    text: str | None = Field(None, min_length=1, max_length=1000)
    everything: bool = False
    dry_run: bool = Field(True, description="Only say what would go (the default: forgetting is explicit).")


class ForgetOut(BaseModel):
    empty: bool
    utterances: int
    nodes: int
    refiled_events: int
    speakers: int
    examples: list[str] = []
    database_bytes: int | None = None


class Deleted(BaseModel):
    removed: list[int]


class ErrorOut(BaseModel):
    error: str


class Transcribed(BaseModel):
    question: str
