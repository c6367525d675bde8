"""Vectors: sqlite-vec tables (durable) and usearch indexes (in-process, for the hot paths).

sqlite-vec holds every vector on disk inside the same transactions as the rows they belong
to. usearch answers the per-step questions (is this unit novel? which scene matches? which
pair is closest?) without a round trip through SQL, and is rebuilt from sqlite-vec at start
and after a rolled-back transaction, so the two cannot drift apart for long.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

# onnxruntime (silero VAD, via faster-whisper) segfaults in its start-up when it is first imported
# after usearch, whose extension carries its own libstdc++ (usearch 2.x, onnxruntime 1.32); the
# other order works. Importing it here, before usearch, keeps any later use of silero safe.
import onnxruntime  # noqa: F401
from usearch.index import Index

from ..errors import StoreError
from .db import Database
from .migrations import run_script


def ensure_vector_tables(db: Database, embedder: str, dim: int) -> None:
    """Create the vec0 tables for this embedder's dimension, or refuse a mismatched database.

    The dimension is fixed when a vec0 table is created, so it cannot live in a migration.
    """
    row = db.one("SELECT value FROM meta WHERE key = 'embedder'")
    if row is not None:
        stored_dim = int(db.scalar("SELECT value FROM meta WHERE key = 'embedding_dim'"))
        if row[0] != embedder or stored_dim != dim:
            raise StoreError(
                f"{db.path}: this memory was built with the embedder {row[0]!r} ({stored_dim} dimensions) but "
                f"{embedder!r} ({dim} dimensions) is configured; set models.embedder back to {row[0]!r} "
                f"or start a new memory in another paths.data_dir"
            )
        return
    with db.atomic():
        run_script(
            db,
            f"""
            CREATE VIRTUAL TABLE node_vectors USING vec0(
                node_id INTEGER PRIMARY KEY, embedding float[{dim}] distance_metric=cosine);
            CREATE VIRTUAL TABLE utterance_vectors USING vec0(
                utterance_id INTEGER PRIMARY KEY, embedding float[{dim}] distance_metric=cosine);
            -- Foreign keys cannot point into a virtual table, so triggers keep them in step,
            -- including deletes that arrive through ON DELETE CASCADE.
            CREATE TRIGGER node_vectors_follow AFTER DELETE ON nodes BEGIN
                DELETE FROM node_vectors WHERE node_id = old.id;
            END;
            CREATE TRIGGER utterance_vectors_follow AFTER DELETE ON utterances BEGIN
                DELETE FROM utterance_vectors WHERE utterance_id = old.id;
            END;
            """,
        )
        db.execute("INSERT INTO meta (key, value) VALUES ('embedder', ?), ('embedding_dim', ?)", (embedder, str(dim)))


def as_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


class VectorIndex:
    """A usearch cosine index over unit vectors keyed by row id."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._index = Index(ndim=dim, metric="cos", dtype="f32")

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: int) -> bool:
        return bool(self._index.contains(key))

    def add(self, key: int, vector: np.ndarray) -> None:
        self._index.add(key, np.asarray(vector, dtype=np.float32))

    def remove(self, keys: Iterable[int]) -> None:
        present = [k for k in keys if k in self]
        if present:
            self._index.remove(np.asarray(present, dtype=np.uint64))

    def get(self, keys: list[int]) -> np.ndarray:
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        got = self._index.get(np.asarray(keys, dtype=np.uint64))
        return np.asarray(got, dtype=np.float32).reshape(len(keys), self.dim)

    def search(self, vector: np.ndarray, k: int, *, exact: bool = False) -> list[tuple[int, float]]:
        """The k nearest keys with their cosine similarity, best first; with `exact`, by comparing
        the vector with every key's rather than walking the graph."""
        if len(self._index) == 0 or k <= 0:
            return []
        found = self._index.search(np.asarray(vector, dtype=np.float32), min(k, len(self._index)), exact=exact)
        return [(int(key), 1.0 - float(dist)) for key, dist in zip(found.keys, found.distances, strict=False)]

    def keys(self) -> list[int]:
        return [int(k) for k in self._index.keys]

    def rebuild(self, rows: Iterable[tuple[int, bytes]]) -> None:
        """Start afresh: usearch's remove only tombstones, so rebuilding is the clean reset."""
        self._index = Index(ndim=self.dim, metric="cos", dtype="f32")
        keys, vectors = [], []
        for key, blob in rows:
            keys.append(key)
            vectors.append(from_blob(blob))
        if keys:
            # One thread: a graph built by several depends on their timing, and so did what recall
            # found after a restart (two builds of 5,500 vectors answered 50 searches differently;
            # one probe of a kept 100,000-utterance memory flipped between two opens). On two
            # cores one thread builds it as fast (4.8 s against 4.4 s for 5,500 random vectors).
            self._index.add(np.asarray(keys, dtype=np.uint64), np.vstack(vectors), threads=1)
