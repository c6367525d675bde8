"""The user's data as a whole: /export, /import and /forget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from ...memory.forget import outcome
from ...records import ForgetFilter, ForgetOutcome, ImportReport, Selection
from ...wire import to_json
from ..requests import ExportRequest, ForgetRequest, ImportRequest
from ..schema import model_of
from .ndjson import NDJSON
from .shared import ERRORS, DaemonDep

router = APIRouter()


@router.post(
    "/export",
    summary="The memory as json (complete), markdown or jsonl (the transcript), streamed",
    responses={**ERRORS, 200: {"content": {"application/json": {}, "text/markdown": {}, NDJSON: {}}}},
)
async def export(body: ExportRequest, daemon: DaemonDep) -> StreamingResponse:
    selection = Selection(body.since, body.until, body.speaker)
    chunks = await run_in_threadpool(daemon.export, body.format, selection)
    media = {"json": "application/json", "markdown": "text/markdown", "jsonl": NDJSON}[body.format]
    return StreamingResponse(iterate_in_threadpool(chunks), media_type=media)


@router.post(
    "/import", response_model=model_of(ImportReport), summary="Restore or merge a JSON export", responses=ERRORS
)
async def import_(body: ImportRequest, daemon: DaemonDep) -> Any:
    return to_json(await run_in_threadpool(daemon.import_file, Path(body.path)))


@router.post(
    "/forget",
    response_model=model_of(ForgetOutcome),
    summary="Forget speech and what rests on it (dry_run, the default, only counts)",
    responses=ERRORS,
)
async def forget(body: ForgetRequest, daemon: DaemonDep) -> Any:
    f = ForgetFilter(body.speaker, body.since, body.until, body.text, body.everything)
    plan = await run_in_threadpool(daemon.forget_plan, f.check())
    if body.dry_run or plan.empty:
        return to_json(outcome(plan))
    return to_json(outcome(plan, await run_in_threadpool(daemon.forget, f)))
