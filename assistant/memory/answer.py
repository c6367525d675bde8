"""Evidence-grounded answers: the frame every system answers through, the one way a reply is
generated and read, and the evidence an answer rests on.

The frame asks for what recall questions want and what a small model can give: the answer alone,
in as few words as possible, comma-separated parts for a list, and "not mentioned" when the
context has nothing. That last rule is said once, in the system message, not beside the
question: put last, just before "Answer:", it outweighed the notes, and the 1.5B declined 25 of
80 answerable LoCoMo development questions after their evidence (all 7 of a probe's
when-questions whose dated line it had), against 9 with the rule in the system message (on the
validation split 8 of 40 against 3), where it still declines a question the notes say nothing
on. Since where the rule stands decides how often the model declines, whether a question is
answerable at all is the memory's to decide first (`memory/relevance.py`). Every question gets
the same frame, whatever its first word, and a spoken
wrapper is taken off the question it carries (`question.bare_question`): "Do you remember when
the plumber is coming?" is asked as "When the plumber is coming?", because a small model reads
the wrapper as a question about its own memory and declines. The context says how to read its
dates (each line sits under the day it was said, and a time a line refers to is followed by its
calendar date), so a question about when something was said and one about when it happens read
the same notes. The model's words are the answer: nothing rewrites them afterwards, and a
decline it writes stands.

The model is not asked to cite: the lines an answer rests on are recovered afterwards by
matching its words to the context's lines (small models cite loosely, and the citation syntax
cost tokens and copied into answers).

The same frame and `respond` serve the memory (`ask`, the daemon, MCP) and every benchmark
baseline, so a comparison between them is a comparison of what each hands the model. The
context comes before the question, so that questions asked of one context share a prompt prefix
that llama.cpp evaluates once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import tzinfo

from ..llm import ChatModel
from ..records import Evidence
from .context import Context
from .dates import annotate, day_heading
from .question import bare_question
from .words import content_words

SYSTEM = "You answer questions about past conversations, using only the notes you are given."

# Measured on LoCoMo development questions with the 0.5B answerer (BENCHMARKS.md): a request for
# "as few words as possible" (with a list for a question that asks for several things) beat longer
# rules, and no example values: a small model copied an example date, or the rules' own words.
SHORT = (
    "Reply with the answer only, in as few words as possible; if the question asks for several things, list "
    "them separated by commas."
)
UNKNOWN = "If the notes do not contain it, reply: not mentioned."
# How to read the notes, told with every question: the day above a line is when it was said, and
# a date in parentheses is the date the words before it mean.
NOTES = (
    "Notes from past conversations, in time order, each line under the day it was said and with who said it; "
    "a date in parentheses is the date the words before it refer to:"
)

DONT_KNOW = "Not mentioned."

# A reply declines when it says the notes do not hold the answer, not when it states a fact that
# contains such a word: "The cause of the leak is unknown" answers "What caused the leak?". So
# "unknown" declines only as the whole reply and "I don't know" only at its start; phrases about
# what was said ("not mentioned", "no information") decline wherever they stand.
_DECLINES_ANYWHERE = re.compile(
    r"\b(?:not\s+(?:mentioned|stated|specified|said|discussed|given|provided)|no\s+(?:information|mention)|"
    r"(?:does|do)\s+not\s+(?:say|mention|contain|specify)|(?:doesn't|don't)\s+(?:say|mention|contain|specify)|"
    r"cannot\s+be\s+determined)\b",
    re.IGNORECASE,
)
_DECLINES_AT_START = re.compile(
    r"^\W*(?:unknown\W*$|i\s+(?:do\s+not|don't|dont)\s+know\b|i'm\s+not\s+sure\b)", re.IGNORECASE
)


def says_unknown(text: str) -> bool:
    """Whether a reply declines to answer (the one decline detector)."""
    t = text.replace("\u2019", "'")
    return bool(_DECLINES_ANYWHERE.search(t) or _DECLINES_AT_START.match(t))


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    # The lines shown in the context, in time order: what an answer may rest on.
    sources: tuple[Evidence, ...]
    context_tokens: int
    notes: str = ""  # the context as the model read it


def frame(context: str, question: str) -> list[dict[str, str]]:
    """The messages around a context: the same frame for every question, the memory and every baseline."""
    user = f"{NOTES}\n\n{context or '(none)'}\n\nQuestion: {bare_question(question)}\n{SHORT}\nAnswer:"
    return [{"role": "system", "content": f"{SYSTEM} {UNKNOWN}"}, {"role": "user", "content": user}]


def build_prompt(question: str, context: Context) -> Prompt:
    return Prompt(
        messages=frame(context.text, question),
        sources=context.sources,
        context_tokens=context.tokens,
        notes=context.text,
    )


@dataclass(frozen=True)
class Reply:
    """A finished reply: its text as shown, and whether it answers (a decline does not)."""

    text: str
    knows: bool


def read_reply(raw: str) -> Reply:
    """What a reply says: its text without bracketed citations, and whether it answers."""
    text = strip_citations(raw) or DONT_KNOW
    return Reply(text, not says_unknown(text))


def respond(llm: ChatModel, messages: list[dict[str, str]], max_tokens: int) -> Iterator[str | Reply]:
    """The one answer flow: the model's reply as it is generated, then the finished `Reply`.

    Every client (ask, the daemon, MCP, the TUI) and every benchmark system answers through this."""
    pieces: list[str] = []
    for piece in llm.stream(messages, max_tokens=max_tokens):
        pieces.append(piece)
        yield piece
    yield read_reply("".join(pieces).strip())


def cited_evidence(text: str, prompt: Prompt, zone: tzinfo) -> tuple[Evidence, ...]:
    """The lines an answer rests on: those sharing the most content words with it (at most two).

    A line is read as the model read it, with its day and resolved dates, so "7 May 2023" is
    traced to "... yesterday (Sunday 7 May 2023) ..." said the next day.
    """
    wanted = set(content_words(strip_citations(text)))
    if not wanted:
        return ()
    overlap = {
        i: len(
            wanted & set(content_words(f"{day_heading(ev.time, zone)} {ev.speaker} {annotate(ev.text, ev.time, zone)}"))
        )
        for i, ev in enumerate(prompt.sources)
    }
    best = max(overlap.values(), default=0)
    if best == 0:
        return ()
    return tuple(prompt.sources[i] for i, o in overlap.items() if o == best)[:2]


def strip_citations(text: str) -> str:
    """An answer without bracketed source numbers ("In May [1][2]." -> "In May."), which some models add anyway."""
    return re.sub(r"\s*\[\d{1,3}\](?:\s*\[\d{1,3}\])*", "", text).strip()
