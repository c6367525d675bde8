"""How errors become responses: always `{"error": "..."}`, with a status that says whose fault it was."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import AssistantError, InputError

log = logging.getLogger(__name__)


async def bad_input(request: Request, exc: InputError) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=400)


async def failed(request: Request, exc: AssistantError) -> JSONResponse:
    # Not the caller's mistake: the daemon's log keeps it too.
    log.warning("%s %s: %s", request.method, request.url.path, exc)
    return JSONResponse({"error": str(exc)}, status_code=409)


async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
    return JSONResponse({"error": f"invalid request: {where}"}, status_code=422)


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    # FastAPI's and Starlette's own refusals (a body that is not UTF-8, an unknown route) would
    # otherwise answer {"detail": ...}, not the {"error": ...} every client here reads.
    return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)


def add_error_handlers(app: FastAPI) -> None:
    # InputError is an AssistantError: the more specific handler wins, whatever the order here.
    app.add_exception_handler(InputError, bad_input)
    app.add_exception_handler(AssistantError, failed)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, http_error)
