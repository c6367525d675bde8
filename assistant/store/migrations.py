"""Ordered, named schema migrations.

Each migration runs in its own transaction and is recorded in the `migrations` table; the
count of applied migrations is mirrored in `PRAGMA user_version`, so a database written by a
newer version of the assistant is recognised and refused rather than misread. Append new
migrations at the end; never edit one that has shipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..errors import StoreError
from .db import Database, sqlite


def run_script(db: Database, script: str) -> None:
    """Run several statements inside the caller's transaction.

    `executescript` would COMMIT first (pysqlite3 keeps the old behaviour), breaking atomicity.
    """
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise StoreError(f"incomplete SQL statement in migration script: {statement.strip()[:80]}")


def _initial_schema(db: Database) -> None:
    run_script(
        db,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE speakers (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created REAL NOT NULL
        );

        -- The raw transcript archive. `digest` makes re-ingesting the same utterance a no-op.
        CREATE TABLE utterances (
            id INTEGER PRIMARY KEY,
            speaker_id INTEGER NOT NULL REFERENCES speakers(id),
            text TEXT NOT NULL CHECK (length(trim(text)) > 0),
            time REAL NOT NULL,
            created REAL NOT NULL,
            digest TEXT NOT NULL UNIQUE
        );
        CREATE INDEX utterances_time ON utterances(time);
        CREATE INDEX utterances_speaker ON utterances(speaker_id);

        -- The memory tree. Only scenes are roots; children go with their parent.
        CREATE TABLE nodes (
            id INTEGER PRIMARY KEY,
            level TEXT NOT NULL CHECK (level IN ('scene', 'event', 'amu')),
            parent_id INTEGER REFERENCES nodes(id) ON DELETE CASCADE,
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL CHECK (tokens > 0),
            frequency INTEGER NOT NULL DEFAULT 0 CHECK (frequency >= 0),
            last_access REAL NOT NULL,
            created REAL NOT NULL,
            start_time REAL,
            end_time REAL,
            relation TEXT,
            CHECK ((level = 'scene') = (parent_id IS NULL))
        );
        CREATE INDEX nodes_parent ON nodes(parent_id);
        CREATE INDEX nodes_level ON nodes(level);

        -- Provenance: which utterances a node rests on.
        CREATE TABLE node_sources (
            node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            utterance_id INTEGER NOT NULL REFERENCES utterances(id) ON DELETE CASCADE,
            PRIMARY KEY (node_id, utterance_id)
        ) WITHOUT ROWID;
        CREATE INDEX node_sources_utterance ON node_sources(utterance_id);

        -- Short-term sensing buffer: the open block, and the leading window kept as context.
        CREATE TABLE stsb (
            position INTEGER PRIMARY KEY,
            utterance_id INTEGER NOT NULL REFERENCES utterances(id) ON DELETE CASCADE,
            is_context INTEGER NOT NULL CHECK (is_context IN (0, 1))
        );

        -- Pending buffer: blocks cut from the STSB, not yet distilled and mounted on the tree.
        CREATE TABLE pending_blocks (id INTEGER PRIMARY KEY, created REAL NOT NULL);
        CREATE TABLE pending_utterances (
            block_id INTEGER NOT NULL REFERENCES pending_blocks(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            utterance_id INTEGER NOT NULL REFERENCES utterances(id) ON DELETE CASCADE,
            is_context INTEGER NOT NULL CHECK (is_context IN (0, 1)),
            PRIMARY KEY (block_id, position)
        ) WITHOUT ROWID;

        -- What was done to the memory (ingest, forget, export): when, and with what request.
        -- Never the content itself.
        CREATE TABLE audit (
            id INTEGER PRIMARY KEY,
            time REAL NOT NULL,
            action TEXT NOT NULL,
            detail TEXT NOT NULL
        );
        """,
    )


def _speaker_voices(db: Database) -> None:
    run_script(
        db,
        """
        -- A speaker's voice: the L2-normalised centroid of their speaker embeddings (float32),
        -- how much speech it was built from, and whether the user enrolled it from a recording.
        ALTER TABLE speakers ADD COLUMN voice BLOB;
        ALTER TABLE speakers ADD COLUMN speech_seconds REAL NOT NULL DEFAULT 0 CHECK (speech_seconds >= 0);
        ALTER TABLE speakers ADD COLUMN enrolled INTEGER NOT NULL DEFAULT 0 CHECK (enrolled IN (0, 1));
        """,
    )


# An utterance is held by the memory while the tree rests on it (node_sources) or a buffer holds
# it (stsb, pending_utterances): the lines an answer may quote. Each of the three tables gets a
# pair of triggers that keep `memory_lines` equal to that union, whatever deletes a row (a
# prune, a forget, a cascade from the archive).
_HOLDERS = ("node_sources", "stsb", "pending_utterances")
_HELD = " OR ".join(f"EXISTS (SELECT 1 FROM {table} WHERE utterance_id = {{u}})" for table in _HOLDERS)
_LINE_TRIGGERS = [f"memory_lines_{verb}_by_{table}" for table in _HOLDERS for verb in ("held", "released")]


def line_triggers(*, held_lines: bool) -> list[str]:
    """The triggers that keep the held lines' tables equal to what the memory holds: only
    `memory_lines` (migration 0003), or `held_lines` too (0007)."""
    if held_lines:
        already = "EXISTS (SELECT 1 FROM held_lines WHERE utterance_id = new.utterance_id)"
        held = (
            "INSERT INTO held_lines (utterance_id, speaker_id, time) "
            "SELECT id, speaker_id, time FROM utterances WHERE id = new.utterance_id; "
        )
        released = "DELETE FROM held_lines WHERE utterance_id = old.utterance_id; "
    else:
        already, held, released = "EXISTS (SELECT 1 FROM memory_lines WHERE rowid = new.utterance_id)", "", ""
    statements = []
    for table in _HOLDERS:
        statements += [
            f"CREATE TRIGGER memory_lines_held_by_{table} AFTER INSERT ON {table} WHEN NOT {already} BEGIN "
            "INSERT INTO memory_lines (rowid, text) SELECT id, text FROM utterances WHERE id = new.utterance_id; "
            f"{held}END;",
            f"CREATE TRIGGER memory_lines_released_by_{table} AFTER DELETE ON {table} "
            f"WHEN NOT ({_HELD.format(u='old.utterance_id')}) BEGIN "
            f"DELETE FROM memory_lines WHERE rowid = old.utterance_id; {released}END;",
        ]
    return statements


def _memory_lines(db: Database) -> None:
    # The lexical index of the lines the memory holds (BM25 through FTS5, porter-stemmed). It
    # covers what the memory holds, not the whole archive: that is bounded by the token budget,
    # so a query's cost does not grow with months of transcript (over 100,000 archived lines a
    # BM25 query took 79 ms median against 0.4 ms over 1,000). A regular FTS5 table, not
    # external-content: a cascade from a deleted utterance leaves no text to un-index with.
    statements = [
        "CREATE INDEX pending_utterances_utterance ON pending_utterances(utterance_id);",
        "CREATE VIRTUAL TABLE memory_lines USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2');",
    ]
    statements += line_triggers(held_lines=False)
    statements.append(
        "INSERT INTO memory_lines (rowid, text) SELECT id, text FROM utterances WHERE id IN "
        "(SELECT utterance_id FROM node_sources UNION SELECT utterance_id FROM stsb "
        "UNION SELECT utterance_id FROM pending_utterances);"
    )
    run_script(db, "\n".join(statements))


def _utterance_voices(db: Database) -> None:
    # The voice embedding each utterance was attributed from: what lets the session be
    # re-clustered, and a speaker's voice be recomputed when utterances move between speakers.
    # It goes with its utterance (forget, expire, a merge's duplicate), by the cascade.
    run_script(
        db,
        """
        CREATE TABLE utterance_voices (
            utterance_id INTEGER PRIMARY KEY REFERENCES utterances(id) ON DELETE CASCADE,
            embedding BLOB NOT NULL,
            seconds REAL NOT NULL CHECK (seconds >= 0)
        );
        """,
    )


def _supersessions(db: Database) -> None:
    # A later line that states a new value for what an earlier line said (a date moved, an amount
    # changed, someone else took over): `old_id` is superseded by `new_id`. Pruning takes what
    # rests on superseded lines first and recall ranks the successor above them
    # (memory/supersede.py). A link goes with either line (forget, expiry) by the cascade.
    run_script(
        db,
        """
        CREATE TABLE supersessions (
            old_id INTEGER NOT NULL REFERENCES utterances(id) ON DELETE CASCADE,
            new_id INTEGER NOT NULL REFERENCES utterances(id) ON DELETE CASCADE,
            PRIMARY KEY (old_id, new_id),
            CHECK (old_id != new_id)
        ) WITHOUT ROWID;
        CREATE INDEX supersessions_new ON supersessions(new_id);
        """,
    )


def _enrolled_seconds(db: Database) -> None:
    # How many seconds of recording were enrolled for a speaker, for `assistant speakers` to list.
    # Speakers enrolled before this column existed get it from the audit, which recorded each
    # enrollment's seconds under the speaker's id (what a merge brought in from another is lost).
    # A speaker's recent utterances are read newest first to say how surely they matched their
    # voice; (speaker_id, time) finds the last 20 without sorting all of a speaker's lines, and
    # serves every lookup the index on speaker_id alone did.
    run_script(
        db,
        """
        ALTER TABLE speakers ADD COLUMN enrolled_seconds REAL NOT NULL DEFAULT 0 CHECK (enrolled_seconds >= 0);
        UPDATE speakers SET enrolled_seconds = coalesce((
            SELECT sum(json_extract(a.detail, '$.seconds')) FROM audit a
            WHERE a.action = 'enroll_speaker' AND json_extract(a.detail, '$.speaker') = speakers.id
        ), 0) WHERE enrolled = 1;
        CREATE INDEX utterances_speaker_time ON utterances(speaker_id, time);
        DROP INDEX utterances_speaker;
        """,
    )


def _held_lines(db: Database) -> None:
    # The held lines again, as a plain table with the two columns recall narrows them by (who
    # said a line, and when). FTS5 can only scan its rows, at about 0.4 us each: finding one
    # speaker's held lines took 3 ms over 5,400 held lines, and counting them 0.4 ms, work that
    # grew with the held lines while the answer stays a few hundred. Indexed here, it costs what
    # it returns. The same triggers keep both equal to what the memory holds; a line moved to
    # another speaker moves here too.
    statements = [
        """CREATE TABLE held_lines (
            utterance_id INTEGER PRIMARY KEY REFERENCES utterances(id) ON DELETE CASCADE,
            speaker_id INTEGER NOT NULL,
            time REAL NOT NULL
        );""",
        "CREATE INDEX held_lines_speaker_time ON held_lines(speaker_id, time);",
        "CREATE INDEX held_lines_time ON held_lines(time);",
        "INSERT INTO held_lines (utterance_id, speaker_id, time) "
        "SELECT u.id, u.speaker_id, u.time FROM memory_lines m JOIN utterances u ON u.id = m.rowid;",
        "CREATE TRIGGER held_lines_speaker AFTER UPDATE OF speaker_id ON utterances BEGIN "
        "UPDATE held_lines SET speaker_id = new.speaker_id WHERE utterance_id = new.id; "
        "END;",
    ]
    statements += [f"DROP TRIGGER {name};" for name in _LINE_TRIGGERS]
    statements += line_triggers(held_lines=True)
    run_script(db, "\n".join(statements))


MIGRATIONS: list[tuple[str, Callable[[Database], None]]] = [
    ("0001_initial_schema", _initial_schema),
    ("0002_speaker_voices", _speaker_voices),
    ("0003_memory_lines", _memory_lines),
    ("0004_utterance_voices", _utterance_voices),
    ("0005_supersessions", _supersessions),
    ("0006_enrolled_seconds", _enrolled_seconds),
    ("0007_held_lines", _held_lines),
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: Database) -> int:
    """Apply what is missing; return the number applied. Refuse a database from the future."""
    current = db.scalar("PRAGMA user_version")
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"{db.path}: schema version {current} is newer than this assistant understands "
            f"({SCHEMA_VERSION}); upgrade the assistant"
        )
    db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied REAL NOT NULL)")
    applied = 0
    for index, (name, step) in enumerate(MIGRATIONS, start=1):
        if index <= current:
            continue
        with db.atomic():
            step(db)
            db.execute("INSERT INTO migrations (name, applied) VALUES (?, ?)", (name, time.time()))
            db.execute(f"PRAGMA user_version = {index}")
        applied += 1
    return applied
