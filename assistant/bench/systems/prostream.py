"""`prostream`: the product's memory, driven through the same `Memory` surface the daemon uses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ...memory.api import Memory, PreparedQuestion
from ...records import Answer, Utterance
from .base import Context, Environment, FormationCost, System


class ProStreamSystem(System):
    name = "prostream"
    description = "the product's bounded hierarchical memory (STSB, pending buffer, scene > event > atom tree)"

    # Whether recall may fall back to the archive (`memory.answer.archive_fallback`): this system
    # never does, whatever the settings say, so its figures are the bounded memory's alone.
    archive_fallback = False

    def __init__(self, env: Environment) -> None:
        settings = env.settings
        memory = settings.memory
        answer = replace(memory.answer, archive_fallback=self.archive_fallback)
        settings = replace(settings, memory=replace(memory, answer=answer))
        # Memory loads the embedder and LLMs through the same caches, so nothing loads twice.
        self.memory = Memory(replace(settings, paths=replace(settings.paths, data_dir=str(env.work_dir))))
        self.answerer = env.answerer
        self.probes_use = env.probes_use
        self._position: dict[int, int] = {}
        self._calls = self._prompt = self._completion = 0

    def _usage(self) -> tuple[int, int, int]:
        u = self.memory.engine.llm_usage
        return (u.calls, u.prompt_tokens, u.completion_tokens) if u is not None else (0, 0, 0)

    def _formation(self, call: Callable[[], object]) -> None:
        # Only distillation runs inside add() and end_of_stream(), so the difference is formation's
        # cost even when distillation and answers share one model.
        before = self._usage()
        call()
        after = self._usage()
        self._calls += after[0] - before[0]
        self._prompt += after[1] - before[1]
        self._completion += after[2] - before[2]

    def add(self, position: int, utterance: Utterance) -> None:
        def step() -> None:
            report = self.memory.add(utterance.speaker, utterance.text, utterance.time)
            for piece in report.archived:
                if piece.id is not None:
                    self._position[piece.id] = position

        self._formation(step)

    def end_of_stream(self) -> None:
        self._formation(self.memory.flush)

    def remembered(self) -> set[int]:
        store = self.memory.store
        ids = {uid for _node, uid in store.source_links()}
        ids |= {u.id for u in self.memory.engine.buffer.visible if u.id is not None}
        ids |= {u.id for b in store.pending_blocks() for u in b.utterances if u.id is not None}
        return {self._position[i] for i in ids if i in self._position}

    def context(self, question: str) -> Context:
        # The memory's own clock, not the wall's: the stream is an old recording replayed.
        prepared = self.memory.prepare(question, use=self.probes_use, now=self.memory.store.clock)
        prompt = prepared.prompt
        # When the relevance gate says "I don't know" without the LLM, the context is empty.
        where = self._position
        quoted = prompt.sources if prompt is not None else ()
        positions = frozenset(where[e.utterance_id] for e in quoted if e.utterance_id in where)
        tokens = prompt.context_tokens if prompt is not None else 0
        near = prepared.nearness
        return Context("", positions, tokens, prepared.retrieval_ms, prepared, near.best, near.person_share)

    def answer(self, question: str, context: Context) -> tuple[str, float]:
        # The memory frames its own prompt (memory/answer.py: build_prompt, through the same frame).
        assert isinstance(context.prepared, PreparedQuestion)
        # Memory opens the same cached instance inside its timing; opening it here keeps loading out.
        _ = self.answerer.llm
        for item in self.memory.answer_stream(context.prepared):
            if isinstance(item, Answer):
                return item.text, item.answer_ms
        raise AssertionError("answer_stream ended without an answer")  # pragma: no cover

    def replay(self, question: str) -> None:
        if self.probes_use:
            self.memory.prepare(question, use=True, now=self.memory.store.clock)

    def memory_tokens(self) -> int:
        return self.memory.store.total_tokens()

    def database_bytes(self) -> int:
        return self.memory.store.file_bytes()

    def formation_cost(self) -> FormationCost:
        return FormationCost(self._calls, self._prompt, self._completion)

    def close(self) -> None:
        self.memory.close()


class ProStreamArchiveSystem(ProStreamSystem):
    name = "prostream-archive"
    description = (
        "the product's memory, falling back to every archived line where it holds nothing as relevant "
        "(memory.answer.archive_fallback)"
    )
    archive_fallback = True
