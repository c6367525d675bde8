"""What a user can do with the memory, whoever holds it: `MemoryService`.

Two implementations: `assistant.memory.service.LocalMemory` opens the database in this process
(the CLI with no daemon running), and `assistant.daemon.client.DaemonClient` asks the running
daemon over its socket (`AsyncDaemonClient` is the same surface for the TUI's event loop). The
CLI, the TUI, the benchmarks and the MCP server are written against this protocol, so each of
their commands has one body, and what they get back are the records of `assistant.records`.

Times are seconds since the epoch. `speaker` is a name or an id. Wrong input (an unknown speaker,
`since` not before `until`) raises `InputError`; a daemon that is gone raises `DaemonGone`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Protocol

from .records import (
    WHOLE_MEMORY,
    Answer,
    Digest,
    ForgetFilter,
    ForgetOutcome,
    ImportReport,
    MemoryNode,
    MergeSuggestion,
    NameSuggestion,
    Reassignment,
    SearchResult,
    Selection,
    Speaker,
    Status,
    Utterance,
)

SpeakerKey = str | int


class MemoryService(Protocol):
    def status(self) -> Status: ...

    def pause(self) -> Status:
        """Stop listening until `resume` (kept across restarts)."""
        ...

    def resume(self) -> Status: ...

    def ask(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: SpeakerKey | None = None,
    ) -> Iterator[str | Answer]:
        """The answer's text as it is generated, then the `Answer` with its evidence."""
        ...

    def search(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: SpeakerKey | None = None,
    ) -> SearchResult:
        """What an answer would see, without asking the LLM."""
        ...

    def transcript(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: SpeakerKey | None = None,
        limit: int = 200,
    ) -> list[Utterance]:
        """What was said in [since, until), oldest first; the newest `limit` lines of it."""
        ...

    def speakers(self) -> list[Speaker]: ...

    def merge_suggestions(self) -> list[MergeSuggestion]: ...

    def name_suggestions(self) -> list[NameSuggestion]:
        """Names unnamed voices gave themselves ("I'm Sam"): the user accepts one with `name_speaker`."""
        ...

    def speaker_lines(self, key: SpeakerKey, limit: int = 20) -> list[Utterance]:
        """A speaker's last `limit` utterances, oldest first: who is this?"""
        ...

    def name_speaker(self, key: SpeakerKey, name: str) -> Speaker: ...

    def merge_speakers(self, keep: SpeakerKey, other: SpeakerKey) -> Speaker: ...

    def reassign(
        self,
        to: SpeakerKey,
        utterance_ids: list[int] | tuple[int, ...] = (),
        *,
        new_speaker: bool = False,
        since: float | None = None,
        until: float | None = None,
        speaker: SpeakerKey | None = None,
    ) -> Reassignment:
        """These utterances (by id, or by window and the speaker they carry now) were said by `to`
        (with `new_speaker`, the name of someone not heard apart until now)."""
        ...

    def tree(self) -> list[MemoryNode]:
        """The memory: scene > event > unit."""
        ...

    def delete_node(self, node_id: int) -> list[int]:
        """Forget one node and what hangs under it; the ids removed."""
        ...

    def export(self, fmt: str, selection: Selection = WHOLE_MEMORY) -> Iterator[str]:
        """The memory as json (complete), markdown or jsonl (the transcript), in pieces."""
        ...

    def import_file(self, path: Path) -> ImportReport: ...

    def forget(self, what: ForgetFilter, *, dry_run: bool = True) -> ForgetOutcome:
        """Forget speech and what rests on it; a dry run (the default) only counts."""
        ...

    def digest(self, day: str | None = None) -> Digest:
        """What a day (YYYY-MM-DD in the memory's `time_zone`; None: today) was about, and the
        commitments made, each citing the lines it rests on. Built from what is stored now."""
        ...


class AsyncMemoryService(Protocol):
    """`MemoryService` for an event loop (the TUI): the same operations, awaited."""

    async def status(self) -> Status: ...

    async def pause(self) -> Status: ...

    async def resume(self) -> Status: ...

    def ask(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: SpeakerKey | None = None,
    ) -> AsyncIterator[str | Answer]: ...

    async def search(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: SpeakerKey | None = None,
    ) -> SearchResult: ...

    async def transcript(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: SpeakerKey | None = None,
        limit: int = 200,
    ) -> list[Utterance]: ...

    async def speakers(self) -> list[Speaker]: ...

    async def merge_suggestions(self) -> list[MergeSuggestion]: ...

    async def name_suggestions(self) -> list[NameSuggestion]: ...

    async def speaker_lines(self, key: SpeakerKey, limit: int = 20) -> list[Utterance]: ...

    async def name_speaker(self, key: SpeakerKey, name: str) -> Speaker: ...

    async def merge_speakers(self, keep: SpeakerKey, other: SpeakerKey) -> Speaker: ...

    async def reassign(
        self,
        to: SpeakerKey,
        utterance_ids: list[int] | tuple[int, ...] = (),
        *,
        new_speaker: bool = False,
        since: float | None = None,
        until: float | None = None,
        speaker: SpeakerKey | None = None,
    ) -> Reassignment: ...

    async def tree(self) -> list[MemoryNode]: ...

    async def delete_node(self, node_id: int) -> list[int]: ...

    def export(self, fmt: str, selection: Selection = WHOLE_MEMORY) -> AsyncIterator[str]: ...

    async def import_file(self, path: Path) -> ImportReport: ...

    async def forget(self, what: ForgetFilter, *, dry_run: bool = True) -> ForgetOutcome: ...

    async def digest(self, day: str | None = None) -> Digest: ...
