"""Forget: by speaker, time range, words, or everything; and retention, the forgetting of age.

Forgotten speech leaves the utterance archive with its vectors, and the memory built on it
goes too: a node that rested only on forgotten speech is removed; an event that rested partly
on it (or a node whose own words match a forgotten phrase) is removed with its units, and the
speech it still rests on goes back to the pending buffer to be distilled afresh, so no summary
is left quoting what was forgotten. Afterwards the database is checkpointed and vacuumed with
secure_delete on, so the words are not left in free pages or the write-ahead log either.

The audit table records that a forget happened, when, by what kind of filter and how much went;
never the words, and never a phrase that was searched for.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import ForgetFilter, ForgetOutcome, Level
from ..store import forgetting
from ..store.store import Store
from .speakers import find as find_speaker

EXAMPLES = 5


@dataclass(frozen=True)
class ForgetPlan:
    utterances: tuple[int, ...]
    # Nodes removed because they rest only on forgotten speech or mention the forgotten words.
    nodes: tuple[int, ...]
    # Events removed whose remaining speech is distilled again.
    refiled_events: tuple[int, ...]
    refiled_utterances: tuple[int, ...]
    speakers: tuple[int, ...]
    examples: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not (self.utterances or self.nodes or self.speakers)


def plan(store: Store, f: ForgetFilter) -> ForgetPlan:
    """What a forget would remove (the dry run), without changing anything."""
    f.check()
    db = store.db
    if f.everything:
        return ForgetPlan(
            tuple(forgetting.every_id(db, "utterances")),
            tuple(forgetting.every_id(db, "nodes")),
            (),
            (),
            tuple(forgetting.every_id(db, "speakers")),
            tuple(forgetting.newest_texts(db, EXAMPLES)),
        )

    speaker_id = find_speaker(store, f.speaker).id if f.speaker is not None else None
    rows = forgetting.matching_lines(
        db,
        since=f.since,
        until=f.until,
        speaker_id=speaker_id,
        text=f.text.strip() if f.text is not None else None,
    )
    gone = {r[0] for r in rows}

    sources: dict[int, set[int]] = {}
    for node_id, uid in store.source_links():
        sources.setdefault(node_id, set()).add(uid)
    all_nodes = {n.id: n for n in store.nodes()}
    children: dict[int, list[int]] = {}
    for n in all_nodes.values():
        if n.parent_id is not None:
            children.setdefault(n.parent_id, []).append(n.id)
    needle = f.text.strip().lower() if f.text else None

    def touched(node_id: int) -> bool:
        return bool(sources.get(node_id, set()) & gone) or (
            needle is not None and needle in all_nodes[node_id].text.lower()
        )

    events: set[int] = set()
    for n in all_nodes.values():
        if not touched(n.id):
            continue
        if n.level is Level.EVENT:
            events.add(n.id)
        elif n.level is Level.AMU and n.parent_id is not None:
            events.add(n.parent_id)
        else:  # a scene whose label says the words: every event under it goes
            events.update(children.get(n.id, []))
    removed: set[int] = set()
    refiled: list[int] = []
    keep_speech: set[int] = set()
    for event_id in sorted(events):
        subtree = [event_id, *children.get(event_id, [])]
        removed.update(subtree)
        rest = set().union(*(sources.get(i, set()) for i in subtree)) - gone
        if rest:
            refiled.append(event_id)
            keep_speech |= rest
    # Scenes left with no events, and scenes whose own label matches, go as well.
    for n in all_nodes.values():
        if n.level is Level.SCENE and (
            all(c in removed for c in children.get(n.id, [])) or (needle is not None and needle in n.text.lower())
        ):
            removed.add(n.id)
            for event_id in children.get(n.id, []):
                if event_id not in removed:  # a scene named by the words takes its other events along
                    removed.update([event_id, *children.get(event_id, [])])
                    rest = set().union(*(sources.get(i, set()) for i in [event_id, *children.get(event_id, [])]))
                    if rest - gone:
                        refiled.append(event_id)
                        keep_speech |= rest - gone
    # Forgetting a person (the speaker alone) forgets their voice too; a narrower filter does not.
    only_speaker = speaker_id is not None and (f.since, f.until, f.text) == (None, None, None)
    speakers = (speaker_id,) if only_speaker and speaker_id is not None else ()
    return ForgetPlan(
        tuple(sorted(gone)),
        tuple(sorted(removed)),
        tuple(sorted(refiled)),
        tuple(sorted(keep_speech)),
        speakers,
        tuple(r[1] for r in rows[:EXAMPLES]),
    )


@dataclass(frozen=True)
class ForgetReport:
    utterances: int
    nodes: int
    refiled_events: int
    speakers: int
    database_bytes: int


def apply(store: Store, f: ForgetFilter, p: ForgetPlan) -> ForgetReport:
    """Remove what `plan` found, in one transaction, then scrub the file of its traces."""
    db = store.db
    with store.atomic():
        if f.everything:
            forgetting.delete_everything(db)
        else:
            # Speech to be distilled again is kept apart first: its events go below.
            refile = store.utterances(p.refiled_utterances)
            forgetting.delete_nodes(db, sorted(p.nodes, reverse=True))  # units before events before scenes
            forgetting.delete_utterances(db, p.utterances)
            # Pending blocks that held only forgotten speech are now empty.
            forgetting.drop_emptied_pending_blocks(db)
            if refile:
                store.add_pending(sorted(refile, key=lambda u: (u.time, u.id or 0)), [])
            for speaker_id in p.speakers:
                store.delete_speaker(speaker_id)
            store.delete_childless()
        store.audit("forget", _audit_detail(f, p))
    store.reload_index()
    scrub(store)
    return ForgetReport(len(p.utterances), len(p.nodes), len(p.refiled_events), len(p.speakers), store.file_bytes())


def _audit_detail(f: ForgetFilter, p: ForgetPlan) -> dict[str, object]:
    detail: dict[str, object] = {"utterances": len(p.utterances), "nodes": len(p.nodes)}
    if f.everything:
        detail["by"] = "everything"
        return detail
    detail["by"] = [k for k in ("speaker", "since", "until", "text") if getattr(f, k) is not None]
    if p.speakers:
        detail["speaker_id"] = p.speakers[0]
    if f.since is not None:
        detail["since"] = f.since
    if f.until is not None:
        detail["until"] = f.until
    # The words themselves would defeat the forget; their length says enough to audit it.
    if f.text is not None:
        detail["text_chars"] = len(f.text.strip())
    return detail


def scrub(store: Store) -> None:
    """Leave no deleted content in the file or its write-ahead log (secure_delete is on)."""
    # FTS5 deletes only mark a line's index entries as gone; merging the index drops them.
    store.optimize_lexical_index()
    forgetting.vacuum(store.db)


def expire(store: Store, days: float, now: float) -> int:
    """Retention: drop archived utterances older than `days`, except those the buffers still need.

    The memory tree keeps its words; it loses the citations to expired speech.
    """
    cutoff = now - days * 86_400
    db = store.db
    with store.atomic():
        ids = forgetting.expired_ids(db, cutoff)
        forgetting.delete_utterances(db, ids)
        store.unindex_lines(ids)
        if ids:
            store.audit("expire", {"utterances": len(ids), "days": days})
    if ids:
        store.optimize_lexical_index()
        forgetting.checkpoint(db)
    return len(ids)


def outcome(p: ForgetPlan, report: ForgetReport | None = None) -> ForgetOutcome:
    """What a user is told of a forget: the plan's counts, and after a real one the file's new size."""
    return ForgetOutcome(
        empty=p.empty,
        utterances=len(p.utterances),
        nodes=len(p.nodes),
        refiled_events=len(p.refiled_events),
        speakers=len(p.speakers),
        examples=p.examples if report is None else (),
        database_bytes=report.database_bytes if report is not None else None,
    )
