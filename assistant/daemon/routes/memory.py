"""/memory: the memory tree, and forgetting one node of it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from starlette.concurrency import run_in_threadpool

from ...memory.service import browsed
from ...memory.speakers import MAX_ID
from ...records import MemoryNode
from ...wire import to_json
from ..requests import Deleted
from ..schema import model_of
from .shared import ERRORS, DaemonDep

router = APIRouter()


@router.get("/memory", response_model=list[model_of(MemoryNode)], summary="The memory tree: scene > event > unit")
async def memory(daemon: DaemonDep) -> Any:
    return to_json([browsed(t) for t in await run_in_threadpool(daemon.tree)])


@router.delete(
    "/memory/nodes/{node_id}",
    response_model=Deleted,
    summary="Forget one node and what hangs under it",
    responses=ERRORS,
)
async def delete_node(node_id: Annotated[int, Path(ge=1, le=MAX_ID)], daemon: DaemonDep) -> Deleted:
    return Deleted(removed=await run_in_threadpool(daemon.delete_node, node_id))
