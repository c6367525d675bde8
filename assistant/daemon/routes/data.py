"""The user's data as a whole: /export, /import and /forget."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from ...memory.archive import Selection
from ...memory.forget import ForgetFilter
from ..wire import ExportRequest, ForgetOut, ForgetRequest, ImportOut, ImportRequest
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


@router.post("/import", response_model=ImportOut, summary="Restore or merge a JSON export", responses=ERRORS)
async def import_(body: ImportRequest, daemon: DaemonDep) -> ImportOut:
    report = await run_in_threadpool(daemon.import_file, Path(body.path))
    return ImportOut(**asdict(report))


@router.post(
    "/forget",
    response_model=ForgetOut,
    summary="Forget speech and what rests on it (dry_run, the default, only counts)",
    responses=ERRORS,
)
async def forget(body: ForgetRequest, daemon: DaemonDep) -> ForgetOut:
    f = ForgetFilter(body.speaker, body.since, body.until, body.text, body.everything)
    plan = await run_in_threadpool(daemon.forget_plan, f.check())
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
    report = await run_in_threadpool(daemon.forget, f)
    return out.model_copy(update={"examples": [], "database_bytes": report.database_bytes})
