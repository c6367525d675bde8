"""One ProStream step at a time (Algorithm 1): perceive, distill, mount, keep within budget.

Durability is by transaction: an utterance, the sensing buffer it changes and any block it
cuts land together or not at all. Distillation (slow: LLM calls) runs outside the write, then
the block's nodes are mounted, the budget restored and the block leaves the pending buffer in
one transaction, so a crash at any point leaves either the pending block or its nodes, never
half of both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..config import MemoryOptions
from ..embed import TextEncoder
from ..errors import InputError
from ..llm import Tokenizer, Usage
from ..records import Block, Level, Utterance
from ..store.store import Store
from .budget import BudgetReport, enforce_budget
from .distill import AmuCandidate, Distillation, Distiller
from .stsb import SensingBuffer
from .supersede import Supersession

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def clean_utterance(u: Utterance) -> Utterance:
    """Validate what a caller hands in; refuse what cannot be stored faithfully."""
    speaker = (u.speaker or "").strip()
    if not speaker:
        raise InputError("an utterance needs a speaker name")
    if not isinstance(u.text, str) or not u.text.strip():
        raise InputError(f"empty utterance from {speaker!r}: there is nothing to remember")
    try:
        u.text.encode("utf-8")
        speaker.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"utterance from {speaker!r} is not valid Unicode text ({exc.reason})") from None
    if not isinstance(u.time, (int, float)) or isinstance(u.time, bool) or not math.isfinite(u.time):
        raise InputError(f"utterance from {speaker!r} has no valid time: {u.time!r}")
    text = " ".join(u.text.replace("\x00", " ").split())
    return Utterance(speaker=speaker, text=text, time=float(u.time), id=u.id)


def split_long(u: Utterance, max_chars: int) -> list[Utterance]:
    """Split an over-long utterance at sentence ends (then spaces) into pieces of at most max_chars."""
    if len(u.text) <= max_chars:
        return [u]
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(u.text):
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if current and len(current) + 1 + len(sentence) > max_chars:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    # Keep the pieces in order without colliding on the same instant (the archive dedupes on time).
    return [Utterance(u.speaker, p, u.time + i * 1e-3) for i, p in enumerate(pieces) if p]


@dataclass(frozen=True)
class StepReport:
    archived: tuple[Utterance, ...]
    duplicates: int
    blocks_cut: int
    blocks_mounted: int
    budget: tuple[BudgetReport, ...]


class ProStream:
    def __init__(
        self,
        store: Store,
        options: MemoryOptions,
        *,
        embedder: TextEncoder,
        tokenizer: Tokenizer,
        distiller: Callable[[], Distiller],
    ) -> None:
        self.store = store
        self.options = options
        self.embedder = embedder
        self.tokenizer = tokenizer
        self._distiller_factory = distiller
        self._distiller: Distiller | None = None
        # Through `self.embedder` at call time: a benchmark may swap the embedder after this.
        # The entity pass reuses the extractor's spaCy pipeline, where the extractor has one.
        self.supersession = Supersession(
            options.supersede,
            lambda texts: self.embedder.encode(texts),
            lambda: getattr(self.distiller.extractor, "nlp", None),
            person_turns=options.retrieval.person_turns,
            conversation_gap=options.stsb.max_gap_seconds,
        )
        # False when another thread distills (the daemon): ingest and the listener then only file.
        self.inline_distill = True
        self.buffer = self._restore_buffer()
        store.on_rollback.append(self.reload_buffer)

    def reload_buffer(self) -> None:
        """Read the sensing buffer back from the store (after a rollback, or a relabelled speaker)."""
        self.buffer = self._restore_buffer()

    def _restore_buffer(self) -> SensingBuffer:
        buffer, context = self.store.stsb()
        last = (buffer or context)[-1:] if (buffer or context) else []
        vectors = self.store.utterance_vectors([u.id for u in last if u.id is not None])
        prev = vectors.get(last[0].id) if last else None
        return SensingBuffer(self.options.stsb, buffer, context, prev)

    @property
    def llm_usage(self) -> Usage | None:
        """What distillation has asked of its LLM so far; None before the first block or without an LLM."""
        d = self._distiller
        return d.llm.usage if d is not None and d.llm is not None else None

    @property
    def distiller(self) -> Distiller:
        if self._distiller is None:
            self._distiller = self._distiller_factory()
        return self._distiller

    # --- perception ------------------------------------------------------------------------

    def ingest(self, utterance: Utterance, *, distill: bool = True) -> StepReport:
        u = clean_utterance(utterance)
        pieces = split_long(u, self.options.ingest.max_utterance_chars)
        vectors = self.embedder.encode([p.line for p in pieces])
        archived: list[Utterance] = []
        cuts = 0
        with self.store.atomic():
            for piece, vector in zip(pieces, vectors, strict=False):
                stored = self.store.add_utterance(piece, vector)
                if stored is None:
                    continue
                archived.append(stored)
                self.store.advance_clock(stored.time)
                for cut in self.buffer.push(stored, vector):
                    self.store.add_pending(list(cut.utterances), list(cut.context))
                    cuts += 1
            self.store.set_stsb(self.buffer.buffer, self.buffer.context)
        mounted, budgets = 0, []
        # A daemon distills on its own thread; inline, the pending queue is capped to bound memory.
        over = self.inline_distill and self.store.pending_count() > self.options.ingest.max_pending_blocks
        if distill or over:
            mounted, budgets = self.distill_pending()
        return StepReport(tuple(archived), len(pieces) - len(archived), cuts, mounted, tuple(budgets))

    def flush(self) -> int:
        """Cut the open buffer into a pending block (end of a stream, or a long pause)."""
        with self.store.atomic():
            cut = self.buffer.flush()
            if cut is None:
                return 0
            self.store.add_pending(list(cut.utterances), list(cut.context))
            self.store.set_stsb(self.buffer.buffer, self.buffer.context)
        return 1

    # --- distillation and mounting -----------------------------------------------------------

    def distill_pending(self, limit: int | None = None) -> tuple[int, list[BudgetReport]]:
        mounted, reports = 0, []
        for block in self.store.pending_blocks()[:limit]:
            report = self.file_distillation(self.distiller.distill(block, self.block_vectors(block)))
            if report is not None:
                reports.append(report)
                mounted += 1
        return mounted, reports

    def oldest_pending(self) -> tuple[Block, np.ndarray] | None:
        """The next block to distill with its utterances' vectors (for a distiller that runs elsewhere)."""
        blocks = self.store.pending_blocks()[:1]
        return (blocks[0], self.block_vectors(blocks[0])) if blocks else None

    def block_vectors(self, block: Block) -> np.ndarray:
        stored = self.store.utterance_vectors([u.id for u in block.utterances if u.id is not None])
        return np.vstack([stored[u.id] for u in block.utterances if u.id in stored])

    def file_distillation(self, d: Distillation) -> BudgetReport | None:
        """Mount a distilled block into the tree and enforce the budget, in one transaction.

        None when the block is no longer pending as it was distilled: forgotten (all or part of
        its speech) while the LLM worked on it, so the result could quote what was forgotten. A
        block that lost only some speech is still pending and is distilled again.
        """
        distilled = [u.id for u in d.block.utterances]
        with self.store.atomic():
            if self.store.pending_utterance_ids(d.block.id) != distilled:
                return None
            self._mount(d)
            report = enforce_budget(self.store, self.options.budget, self.options.utility, self.store.clock)
            self.store.remove_pending(d.block.id)
        if report.pruned or report.merged:
            # Pruned lines linger in the line index until it is compacted (amortised, see Store).
            self.store.compact_line_index()
        return report

    def _mount(self, d: Distillation) -> None:
        store, opts = self.store, self.options.distill
        now = store.clock
        block: Block = d.block
        # Before the units are attached: the novelty check must know which old lines the block's
        # lines supersede, so that a new value is not folded into the old value's unit.
        stored = store.utterance_vectors([u.id for u in block.utterances if u.id is not None])
        said = [u for u in block.utterances if u.id in stored]
        if said:
            lines = np.vstack([stored[u.id] for u in said if u.id is not None])
            store.add_supersessions(self.supersession.links(store, said, lines))
        texts = [d.scene, d.event, d.gist.text] + [a.text for a in d.amus]
        vectors = self.embedder.encode(texts)
        scene_vec, event_vec, gist_vec, amu_vecs = vectors[0], vectors[1], vectors[2], vectors[3:]

        hit = store.index[Level.SCENE].search(scene_vec, 1)
        if hit and hit[0][1] >= opts.scene_match_threshold:
            scene_id = hit[0][0]
        else:
            scene_id = store.add_node(Level.SCENE, None, d.scene, self._tokens(d.scene), scene_vec, created=now)
        block_ids = [u.id for u in block.utterances if u.id is not None]
        event_id = store.add_node(
            Level.EVENT,
            scene_id,
            d.event,
            self._tokens(d.event),
            event_vec,
            created=now,
            sources=block_ids,
            start_time=block.start,
            end_time=block.end,
        )
        attached = 0
        for amu, vector in zip(d.amus, amu_vecs, strict=False):
            attached += self._attach(amu, vector, event_id, block, now)
        if attached == 0:
            self._attach(d.gist, gist_vec, event_id, block, now, force=True)

    def _attach(
        self, amu: AmuCandidate, vector: np.ndarray, event_id: int, block: Block, now: float, force: bool = False
    ) -> int:
        """The novelty check: a unit too close to an existing one only adds its provenance to it,
        unless it rests on a line that supersedes one of that unit's: a new value is a new unit,
        and the old one, resting on superseded lines, is what the budget prunes first."""
        hit = self.store.index[Level.AMU].search(vector, 1)
        times = [u.time for u in block.utterances if u.id in amu.sources] or [block.start]
        if (
            not force
            and hit
            and hit[0][1] >= self.options.distill.concept_threshold
            and not self.store.supersedes_node(amu.sources, hit[0][0])
        ):
            self.store.add_sources(hit[0][0], amu.sources)
            self._restate(hit[0][0], amu, vector, max(times))
            return 0
        self.store.add_node(
            Level.AMU,
            event_id,
            amu.text,
            self._tokens(amu.text),
            vector,
            created=now,
            sources=amu.sources or [u.id for u in block.utterances if u.id is not None],
            start_time=min(times),
            end_time=max(times),
            relation=amu.relation,
        )
        return 1

    def _restate(self, unit_id: int, amu: AmuCandidate, vector: np.ndarray, said_at: float) -> None:
        unit = self.store.node(unit_id)
        if unit is None or not unit.superseded_by(amu.text, amu.relation, said_at):
            return
        self.store.restate_node(unit_id, amu.text, self._tokens(amu.text), said_at, amu.relation)
        self.store.set_node_vector(unit_id, Level.AMU, vector)

    def _tokens(self, text: str) -> int:
        return max(1, self.tokenizer.count(text))
