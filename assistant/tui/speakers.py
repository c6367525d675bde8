"""The speakers screen: who was heard and for how long, the seconds enrolled for each voice and how
surely its recent speech matched it; enroll (record a voice from the daemon's microphone), rename,
who-is-this and merge through modals, the voices that sound alike, suggested for merging, and the
names unnamed voices gave themselves ("I'm Sam"), accepted with one key. The pane makes these calls
to the daemon itself, and the corrections of who said what (F9) too."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import tzinfo
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Label, Static

from ..daemon.client import AsyncDaemonClient
from ..errors import AssistantError
from ..records import MergeSuggestion, NameSuggestion, Speaker
from .connection import DaemonChanged, said, taken_down
from .dialogs import Correction, MergeScreen, NameScreen, ReassignScreen, WhoScreen
from .enroll import EnrollScreen, enrolled_notice

# Suggestions cost the daemon's writer thread a scan of the unnamed voices' lines (9 ms at 10,000
# lines, growing with them), and the table changes with every line heard, which rarely changes a
# suggestion. So they are asked for again when the voices change (new, renamed, merged, enrolled)
# and otherwise at most this often: a name someone just gave themselves shows within it.
SUGGESTIONS_EVERY_SECONDS = 30.0


def voice_set(speakers: Sequence[Speaker]) -> tuple[tuple[int, str, bool], ...]:
    """What the suggestions depend on, beside new lines: which voices there are and their names."""
    return tuple((sp.id, sp.name, sp.enrolled) for sp in speakers)


def suggestions_due(before: Sequence[Speaker], now: Sequence[Speaker], since_asked: float) -> bool:
    """Ask the daemon for suggestions again? (`since_asked`: seconds since they were last asked for.)"""
    return voice_set(before) != voice_set(now) or since_asked >= SUGGESTIONS_EVERY_SECONDS


def speech_time(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"


def enrolled_cell(sp: Speaker) -> str:
    if not sp.enrolled:
        return ""
    # Enrolled before the seconds were kept (or imported from an older export): only that it was.
    return speech_time(sp.enrolled_seconds) if sp.enrolled_seconds else "yes"


def match_cell(sp: Speaker) -> str:
    return f"{sp.match_cosine:.2f} ({sp.match_utterances})" if sp.match_cosine is not None else ""


class SpeakersPane(Vertical):
    BINDINGS = [  # noqa: RUF012 (Textual reads it as a class attribute)
        Binding(
            "e",
            "enroll",
            "Enroll",
            id="speakers.enroll",
            tooltip="Record a voice from the microphone and name it: it is recognised from then on",
        ),
        Binding("n", "rename", "Rename", id="speakers.rename", tooltip="Name the selected voice"),
        Binding("w", "who", "Who is this?", id="speakers.who", tooltip="What the selected voice said; name them"),
        Binding("m", "merge", "Merge", id="speakers.merge", tooltip="Merge two labels that are one voice"),
        Binding(
            "a",
            "accept",
            "Accept name",
            id="speakers.accept",
            tooltip="Give the selected voice the name it gave itself",
        ),
    ]

    def __init__(
        self, client: AsyncDaemonClient, *, enroll_seconds: float, zone: tzinfo | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.client = client
        self.enroll_seconds = enroll_seconds  # how long a voice to enroll is recorded (daemon.enroll_seconds)
        self.zone = zone  # "who is this?" times lines in it (None = the system's)
        self.speakers: tuple[Speaker, ...] = ()
        self._suggested_at = -SUGGESTIONS_EVERY_SECONDS  # time.monotonic() when last asked for
        self.suggestions: list[MergeSuggestion] = []
        self.names: list[NameSuggestion] = []

    def compose(self) -> ComposeResult:
        table: DataTable[str] = DataTable(id="speakers-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("id", "name", "utterances", "speech", "enrolled", "match")
        yield table
        yield Static("", id="merge-suggestions")
        yield Static("", id="name-suggestions")
        # Two lines that fit 80 columns; the help (F1) says more.
        yield Label(
            "e enroll · n rename · w who is this? · m merge · a accept a suggested name\n"
            "match: median cosine of a voice's last 20 lines to it (1.00 = same voice)",
            classes="hint",
        )

    # --- what the status poll brings ----------------------------------------------------------

    def show_speakers(self, speakers: tuple[Speaker, ...]) -> None:
        if speakers == self.speakers:
            return  # the status poll repeats itself; redrawing would move the cursor
        if suggestions_due(self.speakers, speakers, time.monotonic() - self._suggested_at):
            self._suggested_at = time.monotonic()
            self.load_suggestions()
        self.speakers = speakers
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        for sp in speakers:
            table.add_row(
                str(sp.id),
                sp.name,
                str(sp.utterances),
                speech_time(sp.speech_seconds),
                enrolled_cell(sp),
                match_cell(sp),
                key=str(sp.id),
            )
        if speakers:
            table.move_cursor(row=min(row, len(speakers) - 1))

    @work(exclusive=True, group="suggestions")
    async def load_suggestions(self) -> None:
        try:
            suggestions = await self.client.merge_suggestions()
            names = await self.client.name_suggestions()
        except AssistantError:
            return  # the status poll says when the daemon is gone
        self.show_suggestions(suggestions)
        self.show_names(names)

    def show_suggestions(self, suggestions: list[MergeSuggestion]) -> None:
        """Pairs whose voices sound alike, strongest first."""
        if taken_down(self):
            return  # the app closed while the daemon answered
        self.suggestions = suggestions
        lines = [
            f"Perhaps one voice: {m.keep.name} (#{m.keep.id}) and {m.other.name} "
            f"(#{m.other.id}), cosine {m.cosine:.2f} — select one and press m to merge"
            for m in suggestions
        ]
        self.query_one("#merge-suggestions", Static).update("\n".join(lines))

    def show_names(self, names: list[NameSuggestion]) -> None:
        """Names unnamed voices gave themselves, most often said first."""
        if taken_down(self):
            return
        self.names = names
        lines = [
            f"{n.speaker.name} (#{n.speaker.id}) said \u201c{n.example.text}\u201d"
            + (f" ({n.times} times)" if n.times > 1 else "")
            + f" — perhaps {n.name}: select them and press a"
            for n in names
        ]
        self.query_one("#name-suggestions", Static).update("\n".join(lines))

    def suggested_name(self, speaker: Speaker | None) -> NameSuggestion | None:
        """The name most often suggested for `speaker`; with none selected, the first suggestion."""
        for n in self.names:
            if speaker is None or n.speaker.id == speaker.id:
                return n
        return None

    def suggested_pair(self, speaker: Speaker | None) -> tuple[str, str] | None:
        """The strongest suggestion involving `speaker` (any, when None): (keep, other) ids."""
        for m in self.suggestions:
            ids = (str(m.keep.id), str(m.other.id))
            if speaker is None or str(speaker.id) in ids:
                return ids
        return None

    def selected(self) -> Speaker | None:
        table = self.query_one(DataTable)
        if not self.speakers or table.cursor_row < 0 or table.cursor_row >= len(self.speakers):
            return None
        return self.speakers[table.cursor_row]

    # --- enrolling -----------------------------------------------------------------------------

    def action_enroll(self) -> None:
        def enrolled(speaker: Speaker | None) -> None:
            if speaker is not None:
                self.notify(enrolled_notice(speaker), title="Enrolled")
                self.post_message(DaemonChanged())

        self.app.push_screen(EnrollScreen(self.client, limit_seconds=self.enroll_seconds), enrolled)

    # --- renaming ------------------------------------------------------------------------------

    def action_rename(self) -> None:
        speaker = self.selected()
        if speaker is not None:
            self.app.push_screen(NameScreen(speaker), self._renamer(speaker))

    def action_who(self) -> None:
        speaker = self.selected()
        if speaker is not None:
            self.app.push_screen(WhoScreen(self.client, speaker, self.zone), self._renamer(speaker))

    def action_accept(self) -> None:
        suggestion = self.suggested_name(self.selected())
        if suggestion is None:
            self.notify("No name was suggested for this voice.", title="Accept name")
            return
        self.rename(str(suggestion.speaker.id), suggestion.name)

    def _renamer(self, speaker: Speaker) -> Callable[[str | None], None]:
        def named(name: str | None) -> None:
            if name and name != speaker.name:
                self.rename(str(speaker.id), name)

        return named

    @work(group="speakers")
    async def rename(self, key: str, name: str) -> None:
        try:
            await self.client.name_speaker(key, name)
        except AssistantError as exc:
            self.notify(said(exc), title="Rename", severity="error")
            return
        self.notify(f"Speaker {key} is now {name}.", title="Speakers")
        self.post_message(DaemonChanged())

    # --- merging -------------------------------------------------------------------------------

    def action_merge(self) -> None:
        if len(self.speakers) < 2:
            self.notify("There is only one speaker.", title="Merge")
            return
        selected = self.selected()

        def chosen(pair: tuple[str, str] | None) -> None:
            if pair:
                self.merge(*pair)

        self.app.push_screen(MergeScreen(self.speakers, selected, self.suggested_pair(selected)), chosen)

    @work(group="speakers")
    async def merge(self, keep: str, other: str) -> None:
        try:
            await self.client.merge_speakers(keep, other)
        except AssistantError as exc:
            self.notify(said(exc), title="Merge", severity="error")
            return
        self.notify(f"Merged speaker {other} into {keep}.", title="Speakers")
        self.post_message(DaemonChanged())

    # --- correcting who said what (F9) ---------------------------------------------------------

    def correct(self, lines: Sequence[tuple[int, str, str]]) -> None:
        """Ask which of `lines` (utterance id, label, text: the live transcript's) someone else said."""
        if not lines:
            self.notify("Nothing in the live transcript to correct yet.", title="Correct")
            return

        def chosen(correction: Correction | None) -> None:
            if correction:
                self.reassign(correction)

        self.app.push_screen(ReassignScreen(list(lines), self.speakers), chosen)

    @work(group="speakers")
    async def reassign(self, correction: Correction) -> None:
        try:
            done = await self.client.reassign(
                correction.to, correction.utterance_ids, new_speaker=correction.new_speaker
            )
        except AssistantError as exc:
            self.notify(said(exc), title="Correct", severity="error")
            return
        # The live stream brings the relabel to the transcript pane, as for the daemon's own moves.
        self.notify(f"{len(done.moved)} line(s) now said by {done.speaker.name}.", title="Correct")
        self.post_message(DaemonChanged())
