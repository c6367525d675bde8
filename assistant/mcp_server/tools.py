"""The tools: ask, search, transcript, speakers, digest and forget, each one call of the daemon's client.

Every time a tool takes is read in the configured zone (`time_zone`), as the CLI reads
`--since`, and every time it gives back is shown in it. `forget` only reports what would go
unless the call says `confirm: true`: a model should not forget anything on its own guess.
"""

from __future__ import annotations

import time
from datetime import tzinfo

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from ..errors import InputError
from ..records import Answer, ForgetFilter, ForgetOutcome
from ..zones import parse_day
from .arguments import Day, Flag, Limit, Question, SpeakerKey, When, Words, read_window
from .connection import Daemon
from .views import AnswerView, DigestView, ForgetView, SearchView, SpeakersView, SpeakerView, TranscriptView

READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
FORGETS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


def register_tools(server: MCPServer, daemon: Daemon, zone: tzinfo) -> None:
    @server.tool(annotations=READS)
    async def ask(question: Question, since: When = None, until: When = None, speaker: SpeakerKey = None) -> AnswerView:
        """Ask the memory of what was said in the room; the answer comes with the utterances it
        rests on (who, when, what, and each one's utterance id). `since`, `until` and `speaker`
        limit what it may recall; the question's own words ("last week", "what did Sam say")
        may limit it too, and `limited_to` says how it was limited. It runs the local LLM, so it
        takes seconds."""
        start, end = read_window(since, until, zone)
        answer = None
        async with daemon.calling() as memory:
            async for piece in memory.ask(question, since=start, until=end, speaker=speaker):
                if isinstance(piece, Answer):
                    answer = piece
        if answer is None:
            raise ToolError("the daemon ended the answer before it was complete; ask again")
        return AnswerView.of(answer, zone)

    @server.tool(annotations=READS)
    async def search(query: Question, since: When = None, until: When = None, speaker: SpeakerKey = None) -> SearchView:
        """The lines the memory recalls for `query`, most relevant first, without asking the LLM:
        what an answer would see. Fast; use it to find what was said about something."""
        start, end = read_window(since, until, zone)
        async with daemon.calling() as memory:
            found = await memory.search(query, since=start, until=end, speaker=speaker)
        return SearchView.of(found, zone)

    @server.tool(annotations=READS)
    async def transcript(
        since: When = None, until: When = None, speaker: SpeakerKey = None, limit: Limit = 200
    ) -> TranscriptView:
        """What was said from `since` until before `until` (and by `speaker`), word for word,
        oldest first: the newest `limit` lines of it."""
        start, end = read_window(since, until, zone)
        async with daemon.calling() as memory:
            said = await memory.transcript(since=start, until=end, speaker=speaker, limit=limit)
        return TranscriptView.of(said, zone)

    @server.tool(annotations=READS)
    async def speakers() -> SpeakersView:
        """The people the memory has heard, by name (or "Speaker N" until someone names the voice),
        with their ids and how much each said."""
        async with daemon.calling() as memory:
            found = await memory.speakers()
        return SpeakersView(speakers=[SpeakerView.of(s) for s in found])

    @server.tool(annotations=FORGETS)
    async def forget(
        speaker: SpeakerKey = None,
        since: When = None,
        until: When = None,
        text: Words = None,
        everything: Flag = False,
        confirm: Flag = False,
    ) -> ForgetView:
        """Forget speech, and everything the memory built on it, for good: what a speaker said,
        a time range, every utterance containing some words, or everything (criteria combine).
        Without `confirm: true` nothing changes: it reports what would be forgotten. Show the
        user that report and call again with `confirm: true` only once they agree."""
        start, end = read_window(since, until, zone)
        try:
            what = ForgetFilter(speaker, start, end, text, everything).check()
        except InputError as exc:
            raise ToolError(str(exc)) from None
        async with daemon.calling() as memory:
            outcome = await memory.forget(what, dry_run=not confirm)
        return ForgetView.of(outcome, forgotten=confirm and not outcome.empty, note=_forget_note(outcome, confirm))

    @server.tool(annotations=READS)
    async def digest(day: Day = None) -> DigestView:
        """What one day's conversations were about, and who said they would do what ("Sam will
        send the slides by Thursday"), each with the utterances it rests on. Built from the
        memory as it is now; it runs the local LLM over that day's promises, so it takes seconds."""
        try:
            chosen = parse_day(day, zone, time.time()) if day is not None else None
        except InputError as exc:
            raise ToolError(str(exc)) from None
        async with daemon.calling() as memory:
            found = await memory.digest(chosen)
        return DigestView.of(found, zone)


def _forget_note(outcome: ForgetOutcome, confirmed: bool) -> str:
    if outcome.empty:
        return "nothing matches; nothing " + ("was" if confirmed else "would be") + " forgotten"
    what = f"{outcome.utterances} utterances and {outcome.nodes} memory nodes"
    if confirmed:
        return f"forgotten for good: {what}"
    return (
        f"dry run, nothing changed: this would forget {what}. To forget them, call forget again with the "
        "same arguments and confirm: true, once the user agrees"
    )
