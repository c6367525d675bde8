"""Evidence-grounded answers: the frame every system answers through, and the evidence an answer rests on.

The frame asks for what recall questions want and what a small model can give: the answer alone,
in as few words as possible, comma-separated parts for a list, and "not mentioned" when the
context has nothing. The model is not asked to cite: the
lines an answer rests on are recovered afterwards by matching its words to the context's lines
(small models cite loosely, and the citation syntax cost tokens and copied into answers).

The same frame serves the memory and every benchmark baseline, so a comparison between them is
a comparison of what each hands the model. The context comes before the question, so that
questions asked of one context share a prompt prefix that llama.cpp evaluates once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import tzinfo
from typing import TypeVar

from ..records import Evidence, Utterance
from .context import Context, stems
from .dates import annotate, day_heading
from .question import STOP_WORDS

SYSTEM = "You answer questions about past conversations, using only the notes you are given."

# Measured on LoCoMo development questions with the 0.5B answerer (BENCHMARKS.md): a request for
# "as few words as possible" (with a list for a question that asks for several things) beat longer
# rules, and no example values: a small model copied an example date, or the rules' own words.
SHORT = (
    "Reply with the answer only, in as few words as possible; if the question asks for several things, list "
    "them separated by commas."
)
UNKNOWN = "If the notes do not contain it, reply: not mentioned."
# Only to a question that asks for a day (BENCHMARKS.md, "Answering when", four tries): without it
# the 1.5B answerer replied "not mentioned" to most when-questions with the dated line in front of
# it; told to every question, it cost the others. For such a question every date a line names,
# relative ("last Friday") or written out ("the fourteenth of May"), is in parentheses after it
# (`dates.annotate` with named_days), so "the date in parentheses" is the date the line means and
# the day above it the fallback; other questions see only the relative ones resolved.
WHEN = (
    "To a question asking when, reply with a date from the notes: the date in parentheses after what happened, "
    "or else the date above the line."
)
# Only to a question asking yes or no: the 0.5B answered "Did Jon and Gina both ...?" by saying the
# question back ("Jon and Gina both ...", F1 0 against "Yes"), or "not mentioned" to "Would ...?",
# on all ten such probes among 60 development questions (F1 0); told this, it began with yes or
# no (F1 summed over the ten: 4.5; BENCHMARKS.md, "A second look without a way out, and yes or no").
YES_OR_NO = "To a question asking yes or no, begin with yes or no."
# "Did ...?", "Would ...?", "Is ...?"; not "Is it ... or ...?" (a choice between the two).
_ASKS_YES_OR_NO = re.compile(
    r"^\W*(?:is|are|was|were|am|do|does|did|would|could|can|has|have|had|will|should)\b(?!.*\bor\b)",
    re.IGNORECASE | re.DOTALL,
)
# "When did ...?", "What date ...?", "On which day ...?"; not "How long ago ...?" (a duration) or
# "What year ...?" (a date would be more than asked).
_ASKS_FOR_A_DAY = re.compile(r"^\W*(?:when\b|(?:on\s+)?(?:what|which)\s+(?:date|day)\b)", re.IGNORECASE)


def asks_yes_or_no(question: str) -> bool:
    """Whether `question` asks yes or no: its frame asks for the answer to begin with one of them."""
    return bool(_ASKS_YES_OR_NO.match(question))


def asks_for_a_day(question: str) -> bool:
    """Whether `question` asks for a day: its context then has named days written out as dates,
    and its frame says where the notes put dates."""
    return bool(_ASKS_FOR_A_DAY.match(question))


DONT_KNOW = "Not mentioned."
_DONT_KNOW_RE = re.compile(
    r"\b(i don'?t know|not (mentioned|stated|specified|available|discussed|said)|no information|"
    r"does not (say|mention|contain)|cannot be determined|unknown)\b",
    re.I,
)


def says_unknown(text: str) -> bool:
    return bool(_DONT_KNOW_RE.search(text))


# A second look (`memory.answer.second_look_lines`). The small answerers reply "not mentioned"
# with the answer in front of them, among ten lines, more often than with it among two: on the
# H200 run's recorded contexts the 0.5B did so to 40 of the 233 questions whose evidence the
# memory's context held (BENCHMARKS.md, "A second look"). So a reply that is nothing but "not
# mentioned" is asked again from the strongest few lines alone, and the new reply is kept only
# when every word it adds to the question is in those lines: an answer the model made up from
# the question's own words, or from nowhere, stays "not mentioned". Asked again, the model is not
# offered "not mentioned" at all: of 19 second looks (60 development questions, after the
# evidence, the same contexts) the 0.5B answered 9 when offered it and 15 when not, 7 answers
# gained (right or in part) and one lost; `grounded` keeps a reply that rests on no line out, not
# one that rests on the wrong person's (BENCHMARKS.md, "A second look without a way out, and yes
# or no").
_UNKNOWN_REPLIES = ("not mentioned", "i don't know", "i dont know", "unknown", "no information")


def _bare(text: str) -> str:
    return re.sub(r"^\W+|\W+$", "", text.casefold().replace("\u2019", "'"))


def is_bare_unknown(reply: str) -> bool:
    """Whether a reply is nothing but "not mentioned" (or another way of saying it)."""
    return _bare(reply) in _UNKNOWN_REPLIES


def may_be_bare_unknown(start: str) -> bool:
    """Whether a reply that begins with `start` may still turn out to be nothing but "not mentioned"."""
    begun = re.sub(r"^\W+", "", start.casefold().replace("\u2019", "'"))
    for r in _UNKNOWN_REPLIES:
        if r.startswith(begun) or (begun.startswith(r) and not re.search(r"\w", begun[len(r) :])):
            return True
    return False


def _content_stems(text: str) -> set[str]:
    return stems(" ".join(_content_words(text)))


def grounded(reply: str, question: str, notes: str) -> bool:
    """Whether a reply adds words to its question, and every one of them is in `notes` (stemmed)."""
    added = _content_stems(reply) - _content_stems(question)
    return bool(added) and added <= _content_stems(notes)


def second_look(question: str, notes: str, ask: Callable[[list[dict[str, str]]], str]) -> str | None:
    """The reply to `question` from `notes` (the strongest lines alone) through the shared frame,
    when it answers and rests on them; None when it does not."""
    reply = strip_citations(ask(frame(notes, question, may_decline=False)).strip())
    return reply if reply and not says_unknown(reply) and grounded(reply, question, notes) else None


# Strongest lines first (`memory.answer.strongest_first`). Among ten lines a small model copies the
# first date it reads, not the date of the line that answers: on the 34 when-questions among 60
# development questions (after the evidence, the same contexts) the 0.5B's first replies scored F1
# 0.444 from the whole context and 0.659 from the strongest two lines alone. Other questions did
# no better from two lines, and two more of 30 questions about what someone else did got an
# answer, so only a question asking for a day is asked from its strongest lines first; the whole
# context follows when they do not answer it, with nothing or with "not mentioned" (BENCHMARKS.md,
# "Strongest lines first").
T = TypeVar("T")


def first_looks(question: str, whole: T, strongest: T | None, *, strongest_first: bool) -> list[T]:
    """The contexts `question` is asked from in turn, each offering "not mentioned", until one
    answers: its strongest lines, when it asks for a day and `strongest_first` is on, then `whole`."""
    if strongest is not None and strongest_first and asks_for_a_day(question):
        return [strongest, whole]
    return [whole]


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    # The lines shown in the context, in time order: what an answer may rest on.
    sources: tuple[Evidence, ...]
    context_tokens: int
    named_days: bool = False  # as the context's: an answer is traced through the dates the model read
    notes: str = ""  # the context as the model read it


def as_evidence(u: Utterance) -> Evidence:
    return Evidence(utterance_id=u.id or 0, speaker=u.speaker, time=u.time, text=u.text)


def frame(context: str, question: str, *, may_decline: bool = True) -> list[dict[str, str]]:
    """The messages around a context: the same frame for the memory and every benchmark baseline.

    `may_decline` False leaves out the request to reply "not mentioned" (the second look)."""
    rules = [SHORT]
    if asks_for_a_day(question):
        rules.append(WHEN)
    if asks_yes_or_no(question):
        rules.append(YES_OR_NO)
    if may_decline:
        rules.append(UNKNOWN)
    user = (
        "Notes from past conversations, in time order, each line with who said it:\n\n"
        f"{context or '(none)'}\n\n"
        f"Question: {question}\n{' '.join(rules)}\nAnswer:"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def build_prompt(question: str, context: Context) -> Prompt:
    return Prompt(
        messages=frame(context.text, question),
        sources=context.sources,
        context_tokens=context.tokens,
        named_days=context.named_days,
        notes=context.text,
    )


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9'-]*", text.lower()) if w not in STOP_WORDS and len(w) > 1}


def cited_evidence(text: str, prompt: Prompt, zone: tzinfo) -> tuple[Evidence, ...]:
    """The lines an answer rests on: those sharing the most content words with it (at most two).

    A line is read as the model read it, with its day and resolved dates, so "7 May 2023" is
    traced to "... yesterday (7 May 2023) ..." said the next day.
    """
    words = _content_words(strip_citations(text))
    if not words:
        return ()

    def read_as(ev: Evidence) -> str:
        return annotate(ev.text, ev.time, zone, named_days=prompt.named_days)

    overlap = {
        i: len(words & _content_words(f"{day_heading(ev.time, zone)} {ev.speaker} {read_as(ev)}"))
        for i, ev in enumerate(prompt.sources)
    }
    best = max(overlap.values(), default=0)
    if best == 0:
        return ()
    return tuple(prompt.sources[i] for i, o in overlap.items() if o == best)[:2]


def strip_citations(text: str) -> str:
    """An answer without bracketed source numbers ("In May [1][2]." -> "In May."), which some models add anyway."""
    return re.sub(r"\s*\[\d{1,3}\](?:\s*\[\d{1,3}\])*", "", text).strip()
