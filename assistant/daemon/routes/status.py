"""/status, and /pause and /resume, which answer with the status they leave."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ..converters import speaker_out
from ..wire import StatusOut
from .shared import DaemonDep

router = APIRouter()


@router.get("/status", response_model=StatusOut, summary="Listening state, lag, memory budget, models")
async def status(daemon: DaemonDep) -> StatusOut:
    s = await run_in_threadpool(daemon.status)
    out = asdict(s)
    out["speakers"] = [speaker_out(sp) for sp in s.speakers]
    return StatusOut(**out)


@router.post("/pause", response_model=StatusOut, summary="Stop listening (nothing is heard until resume)")
async def pause(daemon: DaemonDep) -> StatusOut:
    daemon.pause()
    return await status(daemon)


@router.post("/resume", response_model=StatusOut, summary="Listen again")
async def resume(daemon: DaemonDep) -> StatusOut:
    daemon.resume()
    return await status(daemon)
