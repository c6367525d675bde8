"""What every router uses: the daemon as a dependency, and the error responses the schema lists."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from ..daemon import Daemon
from ..requests import ErrorOut


def get_daemon(request: Request) -> Daemon:
    """The daemon `create_app` was given (kept on the app's state)."""
    daemon: Daemon = request.app.state.daemon
    return daemon


DaemonDep = Annotated[Daemon, Depends(get_daemon)]

# The refusals a route with a body or a key can answer, for its OpenAPI description.
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut},
    413: {"model": ErrorOut},
    422: {"model": ErrorOut, "description": "The request does not fit the schema"},
}
