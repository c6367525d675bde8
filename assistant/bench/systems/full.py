"""`full`: the conversation so far, in order, in the answering model's trained context window.

The long-context baseline. It answers with an LLM instance of its own, opened at the context
length the model was trained with (32,768 for the Qwen2.5 models), so the other systems' prompts
never evict its KV cache. The history is rendered so that each probe's prompt extends the
previous one: the frame puts the context before the question, lines are only ever appended, and
their numbers do not change, so llama.cpp reuses the cached prefix and reads only the lines heard
since the last probe, plus the question. When the history outgrows the window the oldest lines go
in one large chunk, which costs one re-read of what is kept, rarely rather than at every probe.
A question that asks for a day sees the days its lines name written out as dates, as every
system's context does for it (`render_lines`): its prompt shares the cached prefix up to the
first such date, and other questions' prompts still extend each other.
"""

from __future__ import annotations

import time

from ...records import Utterance
from .base import Context, Environment, System, render_lines

# On overflow the oldest lines go until the history fills at most this share of its room: the kept
# prefix is then read again once per quarter-window of stream, and the context never holds less
# than three quarters of what fits.
KEEP_AFTER_DROP = 0.75
# Tokens kept free for the question when lines are added (the questions are not known yet).
QUESTION_RESERVE = 128


class FullContextSystem(System):
    name = "full"
    description = (
        "the whole conversation so far, in order, in the answering model's trained context (its own LLM "
        "instance, whose cached prefix the next probe extends; the oldest quarter dropped when it overflows)"
    )

    def __init__(self, env: Environment, window: int | None = None) -> None:
        self._zone = env.settings.zone
        self.answerer = env.long_answerer
        self.window = window or env.long_answerer.n_ctx
        self.drops = 0  # times the oldest lines were dropped (each costs one re-read of the rest)
        self._history: list[Utterance] = []
        self._line_tokens: list[int] = []
        # Exact after every fit, the running sum of line estimates in between.
        self._kept_tokens = 0
        # The context and its tokens, until a line comes or goes.
        self._rendered: tuple[str, int] | None = None

    def _room(self, question: str) -> int:
        return self.window - self.answerer.frame_tokens(question) - self.answerer.max_tokens

    def _render(self) -> tuple[str, int]:
        if self._rendered is None:
            text = render_lines(self._history, self._zone)
            self._rendered = (text, self.answerer.tokenizer.count(text))
        return self._rendered

    def _fit(self, room: int) -> None:
        """Make the history fit `room` tokens; if it does not, drop the oldest lines down to a share of it."""
        self._kept_tokens = self._render()[1]
        if self._kept_tokens <= room:
            return
        target = int(room * KEEP_AFTER_DROP)
        while self._history and self._kept_tokens > target:
            start = 0
            while start < len(self._history) - 1 and self._kept_tokens > target:
                self._kept_tokens -= self._line_tokens[start]
                start += 1
            del self._history[: max(start, 1)], self._line_tokens[: max(start, 1)]
            self._rendered = None
            self._kept_tokens = self._render()[1]
        self.drops += 1

    def add(self, position: int, utterance: Utterance) -> None:
        u = Utterance(utterance.speaker, utterance.text, utterance.time, position)
        # What one line adds, estimated from it rendered alone; the whole is counted exactly only
        # when the estimates say it may not fit (a tokenization of the whole window costs ~50 ms).
        # Rendered alone a line carries its own date line, so the estimate errs high, never low.
        tokens = max(1, self.answerer.tokenizer.count(render_lines([u], self._zone)) + 1)
        self._history.append(u)
        self._line_tokens.append(tokens)
        self._kept_tokens += tokens
        self._rendered = None
        room = self._room("") - QUESTION_RESERVE
        if self._kept_tokens > room:
            self._fit(room)

    def remembered(self) -> set[int]:
        return {u.id for u in self._history if u.id is not None}

    def context(self, question: str) -> Context:
        started = time.perf_counter()
        # A question longer than the reserve may still need a chunk dropped.
        room = self._room(question)
        self._fit(room)
        text, tokens = self._render()
        if tokens > room:  # the dates written out for a question asking when did not fit
            self._fit(room - (tokens - self._kept_tokens))
            text, tokens = self._render()
        positions = frozenset(u.id for u in self._history if u.id is not None)
        return Context(text, positions, tokens, (time.perf_counter() - started) * 1000)

    def memory_tokens(self) -> int:
        return self._kept_tokens
