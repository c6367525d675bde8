"""What the chat's log shows: the questions, the answers as they stream, what each answer rests on
and was limited to, and the app's own notices."""

from __future__ import annotations

from datetime import tzinfo

from rich.text import Text
from textual.widgets import Label, ListItem, ListView, Static

from ..records import Evidence
from ..zones import format_time


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
    def __init__(self, evidence: Evidence, zone: tzinfo | None = None) -> None:
        self.evidence = evidence
        label = Text.assemble((evidence.speaker, "bold"), f" · {format_time(evidence.time, zone)} — “{evidence.text}”")
        super().__init__(Label(label))


class EvidenceList(ListView):
    """What the answer rests on; Enter (or a click) opens the transcript around a piece."""

    DEFAULT_CSS = "EvidenceList { height: auto; max-height: 8; }"
