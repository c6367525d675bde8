"""What `assistant mcp` runs: the server on stdio (a desktop client starts it), or on streamable
HTTP on the loopback for clients that connect to a URL."""

from __future__ import annotations

import anyio

from ..config import Settings
from .auth import DaemonToken
from .connection import Daemon
from .server import build_server

# The daemon's own TCP listener defaults to 8765.
DEFAULT_PORT = 8766
LOOPBACK = "127.0.0.1"
PATH = "/mcp"


def serve(settings: Settings, *, http: bool = False, port: int = DEFAULT_PORT) -> None:
    """Serve until the client closes stdin (stdio) or the process is interrupted (HTTP)."""
    # Refused before anything starts: an HTTP server without a token is never up, not even briefly.
    token = DaemonToken.of(settings, port) if http else None
    anyio.run(_serve, settings, token)


async def _serve(settings: Settings, token: DaemonToken | None) -> None:
    async with Daemon.open(settings) as daemon:
        server = build_server(daemon, token)
        if token is None:
            await server.run_stdio_async()
        else:
            await server.run_streamable_http_async(host=LOOPBACK, port=token.port, streamable_http_path=PATH)
