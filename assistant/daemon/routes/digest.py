"""/digest: what one day's conversations were about, and the commitments made in them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from ...records import Digest
from ...wire import to_json
from ..schema import model_of
from .shared import ERRORS, DaemonDep

router = APIRouter()


@router.get(
    "/digest",
    response_model=model_of(Digest),
    summary="A day's digest: its topics (from the memory tree) and the commitments made, each citing the "
    "utterances it rests on; built from what is stored now (the LLM confirms the commitments)",
    responses=ERRORS,
)
async def digest(
    daemon: DaemonDep,
    day: Annotated[
        str | None,
        Query(
            pattern=r"^\d{4}-\d{2}-\d{2}$",
            description="The day, YYYY-MM-DD, midnight to midnight in the daemon's time_zone; default today.",
        ),
    ] = None,
) -> Any:
    return to_json(await run_in_threadpool(daemon.digest, day))
