"""The speakers screen: who was heard and for how long; rename and merge through modals."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Label


def speech_time(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"


class SpeakersPane(Vertical):
    BINDINGS = [  # noqa: RUF012 (Textual reads it as a class attribute)
        Binding("n", "rename", "Rename", id="speakers.rename", tooltip="Name the selected voice"),
        Binding("m", "merge", "Merge", id="speakers.merge", tooltip="Merge two labels that are one voice"),
    ]

    class RenameRequested(Message):
        def __init__(self, speaker: dict[str, Any]) -> None:
            super().__init__()
            self.speaker = speaker

    class MergeRequested(Message):
        def __init__(self, speaker: dict[str, Any] | None) -> None:
            super().__init__()
            self.speaker = speaker

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.speakers: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        table: DataTable[str] = DataTable(id="speakers-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("id", "name", "utterances", "speech", "enrolled")
        yield table
        yield Label("n rename the selected speaker · m merge two speakers", classes="hint")

    def show_speakers(self, speakers: list[dict[str, Any]]) -> None:
        if speakers == self.speakers:
            return  # the status poll repeats itself; redrawing would move the cursor
        self.speakers = speakers
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        for sp in speakers:
            table.add_row(
                str(sp["id"]),
                sp["name"],
                str(sp["utterances"]),
                speech_time(sp["speech_seconds"]),
                "yes" if sp["enrolled"] else "",
                key=str(sp["id"]),
            )
        if speakers:
            table.move_cursor(row=min(row, len(speakers) - 1))

    def selected(self) -> dict[str, Any] | None:
        table = self.query_one(DataTable)
        if not self.speakers or table.cursor_row < 0 or table.cursor_row >= len(self.speakers):
            return None
        return self.speakers[table.cursor_row]

    def action_rename(self) -> None:
        speaker = self.selected()
        if speaker is not None:
            self.post_message(self.RenameRequested(speaker))

    def action_merge(self) -> None:
        self.post_message(self.MergeRequested(self.selected()))
