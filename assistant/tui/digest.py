"""The day's digest: what the conversations were about, and who said they would do what.

The pane asks the daemon for one day's `Digest` (built from the memory on demand, so it shows
corrections and forgets at once) and lists its topics and commitments, each with the lines it
rests on. `[` and `]` step a day back and forth; the box takes any date.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Label, Static

from ..daemon.client import AsyncDaemonClient
from ..errors import AssistantError
from ..records import Commitment, Digest, DigestItem, Evidence
from .connection import said, taken_down


def today(zone: tzinfo) -> str:
    return datetime.now(zone).date().isoformat()


def step(day: str, days: int) -> str:
    return (date.fromisoformat(day) + timedelta(days=days)).isoformat()


def cited(evidence: tuple[Evidence, ...], zone: tzinfo) -> Text:
    """The lines an item rests on, one per line: time, speaker, words."""
    text = Text()
    for i, e in enumerate(evidence):
        if i:
            text.append("\n")
        at = datetime.fromtimestamp(e.time, zone).strftime("%H:%M")
        text.append(f"    {at} ", style="dim")
        text.append(f"{e.speaker}: ", style="bold dim")
        text.append(e.text, style="dim")
    return text


def topic_text(item: DigestItem, zone: tzinfo) -> Text:
    heading = Text.assemble(("• ", "bold"), (item.scene, "italic"), " \u203a ", (item.text, "bold"))
    return Text("\n").join([heading, cited(item.evidence, zone)])


def commitment_text(c: Commitment, zone: tzinfo) -> Text:
    due = f" \u2014 {c.due}" if c.due else ""
    heading = Text.assemble(("• ", "bold"), (c.who, "bold"), f" will {c.what}", (due, "italic"))
    return Text("\n").join([heading, cited(c.evidence, zone)])


class DigestPane(Vertical):
    BINDINGS = [  # noqa: RUF012 (Textual reads it as a class attribute)
        Binding("left_square_bracket", "day(-1)", "Day before", id="digest.before"),
        Binding("right_square_bracket", "day(1)", "Day after", id="digest.after"),
    ]

    def __init__(self, client: AsyncDaemonClient, *, zone: tzinfo, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = client
        self.zone = zone
        self.digest: Digest | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="digest-top"):
            yield Label("Day ", id="digest-day-label")
            yield Input(today(self.zone), placeholder="YYYY-MM-DD", id="digest-day")
            yield Label("", id="digest-summary")
        yield VerticalScroll(id="digest-body")
        yield Label("[ ] the day before / after · type a date and press Enter", classes="hint")

    @property
    def day(self) -> str:
        return self.query_one("#digest-day", Input).value.strip()

    def action_day(self, days: int) -> None:
        try:
            self.query_one("#digest-day", Input).value = step(self.day, days)
        except ValueError:
            self.query_one("#digest-day", Input).value = today(self.zone)
        self.load()

    @on(Input.Submitted, "#digest-day")
    def chosen(self, event: Input.Submitted) -> None:
        event.stop()
        self.load()

    @work(exclusive=True, group="digest")
    async def load(self) -> None:
        """Fetch the day's digest: when the pane is shown, and when the day changes."""
        try:
            date.fromisoformat(self.day)
        except ValueError:
            self.query_one("#digest-summary", Label).update(f"  {self.day!r} is not a date (YYYY-MM-DD)")
            return
        self.query_one("#digest-summary", Label).update("  reading the day…")
        try:
            digest = await self.client.digest(self.day)
        except AssistantError as exc:
            if not taken_down(self):
                self.query_one("#digest-summary", Label).update(f"  {said(exc)}")
            return
        self.show(digest)

    def show(self, digest: Digest) -> None:
        if taken_down(self):
            return  # the app closed while the daemon answered
        self.digest = digest
        who = ", ".join(digest.speakers) or "nobody"
        waiting = f"; {digest.unfiled} lines not filed yet" if digest.unfiled else ""
        self.query_one("#digest-summary", Label).update(f"  {digest.utterances} lines by {who}{waiting}")
        body = self.query_one("#digest-body", VerticalScroll)
        body.remove_children()
        parts: list[Static] = [Static(Text("Talked about", style="bold underline"), classes="digest-heading")]
        parts += [Static(topic_text(t, self.zone), classes="digest-item") for t in digest.topics]
        if not digest.topics:
            parts.append(Static("nothing filed in the memory for this day", classes="hint"))
        parts.append(Static(Text("Commitments", style="bold underline"), classes="digest-heading"))
        parts += [Static(commitment_text(c, self.zone), classes="digest-item") for c in digest.commitments]
        if not digest.commitments:
            parts.append(Static("nobody said they would do something", classes="hint"))
        body.mount_all(parts)
