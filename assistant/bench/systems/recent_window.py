"""`recent-window`: the most recent history that fits the shared answerer's window, oldest lines dropped first.

This was `full` until `full` got a window of the model's trained length: a recency window of
`llm.n_ctx` (4,096) that slides with every utterance, so each probe point's context is read anew.
"""

from __future__ import annotations

import time

from ...records import Utterance
from .base import Context, Environment, System, render_lines


class RecentWindowSystem(System):
    name = "recent-window"
    description = "the most recent history that fits llm.n_ctx (less the frame and the answer), the shared answerer"

    def __init__(self, env: Environment) -> None:
        self._zone = env.settings.zone
        self.answerer = env.answerer
        self._n_ctx = env.answerer.n_ctx
        self._history: list[Utterance] = []
        self._line_tokens: list[int] = []

    def add(self, position: int, utterance: Utterance) -> None:
        u = Utterance(utterance.speaker, utterance.text, utterance.time, position)
        self._history.append(u)
        # One line rendered alone, +1 for the newline between lines: an estimate (high, since alone
        # it carries its own date line), which context() corrects by counting what it renders.
        line = self.answerer.tokenizer.count(render_lines([u], self._zone)) + 1
        self._line_tokens.append(max(1, line))

    def _window(self, question: str) -> list[Utterance]:
        room = self._n_ctx - self.answerer.frame_tokens(question) - self.answerer.max_tokens - 16
        used, start = 0, len(self._history)
        while start > 0 and used + self._line_tokens[start - 1] <= room:
            start -= 1
            used += self._line_tokens[start]
        return self._history[start:]

    def remembered(self) -> set[int]:
        # What fits beside a typical short question.
        return {u.id for u in self._window("What did they say?") if u.id is not None}

    def context(self, question: str) -> Context:
        started = time.perf_counter()
        shown = self._window(question)
        start = len(self._history) - len(shown)
        room = self._n_ctx - self.answerer.frame_tokens(question) - self.answerer.max_tokens
        text = render_lines(shown, self._zone)
        tokens = self.answerer.tokenizer.count(text)
        # The estimates may fall short of the rendered whole: trim the oldest lines by the excess
        # at once (one line at a time would re-count ~3,000 tokens per line).
        while shown and tokens > room:
            excess, cut = tokens - room, 0
            while cut < len(shown) - 1 and excess > 0:
                excess -= self._line_tokens[start + cut]
                cut += 1
            start += max(cut, 1)
            shown = shown[max(cut, 1) :]
            text = render_lines(shown, self._zone)
            tokens = self.answerer.tokenizer.count(text)
        positions = frozenset(u.id for u in shown if u.id is not None)
        return Context(text, positions, tokens, (time.perf_counter() - started) * 1000)

    def memory_tokens(self) -> int:
        return sum(self._line_tokens)
