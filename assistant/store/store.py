"""The memory's storage: SQL in, records out.

`Store` owns the database connection and the in-process vector indexes (one per tree level).
Callers group writes with `store.atomic()`; if a transaction rolls back, the indexes are
rebuilt from SQLite so they never describe rows that do not exist.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..records import Block, Evidence, Level, Node, RecallFilter, Speaker, Utterance
from .db import Database
from .migrations import migrate
from .vectors import VectorIndex, as_blob, ensure_vector_tables, from_blob
from .window import recall_window, utterance_window

# The most neighbours one sqlite-vec KNN query may ask for (its default limit).
_MAX_KNN = 4096

# A node and everything under it, as the table `sub(id)`.
_SUBTREE = "WITH RECURSIVE sub(id) AS (SELECT ? UNION ALL SELECT n.id FROM nodes n JOIN sub ON n.parent_id = sub.id) "
_NODE_COLUMNS = "id, level, parent_id, text, tokens, frequency, last_access, created, start_time, end_time, relation"
# How many of a speaker's newest utterances heard with a voice say how surely they matched it
# (`Speaker.match_cosine`): enough for a median a stray line does not move, recent enough to
# show a voice drifting (a cold, another microphone) or a wrong enrollment.
RECENT_MATCHES = 20


def _node(row: Any) -> Node:
    return Node(
        id=row["id"],
        level=Level(row["level"]),
        parent_id=row["parent_id"],
        text=row["text"],
        tokens=row["tokens"],
        frequency=row["frequency"],
        last_access=row["last_access"],
        created=row["created"],
        start_time=row["start_time"],
        end_time=row["end_time"],
        relation=row["relation"],
    )


def _utterance(row: Any) -> Utterance:
    return Utterance(speaker=row["speaker"], text=row["text"], time=row["time"], id=row["id"])


def utterance_digest(u: Utterance) -> str:
    return hashlib.sha256(f"{u.speaker}\x1f{u.time!r}\x1f{u.text}".encode()).hexdigest()


class Store:
    def __init__(self, path: Path | str, *, embedder: str, dim: int) -> None:
        self.db = Database(path)
        migrate(self.db)
        ensure_vector_tables(self.db, embedder, dim)
        self.dim = dim
        self.index = {level: VectorIndex(dim) for level in Level}
        # The vectors of the lines the memory holds (see `held_ids`), for the dense half of
        # recall. Lines the memory lets go stay in it until the next rebuild and are filtered
        # out as they are found; it is rebuilt when they outnumber the held ones.
        self.line_index = VectorIndex(dim)
        # State mirrored in memory elsewhere (the sensing buffer) registers here to be reloaded
        # when an outermost transaction rolls back.
        self.on_rollback: list[Callable[[], None]] = [self.reload_index]
        self.reload_index()

    @staticmethod
    def recorded_embedder(path: Path | str) -> tuple[str, int] | None:
        """The embedder's name and dimension the memory at `path` was built with; None when there is none yet."""
        if not Path(path).exists():
            return None
        db = Database(path)
        try:
            has_meta = db.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'") is not None
            found = "SELECT key, value FROM meta WHERE key IN ('embedder', 'embedding_dim')"
            rows = dict(db.all(found)) if has_meta else {}
        finally:
            db.close()
        return (rows["embedder"], int(rows["embedding_dim"])) if len(rows) == 2 else None

    @classmethod
    def open_existing(cls, path: Path | str) -> Store | None:
        """The memory at `path` with the embedder it was built with; None when there is none yet.

        Needs no embedding model, only its name and dimension from the database, so a status or
        a count reads the memory without loading one.
        """
        recorded = cls.recorded_embedder(path)
        return None if recorded is None else cls(path, embedder=recorded[0], dim=recorded[1])

    def close(self) -> None:
        self.db.close()

    def file_bytes(self) -> int:
        """The database on disk: the file and its write-ahead log."""
        path = self.db.path
        return sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal") if path and os.path.exists(f"{path}{s}"))

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        try:
            with self.db.atomic():
                yield
        except BaseException:
            # Savepoints too: what is mirrored in memory must match what the database now says.
            for reload in self.on_rollback:
                reload()
            raise

    def reload_index(self) -> None:
        self.rebuild_line_index()
        for level, index in self.index.items():
            index.rebuild(
                (r[0], r[1])
                for r in self.db.all(
                    "SELECT v.node_id, v.embedding FROM node_vectors v JOIN nodes n ON n.id = v.node_id "
                    "WHERE n.level = ?",
                    (level.value,),
                )
            )

    # --- meta and audit ----------------------------------------------------------------

    def meta(self, key: str, default: str | None = None) -> str | None:
        value = self.db.scalar("SELECT value FROM meta WHERE key = ?", (key,))
        return default if value is None else value

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = ?", (key, value, value)
        )

    @property
    def clock(self) -> float:
        """The memory's notion of now: the time of the newest utterance it has heard."""
        return float(self.meta("clock", "0") or 0)

    def advance_clock(self, t: float) -> None:
        if t > self.clock:
            self.set_meta("clock", repr(t))

    def audit(self, action: str, detail: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT INTO audit (time, action, detail) VALUES (?, ?, ?)",
            (time.time(), action, json.dumps(detail, sort_keys=True)),
        )

    # --- speakers and utterances ---------------------------------------------------------

    def speaker_id(self, name: str) -> int:
        row = self.db.one("SELECT id FROM speakers WHERE name = ?", (name,))
        if row is not None:
            return int(row[0])
        return int(self.db.execute("INSERT INTO speakers (name, created) VALUES (?, ?)", (name, time.time())).lastrowid)

    def speakers(self) -> list[Speaker]:
        return self._speakers("", ())

    def speaker_names(self) -> list[str]:
        """Every speaker's name (without counting their speech, which scans the archive)."""
        return [r[0] for r in self.db.all("SELECT name FROM speakers ORDER BY id")]

    def speaker_name(self, speaker_id: int) -> str | None:
        """A speaker's name by id, without what a `Speaker` counts (its lines, how surely they matched)."""
        row = self.db.one("SELECT name FROM speakers WHERE id = ?", (speaker_id,))
        return str(row[0]) if row is not None else None

    def find_speaker(self, key: str | int) -> Speaker | None:
        """A speaker by id (a number) or by exact name."""
        found = self._speakers("WHERE s.id = ?" if isinstance(key, int) else "WHERE s.name = ?", (key,))
        return found[0] if found else None

    def _speakers(self, where: str, params: tuple[object, ...]) -> list[Speaker]:
        rows = self.db.all(
            "SELECT s.id, s.name, s.voice, s.speech_seconds, s.enrolled, s.enrolled_seconds, "
            f"(SELECT count(*) FROM utterances u WHERE u.speaker_id = s.id) AS n FROM speakers s {where} ORDER BY s.id",
            params,
        )
        voices = {r["id"]: from_blob(r["voice"]).copy() for r in rows if r["voice"] is not None}
        matches = self._recent_matches(voices)
        return [
            Speaker(
                id=r["id"],
                name=r["name"],
                utterances=r["n"],
                speech_seconds=r["speech_seconds"],
                enrolled=bool(r["enrolled"]),
                voice=voices.get(r["id"]),
                enrolled_seconds=r["enrolled_seconds"],
                match_cosine=matches[r["id"]][0] if r["id"] in matches else None,
                match_utterances=matches[r["id"]][1] if r["id"] in matches else 0,
            )
            for r in rows
        ]

    def _recent_matches(self, voices: dict[int, np.ndarray]) -> dict[int, tuple[float, int]]:
        """Per speaker with a voice: the median cosine of their last `RECENT_MATCHES` utterances'
        voice embeddings to it, and how many there were (speakers with none are left out).

        One query for every speaker; the index on (speaker_id, time) reads each speaker's newest
        lines first, so the cost stays flat however long the transcript grows (the speakers are
        listed with every status poll)."""
        if not voices:
            return {}
        ids = sorted(voices)
        embeddings: dict[int, list[np.ndarray]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.db.all(
                "SELECT s.id, v.embedding FROM speakers s JOIN utterance_voices v ON v.utterance_id IN ("
                " SELECT u.id FROM utterances u WHERE u.speaker_id = s.id"
                " AND EXISTS (SELECT 1 FROM utterance_voices w WHERE w.utterance_id = u.id)"
                " ORDER BY u.time DESC, u.id DESC LIMIT ?)"
                f" WHERE s.id IN ({','.join('?' * len(chunk))})",
                (RECENT_MATCHES, *chunk),
            )
            for r in rows:
                embeddings.setdefault(int(r[0]), []).append(from_blob(r[1]))
        out: dict[int, tuple[float, int]] = {}
        for sid, found in embeddings.items():
            voice = voices[sid]
            stacked = np.stack(found)
            norms = np.linalg.norm(stacked, axis=1) * float(np.linalg.norm(voice))
            cosines = stacked @ voice / np.where(norms > 0, norms, 1.0)
            out[sid] = (round(float(np.median(cosines)), 3), len(found))
        return out

    def set_voice(
        self, speaker_id: int, voice: np.ndarray, speech_seconds: float, *, enrolled: bool | None = None
    ) -> None:
        self.db.execute(
            "UPDATE speakers SET voice = ?, speech_seconds = ?, enrolled = coalesce(?, enrolled) WHERE id = ?",
            (as_blob(voice), float(speech_seconds), None if enrolled is None else int(enrolled), speaker_id),
        )

    def add_enrolled_seconds(self, speaker_id: int, seconds: float) -> None:
        self.db.execute(
            "UPDATE speakers SET enrolled_seconds = enrolled_seconds + ? WHERE id = ?",
            (max(0.0, float(seconds)), speaker_id),
        )

    def rename_speaker(self, speaker_id: int, name: str) -> None:
        self.db.execute("UPDATE speakers SET name = ? WHERE id = ?", (name, speaker_id))
        self._redigest(speaker_id)

    def move_utterances(self, from_id: int, to_id: int) -> int:
        """Give one speaker's utterances to another; an utterance the other already has is dropped."""
        everything_said = self.utterance_ids_between(None, None, from_id)
        return self.move_utterance_ids(everything_said, to_id).get(from_id, 0)

    def move_utterance_ids(self, utterance_ids: Sequence[int], to_id: int) -> dict[int, int]:
        """Give these utterances to another speaker; how many moved from each former speaker."""
        ids = sorted(set(utterance_ids))
        if not ids:
            return {}
        moved: dict[int, int] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.db.all(
                f"SELECT speaker_id, count(*) FROM utterances WHERE id IN ({marks}) AND speaker_id != ? "
                "GROUP BY speaker_id",
                (*chunk, to_id),
            ):
                moved[int(row[0])] = moved.get(int(row[0]), 0) + int(row[1])
            self.db.execute(f"UPDATE utterances SET speaker_id = ? WHERE id IN ({marks})", (to_id, *chunk))
        if moved:
            self._redigest(to_id)
        return moved

    def utterance_ids_between(self, since: float | None, until: float | None, speaker_id: int | None) -> list[int]:
        """Utterances said from `since` (inclusive) to `until` (exclusive), by one speaker if given."""
        where = utterance_window(since, until, speaker_id=speaker_id)
        rows = self.db.all(f"SELECT u.id FROM utterances u WHERE 1{where.sql} ORDER BY u.time, u.id", where.params)
        return [int(r[0]) for r in rows]

    def last_utterances(
        self, limit: int, speaker_id: int | None = None, since: float | None = None, until: float | None = None
    ) -> list[tuple[int, Utterance]]:
        """The newest `limit` utterances (of one speaker, in [since, until), if given), oldest first,
        with their speaker's id."""
        where = utterance_window(since, until, speaker_id=speaker_id)
        rows = self.db.all(
            "SELECT u.id, u.speaker_id, s.name AS speaker, u.text, u.time FROM utterances u "
            f"JOIN speakers s ON s.id = u.speaker_id WHERE 1{where.sql} ORDER BY u.time DESC, u.id DESC LIMIT ?",
            (*where.params, limit),
        )
        return [(int(r["speaker_id"]), _utterance(r)) for r in reversed(rows)]

    def set_utterance_voice(self, utterance_id: int, embedding: np.ndarray, seconds: float) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO utterance_voices (utterance_id, embedding, seconds) VALUES (?, ?, ?)",
            (utterance_id, as_blob(np.asarray(embedding, dtype=np.float32)), max(0.0, float(seconds))),
        )

    def speaker_voice(self, speaker_id: int) -> tuple[np.ndarray, float] | None:
        """The unit mean of the voice embeddings of a speaker's utterances, weighted by their
        seconds, and those seconds; None when none of their utterances has one."""
        rows = self.db.all(
            "SELECT v.embedding, v.seconds FROM utterance_voices v JOIN utterances u ON u.id = v.utterance_id "
            "WHERE u.speaker_id = ?",
            (speaker_id,),
        )
        if not rows:
            return None
        vectors = np.stack([from_blob(r[0]) for r in rows])
        seconds = np.array([max(float(r[1]), 1e-3) for r in rows])
        mean = (vectors * seconds[:, None]).sum(axis=0)
        norm = float(np.linalg.norm(mean))
        return (mean / norm if norm > 0 else mean).astype(np.float32), float(seconds.sum())

    def delete_speaker(self, speaker_id: int) -> None:
        self.db.execute("DELETE FROM speakers WHERE id = ?", (speaker_id,))

    def _redigest(self, speaker_id: int) -> None:
        """The digest covers the speaker's name, so re-ingesting a relabelled utterance stays a no-op."""
        rows = self.db.all(
            "SELECT u.id, s.name AS speaker, u.text, u.time FROM utterances u JOIN speakers s ON s.id = u.speaker_id "
            "WHERE u.speaker_id = ? ORDER BY u.id",
            (speaker_id,),
        )
        seen: set[str] = set()
        for r in rows:
            digest = utterance_digest(_utterance(r))
            clash = self.db.one("SELECT id FROM utterances WHERE digest = ? AND id != ?", (digest, r["id"]))
            if digest in seen or clash is not None:
                # Two copies of one utterance under the merged name: keep the first.
                self.db.execute("DELETE FROM utterances WHERE id = ?", (r["id"],))
                self.unindex_lines([r["id"]])
                continue
            seen.add(digest)
            self.db.execute("UPDATE utterances SET digest = ? WHERE id = ?", (digest, r["id"]))

    def set_utterance_vector(self, utterance_id: int, vector: np.ndarray) -> None:
        self.db.execute(
            "UPDATE utterance_vectors SET embedding = ? WHERE utterance_id = ?", (as_blob(vector), utterance_id)
        )
        if utterance_id in self.line_index:
            self.line_index.remove([utterance_id])
            self.line_index.add(utterance_id, vector)

    def speaker_utterances(self, speaker_id: int) -> list[Utterance]:
        rows = self.db.all(
            "SELECT u.id, s.name AS speaker, u.text, u.time FROM utterances u JOIN speakers s ON s.id = u.speaker_id "
            "WHERE u.speaker_id = ? ORDER BY u.time, u.id",
            (speaker_id,),
        )
        return [_utterance(r) for r in rows]

    def set_node_text(self, node_id: int, text: str, tokens: int) -> None:
        self.db.execute("UPDATE nodes SET text = ?, tokens = ? WHERE id = ?", (text, tokens, node_id))

    def restate_node(self, node_id: int, text: str, tokens: int, end_time: float, relation: str | None) -> None:
        """New words for a unit whose fact was said again; its span grows to the latest statement."""
        self.db.execute(
            "UPDATE nodes SET text = :text, tokens = :tokens, relation = :relation,"
            " end_time = max(coalesce(end_time, :end), :end) WHERE id = :id",
            {"text": text, "tokens": tokens, "relation": relation, "end": end_time, "id": node_id},
        )

    def add_utterance(self, u: Utterance, vector: np.ndarray) -> Utterance | None:
        """Archive an utterance with its vector; None if this exact utterance is already there."""
        digest = utterance_digest(u)
        if self.db.one("SELECT 1 FROM utterances WHERE digest = ?", (digest,)):
            return None
        sid = self.speaker_id(u.speaker)
        uid = int(
            self.db.execute(
                "INSERT INTO utterances (speaker_id, text, time, created, digest) VALUES (?, ?, ?, ?, ?)",
                (sid, u.text, u.time, time.time(), digest),
            ).lastrowid
        )
        self.db.execute("INSERT INTO utterance_vectors (utterance_id, embedding) VALUES (?, ?)", (uid, as_blob(vector)))
        # Every new line enters the sensing buffer, so the memory holds it from now on.
        self.line_index.add(uid, vector)
        return Utterance(u.speaker, u.text, u.time, uid)

    def utterances_containing(self, speaker_ids: Iterable[int], fragments: Sequence[str]) -> list[Utterance]:
        """The utterances of these speakers whose text holds any of `fragments` (ASCII case ignored), oldest first."""
        ids, fragments = list(speaker_ids), list(fragments)
        if not ids or not fragments:
            return []
        marks = ",".join("?" * len(ids))
        like = " OR ".join("u.text LIKE ? ESCAPE '\\'" for _ in fragments)
        escaped = ["%" + f.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for f in fragments]
        rows = self.db.all(
            "SELECT u.id, s.name AS speaker, u.text, u.time FROM utterances u JOIN speakers s ON s.id = u.speaker_id "
            f"WHERE u.speaker_id IN ({marks}) AND ({like}) ORDER BY u.time, u.id",
            [*ids, *escaped],
        )
        return [_utterance(r) for r in rows]

    def utterances(self, ids: Iterable[int]) -> list[Utterance]:
        ids = list(ids)
        rows = []
        # In chunks: a time range can name more ids than SQLite binds in one statement.
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows += self.db.all(
                "SELECT u.id, s.name AS speaker, u.text, u.time FROM utterances u "
                f"JOIN speakers s ON s.id = u.speaker_id WHERE u.id IN ({marks})",
                chunk,
            )
        rows.sort(key=lambda r: (r["time"], r["id"]))
        return [_utterance(r) for r in rows]

    def utterance_vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        # The line index holds every held line's vector, so it answers for those: a point read
        # of sqlite-vec grows with the archive (17 us at 1,000 lines, 96 us at 100,000), and
        # recall reads one for each of its ~120 candidates. The rest (lines only the archive
        # holds) are read one by one: sqlite-vec answers `utterance_id = ?` from its rowid map
        # but scans every vector for `IN (...)` (60 ids among 100,000: 25 ms by IN, 0.5 ms so).
        wanted = list(dict.fromkeys(ids))
        indexed = [uid for uid in wanted if uid in self.line_index]
        out: dict[int, np.ndarray] = dict(zip(indexed, self.line_index.get(indexed), strict=True))
        for uid in wanted:
            if uid not in out and (blob := self._archived_vector(uid)) is not None:
                out[uid] = from_blob(blob)
        return out

    def _archived_vector(self, uid: int) -> bytes | None:
        return self.db.scalar("SELECT embedding FROM utterance_vectors WHERE utterance_id = ?", (uid,))

    def utterance_count(self) -> int:
        return int(self.db.scalar("SELECT count(*) FROM utterances"))

    # --- the lines the memory holds: what recall searches ---------------------------------

    def held_ids(self) -> list[int]:
        """Utterances the tree rests on or a buffer holds (the rows of `memory_lines` and `held_lines`)."""
        return [r[0] for r in self.db.all("SELECT utterance_id FROM held_lines ORDER BY utterance_id")]

    def held_count(self) -> int:
        return int(self.db.scalar("SELECT count(*) FROM held_lines"))

    def rebuild_line_index(self) -> None:
        # From the table, never the index being replaced: after a rollback that index may hold
        # vectors the database no longer has.
        self.line_index.rebuild(
            (uid, blob) for uid in self.held_ids() if (blob := self._archived_vector(uid)) is not None
        )

    def unindex_lines(self, ids: Iterable[int]) -> None:
        """Drop deleted lines from the line index, which must never answer for a line that is gone."""
        self.line_index.remove(ids)

    def compact_line_index(self) -> bool:
        """Rebuild the line index once the lines let go outnumber those held (amortised: a rebuild
        costs O(held), and at least that many lines were let go since the last one)."""
        if len(self.line_index) <= 2 * self.held_count() + 1024:
            return False
        self.rebuild_line_index()
        return True

    def lexical_lines(self, match: str, k: int, window: RecallFilter | None = None) -> list[tuple[int, float]]:
        """The k held lines that best match an FTS5 query, by BM25 (higher is better), inside `window`."""
        where = recall_window(window)
        # The window reads `held_lines` (the same rows as `memory_lines`, with who and when),
        # not the archive: joined to the archive's 100,000 utterances, a question cost twice as
        # much (2.0 ms against 1.0 ms for one that matches a thousand lines of 5,500).
        rows = self.db.all(
            "SELECT m.rowid, -bm25(memory_lines) AS score FROM memory_lines m "
            "JOIN held_lines u ON u.utterance_id = m.rowid JOIN speakers s ON s.id = u.speaker_id "
            f"WHERE memory_lines MATCH ?{where.sql} ORDER BY bm25(memory_lines) LIMIT ?",
            (match, *where.params, k),
        )
        return [(int(r[0]), float(r[1])) for r in rows]

    def line_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """How many lines the memory holds, and how many of them say each term (FTS5's stemming)."""
        total = self.held_count()
        found: dict[str, int] = {}
        for term in terms:
            quoted = '"' + term.replace('"', "") + '"'
            if quoted != '""':
                found[term] = int(
                    self.db.one("SELECT count(*) FROM memory_lines WHERE memory_lines MATCH ?", (quoted,))[0]
                )
        return total, found

    def dense_lines(self, vector: np.ndarray, k: int, window: RecallFilter | None = None) -> list[tuple[int, float]]:
        """The k held lines nearest to `vector` by cosine, inside `window`.

        The index is searched for more than k, since lines let go (and, with a filter, lines
        outside it) are dropped from what it returns. A window that holds few lines, or few
        against the memory, is scored exactly instead, so a filter never hides its own best line:
        a search for 4k keeps k of a window that holds a quarter of the lines, and below that it
        must search again for four times as many, as far as the whole index, where the nearest
        lines are others' (one speaker's 624 lines of 5,500: 55 ms by the index, 1.6 ms exactly).
        """
        if window is not None and not window.empty:
            inside = self._held_in_window(window, limit=max(4 * k + 256, self.held_count() // 4))
            if inside is not None:
                vectors = self.utterance_vectors(inside)
                ids = [uid for uid in inside if uid in vectors]
                if not ids:
                    return []
                scores = np.stack([vectors[uid] for uid in ids]) @ vector
                best = np.argsort(-scores, kind="stable")[:k]
                return [(ids[i], float(scores[i])) for i in best]
        found: list[tuple[int, float]] = []
        want = 4 * k
        while True:
            hits = self.line_index.search(vector, want)
            found = self._keep_held(hits, window)
            if len(found) >= k or len(hits) < want or want >= len(self.line_index):
                return found[:k]
            want *= 4

    def _held_in_window(self, window: RecallFilter, limit: int) -> list[int] | None:
        """The held lines inside the window, or None when there are more than `limit` of them."""
        where = recall_window(window)
        # `held_lines` carries the utterance's speaker and time, so the window's conditions
        # (written against `u`) read its indexes directly.
        rows = self.db.all(
            "SELECT u.utterance_id FROM held_lines u JOIN speakers s ON s.id = u.speaker_id "
            f"WHERE 1{where.sql} LIMIT ?",
            (*where.params, limit + 1),
        )
        return None if len(rows) > limit else [int(r[0]) for r in rows]

    def _keep_held(self, hits: list[tuple[int, float]], window: RecallFilter | None) -> list[tuple[int, float]]:
        if not hits:
            return []
        where = recall_window(window)
        # One statement for every hit, each checked by rowid (json_each drives the join); a
        # query per hit cost five times as much (200 hits: 1.05 ms against 0.20 ms).
        held = {
            int(r[0])
            for r in self.db.all(
                "SELECT u.utterance_id FROM json_each(?) j CROSS JOIN held_lines u ON u.utterance_id = j.value "
                f"JOIN speakers s ON s.id = u.speaker_id WHERE 1{where.sql}",
                (json.dumps([uid for uid, _ in hits]), *where.params),
            )
        }
        return [(uid, score) for uid, score in hits if uid in held]

    def adjacent(self, utterance_id: int, *, after: bool) -> Utterance | None:
        """The archived utterance just after (or just before) this one, by time."""
        found = self.turns_near([utterance_id], 1, after=after).get(utterance_id)
        return found[0] if found else None

    def turns_beside(self, utterance_ids: Iterable[int], *, after: bool) -> dict[int, int]:
        """For each of these, the id of the archived utterance just after (or just before) it, by
        time; none for one that has no such turn or is gone."""
        near = self.turns_near(utterance_ids, 1, after=after)
        return {uid: turns[0].id for uid, turns in near.items() if turns[0].id is not None}

    def turns_near(self, utterance_ids: Iterable[int], count: int, *, after: bool) -> dict[int, list[Utterance]]:
        """For each of these, the `count` archived utterances just after (or just before) it, by
        time, nearest first; none for one that is gone."""
        op, order = (">", "ASC") if after else ("<", "DESC")
        rows = self.db.all(
            "SELECT u.id AS near_id, n.id, s.name AS speaker, n.text, n.time FROM json_each(?) j "
            "JOIN utterances u ON u.id = j.value "
            f"JOIN utterances n ON n.id IN (SELECT m.id FROM utterances m WHERE (m.time, m.id) {op} (u.time, u.id) "
            f"ORDER BY m.time {order}, m.id {order} LIMIT ?) "
            "JOIN speakers s ON s.id = n.speaker_id",
            (json.dumps(list(dict.fromkeys(utterance_ids))), count),
        )
        found: dict[int, list[Utterance]] = {}
        for r in rows:
            found.setdefault(int(r["near_id"]), []).append(_utterance(r))
        for turns in found.values():
            turns.sort(key=lambda u: (u.time, u.id or 0), reverse=not after)
        return found

    def held_ids_among(self, utterance_ids: Iterable[int], window: RecallFilter | None = None) -> list[int]:
        return [uid for uid, _ in self._keep_held([(uid, 0.0) for uid in dict.fromkeys(utterance_ids)], window)]

    def nodes_by_id(self, node_ids: Iterable[int]) -> list[Node]:
        return [n for n in (self.node(nid) for nid in dict.fromkeys(node_ids)) if n is not None]

    def node_ids_of(self, utterance_ids: Iterable[int]) -> dict[int, list[int]]:
        """For each utterance, the nodes that rest on it."""
        out: dict[int, list[int]] = {}
        for uid in dict.fromkeys(utterance_ids):
            out[uid] = [r[0] for r in self.db.all("SELECT node_id FROM node_sources WHERE utterance_id = ?", (uid,))]
        return out

    def optimize_lexical_index(self) -> None:
        """Merge the lexical index into one segment, dropping the entries of deleted lines (forget)."""
        self.db.execute("INSERT INTO memory_lines (memory_lines) VALUES ('optimize')")

    def search_utterances(self, vector: np.ndarray, k: int) -> list[tuple[Utterance, float]]:
        """Nearest archived utterances by sqlite-vec KNN (the cold path: not part of per-step work)."""
        rows = self.db.all(
            "SELECT utterance_id, distance FROM utterance_vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (as_blob(vector), k),
        )
        found = {u.id: u for u in self.utterances(r[0] for r in rows)}
        return [(found[r[0]], 1.0 - float(r[1])) for r in rows if r[0] in found]

    def archived_lines(
        self, vector: np.ndarray, k: int, window: RecallFilter | None = None
    ) -> list[tuple[Utterance, float]]:
        """The k archived lines nearest to `vector` inside `window`, with their cosine, nearest first,
        whether or not the memory still holds them. Forgotten and expired lines are gone from the
        archive, and so from here."""
        want = 4 * k
        while True:
            asked = min(want, _MAX_KNN)
            hits = self.search_utterances(vector, asked)
            found = [(u, cos) for u, cos in hits if window is None or window.admits(u.speaker, u.time)]
            # Fewer hits than asked: the whole archive was read (no count of it needed first).
            if len(found) >= k or len(hits) < asked or asked == _MAX_KNN:
                return found[:k]
            want *= 4

    # --- short-term sensing buffer and pending buffer ------------------------------------

    def stsb(self) -> tuple[list[Utterance], list[Utterance]]:
        """(open buffer, leading context window), each oldest first."""
        rows = self.db.all("SELECT utterance_id, is_context FROM stsb ORDER BY position")
        by_id = {u.id: u for u in self.utterances(r[0] for r in rows)}
        buffer = [by_id[r[0]] for r in rows if not r[1] and r[0] in by_id]
        context = [by_id[r[0]] for r in rows if r[1] and r[0] in by_id]
        return buffer, context

    def set_stsb(self, buffer: list[Utterance], context: list[Utterance]) -> None:
        # Rows are changed in place rather than rewritten: each insert or delete also indexes or
        # un-indexes the line (memory_lines), and most of the buffer is the same from one
        # utterance to the next.
        wanted = [(u.id, 1) for u in context] + [(u.id, 0) for u in buffer]
        current = self.db.all("SELECT position, utterance_id, is_context FROM stsb ORDER BY position")
        if [(r[1], r[2]) for r in current] == wanted:
            return
        keep = {uid for uid, _ in wanted}
        self.db.executemany("DELETE FROM stsb WHERE position = ?", [(r[0],) for r in current if r[1] not in keep])
        # Positions are the primary key: move the survivors out of the way before renumbering.
        self.db.execute("UPDATE stsb SET position = -1 - position")
        present = {r[1] for r in current if r[1] in keep}
        for position, (uid, is_context) in enumerate(wanted):
            if uid in present:
                self.db.execute(
                    "UPDATE stsb SET position = ?, is_context = ? WHERE utterance_id = ? AND position < 0",
                    (position, is_context, uid),
                )
                present.discard(uid)
            else:
                self.db.execute(
                    "INSERT INTO stsb (position, utterance_id, is_context) VALUES (?, ?, ?)",
                    (position, uid, is_context),
                )

    def add_pending(self, utterances: list[Utterance], context: list[Utterance]) -> int:
        block_id = int(self.db.execute("INSERT INTO pending_blocks (created) VALUES (?)", (time.time(),)).lastrowid)
        rows = [(block_id, i, u.id, 1) for i, u in enumerate(context)]
        rows += [(block_id, len(context) + i, u.id, 0) for i, u in enumerate(utterances)]
        self.db.executemany(
            "INSERT INTO pending_utterances (block_id, position, utterance_id, is_context) VALUES (?, ?, ?, ?)", rows
        )
        return block_id

    def pending_blocks(self) -> list[Block]:
        blocks = []
        for (block_id,) in self.db.all("SELECT id FROM pending_blocks ORDER BY id"):
            rows = self.db.all(
                "SELECT utterance_id, is_context FROM pending_utterances WHERE block_id = ? ORDER BY position",
                (block_id,),
            )
            by_id = {u.id: u for u in self.utterances(r[0] for r in rows)}
            main = tuple(by_id[r[0]] for r in rows if not r[1] and r[0] in by_id)
            context = tuple(by_id[r[0]] for r in rows if r[1] and r[0] in by_id)
            if main:
                blocks.append(Block(block_id, main, context))
        return blocks

    def pending_count(self) -> int:
        return int(self.db.scalar("SELECT count(*) FROM pending_blocks"))

    def pending_utterance_ids(self, block_id: int) -> list[int]:
        """The block's own utterances (not its context), in order; empty when it is not pending."""
        rows = self.db.all(
            "SELECT utterance_id FROM pending_utterances WHERE block_id = ? AND is_context = 0 ORDER BY position",
            (block_id,),
        )
        return [r[0] for r in rows]

    def remove_pending(self, block_id: int) -> None:
        self.db.execute("DELETE FROM pending_blocks WHERE id = ?", (block_id,))

    # --- supersession: a later line that states a new value for an earlier one's ----------

    def add_supersessions(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Record each (old, new): the line `new` states a new value for what `old` said."""
        self.db.executemany(
            "INSERT OR IGNORE INTO supersessions (old_id, new_id) VALUES (?, ?)",
            [(old, new) for old, new in pairs if old != new],
        )

    def supersession_links(self) -> list[tuple[int, int]]:
        """Every stored (old, new) link, held or not: what a benchmark checks against its truth."""
        return [(int(r[0]), int(r[1])) for r in self.db.all("SELECT old_id, new_id FROM supersessions")]

    def held_successors(self, utterance_ids: Iterable[int]) -> dict[int, list[int]]:
        """For each of these lines that a held line supersedes, those held successors (oldest first)."""
        ids = list(dict.fromkeys(utterance_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.db.all(
            "SELECT s.old_id, s.new_id FROM supersessions s JOIN utterances u ON u.id = s.new_id "
            f"WHERE s.old_id IN ({marks}) AND EXISTS (SELECT 1 FROM held_lines h WHERE h.utterance_id = s.new_id) "
            "ORDER BY u.time, u.id",
            ids,
        )
        out: dict[int, list[int]] = {}
        for old, new in rows:
            out.setdefault(int(old), []).append(int(new))
        return out

    def superseded_shares(self) -> dict[int, float]:
        """For every node resting on a superseded line, the share of its lines that a held line supersedes."""
        rows = self.db.all(
            "SELECT ns.node_id, count(*), sum(EXISTS (SELECT 1 FROM supersessions s WHERE s.old_id = ns.utterance_id "
            "AND EXISTS (SELECT 1 FROM held_lines h WHERE h.utterance_id = s.new_id))) FROM node_sources ns "
            "GROUP BY ns.node_id"
        )
        return {int(r[0]): int(r[2]) / int(r[1]) for r in rows if r[2]}

    def supersedes_node(self, new_ids: Iterable[int], node_id: int) -> bool:
        """Whether any of the lines `new_ids` supersedes a line the node rests on."""
        ids = list(dict.fromkeys(new_ids))
        if not ids:
            return False
        marks = ",".join("?" * len(ids))
        row = self.db.one(
            "SELECT 1 FROM supersessions s JOIN node_sources ns ON ns.utterance_id = s.old_id "
            f"WHERE ns.node_id = ? AND s.new_id IN ({marks}) LIMIT 1",
            (node_id, *ids),
        )
        return row is not None

    # --- the tree --------------------------------------------------------------------------

    def add_node(
        self,
        level: Level,
        parent_id: int | None,
        text: str,
        tokens: int,
        vector: np.ndarray,
        *,
        created: float,
        sources: Iterable[int] = (),
        start_time: float | None = None,
        end_time: float | None = None,
        relation: str | None = None,
    ) -> int:
        node_id = int(
            self.db.execute(
                "INSERT INTO nodes (level, parent_id, text, tokens, frequency, last_access, created, start_time, "
                "end_time, "
                "relation) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
                (level.value, parent_id, text, tokens, created, created, start_time, end_time, relation),
            ).lastrowid
        )
        self.db.execute("INSERT INTO node_vectors (node_id, embedding) VALUES (?, ?)", (node_id, as_blob(vector)))
        self.add_sources(node_id, sources)
        self.index[level].add(node_id, vector)
        return node_id

    def add_sources(self, node_id: int, utterance_ids: Iterable[int]) -> None:
        self.db.executemany(
            "INSERT OR IGNORE INTO node_sources (node_id, utterance_id) VALUES (?, ?)",
            [(node_id, uid) for uid in utterance_ids],
        )

    def set_node_vector(self, node_id: int, level: Level, vector: np.ndarray) -> None:
        self.db.execute("UPDATE node_vectors SET embedding = ? WHERE node_id = ?", (as_blob(vector), node_id))
        self.index[level].remove([node_id])
        self.index[level].add(node_id, vector)

    def node(self, node_id: int) -> Node | None:
        row = self.db.one(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE id = ?", (node_id,))
        return None if row is None else _node(row)

    def nodes(self, level: Level | None = None) -> list[Node]:
        if level is None:
            rows = self.db.all(f"SELECT {_NODE_COLUMNS} FROM nodes ORDER BY id")
        else:
            rows = self.db.all(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE level = ? ORDER BY id", (level.value,))
        return [_node(r) for r in rows]

    def children(self, parent_id: int) -> list[Node]:
        rows = self.db.all(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE parent_id = ? ORDER BY id", (parent_id,))
        return [_node(r) for r in rows]

    def delete_node(self, node_id: int) -> list[int]:
        """Delete a node and everything under it; return the ids removed."""
        levels = {
            r[0]: Level(r[1])
            for r in self.db.all(
                _SUBTREE + "SELECT nodes.id, nodes.level FROM nodes JOIN sub ON sub.id = nodes.id",
                (node_id,),
            )
        }
        self.db.execute("DELETE FROM nodes WHERE id = ?", (node_id,))
        for nid, level in levels.items():
            self.index[level].remove([nid])
        return list(levels)

    def touch(self, node_ids: Iterable[int], when: float) -> None:
        """Count a use of these nodes (the f and dt of Eq. 1)."""
        self.db.executemany(
            "UPDATE nodes SET frequency = frequency + 1, last_access = max(last_access, ?) WHERE id = ?",
            [(when, nid) for nid in set(node_ids)],
        )

    def absorb(self, keeper: Node, other: Node) -> None:
        """Fold `other` into `keeper`: uses add up, provenance and time span are unioned."""
        self.db.execute(
            "UPDATE nodes SET frequency = frequency + ?, last_access = max(last_access, ?), "
            "start_time = min(coalesce(start_time, ?), coalesce(?, start_time)), "
            "end_time = max(coalesce(end_time, ?), coalesce(?, end_time)) WHERE id = ?",
            (
                other.frequency,
                other.last_access,
                other.start_time,
                other.start_time,
                other.end_time,
                other.end_time,
                keeper.id,
            ),
        )
        self.db.execute(
            "INSERT OR IGNORE INTO node_sources (node_id, utterance_id) "
            "SELECT ?, utterance_id FROM node_sources WHERE node_id = ?",
            (keeper.id, other.id),
        )

    def total_tokens(self) -> int:
        return int(self.db.scalar("SELECT coalesce(sum(tokens), 0) FROM nodes"))

    def node_count(self) -> int:
        return int(self.db.scalar("SELECT count(*) FROM nodes"))

    def node_counts(self) -> dict[Level, int]:
        """How many nodes each level has (every level, zero included)."""
        counts = dict.fromkeys(Level, 0)
        for level, n in self.db.all("SELECT level, count(*) FROM nodes GROUP BY level"):
            counts[Level(level)] = n
        return counts

    def source_links(self) -> list[tuple[int, int]]:
        """Every (node, utterance) provenance pair, by node then utterance."""
        rows = self.db.all("SELECT node_id, utterance_id FROM node_sources ORDER BY node_id, utterance_id")
        return [(r[0], r[1]) for r in rows]

    def sources(self, node_ids: Iterable[int]) -> dict[int, list[Evidence]]:
        ids = list(node_ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.db.all(
            f"SELECT ns.node_id, u.id, s.name, u.time, u.text FROM node_sources ns "
            f"JOIN utterances u ON u.id = ns.utterance_id JOIN speakers s ON s.id = u.speaker_id "
            f"WHERE ns.node_id IN ({marks}) ORDER BY u.time, u.id",
            ids,
        )
        out: dict[int, list[Evidence]] = {nid: [] for nid in ids}
        for r in rows:
            out[r[0]].append(Evidence(utterance_id=r[1], speaker=r[2], time=r[3], text=r[4]))
        return out

    def event_sources_between(self, since: float, until: float) -> dict[int, list[Evidence]]:
        """The events resting on lines said in [since, until), each with those lines (oldest first),
        in the order their first such line was said."""
        where = utterance_window(since, until)
        rows = self.db.all(
            "SELECT ns.node_id, u.id, s.name, u.time, u.text FROM node_sources ns "
            "JOIN nodes n ON n.id = ns.node_id JOIN utterances u ON u.id = ns.utterance_id "
            f"JOIN speakers s ON s.id = u.speaker_id WHERE n.level = ?{where.sql} ORDER BY u.time, u.id, ns.node_id",
            (Level.EVENT.value, *where.params),
        )
        out: dict[int, list[Evidence]] = {}
        for r in rows:
            out.setdefault(r[0], []).append(Evidence(utterance_id=r[1], speaker=r[2], time=r[3], text=r[4]))
        return out

    def unfiled_between(self, since: float, until: float) -> int:
        """Lines said in [since, until) that wait in the sensing buffer or a pending block: not in the tree yet."""
        where = utterance_window(since, until)
        return int(
            self.db.scalar(
                "SELECT count(*) FROM utterances u WHERE ("
                "EXISTS (SELECT 1 FROM stsb b WHERE b.utterance_id = u.id AND b.is_context = 0) OR "
                "EXISTS (SELECT 1 FROM pending_utterances p WHERE p.utterance_id = u.id AND p.is_context = 0))"
                f"{where.sql}",
                where.params,
            )
        )

    def delete_childless(self) -> list[int]:
        """Cascading abstraction: remove scenes and events left with no children, until none remain."""
        removed: list[int] = []
        while True:
            rows = self.db.all(
                "SELECT id, level FROM nodes p WHERE level != 'amu' AND NOT EXISTS "
                "(SELECT 1 FROM nodes c WHERE c.parent_id = p.id)"
            )
            if not rows:
                return removed
            for nid, level in rows:
                self.db.execute("DELETE FROM nodes WHERE id = ?", (nid,))
                self.index[Level(level)].remove([nid])
                removed.append(nid)
