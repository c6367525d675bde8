"""`Memory`: the small surface the CLI, the daemon and the benchmarks all use.

    memory = Memory.from_config()
    memory.add("Sam", "The Lisbon trip moves to May.", time=...)
    answer = memory.ask("When is the Lisbon trip?")

Models load lazily and once: the embedder and the tokenizer when the memory opens, the LLM
on the first distillation (llm mode) or question.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings, load_settings
from ..embed import load_embedder
from ..entities import make_extractor
from ..errors import InputError
from ..llm import LLM, load_llm, load_tokenizer
from ..models import resolve
from ..store.store import Store
from . import archive, forget, speakers
from .answer import DONT_KNOW, Prompt, build_prompt, cited_evidence, says_unknown, strip_citations
from .budget import enforce_budget
from .distill import Distiller
from .engine import ProStream, StepReport
from .records import Answer, Level, Node, RecallFilter, Retrieval, RetrievedPath, Speaker, Utterance
from .retrieve import mark_used, retrieve


@dataclass(frozen=True)
class IngestReport:
    utterances: int
    duplicates: int
    blocks: int
    seconds: float


@dataclass(frozen=True)
class MemoryStats:
    tokens: int
    token_budget: int
    scenes: int
    events: int
    amus: int
    utterances: int
    pending_blocks: int
    buffered: int
    database_bytes: int


@dataclass(frozen=True)
class PreparedQuestion:
    """A question retrieved and framed, ready for the LLM; `prompt` None when the memory has nothing on it."""

    retrieval: Retrieval
    prompt: Prompt | None
    retrieval_ms: float


@dataclass(frozen=True)
class TreeNode:
    node: Node
    utility: float
    children: tuple[TreeNode, ...]


class Memory:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        opts = settings.memory
        self._embedder = load_embedder(
            resolve(settings, "embedder").source, settings.embedder.device, settings.embedder.threads
        )
        self._llm_source = resolve(settings, "llm").source
        self.tokenizer = load_tokenizer(self._llm_source)
        self.store = Store(settings.database_path, embedder=settings.models.embedder, dim=self._embedder.dim)
        self.engine = ProStream(
            self.store, opts, embedder=self._embedder, tokenizer=self.tokenizer, distiller=self._make_distiller
        )

    @classmethod
    def from_config(cls, config_file: str | Path | None = None, **overrides: object) -> Memory:
        return cls(load_settings(config_file, overrides=overrides or None))

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- models ------------------------------------------------------------------------------

    @property
    def llm(self) -> LLM:
        return load_llm(self._llm_source, self.settings.llm)

    def _make_distiller(self) -> Distiller:
        s, opts = self.settings, self.settings.memory
        llm = None
        if opts.distill.mode == "llm":
            distill = s.models.distill_llm
            llm = load_llm(resolve(s, "distill_llm", distill).source if distill else self._llm_source, s.llm)
        extractor = make_extractor(
            opts.entities.backend,
            spacy_model=resolve(s, "entities").source,
            gliner_model=opts.entities.gliner_model,
            labels=opts.entities.labels,
            threshold=opts.entities.gliner_threshold,
        )
        return Distiller(opts.distill, extractor=extractor, tokenizer=self.tokenizer, llm=llm)

    # --- writing -----------------------------------------------------------------------------

    def add(self, speaker: str, text: str, time: float | None = None, *, distill: bool = True) -> StepReport:
        """Remember one utterance. `time` defaults to now (seconds since the epoch)."""
        return self.engine.ingest(Utterance(speaker, text, _time.time() if time is None else time), distill=distill)

    def add_many(
        self, utterances: Iterable[Utterance], *, flush: bool = True, progress: Callable[[int], None] | None = None
    ) -> IngestReport:
        """Ingest a whole conversation in one transaction: it lands whole or not at all."""
        started = _time.perf_counter()
        count = dup = blocks = 0
        with self.store.atomic():
            for i, u in enumerate(utterances, start=1):
                report = self.engine.ingest(u)
                count += len(report.archived)
                dup += report.duplicates
                blocks += report.blocks_mounted
                if progress:
                    progress(i)
            if flush:
                self.engine.flush()
                blocks += self.engine.distill_pending()[0]
            self.store.audit("ingest", {"utterances": count, "duplicates": dup})
        return IngestReport(count, dup, blocks, _time.perf_counter() - started)

    def flush(self) -> int:
        """File what the sensing buffer holds: cut it into a block and distill what is pending."""
        self.engine.flush()
        return self.engine.distill_pending()[0]

    def delete(self, node_id: int) -> list[int]:
        """Remove a node with its subtree, then any parent left without children."""
        with self.store.atomic():
            if self.store.node(node_id) is None:
                raise InputError(f"no memory node with id {node_id}")
            removed = self.store.delete_node(node_id)
            removed += self.store.delete_childless()
            self.store.audit("delete_node", {"node": node_id, "removed": len(removed)})
        return removed

    # --- the user's data: export, import, forget -------------------------------------------

    def export_document(
        self,
        fmt: str,
        selection: archive.Selection | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> dict[str, Any]:
        """The memory (or the selected part) as an export document; `archive.FORMATS[fmt]` writes it.

        Reading is separate from writing so a daemon can read on its writer and stream elsewhere.
        """
        selection = selection or archive.Selection()
        if fmt not in archive.FORMATS:
            raise InputError(f"unknown export format {fmt!r}; choose json, markdown or jsonl")
        if selection.speaker is not None:
            speakers.find(self.store, selection.speaker)
        return archive.build_document(self.store, self.shaping_settings(), selection, progress)

    def audit_export(self, fmt: str, doc: dict[str, Any]) -> None:
        with self.store.atomic():
            self.store.audit("export", {"format": fmt, "utterances": len(doc["utterances"]), **doc["selection"]})

    def export(
        self,
        fmt: str,
        path: Path,
        selection: archive.Selection | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Write the memory (or the selected part) to `path` atomically; returns the bytes written."""
        doc = self.export_document(fmt, selection, progress)
        size = archive.write_atomically(path, archive.FORMATS[fmt](doc))
        self.audit_export(fmt, doc)  # only an export that was written is one
        return size

    def shaping_settings(self) -> dict[str, object]:
        """The settings that shaped this memory, carried in an export so it can be read in context."""
        import dataclasses

        s = self.settings
        return {
            "embedder": s.models.embedder,
            "llm": s.models.llm,
            "memory": dataclasses.asdict(s.memory),
        }

    def import_file(self, path: Path) -> archive.ImportReport:
        doc = archive.read_document(path)
        report = archive.import_document(
            self.store, doc, embed=self._embedder.encode, count_tokens=self.tokenizer.count
        )
        opts = self.settings.memory
        with self.store.atomic():
            enforce_budget(self.store, opts.budget, opts.utility, self.store.clock)
        self.engine.reload_buffer()
        return report

    def forget_plan(self, f: forget.ForgetFilter) -> forget.ForgetPlan:
        return forget.plan(self.store, f)

    def forget(self, f: forget.ForgetFilter, plan: forget.ForgetPlan | None = None) -> forget.ForgetReport:
        """Forget what `f` matches (see memory/forget.py); the speech left in touched events is re-filed."""
        report = forget.apply(self.store, f, plan if plan is not None else forget.plan(self.store, f))
        self.engine.reload_buffer()
        return report

    def expire(self) -> int:
        """Drop archived speech older than memory.retention_days (null keeps it forever)."""
        days = self.settings.memory.retention_days
        if days is None:
            return 0
        return forget.expire(self.store, days, _time.time())

    # --- speakers ----------------------------------------------------------------------------

    def speakers(self) -> list[Speaker]:
        return self.store.speakers()

    def rename_speaker(self, key: str | int, name: str) -> Speaker:
        """Name a voice ("Speaker 2" is Alice): the transcript and the memory built on it are relabelled."""
        name = speakers.check_name(name)
        with self.store.atomic():
            sp = speakers.find(self.store, key)
            if sp.name == name:
                return sp
            if self.store.find_speaker(name) is not None:
                raise InputError(f"a speaker named {name!r} exists already; merge the two instead")
            self.store.rename_speaker(sp.id, name)
            self._relabelled(sp.id, sp.name, name)
            self.store.audit("rename_speaker", {"speaker": sp.id})
        return speakers.find(self.store, sp.id)

    def merge_speakers(self, keep: str | int, other: str | int) -> Speaker:
        """Two labels are one voice: `other`'s utterances, voice and mentions in the memory go to `keep`."""
        with self.store.atomic():
            a, b = speakers.find(self.store, keep), speakers.find(self.store, other)
            if a.id == b.id:
                raise InputError(f"cannot merge speaker {a.id} {a.name!r} with itself")
            voice, seconds = speakers.merged_voice(a, b)
            self.store.move_utterances(b.id, a.id)
            self.store.delete_speaker(b.id)
            if voice is not None:
                self.store.set_voice(a.id, voice, seconds, enrolled=a.enrolled or b.enrolled)
            self._relabelled(a.id, b.name, a.name)
            self.store.audit("merge_speakers", {"kept": a.id, "merged": b.id})
        return speakers.find(self.store, a.id)

    def _relabelled(self, speaker_id: int, old: str, new: str) -> None:
        speakers.relabel_nodes(self.store, self._embedder, self.tokenizer, old, new)
        speakers.reembed_utterances(self.store, self._embedder, speaker_id)
        opts = self.settings.memory
        enforce_budget(self.store, opts.budget, opts.utility, self.store.clock)
        # The sensing buffer holds utterances with their speaker's name; read it again.
        self.engine.reload_buffer()

    # --- reading -----------------------------------------------------------------------------

    def check_question(self, question: str) -> str:
        q = " ".join((question or "").split())
        if not q:
            raise InputError("the question is empty")
        limit = self.settings.memory.answer.max_question_chars
        if len(q) > limit:
            raise InputError(
                f"the question is {len(q):,} characters long; the limit is {limit:,} (memory.answer.max_question_chars)"
            )
        return q

    def recall_filter(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> RecallFilter:
        """Check a caller's window and speaker; the speaker (a name or an id) must be known."""
        for name, value in (("since", since), ("until", until)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InputError(f"{name} must be seconds since the epoch, got {value!r}")
        if since is not None and until is not None and since >= until:
            raise InputError("since must be before until")
        name = speakers.find(self.store, speaker).name if speaker is not None else None
        return RecallFilter(
            float(since) if since is not None else None, float(until) if until is not None else None, name
        )

    def search(
        self,
        query: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        use: bool = False,
        now: float | None = None,
    ) -> Retrieval:
        """What an answer would see: the recalled lines, the tree paths and the buffers.

        `since`/`until` (seconds since the epoch) and `speaker` (a name or id) limit the recall;
        `now` is when the question is asked (default: the wall clock), against which its own
        words ("last week") are read. `use=True` counts the paths as used (Eq. 1's f and dt),
        as asking does.
        """
        q = self.check_question(query)
        window = self.recall_filter(since=since, until=until, speaker=speaker)
        vector = self._embedder.encode_one(q)
        opts = self.settings.memory
        clock = self.store.clock
        paths = retrieve(self.store, vector, opts.retrieval, opts.utility, clock)
        paths = self._with_sources(paths, vector)
        if use and paths:
            with self.store.atomic():
                mark_used(self.store, paths, clock)
        short_term = tuple(u for u in self.engine.buffer.visible if window.admits(u.speaker, u.time))
        pending = tuple(self.store.pending_blocks())
        recent = [u.id for u in short_term] + [u.id for b in pending for u in b.utterances]
        scores = [p.score for p in paths] + [float(v @ vector) for v in self.store.utterance_vectors(recent).values()]
        return Retrieval(q, tuple(paths), short_term, pending, max(scores, default=0.0), filter=window)

    def _with_sources(self, paths: list[RetrievedPath], query_vector: np.ndarray) -> list[RetrievedPath]:
        """Attach to each path the utterances it rests on that are closest to the question."""
        per_event = self.settings.memory.retrieval.sources_per_event
        if per_event == 0 or not paths:
            return paths
        sources = self.store.sources([p.event.id for p in paths] + [a.id for p in paths for a in p.amus])
        vectors = self.store.utterance_vectors([e.utterance_id for p in paths for e in sources.get(p.event.id, [])])
        out = []
        for rank, p in enumerate(paths):
            # Units' own sources first: they are the utterances the chosen facts came from.
            ordered = {e.utterance_id: e for a in p.amus for e in sources.get(a.id, [])}
            candidates = [e for e in sources.get(p.event.id, []) if e.utterance_id not in ordered]
            candidates.sort(
                key=lambda e: -float(vectors[e.utterance_id] @ query_vector) if e.utterance_id in vectors else 0.0
            )
            for e in candidates:
                ordered.setdefault(e.utterance_id, e)
            # The best path quotes one line more: it is the likeliest home of the answer.
            take = per_event + (1 if rank == 0 else 0)
            chosen = sorted(list(ordered.values())[:take], key=lambda e: (e.time, e.utterance_id))
            out.append(RetrievedPath(p.scene, p.event, p.amus, p.score, tuple(chosen)))
        return out

    def prepare(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        use: bool = True,
        now: float | None = None,
    ) -> PreparedQuestion:
        """Retrieve and frame a question: the part of asking that reads (and, with `use`, marks) the store.

        The daemon runs this on its single writer thread and the generation elsewhere, so a slow
        answer never holds up the writes. `use=False` asks without leaving a mark (an observer:
        the benchmark's probes).
        """
        t0 = _time.perf_counter()
        retrieval = self.search(question, since=since, until=until, speaker=speaker, use=use, now=now)
        ms = (_time.perf_counter() - t0) * 1000
        if retrieval.empty or retrieval.relevance < self.settings.memory.answer.min_relevance:
            return PreparedQuestion(retrieval, None, ms)
        opts = self.settings.memory.answer
        return PreparedQuestion(
            retrieval, build_prompt(retrieval.question, retrieval, self.tokenizer, opts.context_tokens), ms
        )

    def answer_stream(self, prepared: PreparedQuestion) -> Iterator[str | Answer]:
        """Yield the answer's text as it is generated, then the finished `Answer`. Touches no table."""
        retrieval, prompt = prepared.retrieval, prepared.prompt
        if prompt is None:
            yield DONT_KNOW
            yield Answer(DONT_KNOW, (), False, 0, prepared.retrieval_ms, 0.0, retrieval)
            return
        t1 = _time.perf_counter()
        pieces: list[str] = []
        for piece in self.llm.stream(prompt.messages, max_tokens=self.settings.memory.answer.max_tokens):
            pieces.append(piece)
            yield piece
        raw = "".join(pieces).strip()
        # A reply that is only citations says nothing; treat it like any other non-answer.
        text = strip_citations(raw) or DONT_KNOW
        knows = not says_unknown(text)
        evidence = cited_evidence(raw, prompt) if knows else ()
        yield Answer(
            text,
            evidence,
            knows,
            prompt.context_tokens,
            prepared.retrieval_ms,
            (_time.perf_counter() - t1) * 1000,
            retrieval,
            tuple(prompt.sources.values()),
        )

    def ask_stream(self, question: str, **recall: Any) -> Iterator[str | Answer]:
        """Yield the answer's text as it is generated, then the finished `Answer`.

        `recall` takes `prepare`'s keywords: since, until, speaker, use, now.
        """
        yield from self.answer_stream(self.prepare(question, **recall))

    def ask(self, question: str, **recall: Any) -> Answer:
        for item in self.ask_stream(question, **recall):
            if isinstance(item, Answer):
                return item
        raise AssertionError("ask_stream ended without an answer")  # pragma: no cover

    def tree(self) -> list[TreeNode]:
        from .budget import utility

        nodes = self.store.nodes()
        children: dict[int | None, list[Node]] = {}
        for n in nodes:
            children.setdefault(n.parent_id, []).append(n)
        now, util = self.store.clock, self.settings.memory.utility

        def build(n: Node) -> TreeNode:
            kids = tuple(build(c) for c in children.get(n.id, []))
            return TreeNode(n, utility(n.frequency, n.last_access, now, util), kids)

        return [build(n) for n in children.get(None, [])]

    def stats(self) -> MemoryStats:
        counts = {lvl: 0 for lvl in Level}
        for row in self.store.db.all("SELECT level, count(*) FROM nodes GROUP BY level"):
            counts[Level(row[0])] = row[1]
        return MemoryStats(
            tokens=self.store.total_tokens(),
            token_budget=self.settings.memory.budget.token_budget,
            scenes=counts[Level.SCENE],
            events=counts[Level.EVENT],
            amus=counts[Level.AMU],
            utterances=self.store.utterance_count(),
            pending_blocks=self.store.pending_count(),
            buffered=len(self.engine.buffer.buffer),
            database_bytes=self.store.file_bytes(),
        )
