"""The running daemon as the tools reach it, and its failures as messages the model can act on.

The server starts whether or not a daemon runs (a desktop client starts it at login, perhaps
before the daemon), so each call finds out then: a daemon that is not running is a tool error
that says how to start it, and a refusal (an unknown speaker, say) is one in the daemon's words.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver.exceptions import ToolError

from ..config import Settings
from ..daemon.client import HOW_TO_START, AsyncDaemonClient, DaemonGone, DaemonRefused
from ..daemon.instance import running_pid, socket_path
from ..errors import AssistantError


class Daemon:
    """One `AsyncDaemonClient` for the server's lifetime: it connects per request, so a daemon
    started (or restarted) after the server is found by the next call."""

    def __init__(self, settings: Settings, client: AsyncDaemonClient) -> None:
        self.settings = settings
        self.client = client

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: Settings) -> AsyncIterator[Daemon]:
        client = AsyncDaemonClient(socket_path(settings))
        try:
            yield cls(settings, client)
        finally:
            await client.aclose()

    @asynccontextmanager
    async def calling(self, failure: type[Exception] = ToolError) -> AsyncIterator[AsyncDaemonClient]:
        """The client, for one call; what goes wrong becomes a `failure` (ToolError for a tool,
        ResourceError for a resource) carrying a message for the model."""
        try:
            yield self.client
        except DaemonGone as exc:
            raise failure(self.not_answering(exc)) from None
        except DaemonRefused as exc:
            raise failure(exc.message) from None
        except AssistantError as exc:  # input the client refused before sending it
            raise failure(str(exc)) from None

    def not_answering(self, exc: DaemonGone) -> str:
        pid = running_pid(self.settings)
        if pid is None:
            return f"no daemon is running for {self.settings.data_dir}: {HOW_TO_START}; then try again"
        return f"the daemon (pid {pid}) did not answer ({exc}); it may still be starting: try again in a moment"
