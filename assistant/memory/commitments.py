"""Commitments in a day's speech: who said they would do what, and by when.

A commitment is an act the speaker binds themselves to doing: a future ("I'll send", "I'm
going to bake"), an offer ("I can drive", "let me book"), a plan told with the time it happens
("I'm taking Ella to the dentist next Monday"), or a yes to a request just made by someone else
("Can you pick her up tomorrow?" "Sure."). Two passes, so that a day of small talk costs no LLM
call at all:

1. `candidates` reads every line with spaCy's parse (the packaged en_core_web_sm). The act is a
   verb in its plain form (tag VB, or VBG for a planned "I'm taking") whose subject is the
   speaker ("I", "we") and which a modal of the future or of an offer ("will", "shall", "can"),
   "going to", or "let me" governs; a plan in the progressive needs a time that lies ahead
   of the moment it was said (read with the project's date resolver). What the grammar rules
   out never reaches the model: past and perfect forms (VBD, VBN: "I ordered", "I have booked"),
   negations, questions, conditionals, "would", what another person will do, and a state
   ("I'll be exhausted").
2. `LLMJudge` shows the candidates to the LLM in small batches (one call each, a JSON reply held
   to a schema) and keeps those it reads as the speaker committing to an action. The grammar
   cannot tell "I'll fix the tap" from "we'll see"; the model can.

Everything the digest says of a commitment comes from the words said, never from the model:
who is the line's speaker; the action is the act's verb in its plain form and the words it
governs in the line (or in the request a yes answers), with "my" told as "their" and a
requester's "me" as the requester's name, so "<who> will <action>" reads as a sentence; the
deadline is the time words said for it ("by Thursday") and the day they name.

The model's replies are kept by the exact prompt (`VerdictCache`): at temperature 0 the same
lines give the same reply, and a line that was corrected, reassigned or forgotten changes the
prompt, so a stale verdict is never reused.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any, Protocol

from ..entities import grammar
from ..llm import LLM
from ..records import Utterance
from .dates import find_expressions
from .deadlines import SAID_DEADLINE, due_date

# --- the grammar of a commitment -----------------------------------------------------------------


_SPEAKER = {"i", "we"}
# Modals that bind the speaker to an act: a future, or an offer ("I can drive you"). Not
# "would", "could", "should", "might": a wish, a condition or advice.
_BINDING = {"will", "'ll", "shall", "can"}
# Verbs whose saying in the first person binds the speaker to what follows: "I promise to pack
# light", "we plan to move in May" (commissive speech acts); and the adjectives of an offer, "I'm
# happy to drive".
_COMMISSIVE = {"promise", "plan", "intend", "agree", "offer", "swear", "vow", "guarantee"}
_WILLING = {"happy", "glad", "willing"}
# "let me know" asks the listener; "let me think/see/guess" thinks aloud.
_NOT_AN_OFFER = {"know", "think", "see", "guess", "check"}
# Words that tie a clause to the talk around it, not part of the act ("Let me book it then").
_CONNECTIVES = {"then", "too", "also", "anyway", "though", "instead", "so"}
# A line that opens by saying yes; it commits to something only as the answer to a request.
_ACCEPTS = re.compile(
    r"^\W*(?:sure|of\s+course|ok(?:ay)?|yes|yeah|yep|absolutely|no\s+problem|definitely|certainly|fine|"
    r"happy\s+to|with\s+pleasure|will\s+do|on\s+it|consider\s+it\s+done|leave\s+it\s+(?:to|with)\s+me)\b",
    re.IGNORECASE,
)
# "Would you mind" before "would you": what is asked follows "mind".
_REQUEST = re.compile(
    r"\b(?:would|do)\s+you\s+mind\b|\b(?:can|could|would|will)\s+(?:you|someone|somebody|one\s+of\s+you)\b|\bplease\b",
    re.IGNORECASE,
)
# The speaker's own things, told of them: "pack my suitcase" -> "pack their suitcase". Not "me"
# or "us", which may be the listener's too ("drive us to the airport").
_THIRD_PERSON = {"my": "their", "mine": "theirs", "myself": "themselves", "our": "their", "ours": "theirs"}


@dataclass(frozen=True)
class Candidate:
    """A line whose grammar makes a commitment, with the request it answers (said just before
    it, by someone else), the action in the words said and the time words said for it."""

    utterance: Utterance
    request: Utterance | None
    what: str
    due: str | None


def _negated(token: Any) -> bool:
    return any(c.dep_ == "neg" or c.lower_ in {"never", "not", "n't"} for c in token.children)


def _subject(token: Any) -> Any | None:
    return next((c for c in token.children if c.dep_ in ("nsubj", "nsubjpass", "expl")), None)


def _conditional(token: Any) -> bool:
    """The act sits in an "if" or "unless" clause: nothing is promised."""
    return any(c.dep_ == "mark" and c.lower_ in {"if", "unless"} for c in token.children)


def _ahead(words: str, said_at: float, zone: tzinfo) -> bool:
    """The time `words` name lies ahead of the moment they were said: "tomorrow", "on Friday",
    "this afternoon" said in the morning; not "this morning" nor "yesterday"."""
    found = find_expressions(words, said_at, zone)
    if found:
        return found[0].since > said_at
    day = due_date(words, said_at, zone)
    return day is not None and day > datetime.fromtimestamp(said_at, zone).date().isoformat()


def _time_words(token: Any) -> tuple[str | None, tuple[int, int] | None]:
    """The deadline said within the act's phrase ("by Thursday", "on Friday", "tomorrow"), with its
    character span in the line."""
    start, end = _phrase_span(token)
    text = token.doc.text
    found = SAID_DEADLINE.search(text, start, end)
    if found is None:
        return None, None
    return found.group(0), (found.start(), found.end())


def _said_time(doc: Any) -> tuple[str | None, tuple[int, int] | None]:
    """The first deadline said in a line's statements: the time a bare yes ("Sure, by Monday")
    gives to what was asked."""
    for sentence in doc.sents:
        if not sentence.text.rstrip().endswith("?"):
            found = SAID_DEADLINE.search(doc.text, sentence.start_char, sentence.end_char)
            if found is not None:
                return found.group(0), (found.start(), found.end())
    return None, None


def _phrase_span(token: Any) -> tuple[int, int]:
    """Characters of the act's phrase: the verb and what it governs to its right, short of
    another clause with a subject of its own ("..., she had a great day")."""
    last = token
    for t in token.subtree:
        if t.i < token.i:
            continue
        if t.i > last.i and not _in_other_clause(t, token):
            last = t
    return token.idx, last.idx + len(last.text)


def _in_other_clause(t: Any, act: Any) -> bool:
    head = t
    while head.i != act.i:
        if head.dep_ in ("conj", "parataxis", "advcl", "ccomp", "relcl") and _subject(head) is not None:
            return True
        head = head.head
    return False


def _act(sentence: Any, said_at: float, zone: tzinfo) -> Any | None:
    """The verb of the act the speaker binds themselves to in `sentence`, None when there is none."""
    if sentence.text.rstrip().endswith("?"):
        return None
    for t in sentence:
        if t.pos_ not in ("VERB", "AUX") or _negated(t) or _conditional(t):
            continue
        subject = _subject(t)
        modals = {c.lower_ for c in t.children if c.dep_ == "aux" and c.tag_ == "MD"}
        # "I'll send", "we can drive": a plain verb under a binding modal, the speaker its subject.
        if t.tag_ == "VB" and subject is not None and subject.lower_ in _SPEAKER:
            if modals & _BINDING and not modals - _BINDING:
                return t if t.lemma_ != "be" else None
        # "I'm going to bake", "I promise to pack light", "I'm happy to drive": the act is the
        # plain verb ("to" + VB) that the present-tense frame governs.
        if subject is not None and subject.lower_ in _SPEAKER and not modals:
            frame = (t.lemma_ == "go" and t.tag_ == "VBG") or (t.lemma_ in _COMMISSIVE and t.tag_ == "VBP")
            willing = next((c for c in t.children if c.dep_ == "acomp" and c.lemma_ in _WILLING), None)
            governs = willing if willing is not None and t.lemma_ == "be" else t if frame else None
            if governs is not None:
                to_do = next((c for c in governs.children if c.dep_ == "xcomp" and c.tag_ == "VB"), None)
                if to_do is not None and not _negated(to_do):
                    return to_do if to_do.lemma_ != "be" else None
        # "let me book the room": an offer, unless it asks ("let me know") or thinks aloud.
        if t.lemma_ == "let" and t.tag_ == "VB" and subject is None:
            for c in t.children:
                if c.dep_ in ("ccomp", "xcomp") and c.tag_ == "VB" and c.lemma_ not in _NOT_AN_OFFER:
                    them = _subject(c) or next((d for d in t.children if d.dep_ in ("dobj", "nsubj")), None)
                    if them is not None and them.lower_ in {"me", "us"}:
                        return c
        # "I'm taking Ella to the dentist next Monday": a plan, when the time it names is ahead.
        if t.tag_ == "VBG" and subject is not None and subject.lower_ in _SPEAKER:
            if any(c.dep_ == "aux" and c.lemma_ == "be" for c in t.children):
                words, _ = _time_words(t)
                if words is not None and _ahead(words, said_at, zone):
                    return t
    return None


def _action(act: Any, due_span: tuple[int, int] | None) -> str:
    """The act in the words said, from its verb in plain form: "taking Ella to the dentist next
    Monday" -> "take Ella to the dentist" (its time words are the deadline, told apart)."""
    _, end = _phrase_span(act)
    kept = []
    for t in act.doc[act.i + 1 :]:
        if t.idx >= end:
            break
        if due_span is not None and due_span[0] <= t.idx < due_span[1]:
            continue
        if t.dep_ == "advmod" and t.lower_ in _CONNECTIVES and not list(t.children):
            continue
        kept.append(t.text_with_ws)
    verb = act.text if act.tag_ == "VB" else act.lemma_
    words = " ".join((verb + " " + "".join(kept)).split())
    return re.sub(r"(?:[\s,;:.!?-]|\b(?:and|but|or)\b)+$", "", words)


def _told_of(words: str, speaker: str, requester: str | None) -> str:
    """Minimally re-personed: the speaker's "my" is "their"; in a request's words, the
    requester's "me" and "my" are the requester's ("send it to me" -> "send it to Leo") and the
    "your" asked of the one who says yes is theirs ("on your way home" -> "on their way home")."""
    if requester is not None:
        words = re.sub(r"\bme\b", requester, words, flags=re.IGNORECASE)
        words = re.sub(r"\bmy\b", requester + "'s", words, flags=re.IGNORECASE)
        words = re.sub(r"\byour(self)?\b", lambda m: "themselves" if m[1] else "their", words, flags=re.I)
    return re.sub(r"\b(?:my|mine|myself|our|ours)\b", lambda m: _THIRD_PERSON[m[0].lower()], words, flags=re.I)


def _asked(doc: Any) -> Any | None:
    """The act a request asks of the listener: "Can you pick up Ella?" -> pick, "Would you mind
    picking up the chairs?" -> picking."""
    for t in doc:
        subject = _subject(t)
        if t.pos_ in ("VERB", "AUX") and subject is not None and subject.lower_ in {"you", "someone", "somebody"}:
            if t.lemma_ == "mind":
                return next((c for c in t.children if c.dep_ in ("xcomp", "ccomp")), None)
            return t
    # "please call the school": an imperative
    return next((t for t in doc if t.dep_ == "ROOT" and t.tag_ == "VB"), None)


def _request_before(utterances: Sequence[Utterance], i: int) -> Utterance | None:
    """The line just before line `i`, when someone else said it and it asks for something."""
    if i == 0:
        return None
    before = utterances[i - 1]
    if before.speaker == utterances[i].speaker or not _REQUEST.search(before.text):
        return None
    return before


def _says_little(act: Any) -> bool:
    """An act that names nothing of its own ("I'll do it", "I'll send it by noon"): its object,
    if any, is a pronoun and the rest is its time, so what it does is what was asked."""
    if act.lemma_ == "do":
        return True
    _, span = _time_words(act)
    objects = [
        c
        for c in act.children
        if c.dep_ in ("dobj", "prep", "prt", "xcomp", "ccomp", "dative", "npadvmod")
        and not (span is not None and span[0] <= c.idx < span[1])
    ]
    return bool(objects) and all(c.dep_ == "dobj" and c.pos_ == "PRON" for c in objects)


def candidates(utterances: Sequence[Utterance], zone: tzinfo = UTC, nlp: Any | None = None) -> list[Candidate]:
    """The lines of a conversation (in time order) that make a commitment by their grammar.

    A yes to a request ("Sure.") or an act that names nothing of its own ("I'll do it") takes its
    action from the request, and its time words too when it says none."""
    if not utterances:
        return []
    docs = list((nlp or grammar()).pipe(u.text for u in utterances))
    out = []
    for i, (u, doc) in enumerate(zip(utterances, docs, strict=True)):
        request = _request_before(utterances, i)
        act = next((a for s in doc.sents if (a := _act(s, u.time, zone)) is not None), None)
        accepts = request is not None and _ACCEPTS.search(u.text) is not None
        if act is not None and not (request is not None and _says_little(act)):
            due, span = _time_words(act)
            out.append(Candidate(u, None, _told_of(_action(act, span), u.speaker, None), due))
        elif request is not None and (accepts or act is not None):
            asked = _asked(docs[i - 1])
            if asked is None:
                continue
            due, span = _time_words(act) if act is not None else _said_time(doc)
            if due is None:
                due, span = _time_words(asked)
                what = _action(asked, span)
            else:
                what = _action(asked, _time_words(asked)[1])
            out.append(Candidate(u, request, _told_of(what, u.speaker, request.speaker), due))
    return out


def deadline(c: Candidate) -> str | None:
    """The deadline in the words said ("by Thursday"): the line's own, else the request's."""
    return c.due


# --- the LLM's confirmation --------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What the judge made of one candidate: a commitment or not, and the action it commits to
    (the candidate's, in the words said: the model only tells which candidates commit)."""

    commitment: bool
    what: str = ""


class Judge(Protocol):
    def __call__(self, batch: Sequence[Candidate]) -> list[Verdict]:
        """One verdict per candidate, in order."""
        ...


SYSTEM = "You read lines of a conversation and find the commitments in them. Reply in JSON."

# What a line may be. Asking the model to name what a line is, rather than only whether it is a
# commitment, makes it weigh the near misses (a prediction, a state, someone else's plan) that
# the detector's cues let through.
KINDS = {
    "promise": "the speaker says they will do something",
    "offer": "the speaker offers to do something for someone",
    "agreement": "the speaker agrees to do what was asked",
    "question": "a question",
    "done": "something already done",
    "refusal": "something they will not or cannot do",
    "wish": "a wish, or an 'if' that did not happen",
    "ability": "something they are able to do, see or understand, not offered to anyone",
    "prediction": "a guess about what will happen",
    "state": "how they will feel, or where they will be",
    "someone else": "what another person will do",
    "other": "anything else",
}
COMMITTING = frozenset({"promise", "offer", "agreement"})

INSTRUCTIONS = "For each numbered line, say what kind of line it is:\n" + "\n".join(
    f"- {kind}: {meaning}" for kind, meaning in KINDS.items()
)

# Small enough that a reply (about 15 tokens a line) and its prompt stay short on a CPU.
BATCH = 6

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "line": {"type": "integer"},
                    "kind": {"type": "string", "enum": list(KINDS)},
                },
                "required": ["line", "kind"],
            },
        }
    },
    "required": ["lines"],
}


def _shown(c: Candidate, number: int) -> str:
    line = f'{number}. {c.utterance.speaker} said: "{c.utterance.text}"'
    if c.request is not None:
        line += f' (answering {c.request.speaker}: "{c.request.text}")'
    return line


def prompt(batch: Sequence[Candidate]) -> list[dict[str, str]]:
    lines = "\n".join(_shown(c, n) for n, c in enumerate(batch, start=1))
    user = f"{INSTRUCTIONS}\n\nLines:\n{lines}\n\nAnswer with one entry per line."
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def read_reply(reply: str, batch: Sequence[Candidate]) -> list[Verdict]:
    """The model's JSON as one verdict per candidate; a line it left out or numbered wrongly is no
    commitment (a missed one costs less than an invented one)."""
    verdicts = [Verdict(False)] * len(batch)
    try:
        entries = json.loads(reply).get("lines", [])
    except (ValueError, AttributeError):
        return verdicts
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        number = entry.get("line")
        if isinstance(number, int) and 1 <= number <= len(batch) and entry.get("kind") in COMMITTING:
            verdicts[number - 1] = Verdict(True, batch[number - 1].what)
    return verdicts


class VerdictCache:
    """The model's replies by the exact prompt they answered, the most recent few hundred."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._replies: OrderedDict[str, str] = OrderedDict()

    def get(self, key: str) -> str | None:
        reply = self._replies.get(key)
        if reply is not None:
            self._replies.move_to_end(key)
        return reply

    def put(self, key: str, reply: str) -> None:
        self._replies[key] = reply
        self._replies.move_to_end(key)
        while len(self._replies) > self._size:
            self._replies.popitem(last=False)


class LLMJudge:
    """The LLM confirms candidates in batches of `BATCH`, one call each; replies are cached by prompt.

    `load` gives the model when a batch is not in the cache: a day already judged loads nothing.
    """

    def __init__(
        self, model: str, load: Callable[[], LLM], cache: VerdictCache | None = None, *, max_tokens: int = 400
    ) -> None:
        self.model = model
        self.load = load
        self.cache = cache if cache is not None else VerdictCache()
        self.max_tokens = max_tokens

    def __call__(self, batch: Sequence[Candidate]) -> list[Verdict]:
        out: list[Verdict] = []
        for start in range(0, len(batch), BATCH):
            part = batch[start : start + BATCH]
            messages = prompt(part)
            key = hashlib.sha256(json.dumps([self.model, messages]).encode()).hexdigest()
            reply = self.cache.get(key)
            if reply is None:
                reply = self.load().chat(messages, max_tokens=self.max_tokens, schema=SCHEMA)
                self.cache.put(key, reply)
            out += read_reply(reply, part)
        return out
