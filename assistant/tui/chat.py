"""The chat: a question box, the session's questions and streamed answers with their evidence.

The pane only shows things; the app's workers talk to the daemon and post the messages below.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Label, ListItem, ListView, Static

from ..daemon.client import describe_filter
from ..errors import InputError
from ..zones import format_time
from .recall import RecallBar


class QuestionView(Static):
    def __init__(self, question: str, *, spoken: bool = False) -> None:
        prefix = "🎤 " if spoken else "› "
        super().__init__(Text(prefix + question), classes="question")


class Notice(Static):
    """A line from the app, not the daemon: refusals, connection trouble, push-to-talk."""

    def __init__(self, text: str, *, error: bool = False) -> None:
        super().__init__(Text(text), classes="notice -error" if error else "notice")


class AnswerView(Static):
    """An answer as it streams: tokens are appended, then the final text replaces them."""

    def __init__(self) -> None:
        super().__init__("…", classes="answer -pending")
        self.text = ""
        self.tokens = 0
        self.done = False

    def append(self, token: str) -> None:
        self.tokens += 1
        self.text += token
        self.update(Text(self.text))

    def finish(self, text: str, *, knows: bool = True) -> None:
        self.text, self.done = text, True
        self.remove_class("-pending")
        self.set_class(not knows, "-unknown")
        self.update(Text(text))

    def fail(self, message: str) -> None:
        self.done = True
        self.remove_class("-pending")
        self.add_class("-error")
        self.update(Text((self.text + "\n" if self.text else "") + f"✖ {message}"))


class FilterNote(Static):
    """What an answer's recall was limited to: the row's limits and those read from the question."""

    def __init__(self, described: str) -> None:
        super().__init__(Text(described), classes="filter-note")


class EvidenceItem(ListItem):
    def __init__(self, evidence: dict[str, Any], zone: tzinfo | None = None) -> None:
        self.evidence = evidence
        when = format_time(evidence["time"], zone) if evidence.get("time") is not None else "?"
        label = Text.assemble((f"{evidence.get('speaker', '?')}", "bold"), f" · {when} — “{evidence.get('text', '')}”")
        super().__init__(Label(label))


class EvidenceList(ListView):
    """What the answer rests on; Enter (or a click) opens the transcript around a piece."""

    DEFAULT_CSS = "EvidenceList { height: auto; max-height: 8; }"


class ChatPane(Vertical):
    class Ask(Message):
        """The user submitted a question that passed the local checks, with the filter row's limits."""

        def __init__(self, question: str, recall: dict[str, Any] | None = None) -> None:
            super().__init__()
            self.question = question
            self.recall = recall or {}

    def __init__(self, *, max_chars: int, zone: tzinfo | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_chars = max_chars
        self.zone = zone  # evidence times are shown in it (None = the system's)

    def compose(self) -> ComposeResult:
        yield VerticalScroll(
            Static("Ask about anything that was said. Enter asks; ctrl+t talks; ? or F1 for help.", classes="hint"),
            id="chat-log",
        )
        yield Static("", id="recording")
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

    def on_recall_bar_done(self, event: RecallBar.Done) -> None:
        event.stop()
        self.input.focus()

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
        self.post_message(self.Ask(question, recall))

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

    def add_filter(self, answer: AnswerView, applied: dict[str, Any] | None) -> None:
        """Say under the answer what its recall was limited to (nothing when it was not)."""
        described = describe_filter(applied, self.zone)
        if described:
            self.log_view.mount(FilterNote(described), after=answer)

    def add_evidence(self, answer: AnswerView, evidence: list[dict[str, Any]]) -> None:
        if not evidence:
            return
        items = [EvidenceItem(e, self.zone) for e in evidence]
        self.log_view.mount(EvidenceList(*items, classes="evidence"), after=answer)
        self.log_view.scroll_end(animate=False)
