"""`MemoryService` on the database in this process: what the CLI uses when no daemon runs.

It does what the daemon would, less the listening: pausing only records the choice for the
daemon's next start, and the distillation a daemon leaves to its background thread (an import's
or a forget's re-filed speech) runs here before the call returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..config import Settings
from ..records import (
    NOT_RUNNING,
    WHOLE_MEMORY,
    Answer,
    Digest,
    ForgetFilter,
    ForgetOutcome,
    ImportReport,
    MemoryNode,
    MemoryStats,
    MergeSuggestion,
    NameSuggestion,
    Reassignment,
    SearchResult,
    Selection,
    Speaker,
    Status,
    Utterance,
)
from ..store.store import Store
from . import archive, forget
from .api import Memory, TreeNode, stats_of


class LocalMemory:
    """The memory at `settings.database_path`, opened here. Close it (or use `with`) when done."""

    def __init__(self, settings: Settings, memory: Memory | None = None) -> None:
        self.settings = settings
        self._memory = memory

    @property
    def memory(self) -> Memory:
        # Opened on first use: pausing only writes a flag, and should not load the embedder.
        if self._memory is None:
            self._memory = Memory(self.settings)
        return self._memory

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()

    def __enter__(self) -> LocalMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- listening: only the daemon listens ------------------------------------------------------

    def status(self) -> Status:
        flag = self.settings.paused_flag
        stats, voices = self._size()
        return Status(
            state=NOT_RUNNING,
            paused=flag.exists(),
            idle=True,
            source="none (no daemon is running)",
            source_problem=None,
            lag_seconds=0.0,
            queued_segments=0,
            spooled_segments=0,
            queued_seconds=0.0,
            acknowledged=0,
            memory=stats,
            speakers=voices,
            models={"embedder": self.settings.models.embedder, "llm": self.settings.models.llm},
            devices={},
            uptime_seconds=0.0,
            push_to_talk=False,
        )

    def _size(self) -> tuple[MemoryStats, tuple[Speaker, ...]]:
        """The memory's size and voices; read from the database alone when nothing opened `Memory`,
        so a status or a pause with no daemon loads no model."""
        if self._memory is not None:
            return self._memory.stats(), tuple(self._memory.speakers())
        store = Store.open_existing(self.settings.database_path)
        if store is None:
            return MemoryStats.empty(self.settings.memory.budget.token_budget), ()
        try:
            return stats_of(store, self.settings, buffered=len(store.stsb()[0])), tuple(store.speakers())
        finally:
            store.close()

    def pause(self) -> Status:
        flag = self.settings.paused_flag
        flag.parent.mkdir(parents=True, exist_ok=True)
        flag.touch()
        return self.status()

    def resume(self) -> Status:
        self.settings.paused_flag.unlink(missing_ok=True)
        return self.status()

    # --- questions -----------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> Iterator[str | Answer]:
        # Prepared now, not on the first `next`: a wrong speaker or window is an error at the call.
        prepared = self.memory.prepare(question, since=since, until=until, speaker=speaker)
        return self.memory.answer_stream(prepared)

    def search(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> SearchResult:
        return SearchResult.of(self.memory.search(question, since=since, until=until, speaker=speaker))

    def transcript(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        limit: int = 200,
    ) -> list[Utterance]:
        return self.memory.transcript(since, until, speaker, limit)

    # --- speakers --------------------------------------------------------------------------------

    def speakers(self) -> list[Speaker]:
        return self.memory.speakers()

    def merge_suggestions(self) -> list[MergeSuggestion]:
        return self.memory.merge_suggestions()

    def name_suggestions(self) -> list[NameSuggestion]:
        return self.memory.name_suggestions()

    def speaker_lines(self, key: str | int, limit: int = 20) -> list[Utterance]:
        return self.memory.speaker_lines(key, limit)

    def name_speaker(self, key: str | int, name: str) -> Speaker:
        return self.memory.rename_speaker(key, name)

    def merge_speakers(self, keep: str | int, other: str | int) -> Speaker:
        return self.memory.merge_speakers(keep, other)

    def reassign(
        self,
        to: str | int,
        utterance_ids: list[int] | tuple[int, ...] = (),
        *,
        new_speaker: bool = False,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> Reassignment:
        chosen = self.memory.select_utterances(utterance_ids, since, until, speaker)
        return self.memory.reassign(chosen, to, new_speaker=new_speaker)

    # --- the memory tree -------------------------------------------------------------------------

    def tree(self) -> list[MemoryNode]:
        return [browsed(t) for t in self.memory.tree()]

    def delete_node(self, node_id: int) -> list[int]:
        return self.memory.delete(node_id)

    # --- the user's data -------------------------------------------------------------------------

    def export(self, fmt: str, selection: Selection = WHOLE_MEMORY) -> Iterator[str]:
        doc = self.memory.export_document(fmt, selection)
        self.memory.audit_export(fmt, doc)
        return archive.FORMATS[fmt](doc)

    def import_file(self, path: Path) -> ImportReport:
        report = self.memory.import_file(path)
        self.memory.engine.distill_pending()
        return report

    def forget(self, what: ForgetFilter, *, dry_run: bool = True) -> ForgetOutcome:
        plan = self.memory.forget_plan(what.check())
        if dry_run or plan.empty:
            return forget.outcome(plan)
        report = self.memory.forget(what, plan)
        self.memory.engine.distill_pending()
        return forget.outcome(plan, report)

    # --- a day ---------------------------------------------------------------------------------

    def digest(self, day: str | None = None) -> Digest:
        return self.memory.digest(day)


def browsed(t: TreeNode) -> MemoryNode:
    """A stored node with its utility and subtree, as the user browses it."""
    return MemoryNode.of(t.node, t.utility, tuple(browsed(c) for c in t.children))
