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
        utterances = [r[0] for r in db.all("SELECT id FROM utterances ORDER BY id")]
        nodes = [r[0] for r in db.all("SELECT id FROM nodes ORDER BY id")]
        speakers = [r[0] for r in db.all("SELECT id FROM speakers ORDER BY id")]
        examples = [r[0] for r in db.all("SELECT text FROM utterances ORDER BY time DESC LIMIT ?", (EXAMPLES,))]
        return ForgetPlan(tuple(utterances), tuple(nodes), (), (), tuple(speakers), tuple(examples))

    where, params, speaker_id = [], [], None
    if f.speaker is not None:
        speaker_id = find_speaker(store, f.speaker).id
        where.append("u.speaker_id = ?")
        params.append(speaker_id)
    if f.since is not None:
        where.append("u.time >= ?")
        params.append(f.since)
    if f.until is not None:
        where.append("u.time < ?")
        params.append(f.until)
    if f.text is not None:
        where.append("instr(lower(u.text), lower(?)) > 0")
        params.append(f.text.strip())
    rows = db.all(
        "SELECT u.id, s.name || ': ' || u.text FROM utterances u JOIN speakers s ON s.id = u.speaker_id "
        f"WHERE {' AND '.join(where)} ORDER BY u.time, u.id",
        tuple(params),
    )
    gone = {r[0] for r in rows}

    sources: dict[int, set[int]] = {}
    for node_id, uid in db.all("SELECT node_id, utterance_id FROM node_sources"):
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
            for table in ("stsb", "pending_utterances", "pending_blocks", "node_sources", "nodes", "utterances"):
                db.execute(f"DELETE FROM {table}")
            db.execute("DELETE FROM speakers")
        else:
            # Speech to be distilled again is kept apart first: its events go below.
            refile = store.utterances(p.refiled_utterances)
            for node_id in sorted(p.nodes, reverse=True):  # units before events before scenes
                db.execute("DELETE FROM nodes WHERE id = ?", (node_id,))
            db.executemany("DELETE FROM utterances WHERE id = ?", [(u,) for u in p.utterances])
            # Pending blocks that held only forgotten speech are now empty.
            db.execute(
                "DELETE FROM pending_blocks WHERE id NOT IN "
                "(SELECT block_id FROM pending_utterances WHERE is_context = 0)"
            )
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
    db = store.db
    # FTS5 deletes only mark a line's index entries as gone; merging the index drops them.
    store.optimize_lexical_index()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("VACUUM")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def expire(store: Store, days: float, now: float) -> int:
    """Retention: drop archived utterances older than `days`, except those the buffers still need.

    The memory tree keeps its words; it loses the citations to expired speech.
    """
    cutoff = now - days * 86_400
    db = store.db
    with store.atomic():
        ids = [
            r[0]
            for r in db.all(
                "SELECT id FROM utterances WHERE time < ? AND id NOT IN (SELECT utterance_id FROM stsb) "
                "AND id NOT IN (SELECT utterance_id FROM pending_utterances)",
                (cutoff,),
            )
        ]
        db.executemany("DELETE FROM utterances WHERE id = ?", [(u,) for u in ids])
        if ids:
            store.audit("expire", {"utterances": len(ids), "days": days})
    if ids:
        store.optimize_lexical_index()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
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
