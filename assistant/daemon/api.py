"""The daemon's local HTTP API (FastAPI): its OpenAPI description is served at /openapi.json.

Streams (answers, the live transcript) are newline-delimited JSON, one object per line, each
with a "type". Errors are JSON objects `{"error": "..."}` with a 4xx status; a request body
larger than `daemon.max_body_bytes` gets 413 before it is read whole.

    curl --unix-socket $XDG_RUNTIME_DIR/assistant/api.sock http://assistant/status
    curl --unix-socket ... -N -d '{"question": "When is the trip?"}' http://assistant/ask
    curl --unix-socket ... -d '{"question": "the trip", "speaker": "Sam", "since": "2026-11-16"}' \
         http://assistant/search

The routes are in `routes/` (one router per concern), their request bodies in `requests.py`;
they answer with the records of `assistant.records` (described by `schema.py`). The refusals are
in `error_handlers.py` and `middleware.py`.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp

from .daemon import Daemon
from .error_handlers import add_error_handlers
from .middleware import BodyLimit, TcpToken
from .routes import ROUTERS


def create_app(daemon: Daemon) -> FastAPI:
    app = FastAPI(
        title="assistant daemon",
        version="1",
        description="The local API of the on-device voice memory assistant. Reachable only on its owner's "
        "Unix socket (mode 0600), or on loopback TCP with a bearer token when configured.",
    )
    # The routes reach the daemon through `routes.shared.get_daemon`, which reads it here.
    app.state.daemon = daemon
    add_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    return app


def wrap(app: FastAPI, daemon: Daemon) -> ASGIApp:
    """The app as served: size limit first, then the token check for TCP requests."""
    opts = daemon.settings.daemon
    return BodyLimit(TcpToken(app, opts.tcp.token), opts.max_body_bytes)
