"""The resources: the memory tree and the recent transcript, as JSON a client can attach to a chat.

A failure is a resource error carrying the same message a tool would give (the SDK answers it as
a protocol error, since a resource read has no error result of its own).
"""

from __future__ import annotations

from datetime import tzinfo

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from .connection import Daemon
from .views import TranscriptView, TreeView

# Enough to see what the conversation is about; the `transcript` tool reads further back.
RECENT_LINES = 50


def register_resources(server: MCPServer, daemon: Daemon, zone: tzinfo) -> None:
    @server.resource(
        "memory://tree",
        name="memory tree",
        description="Everything the memory keeps, as scenes > events > atomic units, with each node's "
        "utility and the time span it covers",
        mime_type="application/json",
    )
    async def tree() -> str:
        async with daemon.calling(ResourceError) as memory:
            scenes = await memory.tree()
        return TreeView.of(scenes, zone).model_dump_json(indent=1)

    @server.resource(
        "memory://transcript/recent",
        name="recent transcript",
        description=f"The last {RECENT_LINES} things said, oldest first, with who said them and when",
        mime_type="application/json",
    )
    async def recent_transcript() -> str:
        async with daemon.calling(ResourceError) as memory:
            said = await memory.transcript(limit=RECENT_LINES)
        return TranscriptView.of(said, zone).model_dump_json(indent=1)
