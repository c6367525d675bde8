"""The speakers screen: who was heard and for how long; rename, who-is-this and merge through modals,
and the voices that sound alike, suggested for merging."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Label, Static


def speech_time(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"


class SpeakersPane(Vertical):
    BINDINGS = [  # noqa: RUF012 (Textual reads it as a class attribute)
        Binding("n", "rename", "Rename", id="speakers.rename", tooltip="Name the selected voice"),
        Binding("w", "who", "Who is this?", id="speakers.who", tooltip="What the selected voice said; name them"),
        Binding("m", "merge", "Merge", id="speakers.merge", tooltip="Merge two labels that are one voice"),
    ]

    class RenameRequested(Message):
        def __init__(self, speaker: dict[str, Any]) -> None:
            super().__init__()
            self.speaker = speaker

    class WhoRequested(Message):
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
        self.suggestions: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        table: DataTable[str] = DataTable(id="speakers-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("id", "name", "utterances", "speech", "enrolled")
        yield table
        yield Static("", id="merge-suggestions")
        yield Label("n rename · w who is this? · m merge two speakers", classes="hint")

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

    def show_suggestions(self, suggestions: list[dict[str, Any]]) -> None:
        """Pairs whose voices sound alike ({"keep", "other", "cosine"}), strongest first."""
        self.suggestions = suggestions
        lines = [
            f"Perhaps one voice: {m['keep']['name']} (#{m['keep']['id']}) and {m['other']['name']} "
            f"(#{m['other']['id']}), cosine {m['cosine']:.2f} — select one and press m to merge"
            for m in suggestions
        ]
        self.query_one("#merge-suggestions", Static).update("\n".join(lines))

    def suggested_pair(self, speaker: dict[str, Any] | None) -> tuple[str, str] | None:
        """The strongest suggestion involving `speaker` (any, when None): (keep, other) ids."""
        for m in self.suggestions:
            ids = (str(m["keep"]["id"]), str(m["other"]["id"]))
            if speaker is None or str(speaker["id"]) in ids:
                return ids
        return None

    def selected(self) -> dict[str, Any] | None:
        table = self.query_one(DataTable)
        if not self.speakers or table.cursor_row < 0 or table.cursor_row >= len(self.speakers):
            return None
        return self.speakers[table.cursor_row]

    def action_rename(self) -> None:
        speaker = self.selected()
        if speaker is not None:
            self.post_message(self.RenameRequested(speaker))

    def action_who(self) -> None:
        speaker = self.selected()
        if speaker is not None:
            self.post_message(self.WhoRequested(speaker))

    def action_merge(self) -> None:
        self.post_message(self.MergeRequested(self.selected()))
