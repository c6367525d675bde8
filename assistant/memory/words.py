"""Words: the one tokeniser every part of the memory reads with (sentences: assistant/sentences.py).

A word is a run of letters or digits in any script, with an inner apostrophe kept ("Málaga",
"Zoë's", "don't"): an ASCII-only pattern turns "Málaga" into "laga" and can never match the
name a user types. Words are compared case-folded and, where a match should not depend on the
form ("running" against "ran"), by their Porter stem.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

# English function and question words, and the interjections of speech ("hey", "okay"): they
# carry no topic, and in a lexical OR query they would match nearly every line. Kept here (not
# spaCy's list) so that reading a question does not import spaCy, which takes seconds.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
    him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't
    my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through to too under until up very was wasn't we
    we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why
    why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    also ever just kind like likely maybe many much one ones really something sort thing things would yet
    hey hi hello please ok okay oh um uh hmm
    """.split()
)

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*", re.UNICODE)


def words(text: str) -> list[str]:
    """The words of `text`, case-folded, in order (a curly apostrophe read as a straight one)."""
    return [w.casefold().replace("\u2019", "'") for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """The words of `text` that carry its topic, in order without repeats: no stop word, and no
    single letter (a single digit stays: "3 kids")."""
    return list(dict.fromkeys(w for w in words(text) if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())))


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    from nltk.stem import PorterStemmer

    return PorterStemmer().stem


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of one case-folded word ("running" -> "run"), its accents dropped as the
    lexical index drops them ("Málaga" and "Malaga" are one word); a possessive's "'s" goes first."""
    base = word[:-2] if word.endswith("'s") else word
    return _stemmer()(without_accents(base))


def without_accents(text: str) -> str:
    """`text` with its accents dropped, as the lexical index drops them ("Zoë" -> "Zoe")."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def stems(text: str) -> set[str]:
    """The stems of every word of `text`."""
    return {stem(w) for w in words(text)}


def content_stems(text: str) -> set[str]:
    """The stems of the content words of `text`."""
    return {stem(w) for w in content_words(text)}
