"""Hierarchical distillation (seed 000 §5.2): a block becomes an event, a scene and atomic units.

The generative path asks the LLM for an event phrase (rho_evt) and a scene category (rho_scn)
with the Appendix B.2 prompts. The structural path turns (subject, relation, object) triplets
into candidate atomic memory units; the novelty check against the tree happens when the
result is mounted (`engine.py`), because it needs the store.

`extractive` mode skips the LLM: the event is the block's most central line and the scene the
most frequent thing its triplets talk about. It exists for the scale benchmark and machines
without the LLM; answers still use the LLM.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..config import DistillOptions
from ..entities import TripletExtractor
from ..llm import ChatModel, Tokenizer
from ..records import Block, Utterance

EVENT_PROMPT = (
    "Summarize this conversation in one short phrase describing what happened.\n"
    "Name who did what, and keep names, places, dates and numbers.\n"
    "Speakers: {speakers}.\n"
    "{context}"
    "Conversation:\n{text}\n"
    "Event phrase:"
)

SCENE_PROMPT = (
    "Abstract this specific event into a broader, more general scene category "
    "(e.g., 'Work Discussion', 'Social Chat', 'Learning Session').\n"
    "The scene should be a higher-level category that could contain multiple similar events.\n"
    "Event: {event}\n"
    "Scene category (broader abstraction):"
)

SYSTEM = "You are a precise assistant that writes short summaries. Answer with the phrase only."


@dataclass(frozen=True)
class AmuCandidate:
    text: str
    relation: str | None
    sources: tuple[int, ...]


@dataclass(frozen=True)
class Distillation:
    block: Block
    event: str
    scene: str
    amus: tuple[AmuCandidate, ...]
    # The block's most central line, filed as a unit when no extracted fact is new, so every
    # event keeps at least one child and is not removed by the cascade.
    gist: AmuCandidate


def _clean_label(text: str, fallback: str) -> str:
    """First line, without quotes, list markers or a trailing full stop."""
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.strip().strip("\"'*`").strip()
    for prefix in ("Event phrase:", "Scene category:", "Scene:", "Event:", "- "):
        if line.lower().startswith(prefix.lower()):
            line = line[len(prefix) :].strip()
    line = line.rstrip(".").strip("\"'*` ")
    return line or fallback


def central_utterance(utterances: tuple[Utterance, ...], vectors: np.ndarray) -> Utterance:
    """The line most similar, on average, to the rest of the block: the block's gist when no LLM writes one."""
    if len(utterances) <= 2:
        return max(utterances, key=lambda u: len(u.text))
    sims = vectors @ vectors.T
    return utterances[int(np.argmax(sims.sum(axis=1)))]


class Distiller:
    def __init__(
        self,
        options: DistillOptions,
        *,
        extractor: TripletExtractor,
        tokenizer: Tokenizer,
        llm: ChatModel | None,
    ) -> None:
        if options.mode == "llm" and llm is None:
            raise ValueError("llm distillation needs an LLM")
        self.options = options
        self.extractor = extractor
        self.tokenizer = tokenizer
        self.llm = llm

    def distill(self, block: Block, vectors: np.ndarray) -> Distillation:
        """`vectors` are the block's utterance embeddings, one row each, as archived at ingest."""
        gist = central_utterance(block.utterances, vectors)
        amus = self._amus(block)
        gist_unit = AmuCandidate(self.tokenizer.truncate(gist.line, 64), "said", (gist.id,) if gist.id else ())
        if self.options.mode == "llm":
            event = self._event(block, gist)
            scene = self._scene(event)
        else:
            event = self.tokenizer.truncate(gist.line, self.options.max_event_tokens)
            scene = self._extractive_scene(block, amus)
        return Distillation(block, event, scene, amus, gist_unit)

    def _event(self, block: Block, gist: Utterance) -> str:
        assert self.llm is not None
        text = self.tokenizer.truncate("\n".join(u.line for u in block.utterances), self.options.max_block_tokens)
        context = ""
        if block.context:
            lead = "\n".join(u.line for u in block.context[-3:])
            context = "Earlier lines, for context only:\n" + self.tokenizer.truncate(lead, 200) + "\n"
        prompt = EVENT_PROMPT.format(speakers=", ".join(block.speakers), context=context, text=text)
        reply = self.llm.chat(
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
            max_tokens=self.options.max_event_tokens,
        )
        return self.tokenizer.truncate(_clean_label(reply, gist.line), self.options.max_event_tokens)

    def _scene(self, event: str) -> str:
        assert self.llm is not None
        reply = self.llm.chat(
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": SCENE_PROMPT.format(event=event)}],
            max_tokens=self.options.max_scene_tokens,
        )
        return self.tokenizer.truncate(_clean_label(reply, "Conversation"), self.options.max_scene_tokens).title()

    def _amus(self, block: Block) -> tuple[AmuCandidate, ...]:
        seen: set[str] = set()
        out: list[AmuCandidate] = []
        for t in self.extractor.extract(block.utterances):
            text = t.statement.strip()
            key = text.lower()
            if not text or key in seen:
                continue
            seen.add(key)
            source = (t.utterance_id,) if t.utterance_id is not None else tuple(u.id for u in block.utterances if u.id)
            out.append(AmuCandidate(text, t.relation or None, source))
            if len(out) >= self.options.max_amus_per_block:
                break
        return tuple(out)

    def _extractive_scene(self, block: Block, amus: tuple[AmuCandidate, ...]) -> str:
        from spacy.lang.en.stop_words import STOP_WORDS  # slow to import; the extractor has loaded spaCy by now

        speakers = {s.lower() for s in block.speakers}
        counts: Counter[str] = Counter()
        for amu in amus:
            for word in amu.text.split():
                w = word.strip(".,!?;:'\"()").lower()
                if len(w) > 2 and w.isalpha() and w not in speakers and w not in STOP_WORDS:
                    counts[w] += 1
        return counts.most_common(1)[0][0].title() if counts else "Conversation"
