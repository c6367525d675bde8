"""Answers that reach a pane after the app began closing.

A pane's worker awaits the daemon; if the app closes meanwhile, Textual prunes the pane's children
before the pane itself, so the answer can resume the worker on a pane still attached but empty.
Showing it then must be a no-op, not a NoMatches that fails the app on the way out (it did, in CI).
The removal below is Textual's own; no daemon is needed, as nothing is asked of one.
"""

from __future__ import annotations

import asyncio
from datetime import UTC
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widget import Widget

from assistant.daemon.client import AsyncDaemonClient
from assistant.records import Digest, Level, MemoryNode
from assistant.tui.connection import taken_down
from assistant.tui.digest import DigestPane
from assistant.tui.memory import MemoryPane
from assistant.tui.speakers import SpeakersPane

NODE = MemoryNode(1, Level.SCENE, "a trip to Lisbon", 5, 1.0, 1, 0.0, 60.0)
DAY = Digest("2026-11-26", "UTC", 0.0, 86_400.0, 0, (), (), ())


class Panes(App[None]):
    def __init__(self, socket: Path) -> None:
        super().__init__()
        self.client = AsyncDaemonClient(socket)  # never called: nothing listens there

    def compose(self) -> ComposeResult:
        yield MemoryPane(self.client, id="memory-pane")
        yield SpeakersPane(self.client, enroll_seconds=20, zone=UTC, id="speakers-pane")
        yield DigestPane(self.client, zone=UTC, id="digest-pane")


SHOWS = {
    "memory tree": (MemoryPane, lambda p: p.show_tree([NODE])),
    "merge suggestions": (SpeakersPane, lambda p: p.show_suggestions([])),
    "name suggestions": (SpeakersPane, lambda p: p.show_names([])),
    "digest": (DigestPane, lambda p: p.show(DAY)),
}


@pytest.mark.parametrize("what", SHOWS)
def test_an_answer_arriving_while_the_pane_is_taken_down_is_dropped(tmp_path: Path, what: str) -> None:
    kind, show = SHOWS[what]

    async def scenario() -> None:
        app = Panes(tmp_path / "nobody.sock")
        async with app.run_test() as pilot:
            pane: Widget = app.query_one(kind)
            assert not taken_down(pane)
            show(pane)  # shown while mounted: the children are there
            await pilot.pause()
            for child in list(pane.children):
                await child.remove()  # what closing does first
            removal = pane.remove()
            assert taken_down(pane)
            show(pane)  # must not query the children that are gone
            await removal
            assert taken_down(pane)
            show(pane)

    asyncio.run(scenario())
