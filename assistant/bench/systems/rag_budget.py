"""`rag-budget`: `rag` over a store bounded like the memory, the most recent lines that fit its token budget.

The plain answer to "does the bounded memory keep more of what matters than a store would, given
the same room?": every line is kept until the lines after it fill `memory.budget.token_budget`
(counted in the answering model's tokenizer, as the memory counts its budget), then the oldest go
first. A question gets the top-k kept lines by embedding cosine (`bench.rag_k`, as `rag`), shown in
time order. The lines live in memory with their vectors: the store never holds more than a few
hundred of them, and an exact search over that many is what sqlite-vec's KNN would return.
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np

from ...records import Utterance
from .base import Context, Environment, System, render_lines


class RagBudgetSystem(System):
    name = "rag-budget"
    description = (
        "top-k by embedding cosine over the most recent lines that fit memory.budget.token_budget (oldest dropped "
        "first), shown in time order"
    )

    def __init__(self, env: Environment) -> None:
        self._zone = env.settings.zone
        self._embedder = env.embedder
        self.answerer = env.answerer
        self._k = env.settings.bench.rag_k
        self.budget = env.settings.memory.budget.token_budget
        # (the line with its stream position as id, its tokens, its unit vector), oldest first.
        self._kept: deque[tuple[Utterance, int, np.ndarray]] = deque()
        self._tokens = 0

    def add(self, position: int, utterance: Utterance) -> None:
        u = Utterance(utterance.speaker, utterance.text, utterance.time, position)
        tokens = self.answerer.tokenizer.count(u.line)
        self._kept.append((u, tokens, self._embedder.encode_one(u.line)))
        self._tokens += tokens
        # The newest line always stays, even one longer than the whole budget.
        while len(self._kept) > 1 and self._tokens > self.budget:
            _, dropped, _ = self._kept.popleft()
            self._tokens -= dropped

    def remembered(self) -> set[int]:
        return {u.id for u, _, _ in self._kept if u.id is not None}

    def context(self, question: str) -> Context:
        started = time.perf_counter()
        hits: list[Utterance] = []
        if self._kept:
            vectors = np.vstack([v for _, _, v in self._kept])
            # The embedder returns unit vectors, so the dot product is the cosine.
            scores = vectors @ self._embedder.encode_one(question)
            best = np.argsort(-scores, kind="stable")[: self._k]
            hits = [self._kept[int(i)][0] for i in best]
        shown = sorted(hits, key=lambda u: (u.time, u.id or 0))
        text = render_lines(shown, self._zone)
        retrieval_ms = (time.perf_counter() - started) * 1000
        positions = frozenset(u.id for u in shown if u.id is not None)
        return Context(text, positions, self.answerer.tokenizer.count(text), retrieval_ms)

    def memory_tokens(self) -> int:
        return self._tokens
