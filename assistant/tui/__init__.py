"""`assistant tui`: a terminal client of the daemon's local API (chat, live transcript, memory, speakers)."""

from .app import AssistantApp, run

__all__ = ["AssistantApp", "run"]
