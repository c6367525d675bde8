"""The rows an export is read from and an import writes, as they stand in the tables.

`memory/archive.py` owns the file (its format, checks and the mapping of ids on a merge); these
functions are the SQL behind it. Ids are kept when given (a restore into an empty store) and
chosen by SQLite when None (a merge). Writes run inside the caller's transaction, so an import
lands whole or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .db import Database
from .vectors import as_blob
from .window import utterance_window


class SpeakerRow(NamedTuple):
    id: int | None
    name: str
    created: float
    voice: bytes | None  # the float32 centroid as stored
    speech_seconds: float
    enrolled: bool
    enrolled_seconds: float = 0.0  # exports made before it was kept have none


class UtteranceRow(NamedTuple):
    id: int | None
    speaker_id: int
    text: str
    time: float
    created: float


class NodeRow(NamedTuple):
    id: int | None
    level: str
    parent_id: int | None
    text: str
    tokens: int
    frequency: int
    last_access: float
    created: float
    start_time: float | None
    end_time: float | None
    relation: str | None


class PendingRow(NamedTuple):
    id: int
    created: float
    members: list[tuple[int, int]]  # (utterance id, 1 if it is context else 0), in order


# --- reading an export -----------------------------------------------------------------------------


def speakers(db: Database) -> list[SpeakerRow]:
    rows = db.all(
        "SELECT id, name, created, voice, speech_seconds, enrolled, enrolled_seconds FROM speakers ORDER BY id"
    )
    return [SpeakerRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6]) for r in rows]


def utterances(
    db: Database, since: float | None = None, until: float | None = None, speaker: str | None = None
) -> list[UtteranceRow]:
    """The utterances said in [since, until), by `speaker` (the exact name, or the id as text) if given; by id."""
    where = utterance_window(since, until, speaker_name_or_id=speaker)
    rows = db.all(
        "SELECT u.id, u.speaker_id, u.text, u.time, u.created "
        f"FROM utterances u JOIN speakers s ON s.id = u.speaker_id WHERE 1{where.sql} ORDER BY u.id",
        where.params,
    )
    return [UtteranceRow(*r) for r in rows]


def nodes(db: Database) -> list[NodeRow]:
    rows = db.all(
        "SELECT id, level, parent_id, text, tokens, frequency, last_access, created, start_time, end_time, relation "
        "FROM nodes ORDER BY id"
    )
    return [NodeRow(*r) for r in rows]


def sensing_buffer(db: Database) -> list[tuple[int, int]]:
    """(utterance id, 1 if it is context else 0) of the sensing buffer, in order."""
    return [(r[0], r[1]) for r in db.all("SELECT utterance_id, is_context FROM stsb ORDER BY position")]


def pending(db: Database) -> list[PendingRow]:
    """Every pending block with all its members, empty ones too."""
    blocks = []
    for block_id, created in db.all("SELECT id, created FROM pending_blocks ORDER BY id"):
        members = db.all(
            "SELECT utterance_id, is_context FROM pending_utterances WHERE block_id = ? ORDER BY position", (block_id,)
        )
        blocks.append(PendingRow(block_id, created, [(m[0], m[1]) for m in members]))
    return blocks


def is_empty(db: Database) -> bool:
    """Whether the store has no speaker, utterance, node or pending block (what a restore needs)."""
    return not any(
        db.scalar(f"SELECT count(*) FROM {t}") for t in ("speakers", "utterances", "nodes", "pending_blocks")
    )


# --- writing an import -----------------------------------------------------------------------------


def speaker_named(db: Database, name: str) -> tuple[int, bool] | None:
    """(id, whether it has a voice) of the speaker with exactly this name, or None."""
    row = db.one("SELECT id, voice FROM speakers WHERE name = ?", (name,))
    return None if row is None else (row[0], row[1] is not None)


def give_voice(
    db: Database, speaker_id: int, voice: bytes, speech_seconds: float, enrolled: bool, enrolled_seconds: float = 0.0
) -> None:
    """Set a speaker's voice as a file has it (the bytes as they were stored)."""
    db.execute(
        "UPDATE speakers SET voice = ?, speech_seconds = ?, enrolled = ?, enrolled_seconds = ? WHERE id = ?",
        (voice, speech_seconds, int(enrolled), enrolled_seconds, speaker_id),
    )


def insert_speaker(db: Database, s: SpeakerRow) -> int:
    cursor = db.execute(
        "INSERT INTO speakers (id, name, created, voice, speech_seconds, enrolled, enrolled_seconds) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (s.id, s.name, s.created, s.voice, s.speech_seconds, int(s.enrolled), s.enrolled_seconds),
    )
    return int(cursor.lastrowid)


def utterance_with_digest(db: Database, digest: str) -> int | None:
    """The id of the utterance with this digest (the same speaker, time and words), or None."""
    row = db.one("SELECT id FROM utterances WHERE digest = ?", (digest,))
    return None if row is None else row[0]


def insert_utterance(db: Database, u: UtteranceRow, digest: str, vector: np.ndarray) -> int:
    """Archive an utterance with its digest and vector; its id."""
    cursor = db.execute(
        "INSERT INTO utterances (id, speaker_id, text, time, created, digest) VALUES (?, ?, ?, ?, ?, ?)",
        (u.id, u.speaker_id, u.text, u.time, u.created, digest),
    )
    utterance_id = int(cursor.lastrowid)
    db.execute("INSERT INTO utterance_vectors (utterance_id, embedding) VALUES (?, ?)", (utterance_id, as_blob(vector)))
    return utterance_id


def same_node(db: Database, level: str, text: str, parent_id: int | None) -> int | None:
    """The id of a node with this level, these words and this parent (None for a scene), or None."""
    row = db.one("SELECT id FROM nodes WHERE level = ? AND text = ? AND parent_id IS ?", (level, text, parent_id))
    return None if row is None else row[0]


def insert_node(db: Database, n: NodeRow, vector: np.ndarray) -> int:
    """Add a node with its vector (not its sources, nor to the in-process index); its id."""
    cursor = db.execute(
        "INSERT INTO nodes (id, level, parent_id, text, tokens, frequency, last_access, created, "
        "start_time, end_time, relation) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        tuple(n),
    )
    node_id = int(cursor.lastrowid)
    db.execute("INSERT INTO node_vectors (node_id, embedding) VALUES (?, ?)", (node_id, as_blob(vector)))
    return node_id


def insert_pending(db: Database, block_id: int, created: float, members: Sequence[tuple[int, int]]) -> None:
    """A pending block with its id, and its members: (utterance id, 1 if context else 0), in order."""
    db.execute("INSERT INTO pending_blocks (id, created) VALUES (?, ?)", (block_id, created))
    db.executemany(
        "INSERT INTO pending_utterances (block_id, position, utterance_id, is_context) VALUES (?, ?, ?, ?)",
        [(block_id, i, u, c) for i, (u, c) in enumerate(members)],
    )
