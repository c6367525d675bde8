"""What the panes tell the app about the daemon, and how the daemon's errors read on screen.

Each pane talks to the daemon through the client the app gives it; the app keeps the connection
state and the status bar, so a pane that finds the daemon gone, or changes what it holds, says
so with one of these messages (they bubble up to the app).
"""

from __future__ import annotations

from textual.message import Message
from textual.widget import Widget

from ..daemon.client import DaemonRefused
from ..errors import AssistantError

GONE_NOTICE = "daemon went away; reconnecting…"


class DaemonLost(Message):
    """A call found no daemon on the socket, or lost it mid-answer."""


class DaemonChanged(Message):
    """A pane changed what the daemon holds (a name, a merge, a node forgotten): the status (its
    speakers, the budget) is fetched now rather than at the next poll."""


def said(exc: AssistantError) -> str:
    """An error as the screens show it: a refusal in the daemon's own words, anything else whole."""
    return exc.message if isinstance(exc, DaemonRefused) else str(exc)


def taken_down(widget: Widget) -> bool:
    """Whether `widget` is being removed or is gone. A worker awaiting the daemon can resume after
    the app began closing: its widget is then still attached but its children are already pruned,
    so querying them would raise. This is the test Textual makes itself before recomposing."""
    return not widget.is_attached or widget._pruning
