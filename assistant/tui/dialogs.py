"""Modal dialogs: confirm, rename, merge, who-is-this, reassign, export, forget, the transcript around a
piece of evidence, help."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Markdown, Select, SelectionList, Static
from textual.widgets.selection_list import Selection as Choice  # `Selection` here is what an export covers

from ..daemon.client import AsyncDaemonClient
from ..errors import AssistantError
from ..exports import write_atomically
from ..records import Evidence, ForgetFilter, Selection, Speaker
from ..transcripts import parse_time
from ..zones import format_time, local_zone
from .connection import said

CONTEXT_SECONDS = 180  # either side of a piece of evidence: enough to see the exchange it came from
# Far more than a few minutes of speech ever holds: the window, not this, decides what is shown.
CONTEXT_LINES = 1000


def when(value: str, what: str) -> float | None:
    """A time typed by the user: epoch seconds or ISO-8601 (as the CLI's --since/--until)."""
    value = value.strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return parse_time(value, what)


class Dialog(ModalScreen[Any]):
    BINDINGS = [Binding("escape", "dismiss_none", "Close", id="dialog.close", tooltip="Close without doing anything")]  # noqa: RUF012

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class ConfirmScreen(Dialog):
    def __init__(self, question: str, *, action: str = "Forget") -> None:
        super().__init__()
        self.question, self.action = question, action

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(Text(self.question), classes="dialog-text")
            with Horizontal(classes="buttons"):
                yield Button(self.action, variant="error", id="yes")
                yield Button("Cancel", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # the safe choice is the default

    @on(Button.Pressed)
    def answer(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class NameScreen(Dialog):
    """Rename a speaker; dismisses with the new name or None."""

    def __init__(self, speaker: Speaker) -> None:
        super().__init__()
        self.speaker = speaker

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Name speaker {self.speaker.id} (now “{self.speaker.name}”):")
            yield Input(value=self.speaker.name, id="name")
            with Horizontal(classes="buttons"):
                yield Button("Rename", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def ok(self) -> None:
        name = self.query_one("#name", Input).value.strip()
        if not name:
            self.notify("A name cannot be empty.", severity="warning")
            return
        self.dismiss(name)

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)


class MergeScreen(Dialog):
    """Pick the speaker who stays and the one merged into them; dismisses with (keep, other) ids."""

    def __init__(
        self, speakers: Sequence[Speaker], selected: Speaker | None, suggested: tuple[str, str] | None = None
    ) -> None:
        """`suggested`: (keep, other) ids of voices that sound alike, filled in for the user to confirm."""
        super().__init__()
        self.speakers, self.selected, self.suggested = speakers, selected, suggested

    def compose(self) -> ComposeResult:
        options = [(f"{s.name} (#{s.id})", str(s.id)) for s in self.speakers]
        keep: str | Any = str(self.selected.id) if self.selected else Select.NULL
        other: str | Any = Select.NULL
        if self.suggested:
            keep, other = self.suggested
        with Vertical(classes="dialog"):
            yield Label("Two labels are one voice. Keep:")
            yield Select(options, value=keep, id="keep")
            yield Label("and merge into it:")
            yield Select(options, value=other, id="other")
            with Horizontal(classes="buttons"):
                yield Button("Merge", variant="warning", id="ok")
                yield Button("Cancel", id="cancel")

    @on(Button.Pressed, "#ok")
    def ok(self) -> None:
        keep, other = self.query_one("#keep", Select).value, self.query_one("#other", Select).value
        if not isinstance(keep, str) or not isinstance(other, str) or keep == other:
            self.notify("Pick two different speakers.", severity="warning")
            return
        self.dismiss((keep, other))

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)


class WhoScreen(NameScreen):
    """Who is this? An unnamed voice's last lines, and a box to name them; dismisses with the name or None."""

    SHOWN = 8  # lines: enough to recognise someone by what they talk about

    def __init__(self, client: AsyncDaemonClient, speaker: Speaker, zone: tzinfo | None = None) -> None:
        super().__init__(speaker)
        self.client = client
        self.zone = zone or local_zone(None)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(f"Who is {self.speaker.name} (#{self.speaker.id})?", classes="dialog-title")
            yield VerticalScroll(Static("loading…", id="who-lines"), id="context")
            yield Input(placeholder="their name", id="name")
            with Horizontal(classes="buttons"):
                yield Button("Name them", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#name", Input).focus()
        self.load()

    @work(exclusive=True)
    async def load(self) -> None:
        lines = self.query_one("#who-lines", Static)
        try:
            found = await self.client.speaker_lines(str(self.speaker.id), self.SHOWN)
        except AssistantError as exc:
            lines.update(Text(f"✖ {said(exc)}", style="red"))
            return
        out = Text()
        for u in found:
            out.append(f"{format_time(u.time, self.zone)}  ", style="dim")
            out.append(u.text + "\n")
        lines.update(out if out.plain else Text("Nothing they said is kept any more."))


@dataclass(frozen=True)
class Correction:
    """What the transcript's correction dialog asks for: these lines were said by `to`."""

    utterance_ids: tuple[int, ...]
    to: str  # a speaker's id, or a new speaker's name
    new_speaker: bool


class ReassignScreen(Dialog):
    """Say who really said lines of the live transcript; dismisses with a Correction or None."""

    SHOWN = 40  # the newest lines: a correction is made while the exchange is fresh

    def __init__(self, lines: list[tuple[int, str, str]], speakers: Sequence[Speaker]) -> None:
        """`lines`: (utterance id, speaker label, text) in the order said."""
        super().__init__()
        self.lines, self.speakers = lines[-self.SHOWN :], speakers

    def compose(self) -> ComposeResult:
        choices = [Choice(Text(f"{label}: {text}"), uid) for uid, label, text in self.lines]
        with Vertical(classes="dialog wide"):
            yield Label("Which lines were said by someone else? (space marks a line)", classes="dialog-title")
            yield SelectionList[int](*choices, id="lines")
            yield Label("They were said by:")
            yield Select([(f"{s.name} (#{s.id})", str(s.id)) for s in self.speakers], id="to")
            yield Input(placeholder="…or someone new: their name", id="new-name")
            with Horizontal(classes="buttons"):
                yield Button("Reassign", variant="warning", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        chosen = self.query_one("#lines", SelectionList)
        chosen.focus()
        if self.lines:
            chosen.highlighted = len(self.lines) - 1  # the newest line: the one most likely wrong

    @on(Button.Pressed, "#ok")
    def ok(self) -> None:
        ids = tuple(self.query_one("#lines", SelectionList).selected)
        new_name = self.query_one("#new-name", Input).value.strip()
        to = self.query_one("#to", Select).value
        if not ids:
            self.notify("Mark the lines first (space).", severity="warning")
        elif new_name:
            self.dismiss(Correction(ids, new_name, True))
        elif isinstance(to, str):
            self.dismiss(Correction(ids, to, False))
        else:
            self.notify("Pick who said them, or type a new name.", severity="warning")

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)


class ExportScreen(Dialog):
    """Export to a file: the daemon streams it, the file is written atomically (all or nothing)."""

    def __init__(self, client: AsyncDaemonClient, default_path: Path) -> None:
        super().__init__()
        self.client = client
        self.default_path = default_path

    def compose(self) -> ComposeResult:
        formats = [("json (complete, re-importable)", "json"), ("markdown (to read)", "markdown"), ("jsonl", "jsonl")]
        with Vertical(classes="dialog"):
            yield Label("Export the memory", classes="dialog-title")
            with Grid(classes="form"):
                yield Label("format")
                yield Select(formats, value="json", allow_blank=False, id="format", compact=True)
                yield Label("since")
                yield Input(placeholder="ISO-8601 or epoch seconds", id="since", compact=True)
                yield Label("until")
                yield Input(placeholder="ISO-8601 or epoch seconds", id="until", compact=True)
                yield Label("speaker")
                yield Input(placeholder="name or id (all when empty)", id="speaker", compact=True)
                yield Label("to")
                yield Input(value=str(self.default_path), id="path", compact=True)
            yield Static("", id="export-result")
            with Horizontal(classes="buttons"):
                yield Button("Export", variant="primary", id="ok")
                yield Button("Close", id="cancel")

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#ok")
    def ok(self) -> None:
        try:
            fmt = str(self.query_one("#format", Select).value)
            selection = Selection(
                since=when(self.query_one("#since", Input).value, "since"),
                until=when(self.query_one("#until", Input).value, "until"),
                speaker=self.query_one("#speaker", Input).value.strip() or None,
            )
        except AssistantError as exc:
            self.query_one("#export-result", Static).update(Text(f"✖ {exc}", style="red"))
            return
        path = Path(self.query_one("#path", Input).value.strip()).expanduser()
        self.query_one("#export-result", Static).update("exporting…")
        self.export(fmt, selection, path)

    @work(exclusive=True, group="export")
    async def export(self, fmt: str, selection: Selection, path: Path) -> None:
        result = self.query_one("#export-result", Static)
        try:
            chunks = [c async for c in self.client.export(fmt, selection)]
            # The write (and its fsync) is disk I/O: off the event loop.
            size = await asyncio.to_thread(write_atomically, path, iter(chunks))
        except AssistantError as exc:
            result.update(Text(f"✖ {said(exc)}", style="red"))
            return
        result.update(Text(f"✔ wrote {path} ({size:,} characters, {fmt})", style="green"))
        self.app.notify(f"Exported to {path}", title="Export")


class ForgetDone(Message):
    """Something was forgotten: the tree, the gauge and the speakers need reloading."""


class ForgetScreen(Dialog):
    """Forget by filters: a dry run shows what would go; only then can it be confirmed."""

    def __init__(self, client: AsyncDaemonClient) -> None:
        super().__init__()
        self.client = client

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Forget speech and what rests on it", classes="dialog-title")
            with Grid(classes="form"):
                yield Label("speaker")
                yield Input(placeholder="name or id", id="speaker", compact=True)
                yield Label("since")
                yield Input(placeholder="ISO-8601 or epoch seconds", id="since", compact=True)
                yield Label("until")
                yield Input(placeholder="ISO-8601 or epoch seconds", id="until", compact=True)
                yield Label("words")
                yield Input(placeholder="utterances and memories containing…", id="text", compact=True)
                yield Label("")
                yield Checkbox("everything", id="everything", compact=True)
            yield Static("Preview first: nothing is forgotten until you confirm.", id="forget-plan")
            with Horizontal(classes="buttons"):
                yield Button("Preview", variant="primary", id="preview")
                yield Button("Forget", variant="error", id="forget", disabled=True)
                yield Button("Close", id="cancel")

    def filters(self) -> ForgetFilter:
        return ForgetFilter(
            speaker=self.query_one("#speaker", Input).value.strip() or None,
            since=when(self.query_one("#since", Input).value, "since"),
            until=when(self.query_one("#until", Input).value, "until"),
            text=self.query_one("#text", Input).value.strip() or None,
            everything=self.query_one("#everything", Checkbox).value,
        )

    @on(Input.Changed)
    @on(Checkbox.Changed)
    def changed(self) -> None:
        self.query_one("#forget", Button).disabled = True  # a preview of other filters confirms nothing

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#preview")
    def preview(self) -> None:
        try:
            what = self.filters()
        except AssistantError as exc:
            self.query_one("#forget-plan", Static).update(Text(f"✖ {exc}", style="red"))
            return
        self.run_forget(what, dry_run=True)

    @on(Button.Pressed, "#forget")
    def confirm(self) -> None:
        self.run_forget(self.filters(), dry_run=False)

    @work(exclusive=True, group="forget")
    async def run_forget(self, what: ForgetFilter, *, dry_run: bool) -> None:
        plan = self.query_one("#forget-plan", Static)
        try:
            out = await self.client.forget(what, dry_run=dry_run)
        except AssistantError as exc:
            plan.update(Text(f"✖ {said(exc)}", style="red"))
            return
        counts = (
            f"{out.utterances} utterances, {out.nodes} memory nodes, {out.speakers} speakers, "
            f"{out.refiled_events} events re-filed"
        )
        if out.empty:
            plan.update("Nothing matches these filters.")
        elif dry_run:
            examples = "\n".join(f"  • {e}" for e in out.examples[:5])
            plan.update(Text(f"Would forget {counts}.\n{examples}"))
            self.query_one("#forget", Button).disabled = False
        else:
            plan.update(Text(f"✔ Forgot {counts}.", style="green"))
            self.query_one("#forget", Button).disabled = True
            self.app.post_message(ForgetDone())


class ContextScreen(Dialog):
    """The transcript around one piece of evidence: the archive's utterances a few minutes either side."""

    def __init__(self, client: AsyncDaemonClient, evidence: Evidence, zone: tzinfo | None = None) -> None:
        super().__init__()
        self.client = client
        self.evidence = evidence
        self.zone = zone or local_zone(None)  # the title names it; the lines are timed in it

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(f"Around {format_time(self.evidence.time, self.zone)}", classes="dialog-title")
            yield VerticalScroll(Static("loading…", id="context-lines"), id="context")
            with Horizontal(classes="buttons"):
                yield Button("Close", id="cancel")

    def on_mount(self) -> None:
        self.load()

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)

    @work(exclusive=True)
    async def load(self) -> None:
        t = self.evidence.time
        lines = self.query_one("#context-lines", Static)
        try:
            found = await self.client.transcript(
                since=t - CONTEXT_SECONDS, until=t + CONTEXT_SECONDS, limit=CONTEXT_LINES
            )
        except AssistantError as exc:
            lines.update(Text(f"✖ {said(exc)}", style="red"))
            return
        out = Text()
        for u in found:
            style = "bold reverse" if u.text == self.evidence.text else ""
            out.append(f"{datetime.fromtimestamp(u.time, self.zone):%H:%M:%S} ", style="dim")
            out.append(f"{u.speaker}: ", style="bold")
            out.append(u.text + "\n", style=style)
        lines.update(out if out.plain else Text("The archive holds nothing around this time (forgotten?)."))


HELP = """\
# assistant — keys

| key | what it does |
|---|---|
| **Enter** | ask the question in the box |
| **ctrl+l** | limit questions by speaker and time (ctrl+r clears) |
| **ctrl+t** | push-to-talk: start recording a spoken question; again to stop and ask |
| **Escape** | cancel the recording (or close a dialog) |
| **F2 / F3 / F4** | chat / memory / speakers |
| **ctrl+g** | the day's digest: what it was about, and who said they would do what |
| **F5** | pause or resume listening |
| **F6** | export the memory to a file |
| **F7** | forget by speaker, time or words (with a dry run first) |
| **F8** | light or dark theme |
| **F9** | correct who said lines of the live transcript |
| **ctrl+p** | the command palette: every action by name |
| **? / F1** | this help |
| **ctrl+q** | quit (the daemon keeps running) |

**Chat** — answers stream in with their evidence; select a piece of evidence (arrows, Enter) to
read the transcript around it. The row above the box limits what questions recall: a speaker,
and since/until (2026-11-16 or 2026-11-16 14:00, local time); under each answer, what it was
limited to, including what was read from the question itself ("last week").
**Memory** — *d* forgets the selected node and everything under it (after a confirmation);
type in the filter box to show only matching nodes. The gauge is the memory's token budget.
**Speakers** — *e* enrolls a voice: type the name, and the person speaks for about 20 s into the
daemon's microphone (Enter stops earlier, Escape cancels); they are recognised from then on. The
table shows the seconds enrolled for each voice, and *match*, how surely its recent speech matched
it. *n* renames the selected voice, *w* shows what an unnamed voice said so you can
name them, *m* merges two labels that are one voice (voices that sound alike are suggested below
the table). **F9** marks transcript lines said by someone else and gives them to the right person.
**Digest** — a day's topics and the commitments made, each with the lines it rests on; *[* and
*]* step a day back and forth, or type a date (YYYY-MM-DD) and press Enter.
"""


class HelpScreen(Dialog):
    BINDINGS = [  # noqa: RUF012
        Binding("escape,q,question_mark,f1", "dismiss_none", "Close", id="help.close", tooltip="Close the help"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog wide"):
            yield Markdown(HELP)
