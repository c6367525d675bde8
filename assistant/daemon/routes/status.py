"""/status, and /pause and /resume, which answer with the status they leave."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ...records import Status
from ...wire import to_json
from ..schema import model_of
from .shared import DaemonDep

router = APIRouter()


@router.get("/status", response_model=model_of(Status), summary="Listening state, lag, memory budget, models")
async def status(daemon: DaemonDep) -> Any:
    return to_json(await run_in_threadpool(daemon.status))


@router.post("/pause", response_model=model_of(Status), summary="Stop listening (nothing is heard until resume)")
async def pause(daemon: DaemonDep) -> Any:
    daemon.pause()
    return await status(daemon)


@router.post("/resume", response_model=model_of(Status), summary="Listen again")
async def resume(daemon: DaemonDep) -> Any:
    daemon.resume()
    return await status(daemon)
