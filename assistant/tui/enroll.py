"""Enrolling a voice from the speakers screen: a name, then about `daemon.enroll_seconds` of that
person speaking into the daemon's microphone, enrolled under the name.

The daemon records (it owns the microphone), as for a spoken question, and keeps the recording out
of the conversation. The dialog shows the REC line and level meter while it records, stops by
itself at the length limit, and on a refusal (no microphone, a bad name, too little speech) says
why and keeps the name, so recording again is one key.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from ..daemon.client import AsyncDaemonClient
from ..errors import AssistantError
from ..records import Speaker
from .connection import said
from .dialogs import Dialog
from .recording import RecordingIndicator

# What the dialog is doing: asking the name, asking the daemon to record, recording, enrolling.
NAMING, STARTING, RECORDING, ENROLLING = "naming", "starting", "recording", "enrolling"


class EnrollScreen(Dialog):
    """Enroll a voice; dismisses with the enrolled `Speaker`, or None when cancelled."""

    BINDINGS = [  # noqa: RUF012 (Textual reads it as a class attribute)
        Binding("escape", "cancel", "Cancel", id="enroll.cancel", tooltip="Stop without enrolling anything"),
    ]

    def __init__(self, client: AsyncDaemonClient, *, limit_seconds: float) -> None:
        super().__init__()
        self.client = client
        self.limit_seconds = limit_seconds
        self.phase = NAMING

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label("Enroll a voice", classes="dialog-title")
            yield Static(
                Text(
                    f"Whose voice is it? Then they speak alone, as they usually do (reading something aloud "
                    f"works), for {self.limit_seconds:.0f} s. Enter stops earlier, once there are a few seconds "
                    "of speech; Escape cancels. An existing speaker's name adds to their voice."
                ),
                classes="dialog-text",
            )
            yield Input(placeholder="their name", id="enroll-name")
            yield RecordingIndicator(
                self.client,
                limit_seconds=self.limit_seconds,
                keys="Enter stops and enrolls · Escape cancels",
                id="enroll-recording",
            )
            yield Static("", id="enroll-message")
            with Horizontal(classes="buttons"):
                yield Button("Record", variant="primary", id="record")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.name_box.focus()

    @property
    def name_box(self) -> Input:
        return self.query_one("#enroll-name", Input)

    @property
    def indicator(self) -> RecordingIndicator:
        return self.query_one(RecordingIndicator)

    def say(self, text: str, *, error: bool = False) -> None:
        shown = Text(f"✖ {text}", style="red") if error else Text(text)
        self.query_one("#enroll-message", Static).update(shown)

    # --- the keys -------------------------------------------------------------------------------

    @on(Input.Submitted)
    @on(Button.Pressed, "#record")
    def record_or_stop(self) -> None:
        if self.phase == NAMING:
            name = " ".join(self.name_box.value.split())
            if not name:
                self.say("Type their name first.", error=True)
                return
            self.start(name)
        elif self.phase == RECORDING:
            self.stop()

    @on(RecordingIndicator.LimitReached)
    def limit_reached(self, event: RecordingIndicator.LimitReached) -> None:
        event.stop()
        if self.phase == RECORDING:
            self.stop()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        if self.phase == RECORDING:
            self.drop()
        elif self.phase == NAMING:
            self.dismiss(None)
        # Starting or enrolling: the daemon is answering; what it says decides what comes next.

    # --- talking to the daemon ------------------------------------------------------------------

    @work(exclusive=True, group="enroll")
    async def start(self, name: str) -> None:
        self.phase = STARTING
        self.say("")
        try:
            await self.client.start_enrollment(name)
        except AssistantError as exc:
            # The name stays in the box: fix it, or the microphone, and press Enter again.
            self.phase = NAMING
            self.say(f"Cannot record: {said(exc)}", error=True)
            return
        self.phase = RECORDING
        self.name_box.disabled = True
        button = self.query_one("#record", Button)
        button.label = "Stop and enroll"
        button.focus()
        self.indicator.start()
        self.say(f"Recording {name}: they speak now.")

    @work(exclusive=True, group="enroll")
    async def stop(self) -> None:
        self.phase = ENROLLING
        self.indicator.stop()
        self.say("Enrolling…")
        try:
            speaker = await self.client.finish_enrollment()
        except AssistantError as exc:
            self.again(f"Nothing was enrolled: {said(exc)}")
            return
        self.dismiss(speaker)

    @work(exclusive=True, group="enroll")
    async def drop(self) -> None:
        self.indicator.stop()
        try:
            await self.client.cancel_enrollment()
        except AssistantError as exc:
            self.again(f"Cancelling: {said(exc)}")
            return
        self.dismiss(None)

    def again(self, problem: str) -> None:
        """Back to the name, kept, after a refusal: Enter records again."""
        self.phase = NAMING
        self.name_box.disabled = False
        self.query_one("#record", Button).label = "Record again"
        self.name_box.focus()
        self.say(problem, error=True)


def enrolled_notice(speaker: Speaker) -> str:
    minutes, seconds = divmod(round(speaker.enrolled_seconds), 60)
    return f"Enrolled {speaker.name} ({minutes}:{seconds:02d} of recording in all): recognised from now on."
