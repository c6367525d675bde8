"""`assistant mcp`: the memory as an MCP server, for desktop assistants and other MCP clients.

A client of the running daemon like the TUI: every tool and resource goes through
`AsyncDaemonClient`, so the server holds no models and opens no database. It speaks MCP over
stdio (a desktop client starts it) or streamable HTTP on the loopback (with the daemon's bearer
token).

  arguments   what the tools accept, and times read in the configured zone
  views       what they give back: records with times in that zone
  connection  the daemon, and its failures as messages the model can act on
  tools       ask, search, transcript, speakers, forget
  resources   memory://tree, memory://transcript/recent
  server      the MCPServer with all of the above
  auth        the bearer token the HTTP transport requires
  transports  stdio or HTTP: what `assistant mcp` runs
"""

from __future__ import annotations

from .server import build_server
from .transports import serve

__all__ = ["build_server", "serve"]
