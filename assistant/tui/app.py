"""`assistant tui`: the app, its workers (every daemon call), and the glue between the panes.

Each call to the daemon runs in an async worker on Textual's loop (httpx awaits the socket, so
nothing blocks the UI); results come back as messages the panes handle. The status poll and the
live-transcript reader keep going when the daemon goes away and pick it up again when it returns.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from ..config import Settings, load_settings
from ..daemon.instance import socket_path
from ..errors import AssistantError
from .chat import AnswerView, ChatPane, EvidenceItem, EvidenceList
from .client import AsyncDaemonClient, DaemonGone, DaemonRefused
from .dialogs import (
    ConfirmScreen,
    ContextScreen,
    Correction,
    ExportScreen,
    ForgetDone,
    ForgetScreen,
    HelpScreen,
    MergeScreen,
    NameScreen,
    ReassignScreen,
    WhoScreen,
)
from .memory import MemoryPane, MemoryTree, count_nodes
from .offline import NoDaemonScreen
from .recording import recording_line
from .speakers import SpeakersPane
from .status import StatusBar
from .transcript import TranscriptPane

POLL_SECONDS = 2.0
RECONNECT_SECONDS = 1.0
# While a question is recorded the indicator redraws and asks the daemon for its level this often.
RECORDING_TICK_SECONDS = 0.25
GONE_NOTICE = "daemon went away; reconnecting…"
CATCH_UP_LINES = 100  # stored lines the transcript pane shows on connecting


class StatusArrived(Message):
    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__()
        self.status = status


class DaemonLost(Message):
    pass


class Streamed(Message):
    """One line of an answer stream (token, answer, error), for the answer view it belongs to."""

    def __init__(self, answer: AnswerView, line: dict[str, Any]) -> None:
        super().__init__()
        self.answer, self.line = answer, line


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
        Binding("f4", "show_tab('speakers')", "Speakers", id="tab.speakers", tooltip="Name and merge voices"),
        Binding("f5", "toggle_listening", "Pause/resume", id="listening", tooltip="Stop or start listening"),
        Binding("f6", "export", "Export", id="export", tooltip="Write the memory to a file"),
        Binding("f7", "forget", "Forget", id="forget", tooltip="Forget by speaker, time or words"),
        Binding("f8", "toggle_theme", "Theme", id="theme", tooltip="Light or dark"),
        Binding("f9", "correct", "Correct", id="correct", tooltip="Say who really said lines of the transcript"),
        # Not in the footer (it is full at 80 columns): the filter row itself shows this key.
        Binding("ctrl+l", "limit", "Limit", show=False, id="limit", tooltip="Limit questions by speaker and time"),
    ]

    def __init__(self, config: Path | None = None, *, settings: Settings | None = None) -> None:
        super().__init__()
        self.config_path = config
        self.settings = settings or load_settings(config)
        self.socket = socket_path(self.settings)
        self.client = AsyncDaemonClient(self.socket)
        self.status: dict[str, Any] | None = None
        self.connected = False
        self.ever_connected = False
        self.recording_since: float | None = None
        # The daemon's last word on the recording (its level and length), polled with each tick.
        self.recording_state: dict[str, Any] | None = None
        self.theme = "textual-dark"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # With no daemon only leaving, help and the palette make sense; the rest would only fail.
        if any(isinstance(s, NoDaemonScreen) for s in self.screen_stack):
            return action in ("quit", "help", "command_palette")
        return True

    # --- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with TabbedContent(id="tabs", initial="chat"):
            with TabPane("Chat", id="chat"), Horizontal(id="chat-row"):
                yield ChatPane(
                    max_chars=self.settings.memory.answer.max_question_chars, zone=self.settings.zone, id="chat-pane"
                )
                yield TranscriptPane(zone=self.settings.zone, id="transcript")
            with TabPane("Memory", id="memory"):
                yield MemoryPane(id="memory-pane")
            with TabPane("Speakers", id="speakers"):
                yield SpeakersPane(id="speakers-pane")
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

    def on_mount(self) -> None:
        self.chat.input.focus()
        self.first_contact()
        self.set_interval(POLL_SECONDS, self.poll_status)
        self.set_interval(RECORDING_TICK_SECONDS, self._tick_recording)
        self.read_transcript()

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
            self.main.query_one(StatusBar).show_offline(f"no daemon answers on {self.socket}")
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
            self.load_memory()
        self.main.query_one(StatusBar).show_status(status)
        self.memory_pane.show_budget(status["memory"])
        if status["speakers"] != self.speakers_pane.speakers:
            self.load_suggestions()  # a new voice, a merge or a move changes which voices sound alike
        self.speakers_pane.show_speakers(status["speakers"])
        self.chat.recall.show_speakers(status["speakers"])
        self.transcript.rename({sp["id"]: sp["name"] for sp in status["speakers"]})

    @on(DaemonLost)
    def lost(self) -> None:
        if self._panes_gone():
            return
        was = self.connected
        self.connected = False
        if self.ever_connected:
            self.main.query_one(StatusBar).show_offline(GONE_NOTICE)
            if was:
                self.recording_since = None
                self._tick_recording()

    @work(exclusive=True, group="transcript")
    async def read_transcript(self) -> None:
        """The live transcript for as long as the app runs: reconnects whenever the daemon returns."""
        pane = self.transcript
        while True:
            try:
                # The newest lines first: a TUI opened (or reconnected) mid-conversation shows what
                # was just said, and can correct it.
                async for event in self.client.utterances(recent=CATCH_UP_LINES):
                    kind = event.get("type")
                    if kind == "hello":
                        pane.post_message(TranscriptPane.Connection(True))
                    elif kind == "utterance":
                        pane.post_message(TranscriptPane.Heard(event))
                    elif kind == "relabel":
                        pane.post_message(TranscriptPane.Relabel(event))
                    elif kind == "skipped":
                        pane.post_message(TranscriptPane.Connection(True, f"({event['count']} lines skipped)"))
            except (DaemonGone, DaemonRefused):
                pass
            detail = GONE_NOTICE if self.ever_connected else "waiting for the daemon…"
            pane.post_message(TranscriptPane.Connection(False, detail))
            await asyncio.sleep(RECONNECT_SECONDS)

    @on(TranscriptPane.Heard)
    def heard(self, message: TranscriptPane.Heard) -> None:
        if self._panes_gone():
            return
        self.transcript.add(message.event)

    @on(TranscriptPane.Relabel)
    def relabelled(self, message: TranscriptPane.Relabel) -> None:
        if self._panes_gone():
            return
        e = message.event
        self.transcript.relabel(list(e.get("utterance_ids") or []), int(e["speaker_id"]), str(e.get("speaker") or "?"))

    @on(TranscriptPane.Connection)
    def transcript_connection(self, message: TranscriptPane.Connection) -> None:
        if self._panes_gone():
            return
        self.transcript.say(None if message.up and not message.detail else message.detail)

    # --- chat ---------------------------------------------------------------------------------

    @on(ChatPane.Ask)
    def ask_question(self, message: ChatPane.Ask) -> None:
        self.ask(message.question, message.recall)

    @work(group="ask")
    async def ask(self, question: str, recall: dict[str, Any] | None = None) -> None:
        answer = self.chat.start_answer(question)
        await self._stream(answer, self.client.ask(question, **(recall or {})))

    async def _stream(self, answer: AnswerView, lines: Any) -> None:
        try:
            async for line in lines:
                self.post_message(Streamed(answer, line))
        except DaemonRefused as exc:
            self.post_message(Streamed(answer, {"type": "error", "error": f"refused: {exc}"}))
        except DaemonGone:
            self.post_message(Streamed(answer, {"type": "error", "error": f"{GONE_NOTICE} (the answer was cut off)"}))
            self.post_message(DaemonLost())

    @on(Streamed)
    def streamed(self, message: Streamed) -> None:
        if self._panes_gone():
            return
        answer, line = message.answer, message.line
        kind = line.get("type")
        if kind == "token":
            answer.append(line["text"])
        elif kind == "answer":
            answer.finish(line["text"], knows=line.get("knows", True))
            self.chat.add_evidence(answer, line.get("evidence", []))
            self.chat.add_filter(answer, line.get("filter"))
        elif kind == "error":
            answer.fail(line.get("error", "the daemon could not answer"))
        self.chat.log_view.scroll_end(animate=False)

    @on(EvidenceList.Selected)
    def open_evidence(self, event: EvidenceList.Selected) -> None:
        if isinstance(event.item, EvidenceItem):
            self.push_screen(ContextScreen(event.item.evidence, self.settings.zone))

    # --- push-to-talk -------------------------------------------------------------------------

    def action_push_to_talk(self) -> None:
        if self.recording_since is None:
            self.ptt_start()
        else:
            self.ptt_stop()

    def action_cancel_recording(self) -> None:
        if self.recording_since is not None:
            self.ptt_cancel()

    @work(exclusive=True, group="ptt")
    async def ptt_start(self) -> None:
        try:
            await self.client.ptt_start()
        except AssistantError as exc:
            self.chat.add_notice(f"Push-to-talk: {exc}", error=True)
            return
        self.recording_since = time.monotonic()
        self._tick_recording()

    @work(exclusive=True, group="ptt")
    async def ptt_cancel(self) -> None:
        self.recording_since = None
        self._tick_recording()
        try:
            await self.client.ptt_cancel()
        except AssistantError as exc:
            self.chat.add_notice(f"Push-to-talk: {exc}", error=True)
            return
        self.chat.add_notice("Recording cancelled; nothing was asked.")

    @work(exclusive=True, group="ptt")
    async def ptt_stop(self) -> None:
        self.recording_since = None
        self._tick_recording()
        answer: AnswerView | None = None
        try:
            recall = self.chat.recall.limits()
        except AssistantError as exc:
            # The recording is stopped either way; losing the spoken question to a typo in the
            # filter row would be worse than answering it unlimited, and saying so.
            self.chat.add_notice(f"Push-to-talk: the limit is not usable ({exc}); asked without it.", error=True)
            recall = {}
        lines = self.client.ptt_stop(**recall)
        try:
            async for line in lines:
                if line.get("type") == "question":
                    # Shown in the box as if typed, then asked: the user sees what was understood.
                    self.chat.input.value = line["text"]
                    await asyncio.sleep(0.3)
                    self.chat.input.value = ""
                    answer = self.chat.start_answer(line["text"], spoken=True)
                    break
        except AssistantError as exc:
            self.chat.add_notice(f"Push-to-talk: {exc}", error=True)
            return
        if answer is not None:
            await self._stream(answer, lines)

    def _tick_recording(self) -> None:
        found = self.main.query("#recording")
        if not found:
            return  # the interval can fire while the app is still composing or already closing
        indicator = found.first(Static)
        if self.recording_since is None:
            self.recording_state = None
            indicator.display = False
            return
        now = time.monotonic()
        limit = self.settings.daemon.max_question_seconds
        indicator.update(recording_line(now - self.recording_since, int(now * 2) % 2 == 0, self.recording_state, limit))
        indicator.display = True
        self.poll_recording()

    @work(exclusive=True, group="ptt-level")
    async def poll_recording(self) -> None:
        """The level and length the daemon recorded so far, for the next tick's meter."""
        try:
            state = await self.client.ptt_state()
        except AssistantError:
            return  # the status poll reports a lost daemon; the meter just stops moving
        if self.recording_since is not None and state.get("recording"):
            self.recording_state = state

    # --- memory -------------------------------------------------------------------------------

    @work(exclusive=True, group="memory")
    async def load_memory(self) -> None:
        try:
            nodes = await self.client.memory()
        except AssistantError as exc:
            self.notify(str(exc), title="Memory", severity="error")
            return
        self.memory_pane.show_tree(nodes)

    @on(TabbedContent.TabActivated)
    def tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "memory" and self.connected:
            self.load_memory()

    @on(MemoryTree.ForgetRequested)
    def forget_node(self, message: MemoryTree.ForgetRequested) -> None:
        node = message.node
        under = count_nodes(node) - 1
        what = f"this {node['level']}" + (f" and the {under} nodes under it" if under else "")
        text = node["text"] if len(node["text"]) < 200 else node["text"][:199] + "…"

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.delete_node(node["id"])

        self.push_screen(ConfirmScreen(f"Forget {what}?\n\n“{text}”"), confirmed)

    @work(group="memory-delete")
    async def delete_node(self, node_id: int) -> None:
        try:
            out = await self.client.delete_node(node_id)
        except AssistantError as exc:
            self.notify(str(exc), title="Forget", severity="error")
            return
        self.notify(f"Forgot {len(out['removed'])} nodes.", title="Memory")
        self.load_memory()
        self.poll_status()

    @on(ForgetDone)
    def forgot(self) -> None:
        self.load_memory()
        self.poll_status()

    # --- speakers -----------------------------------------------------------------------------

    @on(SpeakersPane.RenameRequested)
    def rename_requested(self, message: SpeakersPane.RenameRequested) -> None:
        speaker = message.speaker

        def named(name: str | None) -> None:
            if name and name != speaker["name"]:
                self.rename_speaker(str(speaker["id"]), name)

        self.push_screen(NameScreen(speaker), named)

    @work(group="speakers")
    async def rename_speaker(self, key: str, name: str) -> None:
        try:
            await self.client.name_speaker(key, name)
        except AssistantError as exc:
            self.notify(str(exc), title="Rename", severity="error")
            return
        self.notify(f"Speaker {key} is now {name}.", title="Speakers")
        self.poll_status()

    @on(SpeakersPane.WhoRequested)
    def who_requested(self, message: SpeakersPane.WhoRequested) -> None:
        speaker = message.speaker

        def named(name: str | None) -> None:
            if name and name != speaker["name"]:
                self.rename_speaker(str(speaker["id"]), name)

        self.push_screen(WhoScreen(speaker, self.settings.zone), named)

    @work(exclusive=True, group="suggestions")
    async def load_suggestions(self) -> None:
        try:
            suggestions = await self.client.merge_suggestions()
        except AssistantError:
            return  # the status poll says when the daemon is gone
        if not self._panes_gone():
            self.speakers_pane.show_suggestions(suggestions)

    @on(SpeakersPane.MergeRequested)
    def merge_requested(self, message: SpeakersPane.MergeRequested) -> None:
        pane = self.speakers_pane
        if len(pane.speakers) < 2:
            self.notify("There is only one speaker.", title="Merge")
            return

        def chosen(pair: tuple[str, str] | None) -> None:
            if pair:
                self.merge_speakers(*pair)

        self.push_screen(MergeScreen(pane.speakers, message.speaker, pane.suggested_pair(message.speaker)), chosen)

    def action_correct(self) -> None:
        pane = self.transcript
        lines = [(line.utterance_id, pane.label(line), line.text) for line in pane.lines_kept if line.utterance_id]
        if not lines:
            self.notify("Nothing in the live transcript to correct yet.", title="Correct")
            return

        def chosen(correction: Correction | None) -> None:
            if correction:
                self.reassign(correction)

        self.push_screen(ReassignScreen(lines, self.speakers_pane.speakers), chosen)

    @work(group="speakers")
    async def reassign(self, correction: Correction) -> None:
        try:
            out = await self.client.reassign(
                correction.to, list(correction.utterance_ids), new_speaker=correction.new_speaker
            )
        except AssistantError as exc:
            self.notify(str(exc), title="Correct", severity="error")
            return
        # The live stream brings the relabel to the transcript pane, as for the daemon's own moves.
        self.notify(f"{len(out['moved'])} line(s) now said by {out['speaker']['name']}.", title="Correct")
        self.poll_status()

    @work(group="speakers")
    async def merge_speakers(self, keep: str, other: str) -> None:
        try:
            await self.client.merge_speakers(keep, other)
        except AssistantError as exc:
            self.notify(str(exc), title="Merge", severity="error")
            return
        self.notify(f"Merged speaker {other} into {keep}.", title="Speakers")
        self.poll_status()

    # --- other actions ------------------------------------------------------------------------

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

    def action_toggle_listening(self) -> None:
        self.toggle_listening()

    @work(exclusive=True, group="listening")
    async def toggle_listening(self) -> None:
        paused = bool(self.status and self.status.get("paused"))
        try:
            status = await (self.client.resume() if paused else self.client.pause())
        except AssistantError as exc:
            self.notify(str(exc), title="Listening", severity="error")
            return
        self.post_message(StatusArrived(status))

    def action_export(self) -> None:
        self.push_screen(ExportScreen(Path.cwd() / "assistant-export.json"))

    def action_forget(self) -> None:
        self.push_screen(ForgetScreen())

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
            "Speakers", "Rename, identify and merge voices (F4)", lambda: self.action_show_tab("speakers")
        )
        yield SystemCommand("Pause or resume listening", "F5", self.action_toggle_listening)
        yield SystemCommand("Export the memory", "To a file, atomically (F6)", self.action_export)
        yield SystemCommand("Forget…", "By speaker, time or words, with a dry run (F7)", self.action_forget)
        yield SystemCommand("Toggle light/dark theme", "F8", self.action_toggle_theme)
        yield SystemCommand("Correct the transcript", "Say who really said lines (F9)", self.action_correct)
        yield SystemCommand("Help", "Keys and screens (? or F1)", self.action_help)
        yield SystemCommand("Reload the memory tree", "Fetch it again", self.load_memory)


def run(config: Path | None) -> None:
    AssistantApp(config).run()
