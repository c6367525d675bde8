"""The live transcript pane: utterances as the daemon files them, one colour per speaker.

The pane follows the daemon's live stream itself, for as long as the app runs, picking it up
again whenever the daemon returns. Lines are kept as records, not as rendered text, so a rename
relabels what is already shown: the speakers' names come from the status poll and the pane
re-renders when they change.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable
from datetime import datetime, tzinfo
from typing import Any

from rich.text import Text
from textual import work
from textual.widgets import RichLog

from ..daemon.client import AsyncDaemonClient, DaemonGone, DaemonRefused
from ..records import Connected, HeardLine, Relabelled, Skipped
from ..zones import local_zone
from .connection import GONE_NOTICE

COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "red", "bright_cyan", "bright_magenta")
KEEP = 500  # lines: the pane is a glance at what is being said, the archive keeps the rest
CATCH_UP_LINES = 100  # stored lines the pane shows on connecting
RECONNECT_SECONDS = 1.0


def clock(t: float, zone: tzinfo | None = None) -> str:
    """ "09:05:00 WET": the time of day in `zone` (None = the system's), naming the zone."""
    return datetime.fromtimestamp(t, tz=zone or local_zone(None)).strftime("%H:%M:%S %Z")


class TranscriptPane(RichLog):
    def __init__(self, *, zone: tzinfo | None = None, **kwargs: Any) -> None:
        super().__init__(wrap=True, markup=False, auto_scroll=True, **kwargs)
        self.zone = zone  # lines are timed in it (None = the system's)
        self.lines_kept: list[HeardLine] = []
        self.names: dict[int, str] = {}
        self.notice: str | None = None

    @work(exclusive=True, group="transcript")
    async def follow(self, client: AsyncDaemonClient) -> None:
        """The live transcript for as long as the app runs: reconnects whenever the daemon returns."""
        connected_before = False
        while True:
            try:
                # The newest lines first: a TUI opened (or reconnected) mid-conversation shows what
                # was just said, and can correct it.
                async for event in client.utterances(recent=CATCH_UP_LINES):
                    if isinstance(event, Connected):
                        connected_before = True
                        self.say(None)
                    elif isinstance(event, HeardLine):
                        self.add(event)
                    elif isinstance(event, Relabelled):
                        self.relabel(event.utterance_ids, event.speaker_id, event.speaker)
                    elif isinstance(event, Skipped):
                        self.say(f"({event.count} lines skipped)")
            except (DaemonGone, DaemonRefused):
                pass
            self.say(GONE_NOTICE if connected_before else "waiting for the daemon…")
            await asyncio.sleep(RECONNECT_SECONDS)

    def add(self, line: HeardLine) -> None:
        """Show an utterance; one already shown (sent again when the stream reconnected) is skipped."""
        uid = line.utterance_id
        if uid is not None and any(kept.utterance_id == uid for kept in self.lines_kept):
            return
        if line.speaker:
            self.names.setdefault(line.speaker_id, line.speaker)
        self.lines_kept = [*self.lines_kept[-(KEEP - 1) :], line]
        self.write(self._render(line))

    def relabel(self, utterance_ids: Iterable[int], speaker_id: int, speaker: str) -> None:
        """These utterances were said by another speaker: re-render the lines showing them."""
        ids = set(utterance_ids)
        if not any(line.utterance_id in ids for line in self.lines_kept):
            return
        self.names[speaker_id] = speaker
        self.lines_kept = [
            dataclasses.replace(line, speaker_id=speaker_id, speaker=speaker) if line.utterance_id in ids else line
            for line in self.lines_kept
        ]
        self.redraw()

    def rename(self, names: dict[int, str]) -> None:
        """The speakers' current names; re-render if any shown line changes label."""
        changed = any(self.names.get(sid) != name for sid, name in names.items() if sid in self.names)
        self.names.update(names)
        if changed:
            self.redraw()

    def say(self, notice: str | None) -> None:
        """A connection notice above the lines (None clears it)."""
        if notice != self.notice:
            self.notice = notice
            self.redraw()

    def redraw(self) -> None:
        self.clear()
        if self.notice:
            self.write(Text(self.notice, style="bold italic"))
        for line in self.lines_kept:
            self.write(self._render(line))

    def correctable(self) -> list[tuple[int, str, str]]:
        """The lines shown that are filed (so can be given to someone else): (utterance id, label, text)."""
        return [(uid, self.label(line), line.text) for line in self.lines_kept if (uid := line.utterance_id)]

    def label(self, line: HeardLine) -> str:
        return self.names.get(line.speaker_id, line.speaker or "?")

    def _render(self, line: HeardLine) -> Text:
        colour = COLOURS[line.speaker_id % len(COLOURS)]
        return Text.assemble(
            (f"{clock(line.time, self.zone)} ", "dim"), (self.label(line), f"bold {colour}"), ": ", line.text
        )
