"""Read a question before recalling: who it is about, when, and which words carry its meaning.

"What did Sam say about the trip last week?" is about one speaker (Sam), one window (last
week) and a few content words (say, trip). The speaker's name is taken out of the words that
are searched: it matches every line that merely addresses Sam ("Thanks, Sam!") and pulls the
question's vector towards greetings. Recall ranks the speaker's own lines first instead, since
what a person did or said is told mostly in their own lines (on the LoCoMo development split,
95 % of the evidence for questions that name one speaker is that speaker's own), without
barring the rest: news about Sam is often told by someone else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import tzinfo
from functools import lru_cache
from typing import Any

from ..entities import grammar
from .dates import question_window
from .words import content_words, without_accents

# A question whose subject is the user ("what did I tell Sam?", "when did we meet Sam?") is not
# about what the person it names said. Only a subject counts: "tell me", "told us" and "my car"
# are what the wrapper or the named person does to the user ("Can you tell me what Sam said?",
# "What did Sam say about my car?"), and those questions are still about Sam's own lines.
_FIRST_PERSON = re.compile(r"\b(i|we|myself|ourselves)\b", re.I)
# A time in a question bounds when the lines were said only when the question asks what was said
# ("what did Sam say last week?"); otherwise it is part of the event asked about ("where did
# she move from four years ago?"), which was told whenever it was told.
_ABOUT_SPEECH = re.compile(
    r"\b(say|says|said|tell|tells|told|mention(s|ed)?|talk(s|ed)?|discuss(es|ed)?|ask(s|ed)?|speak|spoke|"
    r"promise(s|d)?|agree(s|d)?|decide(s|d)?|hear|heard|chat(s|ted)?|conversation|meeting)\b",
    re.I,
)


# Wh-words by their fine-grained tags (who, what, which, whose, when, where, why, how), and the
# marks of an embedded yes-or-no question.
_WH_TAGS = {"WDT", "WP", "WP$", "WRB"}
_YES_OR_NO_MARKS = {"whether", "if"}
# The asker and the one asked: a wrapper's subject ("do you remember", "I was wondering").
_ASKER_OR_ASKED = {"i", "you"}


# A question is read for recall, for the person test and again for the frame; a parse costs
# about 4 ms, so each text is parsed once.
@lru_cache(maxsize=256)
def _parse(text: str) -> Any:
    return grammar()(text)


@lru_cache(maxsize=256)
def bare_question(question: str) -> str:
    """The question a spoken wrapper carries: "Do you remember when the plumber is coming?" asks
    "When the plumber is coming?", "I was wondering whether Chidi is coming?" asks "Is Chidi
    coming?" (an embedded yes-or-no clause turned back into the question it reports,
    `_asked_directly`); any other question is returned as it is.

    Read from the parse, not from a list of openings: a wrapper is a main clause about the asker
    or the one asked (its subject "I" or "you", or none, as in "tell me ..."), with no wh-word
    outside the clause it governs, and that clause opens with a wh-word or "whether"/"if". "Did
    Sam say when the trip starts?" is about what Sam said, and "When did I say I'd call?" asks
    its own "when": both are kept whole. A small model reads the wrapper as a question about its
    own memory and declines where the bare question gets the answer; the memory's reading (names,
    the window of time, the words searched) is of the bare question too.
    """
    doc = _parse(question)
    for sent in doc.sents:
        clause = _embedded(sent.root)
        if clause is None:
            continue
        # The parse is projective: the clause's words are the span between its edges.
        first, end = clause.left_edge.i, clause.right_edge.i + 1
        if any(t.tag_ in _WH_TAGS for t in sent if not first <= t.i < end):
            continue
        if doc[first].lower_ in _YES_OR_NO_MARKS:
            text = _asked_directly(clause, first + 1, end)
        else:
            text = doc[first:end].text.strip(" ,;")
        if text:
            return text[0].upper() + text[1:] + "?"
    return question


# The auxiliary that asks a yes-or-no question about a verb without one, by the verb's tense.
_DO_SUPPORT = {"VBD": "did", "VBZ": "does", "VBP": "do"}


def _asked_directly(verb: Any, start: int, end: int) -> str:
    """An embedded yes-or-no clause (the words from `start` to `end`, `verb` its head) as the
    question it reports: "Chidi is coming" asks "Is Chidi coming", "Björn paid the deposit" asks
    "Did Björn pay the deposit". Read as a statement with a question mark, the clause was
    repeated back by the 1.5B as its answer ("Chidi is coming to the offsite.")."""
    doc = verb.doc
    subject = next((c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass", "expl")), None)
    if subject is None or not start <= subject.left_edge.i:
        return doc[start:end].text.strip(" ,;")
    # The first auxiliary after the subject ("is", "will", "has"), or the verb itself as a copula.
    mover = next((c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i > subject.right_edge.i), None)
    if mover is None and verb.lemma_ == "be":
        mover = verb
    words = [t.text_with_ws for t in doc[start:end]]
    if mover is not None:
        words[mover.i - start] = ""
        front = mover.text
    elif verb.tag_ in _DO_SUPPORT:
        words[verb.i - start] = verb.lemma_ + verb.whitespace_
        front = _DO_SUPPORT[verb.tag_]
    else:
        return doc[start:end].text.strip(" ,;")
    rest = "".join(words).strip(" ,;?")
    return f"{front} {rest}"


def _embedded(root: Any) -> Any | None:
    """The wh- or yes-or-no clause a wrapper's verb governs (`bare_question`), or None."""
    subjects = [c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")]
    # Its subject is the asker or the one asked, or it has none and is an imperative ("tell me").
    if (subjects and subjects[0].lower_ not in _ASKER_OR_ASKED) or (not subjects and root.tag_ != "VB"):
        return None
    head = root
    # "I'd like to know who ...": the wrapper's verb may sit down a chain of open complements.
    while True:
        for c in head.children:
            if c.dep_ == "ccomp" and (c.left_edge.tag_ in _WH_TAGS or c.left_edge.lower_ in _YES_OR_NO_MARKS):
                return c
        xcomp = next((c for c in head.children if c.dep_ == "xcomp"), None)
        if xcomp is None:
            return None
        head = xcomp


@dataclass(frozen=True)
class QuestionReading:
    """What recall takes from a question's words."""

    # The question without the names of the speakers it mentions: what is embedded.
    topic: str
    # Content words for the lexical index, in order, without duplicates.
    terms: tuple[str, ...]
    # The one speaker the question is about, when it names exactly one and is not in the first person.
    speaker: str | None
    # The time window its words name ("what was said last week", "in May 2023"), relative to when
    # it is asked; None unless the question asks what was said then.
    window: tuple[float, float] | None
    # Every known speaker the question names, in the order found.
    named: tuple[str, ...] = ()


def _name_patterns(speakers: list[str]) -> dict[str, list[str]]:
    """The ways a question may name each speaker: the full name, and a first name no one else shares."""
    firsts: dict[str, int] = {}
    for name in speakers:
        first = name.split()[0].casefold() if name.split() else ""
        firsts[first] = firsts.get(first, 0) + 1
    out: dict[str, list[str]] = {}
    for name in speakers:
        forms = [name]
        parts = name.split()
        if len(parts) > 1 and firsts.get(parts[0].casefold()) == 1:
            forms.append(parts[0])
        out[name] = forms
    return out


def _nicknames(question: str, speakers: list[str]) -> dict[str, list[str]]:
    """Capitalised words inside the question that begin exactly one speaker's first name ("Mel")."""
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"(?<=\s)([A-Z][a-z]{2,})\b", question):
        word = m.group(1)
        owners = [n for n in speakers if n.split() and n.split()[0] != word and n.split()[0].startswith(word)]
        if len(owners) == 1:
            out.setdefault(owners[0], []).append(word)
    return out


def read_question(question: str, speakers: list[str], now: float, zone: tzinfo) -> QuestionReading:
    """Find the speakers a question names, its time window and its content words (of the question
    a spoken wrapper carries, `bare_question`)."""
    question = bare_question(question)
    forms = _name_patterns(speakers)
    for name, extra in _nicknames(question, speakers).items():
        forms[name] = forms.get(name, []) + extra
    named: list[str] = []
    topic = question
    # Longest forms first, so "Sam Lee" is taken whole before "Sam".
    for name, form in sorted(((n, f) for n, fs in forms.items() for f in fs), key=lambda t: -len(t[1])):
        pattern = re.compile(r"(?<![\w])" + re.escape(form) + r"(?:'s|’s)?(?![\w])", re.I)
        if pattern.search(topic):
            topic = pattern.sub(" ", topic)
            if name not in named:
                named.append(name)
    topic = " ".join(topic.split())
    terms = tuple(content_words(topic))
    speaker = named[0] if len(named) == 1 and not _FIRST_PERSON.search(question) else None
    window = question_window(question, now, zone) if _ABOUT_SPEECH.search(question) else None
    return QuestionReading(topic or question, terms, speaker, window, tuple(named))


def possessed(question: str, name: str) -> tuple[str, ...]:
    """What a question gives `name`, from its parse: the noun the name's possessive governs, and
    the first noun after the possessive where that is another ("How many guests are coming to
    Lucy's housewarming?" -> housewarming; "the repair of Pablo's Fiat Panda", which the small
    parser may read as a "Fiat Panda cost", -> cost, Fiat); none where it gives them nothing."""
    forms = {without_accents(w).casefold() for w in name.split()}
    doc = _parse(bare_question(question))
    for token in doc:
        if token.dep_ == "poss" and without_accents(token.text).casefold() in forms:
            after = next((t for t in doc[token.i + 1 : token.head.i + 1] if t.pos_ in ("NOUN", "PROPN")), None)
            return tuple(dict.fromkeys(str(t.text) for t in (token.head, after) if t is not None))
    return ()


def fts_query(terms: tuple[str, ...]) -> str | None:
    """An FTS5 query matching any of the terms (each quoted, so no word is read as an operator)."""
    quoted = ['"' + t.replace('"', "") + '"' for t in terms if t.replace('"', "")]
    return " OR ".join(quoted) if quoted else None
