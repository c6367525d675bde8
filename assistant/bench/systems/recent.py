"""`recent`: the short-term sensing buffer alone; whatever it cuts away is forgotten."""

from __future__ import annotations

import time

from ...memory.stsb import SensingBuffer
from ...records import Utterance
from .base import Context, Environment, System, render_lines


class RecentSystem(System):
    name = "recent"
    description = "the short-term sensing buffer alone (STSB with the memory's drift and capacity cuts)"

    def __init__(self, env: Environment) -> None:
        self._zone = env.settings.zone
        self._embedder = env.embedder
        self.answerer = env.answerer
        self._buffer = SensingBuffer(env.settings.memory.stsb, [], [], None)

    def add(self, position: int, utterance: Utterance) -> None:
        # The stream position doubles as the id, so what the buffer holds maps straight back.
        u = Utterance(utterance.speaker, utterance.text, utterance.time, position)
        self._buffer.push(u, self._embedder.encode_one(u.line))

    def remembered(self) -> set[int]:
        return {u.id for u in self._buffer.visible if u.id is not None}

    def context(self, question: str) -> Context:
        started = time.perf_counter()
        shown = self._buffer.visible
        text = render_lines(shown, self._zone)
        retrieval_ms = (time.perf_counter() - started) * 1000
        positions = frozenset(u.id for u in shown if u.id is not None)
        return Context(text, positions, self.answerer.tokenizer.count(text), retrieval_ms)

    def memory_tokens(self) -> int:
        return sum(self.answerer.tokenizer.count(u.line) for u in self._buffer.visible)
