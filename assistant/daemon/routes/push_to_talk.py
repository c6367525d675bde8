"""/push-to-talk: record a spoken question, then answer it as /ask does. The recording's state
(GET /push-to-talk) is also that of a voice being enrolled (/speakers/enroll/start)."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from ...errors import AssistantError
from ...records import RecordingState
from ..push_to_talk import QUESTION
from ..requests import Recall
from .ndjson import NDJSON, answer_lines, line
from .shared import ERRORS, DaemonDep

router = APIRouter()


@router.get(
    "/push-to-talk",
    summary="What is being recorded (a question, or a voice to enroll): how long, and how loud just now",
)
async def ptt_state(daemon: DaemonDep) -> RecordingState:
    return daemon.push_to_talk.state()


@router.post("/push-to-talk/start", summary="Record a spoken question (never stored)", responses=ERRORS)
async def ptt_start(daemon: DaemonDep) -> dict[str, str]:
    daemon.start_question()
    return {"state": "recording"}


@router.post("/push-to-talk/cancel", summary="Drop the question being recorded", responses=ERRORS)
async def ptt_cancel(daemon: DaemonDep) -> dict[str, str]:
    daemon.push_to_talk.cancel(QUESTION)
    return {"state": "cancelled"}


@router.post(
    "/push-to-talk/stop",
    summary="Stop recording; the question's transcript, then its answer, stream as NDJSON "
    "(the optional body limits what it recalls, as for /ask)",
    responses={**ERRORS, 200: {"content": {NDJSON: {}}}},
)
async def ptt_stop(daemon: DaemonDep, body: Recall | None = None) -> StreamingResponse:
    question = await run_in_threadpool(daemon.push_to_talk.stop)

    def lines() -> Iterator[bytes]:
        yield line({"type": "question", "text": question})
        try:
            limits = body.limits(daemon.settings.zone) if body is not None else {}
            answer = daemon.ask(question, **limits)
        except AssistantError as exc:
            # The recording is over either way: the client sees what was heard, and why
            # it was not answered (an unknown speaker, say), rather than losing both.
            yield line({"type": "error", "error": str(exc)})
            return
        yield from answer_lines(answer)

    return StreamingResponse(iterate_in_threadpool(lines()), media_type=NDJSON)
