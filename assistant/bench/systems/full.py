"""`full`: the most recent history that fits the LLM's context window, oldest lines dropped first."""

from __future__ import annotations

import time

from ...memory.answer import as_evidence, cite_line
from ...memory.records import Utterance
from .base import Environment, Reply, System, render_lines


class FullContextSystem(System):
    name = "full"
    description = "the most recent history that fits the LLM's context window (n_ctx less the frame and answer)"

    def __init__(self, env: Environment) -> None:
        self._answerer = env.answerer
        self._n_ctx = env.settings.llm.n_ctx
        self._history: list[Utterance] = []
        self._line_tokens: list[int] = []

    def add(self, position: int, utterance: Utterance) -> None:
        u = Utterance(utterance.speaker, utterance.text, utterance.time, position)
        self._history.append(u)
        # +1 for the newline between lines; the number prefix is counted with a typical width.
        self._line_tokens.append(self._answerer.tokenizer.count(cite_line(len(self._history), as_evidence(u))) + 1)

    def _window(self, question: str) -> list[Utterance]:
        room = self._n_ctx - self._answerer.frame_tokens(question) - self._answerer.max_tokens - 16
        used, start = 0, len(self._history)
        while start > 0 and used + self._line_tokens[start - 1] <= room:
            start -= 1
            used += self._line_tokens[start]
        return self._history[start:]

    def remembered(self) -> set[int]:
        # What fits beside a typical short question.
        return {u.id for u in self._window("What did they say?") if u.id is not None}

    def ask(self, question: str) -> Reply:
        started = time.perf_counter()
        shown = self._window(question)
        context = render_lines("Conversation History", shown)
        # Renumbering changes token counts a little; trim from the oldest end until it truly fits.
        room = self._n_ctx - self._answerer.frame_tokens(question) - self._answerer.max_tokens
        while shown and self._answerer.tokenizer.count(context) > room:
            shown = shown[1:]
            context = render_lines("Conversation History", shown)
        retrieval_ms = (time.perf_counter() - started) * 1000
        text, answer_ms = self._answerer.answer(context, question)
        positions = frozenset(u.id for u in shown if u.id is not None)
        return Reply(text, positions, self._answerer.tokenizer.count(context), retrieval_ms, answer_ms)

    def memory_tokens(self) -> int:
        return sum(self._line_tokens)
