"""The MCP server: the tools and resources over one daemon connection."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from .auth import DaemonToken
from .connection import Daemon
from .resources import register_resources
from .tools import register_tools

NAME = "assistant"


def build_server(daemon: Daemon, token: DaemonToken | None = None) -> MCPServer:
    """The server, its tools and resources answering through `daemon`; with `token`, HTTP requests
    must carry it (stdio needs none: whoever can start the process can read the config)."""
    zone = daemon.settings.zone
    server = MCPServer(
        NAME,
        title="Voice memory",
        instructions=_instructions(str(zone)),
        token_verifier=token,
        auth=token.settings if token is not None else None,
    )
    register_tools(server, daemon, zone)
    register_resources(server, daemon, zone)
    return server


def _instructions(zone: str) -> str:
    return (
        "The user's memory of what was said around them, heard and kept on their own machine. "
        "`search` finds what was said about something (fast); `ask` answers a question with the "
        "utterances it rests on (slower: it runs a local LLM); `transcript` gives the words of a time "
        "range; `speakers` says who is known. Times are ISO-8601 or seconds since the epoch; one without "
        f"an offset is read in {zone}, the zone every time is shown in. `forget` deletes for good: it only "
        "reports what would go unless called with confirm: true, which needs the user's agreement."
    )
