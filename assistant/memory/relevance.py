"""How near a recalled line comes to a question: the one score the answer's abstention reads.

Recall ranks lines by fused ranks, which say which line is best but not whether any is good: the
best of a hundred unrelated lines is still first. Relevance is absolute. It is the larger of two
readings of the same question, so either kind of match is enough:

* in meaning: the cosine between the line's embedding and the question's topic (the question
  without the speakers' names it mentions);
* in words: the share of the question's content words that the line says (stemmed), each word
  weighed by how rare it is among the lines the memory holds (inverse document frequency), since
  a name, a place or a number repeated word for word is a match however far the meanings of the
  whole sentences fall apart, and a word half the lines say ("said", "today") is not.

One threshold (`memory.answer.min_relevance`) then decides: a question none of whose recalled
lines reaches it is answered "not mentioned" without asking the model, which would only guess.

A question about one person ("what did Sam realise after the race?") is answered by the lines
about them: those they said, those that speak of them, and those that name no one just after
talk about them (`Retrieval.of_them`); what a line asks its listener or says of them ("Wow! How
did the race go?", "Your wrist must be sore") is about the one who answers it, not the one
speaking, so such a line is read in parts. When the nearest of those is well
short of the nearest line of all (`memory.answer.min_person_share`), what it asks was said by or
of someone else, and the memory declines it too: on the LoCoMo development split, 193 of the 201
answerable questions that name one of the two speakers have evidence said by or of that person,
and 58 of the 70 unanswerable ones have none. A line about what the question gives the person
("Lucy's housewarming") is about them too, where a recalled line ties it to them
(`Memory._their_thing`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .words import content_stems, stem


def word_weights(terms: tuple[str, ...], held: int, frequencies: Mapping[str, int]) -> dict[str, float]:
    """Each content word's stem with its weight: log(1 + held / (1 + the lines that say it))."""
    weights: dict[str, float] = {}
    for term in terms:
        weight = math.log1p(held / (1 + frequencies.get(term, 0)))
        key = stem(term)
        weights[key] = max(weights.get(key, 0.0), weight)
    return weights


def relevance(text: str, vector: np.ndarray | None, topic: np.ndarray, weights: Mapping[str, float]) -> float:
    """The relevance of a line (`text`, its embedding `vector`) to a question (its topic's
    embedding `topic`, its content words' stems with their `weights`), at most 1 for normalised vectors."""
    meaning = float(vector @ topic) if vector is not None else 0.0
    total = sum(weights.values())
    said = content_stems(text)
    words = sum(w for s, w in weights.items() if s in said) / total if total > 0 else 0.0
    return max(meaning, words)


@dataclass(frozen=True)
class Nearness:
    """How near a question the recalled lines come: what the abstention reads."""

    # The relevance of the nearest recalled line; 0 with none.
    best: float
    # For a question about one person, that of the nearest line, or part of one, about them (said
    # by them, or speaking of them); None for any other question.
    of_person: float | None = None
    # ...and that of the nearest line or part of all, read as the person's are (a line with its
    # speaker's own sentences and some addressed to the listener is two parts); `best` where None.
    of_all: float | None = None

    @property
    def person_share(self) -> float | None:
        """The nearest line about the person asked about, as a share of the nearest line."""
        if self.of_person is None:
            return None
        whole = self.best if self.of_all is None else self.of_all
        return self.of_person / whole if whole > 0 else 0.0

    def answerable(self, min_relevance: float, min_person_share: float) -> bool:
        """Whether the model is asked: some line reaches `min_relevance`, and for a question about
        one person, the nearest line about them reaches `min_person_share` of the nearest line."""
        share = self.person_share
        return self.best >= min_relevance and (share is None or share >= min_person_share)
