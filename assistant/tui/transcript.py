"""The live transcript pane: utterances as the daemon files them, one colour per speaker.

Lines are kept as data, not as rendered text, so a rename relabels what is already shown:
the speakers' names come from the status poll and the pane re-renders when they change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import RichLog

from ..zones import local_zone

COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "red", "bright_cyan", "bright_magenta")
KEEP = 500  # lines: the pane is a glance at what is being said, the archive keeps the rest


@dataclass(frozen=True)
class Line:
    utterance_id: int | None
    speaker_id: int | None
    speaker: str
    text: str
    time: float


def clock(t: float, zone: tzinfo | None = None) -> str:
    """ "09:05:00 WET": the time of day in `zone` (None = the system's), naming the zone."""
    return datetime.fromtimestamp(t, tz=zone or local_zone(None)).strftime("%H:%M:%S %Z")


class TranscriptPane(RichLog):
    class Heard(Message):
        """An utterance arrived on the live stream."""

        def __init__(self, event: dict[str, Any]) -> None:
            super().__init__()
            self.event = event

    class Relabel(Message):
        """The daemon gave utterances already shown to another speaker (its re-clustering)."""

        def __init__(self, event: dict[str, Any]) -> None:
            super().__init__()
            self.event = event

    class Connection(Message):
        """The stream connected (`up`) or lost the daemon."""

        def __init__(self, up: bool, detail: str = "") -> None:
            super().__init__()
            self.up, self.detail = up, detail

    def __init__(self, *, zone: tzinfo | None = None, **kwargs: Any) -> None:
        super().__init__(wrap=True, markup=False, auto_scroll=True, **kwargs)
        self.zone = zone  # lines are timed in it (None = the system's)
        self.lines_kept: list[Line] = []
        self.names: dict[int, str] = {}
        self.notice: str | None = None

    def add(self, event: dict[str, Any]) -> None:
        """Show an utterance; one already shown (sent again when the stream reconnected) is skipped."""
        uid = event.get("utterance_id")
        if uid is not None and any(line.utterance_id == uid for line in self.lines_kept):
            return
        sid = event.get("speaker_id")
        speaker, text, at = event.get("speaker") or "?", event.get("text", ""), float(event.get("time") or 0)
        line = Line(event.get("utterance_id"), sid, speaker, text, at)
        if sid is not None and event.get("speaker"):
            self.names.setdefault(sid, event["speaker"])
        self.lines_kept = [*self.lines_kept[-(KEEP - 1) :], line]
        self.write(self._render(line))

    def relabel(self, utterance_ids: list[int], speaker_id: int, speaker: str) -> None:
        """These utterances were said by another speaker: re-render the lines showing them."""
        ids = set(utterance_ids)
        if not any(line.utterance_id in ids for line in self.lines_kept):
            return
        self.names[speaker_id] = speaker
        self.lines_kept = [
            Line(line.utterance_id, speaker_id, speaker, line.text, line.time) if line.utterance_id in ids else line
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

    def label(self, line: Line) -> str:
        return self.names.get(line.speaker_id, line.speaker) if line.speaker_id is not None else line.speaker

    def _render(self, line: Line) -> Text:
        colour = COLOURS[(line.speaker_id or 0) % len(COLOURS)]
        return Text.assemble(
            (f"{clock(line.time, self.zone)} ", "dim"), (self.label(line), f"bold {colour}"), ": ", line.text
        )
