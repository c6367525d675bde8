"""The daemon's local HTTP API (FastAPI): its OpenAPI description is served at /openapi.json.

Streams (answers, the live transcript) are newline-delimited JSON, one object per line, each
with a "type". Errors are JSON objects `{"error": "..."}` with a 4xx status; a request body
larger than `daemon.max_body_bytes` gets 413 before it is read whole.

    curl --unix-socket $XDG_RUNTIME_DIR/assistant/api.sock http://assistant/status
    curl --unix-socket ... -N -d '{"question": "When is the trip?"}' http://assistant/ask
    curl --unix-socket ... -d '{"question": "the trip", "speaker": "Sam", "since": "2026-11-16"}' \
         http://assistant/search
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import asdict
from datetime import tzinfo
from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import AssistantError, InputError
from ..memory.api import MemoryStats, TreeNode
from ..memory.archive import Selection
from ..memory.forget import ForgetFilter
from ..memory.speakers import MAX_ID
from ..records import Answer, Evidence, RecallFilter, Retrieval, Speaker
from ..zones import EARLIEST, LATEST, TIME_FORMS, check_window, parse_when
from .daemon import Daemon, HeardEvent, QuestionState, TranscriptEvent

log = logging.getLogger(__name__)

NDJSON = "application/x-ndjson"


# --- request and response bodies ---------------------------------------------------------------


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


def _speaker(sp: Speaker) -> SpeakerOut:
    return SpeakerOut(
        id=sp.id,
        name=sp.name,
        utterances=sp.utterances,
        speech_seconds=round(sp.speech_seconds, 1),
        enrolled=sp.enrolled,
    )


def _node(t: TreeNode) -> NodeOut:
    n = t.node
    return NodeOut(
        id=n.id,
        level=n.level.value,
        text=n.text,
        tokens=n.tokens,
        utility=round(t.utility, 4),
        frequency=n.frequency,
        start_time=n.start_time,
        end_time=n.end_time,
        children=[_node(c) for c in t.children],
    )


def _evidence(e: Evidence) -> dict[str, Any]:
    return {"utterance_id": e.utterance_id, "speaker": e.speaker, "time": e.time, "text": e.text}


def recall_filter(f: RecallFilter) -> FilterOut:
    return FilterOut(since=f.since, until=f.until, speaker=f.speaker, inferred=list(f.inferred))


def search_out(found: Retrieval) -> SearchOut:
    """A retrieval as /search answers it (the CLI's `search` prints the same without a daemon)."""
    return SearchOut(
        question=found.question,
        relevance=round(found.relevance, 4),
        filter=recall_filter(found.filter),
        lines=[
            LineOut(**_evidence(line.evidence), score=round(line.score, 4), found_by=list(line.found_by))
            for line in found.lines
        ],
        paths=[
            PathOut(
                score=round(p.score, 4),
                scene=p.scene.text,
                event=_node(TreeNode(p.event, 0.0, ())),
                units=[_node(TreeNode(a, 0.0, ())) for a in p.amus],
                sources=[_evidence(e) for e in p.sources],
            )
            for p in found.paths
        ],
        short_term=[
            {"utterance_id": u.id, "speaker": u.speaker, "time": u.time, "text": u.text} for u in found.short_term
        ],
    )


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")


def _answer_lines(items: Iterator[str | Answer]) -> Iterator[bytes]:
    """An answer stream as NDJSON: tokens, then the answer with its evidence (or an error line)."""
    try:
        for item in items:
            if isinstance(item, Answer):
                yield _line(
                    {
                        "type": "answer",
                        "text": item.text,
                        "knows": item.knows,
                        "evidence": [_evidence(e) for e in item.evidence],
                        "context_tokens": item.context_tokens,
                        "retrieval_ms": round(item.retrieval_ms, 1),
                        "answer_ms": round(item.answer_ms, 1),
                        # What the recall was limited to, the bounds read from the question included.
                        "filter": recall_filter(item.retrieval.filter).model_dump() if item.retrieval else None,
                    }
                )
            else:
                yield _line({"type": "token", "text": item})
    except AssistantError as exc:
        yield _line({"type": "error", "error": str(exc)})
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()  # releases the LLM if the client went away mid-answer


# --- middleware ---------------------------------------------------------------------------------


class BodyLimit:
    """413 for a body over the limit, whether it declares its length or streams in chunks."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _reject(send, 413, f"the request body is over the limit of {self.limit:,} bytes")
            return
        if declared is not None:
            await self.app(scope, receive, send)
            return
        # No declared length (chunked): read it here, up to the limit, then hand it on whole.
        # The limit is small, so holding the body costs nothing, and the app never sees a cut one.
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                await _reject(send, 413, f"the request body is over the limit of {self.limit:,} bytes")
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class TcpToken:
    """Requests that arrive over TCP need the bearer token; the Unix socket is guarded by its mode."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server") or (None, None)
        if scope["type"] == "http" and server[1] is not None:
            auth = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
            expected = f"Bearer {self.token}" if self.token else None
            if expected is None or not hmac.compare_digest(auth, expected):
                await _reject(send, 401, "a bearer token is required over TCP (daemon.tcp.token)")
                return
        await self.app(scope, receive, send)


async def _reject(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# --- the app ------------------------------------------------------------------------------------


def create_app(daemon: Daemon) -> FastAPI:
    app = FastAPI(
        title="assistant daemon",
        version="1",
        description="The local API of the on-device voice memory assistant. Reachable only on its owner's "
        "Unix socket (mode 0600), or on loopback TCP with a bearer token when configured.",
    )
    errors: dict[int | str, dict[str, Any]] = {
        400: {"model": ErrorOut},
        413: {"model": ErrorOut},
        422: {"model": ErrorOut, "description": "The request does not fit the schema"},
    }

    @app.exception_handler(InputError)
    async def bad_input(request: Request, exc: InputError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=400)

    @app.exception_handler(AssistantError)
    async def failed(request: Request, exc: AssistantError) -> JSONResponse:
        log.warning("%s %s: %s", request.method, request.url.path, exc)
        return JSONResponse({"error": str(exc)}, status_code=409)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        return JSONResponse({"error": f"invalid request: {where}"}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI's and Starlette's own refusals (a body that is not UTF-8, an unknown route) would
        # otherwise answer {"detail": ...}, not the {"error": ...} every client here reads.
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    def blocking(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
        async def run(*args: Any, **kwargs: Any) -> Any:
            return await run_in_threadpool(fn, *args, **kwargs)

        return run

    @app.get("/status", response_model=StatusOut, summary="Listening state, lag, memory budget, models")
    async def status() -> StatusOut:
        s = await blocking(daemon.status)()
        out = asdict(s)
        out["speakers"] = [_speaker(sp) for sp in s.speakers]
        return StatusOut(**out)

    @app.post(
        "/ask",
        summary="Ask the memory; the answer streams as NDJSON tokens, then the answer with its evidence",
        responses={**errors, 200: {"content": {NDJSON: {}}}},
    )
    async def ask(body: Question) -> StreamingResponse:
        # Retrieval runs before streaming starts, so a bad question or filter (an unknown speaker,
        # since not before until) is a 400, not an error line.
        answer = await blocking(daemon.ask)(body.question, **body.limits(daemon.settings.zone))
        return StreamingResponse(iterate_in_threadpool(_answer_lines(answer)), media_type=NDJSON)

    @app.get(
        "/utterances/stream",
        summary="The live transcript: each utterance as soon as it is stored, after the newest `recent` ones "
        "already stored, and each correction of who said what (NDJSON)",
        responses={200: {"content": {NDJSON: {}}}},
    )
    async def utterances(
        request: Request,
        recent: Annotated[int, Query(ge=0, le=1000, description="First send the newest N stored utterances.")] = 0,
    ) -> StreamingResponse:
        loop = asyncio.get_running_loop()
        backlog = daemon.settings.daemon.subscriber_backlog
        lines: asyncio.Queue[TranscriptEvent] = asyncio.Queue(maxsize=backlog)
        skipped = 0

        def on_heard(event: TranscriptEvent) -> None:  # the writer thread: never wait here
            loop.call_soon_threadsafe(offer, event)

        def offer(event: TranscriptEvent) -> None:
            nonlocal skipped
            if lines.full():
                lines.get_nowait()  # a slow reader loses the oldest line, never the writer's time
                skipped += 1
            lines.put_nowait(event)

        unsubscribe = daemon.subscribe(on_heard)

        async def stream() -> AsyncIterator[bytes]:
            nonlocal skipped
            try:
                yield _line({"type": "hello", "acknowledged": daemon.acknowledged})
                # Subscribed before reading the archive, so nothing falls between the two; what
                # both hold is sent once.
                caught_up = 0
                for event in await blocking(daemon.recent_heard)(recent) if recent else []:
                    caught_up = max(caught_up, event.utterance_id or 0)
                    yield _line({"type": "utterance", **asdict(event)})
                while not daemon.closing:
                    try:
                        event = await asyncio.wait_for(lines.get(), timeout=1.0)
                    except TimeoutError:
                        continue  # look at `closing` again: a stop ends the stream cleanly
                    if isinstance(event, HeardEvent) and event.utterance_id and event.utterance_id <= caught_up:
                        continue
                    if skipped:
                        yield _line({"type": "skipped", "count": skipped})
                        skipped = 0
                    kind = "utterance" if isinstance(event, HeardEvent) else "relabel"
                    yield _line({"type": kind, **asdict(event)})
            finally:
                unsubscribe()

        return StreamingResponse(stream(), media_type=NDJSON)

    @app.post("/pause", response_model=StatusOut, summary="Stop listening (nothing is heard until resume)")
    async def pause() -> StatusOut:
        daemon.pause()
        return await status()

    @app.post("/resume", response_model=StatusOut, summary="Listen again")
    async def resume() -> StatusOut:
        daemon.resume()
        return await status()

    @app.get("/push-to-talk", summary="The question being recorded: how long, and how loud just now")
    async def ptt_state() -> QuestionState:
        return daemon.question_state()

    @app.post("/push-to-talk/start", summary="Record a spoken question (never stored)", responses=errors)
    async def ptt_start() -> dict[str, str]:
        daemon.start_question()
        return {"state": "recording"}

    @app.post("/push-to-talk/cancel", summary="Drop the question being recorded", responses=errors)
    async def ptt_cancel() -> dict[str, str]:
        daemon.cancel_question()
        return {"state": "cancelled"}

    @app.post(
        "/push-to-talk/stop",
        summary="Stop recording; the question's transcript, then its answer, stream as NDJSON "
        "(the optional body limits what it recalls, as for /ask)",
        responses={**errors, 200: {"content": {NDJSON: {}}}},
    )
    async def ptt_stop(body: Recall | None = None) -> StreamingResponse:
        question = await blocking(daemon.stop_question)()

        def lines() -> Iterator[bytes]:
            yield _line({"type": "question", "text": question})
            try:
                limits = body.limits(daemon.settings.zone) if body is not None else {}
                answer = daemon.ask(question, **limits)
            except AssistantError as exc:
                # The recording is over either way: the client sees what was heard, and why
                # it was not answered (an unknown speaker, say), rather than losing both.
                yield _line({"type": "error", "error": str(exc)})
                return
            yield from _answer_lines(answer)

        return StreamingResponse(iterate_in_threadpool(lines()), media_type=NDJSON)

    @app.get("/speakers", response_model=list[SpeakerOut], summary="Voices heard, with how much each said")
    async def speakers() -> list[SpeakerOut]:
        return [_speaker(sp) for sp in await blocking(daemon.speakers)()]

    @app.get(
        "/speakers/suggestions",
        response_model=list[MergeSuggestionOut],
        summary="Speakers whose voices sound alike: perhaps one person heard as two (merge them if so)",
    )
    async def merge_suggestions() -> list[MergeSuggestionOut]:
        return [
            MergeSuggestionOut(keep=_speaker(m.keep), other=_speaker(m.other), cosine=round(m.cosine, 3))
            for m in await blocking(daemon.merge_suggestions)()
        ]

    @app.get(
        "/speakers/{key}/utterances",
        response_model=list[UtteranceOut],
        summary="A voice's last utterances, oldest first: who is this, before naming them",
        responses=errors,
    )
    async def speaker_lines(key: str, limit: Annotated[int, Query(ge=1, le=500)] = 20) -> list[UtteranceOut]:
        found = await blocking(daemon.speaker_lines)(key, limit)
        return [UtteranceOut(utterance_id=u.id or 0, speaker=u.speaker, time=u.time, text=u.text) for u in found]

    @app.get(
        "/transcript",
        response_model=list[UtteranceOut],
        summary="What was said in a time range (and by one speaker), oldest first: the newest `limit` lines of it",
        responses=errors,
    )
    async def transcript(
        since: Annotated[RecallTime, Query(description="From this time on (the forms /search takes).")] = None,
        until: Annotated[RecallTime, Query(description="Before this time.")] = None,
        speaker: Annotated[str | None, Query(min_length=1, max_length=MAX_SPEAKER_CHARS)] = None,
        limit: Annotated[int, Query(ge=1, le=5000)] = 200,
    ) -> list[UtteranceOut]:
        window = Recall.model_construct(since=since, until=until, speaker=speaker).limits(daemon.settings.zone)
        found = await blocking(daemon.transcript)(limit=limit, **window)
        return [UtteranceOut(utterance_id=u.id or 0, speaker=u.speaker, time=u.time, text=u.text) for u in found]

    @app.post(
        "/speakers/{key}/name",
        response_model=SpeakerOut,
        summary="Name a voice; its transcript and memory are relabelled",
        responses=errors,
    )
    async def name_speaker(key: str, body: SpeakerName) -> SpeakerOut:
        return _speaker(await blocking(daemon.rename_speaker)(key, body.name))

    @app.post(
        "/speakers/merge", response_model=SpeakerOut, summary="Two labels are one voice: merge them", responses=errors
    )
    async def merge_speakers(body: SpeakerMerge) -> SpeakerOut:
        return _speaker(await blocking(daemon.merge_speakers)(body.keep, body.other))

    @app.post(
        "/utterances/reassign",
        response_model=ReassignOut,
        summary="Correct who said what: utterances (by id or time range) go to another speaker, with their memory",
        responses=errors,
    )
    async def reassign(body: Reassign) -> ReassignOut:
        window = body.limits(daemon.settings.zone)
        result = await blocking(daemon.reassign)(body.to, body.utterance_ids, new_speaker=body.new_speaker, **window)
        return ReassignOut(
            speaker=_speaker(result.speaker), moved=list(result.moved), removed_speakers=list(result.removed_speakers)
        )

    @app.get("/memory", response_model=list[NodeOut], summary="The memory tree: scene > event > unit")
    async def memory() -> list[NodeOut]:
        return [_node(t) for t in await blocking(daemon.tree)()]

    @app.post(
        "/search",
        response_model=SearchOut,
        summary="What an answer would see: the recalled lines, retrieved paths and recent speech, and the "
        "filter applied, without asking the LLM",
        responses=errors,
    )
    async def search(body: Question) -> SearchOut:
        return search_out(await blocking(daemon.search)(body.question, **body.limits(daemon.settings.zone)))

    @app.post(
        "/export",
        summary="The memory as json (complete), markdown or jsonl (the transcript), streamed",
        responses={**errors, 200: {"content": {"application/json": {}, "text/markdown": {}, NDJSON: {}}}},
    )
    async def export(body: ExportRequest) -> StreamingResponse:
        selection = Selection(body.since, body.until, body.speaker)
        chunks = await blocking(daemon.export)(body.format, selection)
        media = {"json": "application/json", "markdown": "text/markdown", "jsonl": NDJSON}[body.format]
        return StreamingResponse(iterate_in_threadpool(chunks), media_type=media)

    @app.post("/import", response_model=ImportOut, summary="Restore or merge a JSON export", responses=errors)
    async def import_(body: ImportRequest) -> ImportOut:
        report = await blocking(daemon.import_file)(FilePath(body.path))
        return ImportOut(**asdict(report))

    @app.post(
        "/forget",
        response_model=ForgetOut,
        summary="Forget speech and what rests on it (dry_run, the default, only counts)",
        responses=errors,
    )
    async def forget(body: ForgetRequest) -> ForgetOut:
        f = ForgetFilter(body.speaker, body.since, body.until, body.text, body.everything)
        plan = await blocking(daemon.forget_plan)(f.check())
        out = ForgetOut(
            empty=plan.empty,
            utterances=len(plan.utterances),
            nodes=len(plan.nodes),
            refiled_events=len(plan.refiled_events),
            speakers=len(plan.speakers),
            examples=list(plan.examples),
        )
        if body.dry_run or plan.empty:
            return out
        report = await blocking(daemon.forget)(f)
        return out.model_copy(update={"examples": [], "database_bytes": report.database_bytes})

    @app.delete(
        "/memory/nodes/{node_id}",
        response_model=Deleted,
        summary="Forget one node and what hangs under it",
        responses=errors,
    )
    async def delete_node(node_id: Annotated[int, Path(ge=1, le=MAX_ID)]) -> Deleted:
        return Deleted(removed=await blocking(daemon.delete_node)(node_id))

    return app


def wrap(app: FastAPI, daemon: Daemon) -> ASGIApp:
    """The app as served: size limit first, then the token check for TCP requests."""
    opts = daemon.settings.daemon
    return BodyLimit(TcpToken(app, opts.tcp.token), opts.max_body_bytes)
