"""Supersession: a later line that states a new value for something an earlier line said.

"The Lisbon budget is 2,000 euros", then days later "we had to raise the Lisbon budget to 2,400":
both lines are about one fact, and the second makes the first history. A bounded memory that
cannot tell keeps whichever line its utility happens to favour, and recall ranks whichever line
repeats the question's words, so an answer can quote the old value long after it changed.

Two lines are taken as one fact at two moments when:

1. the later one is a statement (not a question) and names a value the earlier one does not: a
   number, an amount, a date or day, a time, or a name (a person, place, organisation or thing);
2. the new values are of one kind (only quantities, or only people, only places...; a name
   the earlier line said and the update leaves out, such as whose car it is, may be of any),
   the earlier line stated a value of that kind, and where names changed, the two lines share
   another name (the subject whose person or place changed): "the Lisbon budget is 2,000" and
   "the Porto budget is 2,400" differ in a place and an amount, "the Willow demo crashed" and
   "the Redwood demo crashed" name nothing in common, and both are two facts. A name said in
   full in one line and in part in the other ("Nakamura", "Matteo Nakamura") is one name, and a
   name an entity recogniser marks in one line only is no value of either where both say it;
3. with the differing values masked out (each replaced by a word for its kind), the two lines
   mean nearly the same (embedding cosine at least `masked_similarity`), each read as the
   sentences that hold a masked value or share a content word with the other line (a greeting
   or an aside around the fact is not what the two lines are compared on). Masking is what tells
   "the budget went up to 2,400" (same slot, new value) from "the tour costs 20 euros" (a
   different slot that merely shares the topic's words): the value is no longer what the
   sentences differ in;
4. the two lines are not about different people the memory knows, by what they say or, where a
   line names no one, by the talk just before it: "we lost the first flat, the new one is 177
   Orchard Street" just after "Esther's new place is at 96 Chestnut Lane" is Esther's, and no
   update to what was said of Lena's flat (`mentions.talked_of`).

Candidates are the held lines nearest the new line (the memory's own line index, so the cost of
a check does not grow with the archive), said before it. The links are stored (`supersessions`);
the budget prunes what rests on superseded lines first, the novelty check does not fold a new
value into the unit of the old one, and recall ranks the successor above the superseded line,
handing the old one on as its history.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..config import SupersedeOptions
from ..records import Utterance
from ..sentences import sentence_spans
from ..store.store import Store
from .mentions import spoken_of, talked_of
from .words import content_words, words

# Kinds of value. Digits and calendar words are one kind ("when or how much"): a date is a day
# number and a month, and it would be odd to call 14 May and 21 June two kinds of difference.
# Names are of the kind their entity is (a person, a place, an organisation or venue), or plain
# names where no entity recogniser says which.
QUANTITY = "quantity"
PERSON = "person"
PLACE = "place"
ORGANISATION = "organisation"
NAME = "name"
_NAME_KINDS = {
    "PERSON": PERSON,
    "GPE": PLACE,
    "LOC": PLACE,
    "ORG": ORGANISATION,
    "FAC": ORGANISATION,  # hotels, garages, venues: named and run like organisations
    "NORP": NAME,
    "PRODUCT": NAME,
    "EVENT": NAME,
    "WORK_OF_ART": NAME,
    "LAW": NAME,
}

# "2,400", "10:30", "4B", "3rd", and a word written with digits as a whole ("lemontree42", "A320"):
# a code or a password changes as one value, and masking only its digits would leave the rest of
# the word to tell the two lines apart.
_NUMBER = re.compile(r"(?<![^\W\d_])(?:[^\W\d_]+)?\d+(?:[.,:]\d+)*(?:[^\W\d_]+\b)?")
_CALENDAR = re.compile(
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|"
    r"mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?)\b",
    re.IGNORECASE,
)
# Without a parser: runs of capitalised words, not counting the first word of a sentence.
_CAPITALISED = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
# The pipes an entity pass does not need (skipped for speed where the pipeline has them).
_NOT_FOR_NER = ("parser", "tagger", "attribute_ruler", "lemmatizer", "senter")
_ARTICLES = frozenset({"the", "a", "an"})
_CACHE_LIMIT = 50_000  # analysed lines kept (the same held lines are candidates again and again)
_VECTOR_CACHE_LIMIT = 10_000  # masked lines' vectors kept: 15 MB at 384 dimensions

T = TypeVar("T")


@dataclass(frozen=True)
class Value:
    kind: str
    key: str  # normalised: case folded, thousands separators dropped ("2,400" -> "2400")
    start: int
    end: int


def _key(kind: str, text: str) -> str:
    text = " ".join(text.casefold().split())
    return text.replace(",", "") if kind == QUANTITY else text


def cached(
    cache: dict[str, T], texts: Sequence[str], limit: int, compute: Callable[[list[str]], Iterable[T]]
) -> list[T]:
    """What `compute` gives for each of `texts`, kept in `cache` for the next call.

    The cache is bounded by emptying it whole when the new texts would take it past `limit`. Then
    every text this call needs is computed again: texts it held before were cleared with the rest
    (measured: a 100,000-utterance stream failed at 34,000 on a line looked up after the clearing).
    """
    unique = list(dict.fromkeys(texts))
    todo = [t for t in unique if t not in cache]
    if todo and len(cache) + len(todo) > limit:
        cache.clear()
        todo = unique
    if todo:
        cache.update(zip(todo, compute(todo), strict=True))
    return [cache[t] for t in texts]


def is_statement(text: str) -> bool:
    """A question asks for a value; it states none."""
    return not text.rstrip().endswith("?")


class ValueTagger:
    """The values a line names, with where they stand (for masking)."""

    def __init__(self, nlp: Callable[[], Any | None] | None = None, *, cache_limit: int = _CACHE_LIMIT) -> None:
        self._nlp_factory = nlp
        self._nlp: Any | None = None
        self._cache: dict[str, tuple[Value, ...]] = {}
        self.cache_limit = cache_limit

    def _pipeline(self) -> Any | None:
        if self._nlp is None and self._nlp_factory is not None:
            self._nlp = self._nlp_factory()
            self._nlp_factory = None
        return self._nlp

    def values(self, texts: Sequence[str]) -> list[tuple[Value, ...]]:
        def tag(todo: list[str]) -> list[tuple[Value, ...]]:
            return [self._tag(text, names) for text, names in zip(todo, self._names(todo), strict=True)]

        return cached(self._cache, texts, self.cache_limit, tag)

    def _names(self, texts: list[str]) -> list[list[tuple[int, int, str]]]:
        nlp = self._pipeline()
        if nlp is None:
            return [[(m.start(), m.end(), NAME) for m in _CAPITALISED.finditer(t)] for t in texts]
        disable = [p for p in _NOT_FOR_NER if p in nlp.pipe_names]
        return [
            [(e.start_char, e.end_char, _NAME_KINDS[e.label_]) for e in doc.ents if e.label_ in _NAME_KINDS]
            for doc in nlp.pipe(texts, batch_size=64, disable=disable)
        ]

    @staticmethod
    def _tag(text: str, names: list[tuple[int, int, str]]) -> tuple[Value, ...]:
        found: list[Value] = []
        for pattern in (_NUMBER, _CALENDAR):
            for m in pattern.finditer(text):
                if not any(v.start <= m.start() < v.end for v in found):
                    found.append(Value(QUANTITY, _key(QUANTITY, m.group()), m.start(), m.end()))
        quantities = list(found)
        for start, end, kind in names:
            # A day or a month is a quantity even where it is capitalised like a name.
            if not any(start < v.end and v.start < end for v in quantities):
                found.append(Value(kind, _key(kind, text[start:end]), start, end))
        return tuple(sorted(found, key=lambda v: v.start))


_MASKS = ("NUMBER", "NAME")


def mask(text: str, values: Iterable[Value], masked: set[tuple[bool, str]]) -> str:
    """`text` with each value in `masked` (see `_ident`) replaced by the word for its kind."""
    out, at = [], 0
    for v in sorted(values, key=lambda v: v.start):
        if _ident(v) in masked and v.start >= at:
            out += [text[at : v.start], _MASKS[0] if v.kind == QUANTITY else _MASKS[1]]
            at = v.end
    out.append(text[at:])
    return "".join(out)


def about_the_fact(masked: str, other: str) -> str:
    """The sentences of a masked line that speak of the fact: those holding a masked value or
    sharing a content word with the other line. Spoken lines wrap a fact in greetings and asides
    ("Morning. Bad news, the router died again overnight, so I had to change the Wi-Fi password
    again. It's NUMBER now."), and the comparison of meaning should read what the two lines say
    about their subject, not the news around it. A line with no such sentence stays whole."""
    shared = set(content_words(other))
    kept = [
        masked[a:b]
        for a, b in sentence_spans(masked)
        if any(m in masked[a:b] for m in _MASKS) or shared.intersection(content_words(masked[a:b]))
    ]
    return " ".join(kept) or masked


@dataclass(frozen=True)
class Pair:
    """A candidate (earlier, later) pair that passed the value tests, masked for the meaning test."""

    old_id: int
    new_id: int
    old_masked: str
    new_masked: str


def _ident(v: Value) -> tuple[bool, str]:
    """What makes two values the same: a quantity's digits or words, a name's words, whatever an
    entity recogniser calls the name in each line (it may say place in one and organisation in
    the other)."""
    return v.kind == QUANTITY, v.key


def _name_words(key: str) -> frozenset[str]:
    return frozenset(w for w in key.split() if w not in _ARTICLES)


def _named_in(key: tuple[bool, str], others: set[tuple[bool, str]]) -> bool:
    """Whether a name is one of `others` said in full or in part: "Nakamura" and "Matteo
    Nakamura", "the Skoda Octavia" and "Octavia". A recogniser does not mark the same name alike
    in two sentences, and people shorten names they have said once."""
    is_quantity, text = key
    if is_quantity:
        return False
    words = _name_words(text)
    return bool(words) and any(
        not q and (other := _name_words(o)) and (words <= other or other <= words) for q, o in others
    )


def _said_in(key: tuple[bool, str], other_words: set[str]) -> bool:
    """Whether a name's words are all words of the other line, tagged there or not: a recogniser
    marks "Golf" in "Heads up, the Golf bill went up to 7,380 euros" and not in "The Golf bill went
    up to 8,000 euros", and a name is no new value where the other line says it."""
    is_quantity, text = key
    if is_quantity:
        return False
    name = set(words(text)) - _ARTICLES
    return bool(name) and name <= other_words


def value_pair(
    old: Utterance, new: Utterance, old_values: tuple[Value, ...], new_values: tuple[Value, ...]
) -> Pair | None:
    """Tests 1 and 2 of the module docstring: the later line names a new value, of the same subject."""
    if old.id is None or new.id is None or not is_statement(new.text) or not is_statement(old.text):
        return None
    old_keys = {_ident(v) for v in old_values}
    new_keys = {_ident(v) for v in new_values}
    old_words, new_words = set(words(old.text)), set(words(new.text))
    added = {k for k in new_keys - old_keys if not _named_in(k, old_keys) and not _said_in(k, old_words)}
    dropped = {k for k in old_keys - new_keys if not _named_in(k, new_keys) and not _said_in(k, new_words)}
    if not added:
        return None
    differing = added | dropped
    # The new values are of one kind. A name the earlier line said and the update leaves out is
    # of any kind: people drop what is clear from the talk ("Diego's Skoda is at Berg Garage",
    # then "we took the Skoda to Lund Garage").
    kinds = {v.kind for v in new_values if _ident(v) in added}
    if len(kinds) > 1:
        return None
    (kind,) = kinds
    # The earlier line must have stated a value of that kind: "Quick update on the sync" says
    # nothing that "Yuki runs the sync now" replaces.
    if not any(v.kind == kind for v in old_values):
        return None
    if kind == QUANTITY:
        # Every quantity is masked, not only the differing ones: an update often names the value
        # it replaces ("2,400 instead of 2,000"), and a number is what a line says about its
        # subject, not the subject.
        differing |= {_ident(v) for v in (*old_values, *new_values) if v.kind == QUANTITY}
    elif not (
        any(not is_quantity for is_quantity, _ in old_keys & new_keys)
        or any(_said_in(k, new_words) for k in old_keys)
        or any(_said_in(k, old_words) for k in new_keys)
    ):
        # A new name needs a name in common, the thing whose person or place changed: "the Willow
        # demo crashed" and "the Redwood demo crashed", or "hi Felix" and "hi Rosa", are two facts.
        return None
    old_masked, new_masked = mask(old.text, old_values, differing), mask(new.text, new_values, differing)
    return Pair(old.id, new.id, about_the_fact(old_masked, new.text), about_the_fact(new_masked, old.text))


class Supersession:
    """Finds which held lines a block's new lines supersede."""

    def __init__(
        self,
        options: SupersedeOptions,
        encode: Callable[[list[str]], np.ndarray],
        nlp: Callable[[], Any | None] | None = None,
        *,
        person_turns: int = 0,
        conversation_gap: float | None = None,
    ) -> None:
        self.options = options
        # How far the talk carries whom a line is about (`mentions.talked_of`, test 4).
        self.person_turns = person_turns
        self.conversation_gap = conversation_gap
        self._encode = encode
        self.tagger = ValueTagger(nlp)
        # Masked lines embedded so far: a held line is a candidate for many later lines, and with
        # its quantities masked it reads the same each time.
        self._masked: dict[str, np.ndarray] = {}

    def _embed_masked(self, texts: list[str]) -> dict[str, np.ndarray]:
        return dict(zip(texts, cached(self._masked, texts, _VECTOR_CACHE_LIMIT, self._encode), strict=True))

    def links(self, store: Store, lines: Sequence[Utterance], vectors: np.ndarray) -> list[tuple[int, int]]:
        """(old, new) for each held line said before a line of `lines` that the later one supersedes."""
        opts = self.options
        if not opts.enabled:
            return []
        said = [(u, v) for u, v in zip(lines, vectors, strict=False) if u.id is not None and is_statement(u.text)]
        new_values = self.tagger.values([u.text for u, _ in said])
        pairs: list[Pair] = []
        for (u, vector), values in zip(said, new_values, strict=True):
            if not values:
                continue
            near = [uid for uid, cos in store.dense_lines(vector, opts.candidates) if cos >= opts.min_similarity]
            earlier = [
                c
                for c in store.utterances([uid for uid in near if uid != u.id])
                if (c.time, c.id or 0) < (u.time, u.id or 0)
            ]
            for old, old_values in zip(earlier, self.tagger.values([c.text for c in earlier]), strict=True):
                pair = value_pair(old, u, old_values, values)
                if pair is not None:
                    pairs.append(pair)
        pairs = self._of_the_same_people(store, pairs)
        if not pairs:
            return []
        embedded = self._embed_masked([t for p in pairs for t in (p.old_masked, p.new_masked)])
        return [
            (p.old_id, p.new_id)
            for p in pairs
            if float(embedded[p.old_masked] @ embedded[p.new_masked]) >= opts.masked_similarity
        ]

    def _of_the_same_people(self, store: Store, pairs: list[Pair]) -> list[Pair]:
        """Test 4: the pairs whose lines are not about different people. Whom a line is about is
        who it names, or where it names no one, whom the talk just before it spoke of
        (`mentions.talked_of`): "We lost the first flat, the new one is 177 Orchard Street" said
        just after "Esther's new place is at 96 Chestnut Lane" is Esther's address, and supersedes
        no line about Lena's flat. Where both lines name people themselves, a change of person is
        what tests 1 and 2 judged ("Yuki runs the sync now")."""
        if self.person_turns <= 0 or not pairs:
            return pairs
        people = store.speaker_names()
        ids = {i for p in pairs for i in (p.old_id, p.new_id)}
        lines = {u.id: u for u in store.utterances(ids)}
        before = store.turns_near(ids, self.person_turns, after=False)
        own = {uid: spoken_of(u.text, people) for uid, u in lines.items()}
        about = {
            uid: talked_of(u, before.get(uid, []), people, self.person_turns, self.conversation_gap)
            for uid, u in lines.items()
        }

        def apart(p: Pair) -> bool:
            a, b = about.get(p.old_id, frozenset()), about.get(p.new_id, frozenset())
            return bool(a and b) and a.isdisjoint(b) and not (own.get(p.old_id) and own.get(p.new_id))

        return [p for p in pairs if not apart(p)]

    def possible_updates(
        self, store: Store, shown: Sequence[Utterance], rest: Sequence[Utterance]
    ) -> dict[int, list[Utterance]]:
        """The lines of `rest` that may state a new value for what a line of `shown` said, by the
        id of the first shown line each may update: a filed line's candidate (embedding cosine at
        least `min_similarity`) that passes tests 1, 2 and 4 (a later statement naming a new value
        of one kind, of the same subject, not about someone else), without the masked comparison.

        Recall asks this of the lines it ranked for one question, and a pair only adds a line to
        what the answer reads; a link made when a line is filed makes the old line history and is
        pruned by, so it keeps the stricter test."""
        opts = self.options
        found: dict[int, list[Utterance]] = {}
        old = [u for u in shown if u.id is not None and is_statement(u.text)]
        said = [u for u in rest if u.id is not None and is_statement(u.text)]
        if not opts.enabled or not old or not said:
            return found
        vectors = store.utterance_vectors([u.id for u in (*old, *said) if u.id is not None])
        # The candidate pairs first, by cosine: tagging a line's values (an entity pass) costs far
        # more than a dot product, and most lines under the floor are no candidate for any.
        near = {
            new.id: [
                before
                for before in old
                if (before.time, before.id or 0) < (new.time, new.id or 0)
                and before.id in vectors
                and new.id in vectors
                and float(vectors[before.id] @ vectors[new.id]) >= opts.min_similarity
            ]
            for new in said
        }
        tagging = list({u.text: None for new in said if near[new.id] for u in (new, *near[new.id])})
        values = dict(zip(tagging, self.tagger.values(tagging), strict=True))
        pairs = [
            pair
            for new in said
            for before in near[new.id]
            if (pair := value_pair(before, new, values[before.text], values[new.text])) is not None
        ]
        # Test 4 as links read it: an update about someone else is no update of the line.
        lines = {u.id: u for u in said}
        offered: set[int] = set()
        for pair in self._of_the_same_people(store, pairs):
            if pair.new_id not in offered:
                offered.add(pair.new_id)
                found.setdefault(pair.old_id, []).append(lines[pair.new_id])
        return found
