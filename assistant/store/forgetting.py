"""The rows a forget or a retention pass reads and removes, and the scrub that follows them.

`memory/forget.py` decides what goes (its plan) and records it; these functions are the SQL it
runs. The caller holds the transaction: a forget is all or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from .db import Database
from .window import utterance_window

# Children before the parents they cascade from, the buffers before the lines they point at.
_CONTENT_TABLES = ("stsb", "pending_utterances", "pending_blocks", "node_sources", "nodes", "utterances")


def every_id(db: Database, table: Literal["utterances", "nodes", "speakers"]) -> list[int]:
    """The ids of every row of one table, in order."""
    return [r[0] for r in db.all(f"SELECT id FROM {table} ORDER BY id")]


def newest_texts(db: Database, limit: int) -> list[str]:
    """The words of the `limit` newest utterances, newest first."""
    return [r[0] for r in db.all("SELECT text FROM utterances ORDER BY time DESC LIMIT ?", (limit,))]


def matching_lines(
    db: Database, *, since: float | None, until: float | None, speaker_id: int | None, text: str | None
) -> list[tuple[int, str]]:
    """(id, "speaker: words") of the utterances said in [since, until), by the speaker and containing
    `text` (in any letter case) where those are given; by time."""
    window = utterance_window(since, until, speaker_id=speaker_id)
    sql, params = window.sql, window.params
    if text is not None:
        sql += " AND instr(lower(u.text), lower(?)) > 0"
        params = (*params, text)
    rows = db.all(
        "SELECT u.id, s.name || ': ' || u.text FROM utterances u JOIN speakers s ON s.id = u.speaker_id "
        f"WHERE 1{sql} ORDER BY u.time, u.id",
        params,
    )
    return [(r[0], r[1]) for r in rows]


def expired_ids(db: Database, cutoff: float) -> list[int]:
    """Utterances said before `cutoff` that neither buffer still needs."""
    rows = db.all(
        "SELECT id FROM utterances WHERE time < ? AND id NOT IN (SELECT utterance_id FROM stsb) "
        "AND id NOT IN (SELECT utterance_id FROM pending_utterances)",
        (cutoff,),
    )
    return [r[0] for r in rows]


def delete_everything(db: Database) -> None:
    """Empty the archive, the tree, both buffers and the speakers (the audit and settings stay)."""
    for table in _CONTENT_TABLES:
        db.execute(f"DELETE FROM {table}")
    db.execute("DELETE FROM speakers")


def delete_nodes(db: Database, node_ids: Sequence[int]) -> None:
    """Delete these nodes in the order given; each takes its subtree along (the schema cascades)."""
    for node_id in node_ids:
        db.execute("DELETE FROM nodes WHERE id = ?", (node_id,))


def delete_utterances(db: Database, utterance_ids: Iterable[int]) -> None:
    """Delete these utterances; their vectors, voices and provenance links go with them (cascades)."""
    db.executemany("DELETE FROM utterances WHERE id = ?", [(u,) for u in utterance_ids])


def drop_emptied_pending_blocks(db: Database) -> None:
    """Remove the pending blocks left with none of their own utterances (only context, or nothing)."""
    db.execute(
        "DELETE FROM pending_blocks WHERE id NOT IN (SELECT block_id FROM pending_utterances WHERE is_context = 0)"
    )


def checkpoint(db: Database) -> None:
    """Copy the write-ahead log into the file and truncate it, so deleted rows do not linger there."""
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def vacuum(db: Database) -> None:
    """Rewrite the file without its free pages (outside any transaction: VACUUM cannot run in one)."""
    checkpoint(db)
    db.execute("VACUUM")
    checkpoint(db)
