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

from ..records import Evidence
from .context import Context, stems
from .dates import annotate, day_heading
from .question import STOP_WORDS

T = TypeVar("T")

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


# A reply that only says the question back ("What did Mel and her kids make at the workshop?" ->
# "Pottery workshops"; "What is Melanie's reason for running?" -> "Her reason is running") tells
# the user nothing, like "not mentioned", and gets the same second look. Not a reply to a choice
# ("a national park or a theme park?"), whose answer is one of the question's words, nor one that
# begins with the yes or no asked for, nor one with a number the question does not have.
_YES_NO_REPLY = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
_CHOICE = re.compile(r"\bor\b", re.IGNORECASE)


def says_question_back(reply: str, question: str) -> bool:
    """Whether `reply` adds no word and no number to `question` (and is not a decline, a yes or
    no to a question asking one, or one of the things a question offers to choose from)."""
    if not reply.strip() or says_unknown(reply) or _CHOICE.search(question):
        return False
    if asks_yes_or_no(question) and _YES_NO_REPLY.match(reply):
        return False
    return _adds_nothing(reply, question)


def _adds_nothing(text: str, question: str) -> bool:
    """Whether `text` has no content word (stemmed) and no number that `question` lacks."""
    numbers = set(re.findall(r"\d+", text)) - set(re.findall(r"\d+", question))
    return not numbers and not (_content_stems(text) - _content_stems(question))


def may_say_question_back(start: str, question: str) -> bool:
    """Whether a reply that begins with `start` may still turn out to say the question back: its
    whole words so far add nothing (a word still being written is not judged)."""
    whole = start if re.search(r"\W$", start) else re.sub(r"\w+$", "", start)
    return not whole.strip() or (not says_unknown(whole) and _adds_nothing(whole, question))


def says_nothing(reply: str, question: str) -> bool:
    """Whether a reply is asked again (the second look): a bare "not mentioned", or the question said back."""
    return is_bare_unknown(reply) or says_question_back(reply, question)


def grounded(reply: str, question: str, notes: str) -> bool:
    """Whether a reply adds words to its question, and every one of them is in `notes` (stemmed)."""
    added = _content_stems(reply) - _content_stems(question)
    return bool(added) and added <= _content_stems(notes)


def second_look(question: str, notes: str, ask: Callable[[list[dict[str, str]]], str]) -> str | None:
    """The reply to `question` from `notes` (the strongest lines alone) through the shared frame,
    when it answers and rests on them; None when it does not."""
    reply = strip_citations(ask(frame(notes, question, may_decline=False)).strip())
    return reply if reply and not says_unknown(reply) and grounded(reply, question, notes) else None


# The day said is not always the day it happened. Asked "When did Sam have a picnic?" from the
# line "6 July 2023: / Sam: We had a picnic last week (the week before 6 July 2023)!", the small
# answerers reply with the day above the line, "6 July 2023", a week off. A reply that is nothing
# but the date above a line is replaced by the date the line itself resolves
# (`dates.annotate`), when that line is the one among the day's lines (and its sentence the one
# among the line's) that shares the most words with the question; between lines sharing as many,
# the one whose date sits in a sentence holding all of them.
# A context's date line (`dates.day_heading`, as `context.render` writes it) and a date it resolves.
_DAY_LINE = re.compile(r"^(\d{1,2} [A-Z][a-z]+ \d{4}):$")
_RESOLVED = re.compile(r"\(([^()]*\b\d{4})\)")


def _best(items: list[tuple[tuple[int, ...], T]]) -> T | None:
    """The item with the strictly highest score (compared part by part) whose first part is above
    zero; None on a tie or when none scores."""
    ranked = sorted(items, key=lambda x: x[0], reverse=True)
    if not ranked or ranked[0][0][0] <= 0 or (len(ranked) > 1 and ranked[1][0] == ranked[0][0]):
        return None
    return ranked[0][1]


# What a reply that is only a date may begin with: "14", "14 Aug", "14 August 20".
_DAY_BEGUN = re.compile(r"\d{0,2}(?:\s+[a-z]*(?:\s+\d{0,4})?)?")


def may_be_only_a_day(start: str, question: str) -> bool:
    """Whether a reply to `question` that begins with `start` may still turn out to be only a date
    (which `dated_reply` may replace); never for a question that does not ask for a day."""
    return asks_for_a_day(question) and _DAY_BEGUN.fullmatch(_bare(start) if start.strip() else "") is not None


def may_be_replaced(start: str, question: str) -> bool:
    """Whether a reply that begins with `start` is held back from the user: it may still be a bare
    "not mentioned" or the question said back (the second look may replace either), or only a date
    (`dated_reply` may replace it)."""
    return may_be_bare_unknown(start) or may_say_question_back(start, question) or may_be_only_a_day(start, question)


def dated_reply(reply: str, question: str, notes: str) -> str:
    """`reply`, or for a reply that is only the date above the line answering `question`, the date
    that line resolves in parentheses ("the week before 6 July 2023")."""
    day = _bare(reply)
    if not asks_for_a_day(question) or not day:
        return reply
    wanted = _content_stems(question)

    def shared(sentence: str) -> int:  # the question's words in a sentence, its dates left out
        return len(wanted & _content_stems(_RESOLVED.sub("", sentence)))

    # Per line of the day: its score, and its sentences that resolve a date.
    lines: list[tuple[tuple[int, ...], list[str]]] = []
    under = None
    for line in notes.splitlines():
        if (m := _DAY_LINE.match(line.strip())) is not None:
            under = m.group(1).casefold()
        elif under == day and ": " in line:
            said = line.split(": ", 1)[1]
            words = len(wanted & _content_stems(said))
            # Lines sharing as many of the question's words are told apart by where their date is:
            # "When did Ana give a talk at a school?" against "My school event last week (the week
            # before ...) went well." and "Giving it felt great.", one word each, is answered by the
            # first, one of whose dated sentences holds every word the line shares. A line with a
            # date in a sentence about something else does not win a tie by having a date.
            dated = [s for s in re.split(r"(?<=[.!?])\s+", said) if _RESOLVED.search(s)]
            whole = any(shared(s) == words for s in dated)
            lines.append(((words, int(whole)), dated))
    if (chosen := _best(lines)) is None:
        return reply
    sentence = _best([((shared(s),), s) for s in chosen])
    if sentence is None or len(found := set(_RESOLVED.findall(sentence))) != 1:
        return reply
    (resolved,) = found
    return reply if _bare(resolved) == day else resolved


# Strongest lines first (`memory.answer.strongest_first`). Among ten lines a small model copies the
# first date it reads, not the date of the line that answers: on the 34 when-questions among 60
# development questions (after the evidence, the same contexts) the 0.5B's first replies scored F1
# 0.444 from the whole context and 0.659 from the strongest two lines alone. Other questions did
# no better from two lines, and two more of 30 questions about what someone else did got an
# answer, so only a question asking for a day is asked from its strongest lines first; the whole
# context follows when they do not answer it, with nothing or with "not mentioned" (BENCHMARKS.md,
# "Strongest lines first").
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
