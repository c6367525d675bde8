"""`rag`: standard retrieval-augmented generation, the top-k archived utterances by embedding cosine."""

from __future__ import annotations

import time

from ...records import Utterance
from ...store.store import Store
from .base import Context, Environment, System, render_lines


class RagSystem(System):
    name = "rag"
    description = "top-k archived utterances by embedding cosine (sqlite-vec KNN), shown in time order"

    def __init__(self, env: Environment) -> None:
        self._zone = env.settings.zone
        self._embedder = env.embedder
        self.answerer = env.answerer
        self._k = env.settings.bench.rag_k
        self._path = env.work_dir / "rag.db"
        self._store = Store(self._path, embedder=env.settings.models.embedder, dim=env.embedder.dim)
        self._position: dict[int, int] = {}
        self._tokens = 0

    def add(self, position: int, utterance: Utterance) -> None:
        with self._store.atomic():
            stored = self._store.add_utterance(utterance, self._embedder.encode_one(utterance.line))
        if stored is not None and stored.id is not None:
            self._position[stored.id] = position
            self._tokens += self.answerer.tokenizer.count(stored.line)

    def remembered(self) -> set[int]:
        return set(self._position.values())

    def context(self, question: str) -> Context:
        started = time.perf_counter()
        hits = self._store.search_utterances(self._embedder.encode_one(question), self._k)
        shown = sorted((u for u, _ in hits), key=lambda u: (u.time, u.id or 0))
        text = render_lines(shown, self._zone)
        retrieval_ms = (time.perf_counter() - started) * 1000
        positions = frozenset(self._position[u.id] for u in shown if u.id in self._position)
        return Context(text, positions, self.answerer.tokenizer.count(text), retrieval_ms)

    def memory_tokens(self) -> int:
        return self._tokens

    def database_bytes(self) -> int:
        return self._store.file_bytes()

    def close(self) -> None:
        self._store.close()
