"""/ask (an answer, streamed) and /search (what that answer would see, without the LLM)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from ...records import SearchResult
from ...wire import to_json
from ..requests import Question
from ..schema import model_of
from .ndjson import NDJSON, answer_lines
from .shared import ERRORS, DaemonDep

router = APIRouter()


@router.post(
    "/ask",
    summary="Ask the memory; the answer streams as NDJSON tokens, then the answer with its evidence",
    responses={**ERRORS, 200: {"content": {NDJSON: {}}}},
)
async def ask(body: Question, daemon: DaemonDep) -> StreamingResponse:
    # Retrieval runs before streaming starts, so a bad question or filter (an unknown speaker,
    # since not before until) is a 400, not an error line.
    answer = await run_in_threadpool(daemon.ask, body.question, **body.limits(daemon.settings.zone))
    return StreamingResponse(iterate_in_threadpool(answer_lines(answer)), media_type=NDJSON)


@router.post(
    "/search",
    response_model=model_of(SearchResult),
    summary="What an answer would see: the recalled lines, retrieved paths and recent speech, and the "
    "filter applied, without asking the LLM",
    responses=ERRORS,
)
async def search(body: Question, daemon: DaemonDep) -> Any:
    found = await run_in_threadpool(daemon.search, body.question, **body.limits(daemon.settings.zone))
    return to_json(SearchResult.of(found))
