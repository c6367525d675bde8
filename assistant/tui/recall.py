"""The chat's filter row: limit what questions recall to one speaker and a time window.

One line above the question box: a speaker (filled from the daemon's speakers), since and until.
ctrl+l jumps to it, Tab moves along it, Enter or Escape goes back to the question, ctrl+r clears
it. While anything is set the row is highlighted, so a limited question never looks like an
open one.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label, Select

from ..errors import InputError
from ..records import Speaker
from ..zones import check_window, local_zone, parse_when

HINT = "ctrl+l limit"
TIME_TIP = (
    "A date (2026-11-16) or a date and time (2026-11-16 14:00), in local time unless it names an "
    "offset (2026-11-16T14:00+01:00); or seconds since the epoch."
)


class RecallBar(Horizontal):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "done", "Back to the question", id="recall.done", tooltip="The limit stays as it is"),
        Binding("ctrl+r", "clear", "Clear the limit", id="recall.clear", tooltip="Ask about anyone, any time"),
    ]

    class Done(Message):
        """The user is finished with the row: the question box takes the focus back."""

    def __init__(self, *, zone: tzinfo | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Typed times without an offset are read in it: the zone answers show times in.
        self.zone = zone or local_zone(None)
        self.speakers: tuple[Speaker, ...] = ()

    def compose(self) -> ComposeResult:
        yield Label(HINT, id="recall-label")
        yield Select[str]([], prompt="any speaker", id="recall-speaker", compact=True)
        # Labelled beside the boxes, not only by placeholders: a filled-in row still says which is which.
        yield Label("since", classes="recall-bound")
        yield Input(placeholder="2026-11-16", id="recall-since", compact=True, tooltip=TIME_TIP)
        yield Label("until", classes="recall-bound")
        yield Input(
            placeholder="2026-11-16 14:00",
            id="recall-until",
            compact=True,
            tooltip=f"{TIME_TIP} Only what was said before it.",
        )

    @property
    def speaker_select(self) -> Select[str]:
        return self.query_one("#recall-speaker", Select)

    def show_speakers(self, speakers: tuple[Speaker, ...]) -> None:
        """The choices, from the daemon's speakers; the chosen one stays chosen while it exists."""
        # Only a new name or speaker rebuilds the list: the status poll repeats itself, and counts
        # change with every utterance heard, but a rebuild would close a list the user has open.
        same = [(sp.id, sp.name) for sp in speakers] == [(sp.id, sp.name) for sp in self.speakers]
        self.speakers = speakers
        if same:
            return
        select = self.speaker_select
        chosen = select.value
        select.set_options([(sp.name, str(sp.id)) for sp in speakers])
        if isinstance(chosen, str) and any(str(sp.id) == chosen for sp in speakers):
            select.value = chosen
        self._mark()

    def limits(self) -> dict[str, Any]:
        """What the daemon's /ask takes (only what is set), or InputError naming the field at fault."""
        since = self._time("since")
        until = self._time("until")
        check_window(since, until, zone=self.zone)
        speaker = self.speaker_select.value
        body = {"since": since, "until": until, "speaker": speaker if isinstance(speaker, str) else None}
        return {k: v for k, v in body.items() if v is not None}

    def _time(self, which: str) -> float | None:
        text = self.query_one(f"#recall-{which}", Input).value.strip()
        if not text:
            return None
        try:
            return parse_when(text, self.zone)
        except ValueError as exc:
            raise InputError(f"{which}: {exc}") from None

    @property
    def active(self) -> bool:
        return bool(
            isinstance(self.speaker_select.value, str)
            or self.query_one("#recall-since", Input).value.strip()
            or self.query_one("#recall-until", Input).value.strip()
        )

    def _mark(self) -> None:
        self.set_class(self.active, "-active")
        self.query_one("#recall-label", Label).update("limited" if self.active else HINT)
        for which in ("since", "until"):
            field = self.query_one(f"#recall-{which}", Input)
            try:
                self._time(which)
                field.remove_class("-invalid")
            except InputError:
                field.add_class("-invalid")

    @on(Input.Changed)
    @on(Select.Changed)
    def changed(self, event: Input.Changed | Select.Changed) -> None:
        event.stop()
        self._mark()

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        event.stop()  # the chat's handler asks only what the question box submits
        self.post_message(self.Done())

    def action_done(self) -> None:
        self.post_message(self.Done())

    def action_clear(self) -> None:
        self.speaker_select.clear()
        self.query_one("#recall-since", Input).value = ""
        self.query_one("#recall-until", Input).value = ""
        self._mark()

    def focus_first(self) -> None:
        self.speaker_select.focus()
