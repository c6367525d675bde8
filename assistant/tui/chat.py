"""The chat: a question box, the session's questions and streamed answers with their evidence.

The pane asks the daemon itself, typed or spoken (push-to-talk), and streams each answer into
the log; it tells the app when the daemon goes away mid-answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import tzinfo
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Static

from ..daemon.client import AnswerFailed, AsyncDaemonClient, DaemonGone, DaemonRefused
from ..errors import AssistantError, InputError
from ..records import FROM_ARCHIVE, Answer, Evidence, RecallFilter, SpokenQuestion
from .answers import AnswerView, EvidenceItem, EvidenceList, FilterNote, Notice, QuestionView
from .connection import GONE_NOTICE, DaemonLost, said
from .dialogs import ContextScreen
from .recall import RecallBar
from .recording import RecordingIndicator

# How long a spoken question stays in the box, as if typed, before it is asked.
SHOWN_SPOKEN_SECONDS = 0.3


class ChatPane(Vertical):
    def __init__(
        self,
        client: AsyncDaemonClient,
        *,
        max_chars: int,
        max_question_seconds: float,
        zone: tzinfo | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.client = client
        self.max_chars = max_chars
        self.max_question_seconds = max_question_seconds
        self.zone = zone  # evidence times are shown in it (None = the system's)

    def compose(self) -> ComposeResult:
        yield VerticalScroll(
            Static("Ask about anything that was said. Enter asks; ctrl+t talks; ? or F1 for help.", classes="hint"),
            id="chat-log",
        )
        yield RecordingIndicator(self.client, limit_seconds=self.max_question_seconds, id="recording")
        yield RecallBar(zone=self.zone, id="recall")
        yield Input(placeholder="Ask a question…", id="question")

    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#chat-log", VerticalScroll)

    @property
    def input(self) -> Input:
        return self.query_one("#question", Input)

    @property
    def recall(self) -> RecallBar:
        return self.query_one(RecallBar)

    @property
    def recording(self) -> RecordingIndicator:
        return self.query_one(RecordingIndicator)

    def on_recall_bar_done(self, event: RecallBar.Done) -> None:
        event.stop()
        self.input.focus()

    # --- asking -------------------------------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "question":
            return
        event.stop()
        question = " ".join(event.value.split())
        if not question:
            self.app.notify("Type a question first; nothing was sent.", title="Empty question")
            return
        if len(question) > self.max_chars:
            # Refused here, before anything is sent or rendered: a huge paste must never freeze the UI.
            self.add_notice(
                f"That question is {len(question):,} characters long; the limit is {self.max_chars:,} "
                "(memory.answer.max_question_chars). Nothing was sent.",
                error=True,
            )
            event.input.value = ""
            return
        try:
            recall = self.recall.limits()
        except InputError as exc:
            # The question stays in the box: fixing the limit (ctrl+l) and pressing Enter asks it.
            self.add_notice(f"The limit is not usable: {exc}. Nothing was sent.", error=True)
            return
        event.input.value = ""
        self.ask(question, recall)

    @work(group="ask")
    async def ask(self, question: str, recall: dict[str, Any]) -> None:
        answer = self.start_answer(question)
        await self.stream(answer, self.client.ask(question, **recall))

    async def stream(self, answer: AnswerView, pieces: AsyncIterator[SpokenQuestion | str | Answer]) -> None:
        """Show an answer as it comes: its text piece by piece, then the whole with its evidence."""
        try:
            async for piece in pieces:
                if isinstance(piece, Answer):
                    # Finished only once what it rests on is on screen, so that `done` means the
                    # whole answer is shown: with the mounts not awaited, a test on a loaded
                    # machine found the evidence list mounted and still empty after `done`.
                    await self.add_evidence(answer, piece.evidence)
                    await self.add_filter(answer, piece.filter)
                    if piece.from_archive:
                        await self.log_view.mount(FilterNote(FROM_ARCHIVE), after=answer)
                    answer.finish(piece.text, knows=piece.knows)
                elif isinstance(piece, str):
                    answer.append(piece)
                self.log_view.scroll_end(animate=False)
        except AnswerFailed as exc:
            answer.fail(exc.message)
            self.log_view.scroll_end(animate=False)
        except DaemonRefused as exc:
            answer.fail(f"refused: {exc.message}")
            self.log_view.scroll_end(animate=False)
        except DaemonGone:
            answer.fail(f"{GONE_NOTICE} (the answer was cut off)")
            self.log_view.scroll_end(animate=False)
            self.post_message(DaemonLost())

    @on(EvidenceList.Selected)
    def open_evidence(self, event: EvidenceList.Selected) -> None:
        if isinstance(event.item, EvidenceItem):
            self.app.push_screen(ContextScreen(self.client, event.item.evidence, self.zone))

    # --- push-to-talk -------------------------------------------------------------------------

    def toggle_recording(self) -> None:
        """Start recording a spoken question, or stop and ask the one being recorded."""
        if self.recording.since is None:
            self.record_question()
        else:
            self.ask_spoken_question()

    def cancel_recording(self) -> None:
        if self.recording.since is not None:
            self.drop_question()

    @work(exclusive=True, group="ptt")
    async def record_question(self) -> None:
        try:
            await self.client.start_recording()
        except AssistantError as exc:
            self.add_notice(f"Push-to-talk: {said(exc)}", error=True)
            return
        self.recording.start()

    @work(exclusive=True, group="ptt")
    async def drop_question(self) -> None:
        self.recording.stop()
        try:
            await self.client.cancel_recording()
        except AssistantError as exc:
            self.add_notice(f"Push-to-talk: {said(exc)}", error=True)
            return
        self.add_notice("Recording cancelled; nothing was asked.")

    @work(exclusive=True, group="ptt")
    async def ask_spoken_question(self) -> None:
        self.recording.stop()
        answer: AnswerView | None = None
        try:
            recall = self.recall.limits()
        except AssistantError as exc:
            # The recording is stopped either way; losing the spoken question to a typo in the
            # filter row would be worse than answering it unlimited, and saying so.
            self.add_notice(f"Push-to-talk: the limit is not usable ({exc}); asked without it.", error=True)
            recall = {}
        pieces = self.client.stop_recording(**recall)
        try:
            async for piece in pieces:
                if isinstance(piece, SpokenQuestion):
                    # Shown in the box as if typed, then asked: the user sees what was understood.
                    self.input.value = piece.text
                    await asyncio.sleep(SHOWN_SPOKEN_SECONDS)
                    self.input.value = ""
                    answer = self.start_answer(piece.text, spoken=True)
                    break
        except AssistantError as exc:
            self.add_notice(f"Push-to-talk: {said(exc)}", error=True)
            return
        if answer is not None:
            await self.stream(answer, pieces)

    # --- the log ------------------------------------------------------------------------------

    def add_notice(self, text: str, *, error: bool = False) -> Notice:
        notice = Notice(text, error=error)
        self.log_view.mount(notice)
        self.log_view.scroll_end(animate=False)
        return notice

    def start_answer(self, question: str, *, spoken: bool = False) -> AnswerView:
        answer = AnswerView()
        self.log_view.mount(QuestionView(question, spoken=spoken), answer)
        self.log_view.scroll_end(animate=False)
        return answer

    async def add_filter(self, answer: AnswerView, applied: RecallFilter) -> None:
        """Say under the answer what its recall was limited to (nothing when it was not)."""
        described = applied.describe(self.zone)
        if described:
            await self.log_view.mount(FilterNote(described), after=answer)

    async def add_evidence(self, answer: AnswerView, evidence: tuple[Evidence, ...]) -> None:
        if not evidence:
            return
        items = [EvidenceItem(e, self.zone) for e in evidence]
        await self.log_view.mount(EvidenceList(*items, classes="evidence"), after=answer)
        self.log_view.scroll_end(animate=False)
