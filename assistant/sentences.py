"""Where the sentences of a transcribed line begin and end: the one splitter every stage uses.

A sentence ends at its closing `.`, `!` or `?` (with any closing quote or bracket), followed by a
space or the end of the line. A full stop that is part of a word does not end one:

- a number's ("1,170.50 euros", "version 2.1"): no space follows it;
- a title's or another abbreviation's ("Dr. Holm", "St. Anne's", "Sept. 14"): a speaker naming
  someone is not ending a sentence, and a line cut at "Dr." loses whom it names;
- a single letter's: an initial ("J. Okafor") or a time ("3 p.m. on Friday").

A bracketed part (a shared photo's caption, "[shares a photo of a dog]") is a sentence of its own.
"""

from __future__ import annotations

import re

# Words written with a full stop that are not at the end of a sentence. Those that often end one
# too ("etc.", "Inc.", "no.") are left out: a sentence joined to the next is a smaller harm than a
# name cut in two, but not no harm.
ABBREVIATIONS = frozenset(
    """
    mr mrs ms mx dr prof rev fr sr jr st mt ft gen capt col lt sgt sen gov pres hon
    vs approx
    jan feb mar apr jun jul aug sep sept oct nov dec
    mon tue tues wed thu thur thurs fri sat sun
    """.split()
)

_BRACKETED = re.compile(r"\[[^\]]*\]")
_END = re.compile(r"[.!?]+['\"\u2019\u201d)]*(?=\s|$)")
_LAST_WORD = re.compile(r"([^\W\d_]+)$")


def _inside_a_word(text: str, end: re.Match[str]) -> bool:
    """Whether the full stop `end` belongs to the word before it (an abbreviation or an initial)."""
    if end.group().rstrip("'\"\u2019\u201d)") != ".":
        return False
    word = _LAST_WORD.search(text, 0, end.start())
    return word is not None and (len(word.group(1)) == 1 or word.group(1).lower() in ABBREVIATIONS)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, in order, without the spaces around it."""
    spans: list[tuple[int, int]] = []

    def add(start: int, end: int) -> None:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            spans.append((start, end))

    cut = 0
    for bracket in [*_BRACKETED.finditer(text), None]:
        stop = bracket.start() if bracket is not None else len(text)
        start = cut
        for end in _END.finditer(text, cut, stop):
            if not _inside_a_word(text, end):
                add(start, end.end())
                start = end.end()
        add(start, stop)
        if bracket is not None:
            add(bracket.start(), bracket.end())
            cut = bracket.end()
    return spans


def sentences(text: str) -> list[str]:
    """`text` cut into its sentences, stripped, in order."""
    return [text[start:end] for start, end in sentence_spans(text)]
