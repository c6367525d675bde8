"""/transcript (what was said in a time range) and /utterances/stream (the live transcript, as NDJSON)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ...records import Evidence, HeardLine, Relabelled
from ..requests import MAX_SPEAKER_CHARS, Recall, RecallTime
from ..schema import model_of
from .ndjson import NDJSON, line
from .shared import ERRORS, DaemonDep
from .speakers import lines as listed

router = APIRouter()


@router.get(
    "/utterances/stream",
    summary="The live transcript: each utterance as soon as it is stored, after the newest `recent` ones "
    "already stored, and each correction of who said what (NDJSON)",
    responses={200: {"content": {NDJSON: {}}}},
)
async def utterances(
    daemon: DaemonDep,
    recent: Annotated[int, Query(ge=0, le=1000, description="First send the newest N stored utterances.")] = 0,
) -> StreamingResponse:
    loop = asyncio.get_running_loop()
    backlog = daemon.settings.daemon.subscriber_backlog
    lines: asyncio.Queue[HeardLine | Relabelled] = asyncio.Queue(maxsize=backlog)
    skipped = 0

    def on_heard(event: HeardLine | Relabelled) -> None:  # the writer thread: never wait here
        loop.call_soon_threadsafe(offer, event)

    def offer(event: HeardLine | Relabelled) -> None:
        nonlocal skipped
        if lines.full():
            lines.get_nowait()  # a slow reader loses the oldest line, never the writer's time
            skipped += 1
        lines.put_nowait(event)

    unsubscribe = daemon.subscribe(on_heard)

    async def stream() -> AsyncIterator[bytes]:
        nonlocal skipped
        try:
            yield line({"type": "hello", "acknowledged": daemon.acknowledged})
            # Subscribed before reading the archive, so nothing falls between the two; what
            # both hold is sent once.
            caught_up = 0
            for event in await run_in_threadpool(daemon.recent_heard, recent) if recent else []:
                caught_up = max(caught_up, event.utterance_id or 0)
                yield line({"type": "utterance", **asdict(event)})
            while not daemon.closing:
                try:
                    event = await asyncio.wait_for(lines.get(), timeout=1.0)
                except TimeoutError:
                    continue  # look at `closing` again: a stop ends the stream cleanly
                if isinstance(event, HeardLine) and event.utterance_id and event.utterance_id <= caught_up:
                    continue
                if skipped:
                    yield line({"type": "skipped", "count": skipped})
                    skipped = 0
                kind = "utterance" if isinstance(event, HeardLine) else "relabel"
                yield line({"type": kind, **asdict(event)})
        finally:
            unsubscribe()

    return StreamingResponse(stream(), media_type=NDJSON)


@router.get(
    "/transcript",
    response_model=list[model_of(Evidence)],
    summary="What was said in a time range (and by one speaker), oldest first: the newest `limit` lines of it",
    responses=ERRORS,
)
async def transcript(
    daemon: DaemonDep,
    since: Annotated[RecallTime, Query(description="From this time on (the forms /search takes).")] = None,
    until: Annotated[RecallTime, Query(description="Before this time.")] = None,
    speaker: Annotated[str | None, Query(min_length=1, max_length=MAX_SPEAKER_CHARS)] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 200,
) -> Any:
    window = Recall.model_construct(since=since, until=until, speaker=speaker).limits(daemon.settings.zone)
    return listed(await run_in_threadpool(daemon.transcript, limit=limit, **window))
