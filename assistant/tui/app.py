"""`assistant tui`: the app — its layout, the keys that work everywhere, and the connection.

Each pane talks to the daemon itself, in its own async workers, through the one client the app
gives it (httpx awaits the socket, so nothing blocks the UI). The app polls the daemon's status,
hands it to the status bar and the panes, and follows the connection: the poll and the panes
(`DaemonLost`) say when the daemon went away, the poll when it came back.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, TabbedContent, TabPane

from ..config import Settings, load_settings
from ..daemon.client import AsyncDaemonClient
from ..daemon.instance import socket_path
from ..errors import AssistantError
from ..records import RecordingState, Status
from .chat import ChatPane
from .connection import GONE_NOTICE, DaemonChanged, DaemonLost, said
from .dialogs import ExportScreen, ForgetDone, ForgetScreen, HelpScreen
from .digest import DigestPane
from .memory import MemoryPane, MemoryTree
from .offline import NoDaemonScreen
from .speakers import SpeakersPane
from .status import StatusBar
from .transcript import TranscriptPane

POLL_SECONDS = 2.0


class StatusArrived(Message):
    def __init__(self, status: Status) -> None:
        super().__init__()
        self.status = status


class AssistantApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "assistant"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (100, "-wide")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", id="quit", tooltip="Leave the TUI; the daemon keeps running"),
        Binding("f1,question_mark", "help", "Help", id="help", tooltip="Keys and what the screens do"),
        Binding("ctrl+t", "push_to_talk", "Talk", id="push_to_talk", tooltip="Start or stop a spoken question"),
        Binding("escape", "cancel_recording", "Cancel", show=False, id="cancel_recording", tooltip="Drop it"),
        Binding("f2", "show_tab('chat')", "Chat", id="tab.chat", tooltip="Ask questions"),
        Binding("f3", "show_tab('memory')", "Memory", id="tab.memory", tooltip="Browse and prune the memory"),
        Binding("f4", "show_tab('speakers')", "Speakers", id="tab.speakers", tooltip="Enroll, name and merge voices"),
        Binding("f5", "toggle_listening", "Pause/resume", id="listening", tooltip="Stop or start listening"),
        Binding("f6", "export", "Export", id="export", tooltip="Write the memory to a file"),
        Binding("f7", "forget", "Forget", id="forget", tooltip="Forget by speaker, time or words"),
        Binding("f8", "toggle_theme", "Theme", id="theme", tooltip="Light or dark"),
        Binding("f9", "correct", "Correct", id="correct", tooltip="Say who really said lines of the transcript"),
        # Not in the footer (it is full at 80 columns): the filter row itself shows this key.
        Binding("ctrl+l", "limit", "Limit", show=False, id="limit", tooltip="Limit questions by speaker and time"),
        # Nor this one: the tab bar shows the tab, and the help the key.
        Binding("ctrl+g", "show_tab('digest')", "Digest", show=False, id="tab.digest", tooltip="The day in brief"),
    ]

    def __init__(self, config: Path | None = None, *, settings: Settings | None = None) -> None:
        super().__init__()
        self.config_path = config
        self.settings = settings or load_settings(config)
        self.socket = socket_path(self.settings)
        self.client = AsyncDaemonClient(self.socket)
        self.status: Status | None = None
        self.connected = False
        self.ever_connected = False
        self.theme = "textual-dark"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # With no daemon only leaving, help and the palette make sense; the rest would only fail.
        if any(isinstance(s, NoDaemonScreen) for s in self.screen_stack):
            return action in ("quit", "help", "command_palette")
        return True

    # --- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        settings, zone = self.settings, self.settings.zone
        with TabbedContent(id="tabs", initial="chat"):
            with TabPane("Chat", id="chat"), Horizontal(id="chat-row"):
                yield ChatPane(
                    self.client,
                    max_chars=settings.memory.answer.max_question_chars,
                    max_question_seconds=settings.daemon.max_question_seconds,
                    zone=zone,
                    id="chat-pane",
                )
                yield TranscriptPane(zone=zone, id="transcript")
            with TabPane("Memory", id="memory"):
                yield MemoryPane(self.client, id="memory-pane")
            with TabPane("Speakers", id="speakers"):
                yield SpeakersPane(
                    self.client, enroll_seconds=settings.daemon.enroll_seconds, zone=zone, id="speakers-pane"
                )
            with TabPane("Digest", id="digest"):
                yield DigestPane(self.client, zone=zone, id="digest-pane")
        yield StatusBar("connecting…", id="status-bar")
        yield Footer()

    @property
    def main(self) -> Screen[Any]:
        """The screen the panes live on: App.query_one would search a dialog on top of it instead."""
        return self.screen_stack[0]

    def _panes_gone(self) -> bool:
        """Whether the panes are gone: a poll or a worker's message can land while the app closes,
        after its screens were taken down (the screen stack is then empty)."""
        return not self.screen_stack or not self.main.query(StatusBar)

    @property
    def chat(self) -> ChatPane:
        return self.main.query_one(ChatPane)

    @property
    def transcript(self) -> TranscriptPane:
        return self.main.query_one(TranscriptPane)

    @property
    def memory_pane(self) -> MemoryPane:
        return self.main.query_one(MemoryPane)

    @property
    def speakers_pane(self) -> SpeakersPane:
        return self.main.query_one(SpeakersPane)

    @property
    def status_bar(self) -> StatusBar:
        return self.main.query_one(StatusBar)

    @property
    def recording_since(self) -> float | None:
        """When the spoken question being recorded was started (time.monotonic()); None when none is."""
        return self.chat.recording.since

    @property
    def recording_state(self) -> RecordingState | None:
        """The daemon's last word on the question being recorded: its length and level."""
        return self.chat.recording.state

    def on_mount(self) -> None:
        self.chat.input.focus()
        self.first_contact()
        self.set_interval(POLL_SECONDS, self.poll_status)
        self.transcript.follow(self.client)

    async def on_unmount(self) -> None:
        await self.client.aclose()

    # --- connection ---------------------------------------------------------------------------

    @work(exclusive=True, group="status")
    async def first_contact(self) -> None:
        try:
            status = await self.client.status()
        except AssistantError:
            log = self.settings.data_dir / "tui-daemon.log"
            await self.push_screen(NoDaemonScreen(self.socket, self.config_path, log))
            self.status_bar.show_offline(f"no daemon answers on {self.socket}")
            return
        self.post_message(StatusArrived(status))

    @work(exclusive=True, group="status")
    async def poll_status(self) -> None:
        try:
            status = await self.client.status()
        except AssistantError:
            self.post_message(DaemonLost())
            return
        self.post_message(StatusArrived(status))

    @on(StatusArrived)
    def show_status(self, message: StatusArrived) -> None:
        if self._panes_gone():
            return
        status = message.status
        came_back = not self.connected
        self.status, self.connected = status, True
        if came_back:
            if isinstance(self.screen, NoDaemonScreen):
                self.pop_screen()
            if self.ever_connected:
                self.chat.add_notice("The daemon is back.")
            self.ever_connected = True
            self.memory_pane.load()
        self.status_bar.show_status(status)
        self.memory_pane.show_budget(status.memory)
        self.speakers_pane.show_speakers(status.speakers)
        self.chat.recall.show_speakers(status.speakers)
        self.transcript.rename({sp.id: sp.name for sp in status.speakers})

    @on(DaemonLost)
    def lost(self) -> None:
        if self._panes_gone():
            return
        was = self.connected
        self.connected = False
        if self.ever_connected:
            self.status_bar.show_offline(GONE_NOTICE)
            if was:
                self.chat.recording.stop()

    @on(DaemonChanged)
    def changed(self) -> None:
        self.poll_status()

    @on(ForgetDone)
    def forgot(self) -> None:
        self.memory_pane.load()
        self.poll_status()

    @on(TabbedContent.TabActivated)
    def tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "memory" and self.connected:
            self.memory_pane.load()
        elif event.pane.id == "digest" and self.connected:
            self.main.query_one(DigestPane).load()

    # --- actions ------------------------------------------------------------------------------

    def action_push_to_talk(self) -> None:
        self.chat.toggle_recording()

    def action_cancel_recording(self) -> None:
        self.chat.cancel_recording()

    def action_correct(self) -> None:
        self.speakers_pane.correct(self.transcript.correctable())

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_limit(self) -> None:
        self.action_show_tab("chat")
        self.chat.recall.focus_first()

    def clear_limit(self) -> None:
        self.chat.recall.action_clear()

    def action_show_tab(self, tab: str) -> None:
        self.main.query_one(TabbedContent).active = tab
        if tab == "chat":
            self.chat.input.focus()
        elif tab == "memory":
            self.main.query_one(MemoryTree).focus()
        elif tab == "speakers":
            self.main.query_one("#speakers-table").focus()
        elif tab == "digest":
            # Not the date box: there [ and ] would be typed, not step a day.
            self.main.query_one("#digest-body").focus()

    def enroll_voice(self) -> None:
        self.action_show_tab("speakers")
        self.speakers_pane.action_enroll()

    def action_toggle_listening(self) -> None:
        self.toggle_listening()

    @work(exclusive=True, group="listening")
    async def toggle_listening(self) -> None:
        paused = bool(self.status and self.status.paused)
        try:
            status = await (self.client.resume() if paused else self.client.pause())
        except AssistantError as exc:
            self.notify(said(exc), title="Listening", severity="error")
            return
        self.post_message(StatusArrived(status))

    def action_export(self) -> None:
        self.push_screen(ExportScreen(self.client, Path.cwd() / "assistant-export.json"))

    def action_forget(self) -> None:
        self.push_screen(ForgetScreen(self.client))

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Ask: focus the question box", "Type a question", lambda: self.action_show_tab("chat"))
        yield SystemCommand("Limit questions", "To one speaker and a time window (ctrl+l)", self.action_limit)
        yield SystemCommand("Clear the limit", "Ask about anyone, any time (ctrl+r in the row)", self.clear_limit)
        yield SystemCommand("Push-to-talk", "Start or stop a spoken question (ctrl+t)", self.action_push_to_talk)
        yield SystemCommand("Cancel recording", "Drop the spoken question (Escape)", self.action_cancel_recording)
        yield SystemCommand(
            "Memory browser", "The scene > event > unit tree (F3)", lambda: self.action_show_tab("memory")
        )
        yield SystemCommand(
            "Speakers", "Enroll, rename, identify and merge voices (F4)", lambda: self.action_show_tab("speakers")
        )
        yield SystemCommand("Enroll a voice", "Record someone and name them (F4, then e)", self.enroll_voice)
        yield SystemCommand("Pause or resume listening", "F5", self.action_toggle_listening)
        yield SystemCommand("Export the memory", "To a file, atomically (F6)", self.action_export)
        yield SystemCommand("Forget…", "By speaker, time or words, with a dry run (F7)", self.action_forget)
        yield SystemCommand("Toggle light/dark theme", "F8", self.action_toggle_theme)
        yield SystemCommand("Correct the transcript", "Say who really said lines (F9)", self.action_correct)
        yield SystemCommand("Help", "Keys and screens (? or F1)", self.action_help)
        yield SystemCommand("Reload the memory tree", "Fetch it again", lambda: self.memory_pane.load())


def run(config: Path | None) -> None:
    AssistantApp(config).run()
