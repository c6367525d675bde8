"""Commitments in a day's speech: who said they would do what.

Two passes, so that a day of small talk costs no LLM call at all:

1. `candidates` reads every line with a few grammatical cues of a speaker binding themselves:
   a first-person future ("I'll", "we will", "I'm going to"), an offer ("I can send", "let me
   check", "happy to"), a promise ("I promise", "leave it with me", "will do"), a first-person
   line with a deadline ("by Friday", "tomorrow"), or an acceptance ("Sure.", "No problem.")
   of a request just made by someone else ("Could you book the room?"). It drops what grammar
   alone rules out: questions, negated forms ("I won't", "we're not going to") and past or
   conditional forms, which carry none of the cues ("I sent", "I would if I had time").
2. `LLMJudge` shows the candidates to the LLM in small batches (one call each, a JSON reply
   held to a schema) and keeps those it reads as the speaker committing to an action, with
   that action as a short phrase. The cues cannot tell "I'll send the slides" from "I'll be
   exhausted" or "we'll see"; the model can.

The model never decides who or when. Who is the speaker of the line (commitments are made in
the first person); the deadline is read from the words said (`deadline`), and an action phrase
holding a word nobody said (or copying the line whole) is replaced by the line's own words
after its cue (`grounded`), so nothing in a commitment is invented.

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
from typing import Any, Protocol

from ..llm import LLM
from ..records import Utterance
from .deadlines import SAID_DEADLINE
from .question import STOP_WORDS

# --- the cheap detector ------------------------------------------------------------------------


def _any(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


# A negation or "never" right after the cue turns a promise into its opposite.
_NOT = r"(?!\s*(?:not|never|n't)\b)"
_I = r"\b(?:i|we)"
# Words that may sit between the subject and its verb without changing what is promised.
_ADVERB = r"(?:\s+(?:really|definitely|certainly|surely|just|also|still|actually|gladly|happily|both|all))?"
_PROMISE = re.compile(
    _any(
        _I + r"(?:'ll|\s+will|\s+shall)" + _ADVERB + _NOT,  # I'll send, we will book
        _I + r"(?:'m|'re|\s+am|\s+are)" + _ADVERB + r"\s+(?:going\s+to|gonna)\b",  # I'm going to write
        _I + _ADVERB + r"\s+can\b(?!'t|not)",  # I can send you the tickets
        _I + _ADVERB + r"\s+(?:promise|guarantee|commit)\b",
        _I + r"(?:'m|'re|\s+am|\s+are|'d\s+be|\s+would\s+be)\s+(?:happy|glad)\s+to\b",
        # Not "let me know" (a request) nor "let me guess/think/see" (thinking aloud).
        r"\blet\s+(?:me|us)\s+(?!know\b|guess\b|think\b|see\b)",
        r"\bleave\s+it\s+(?:to|with)\s+(?:me|us)\b",
        r"\bconsider\s+it\s+done\b",
        r"\bcount\s+(?:me|us)\s+in\b",
        r"\b(?:i'm|i\s+am|we're|we\s+are)\s+on\s+it\b",
        r"\bwill\s+do\b",
    ),
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i'll|me|my|we|we're|we'll|us|our)\b", re.IGNORECASE)
# A line that opens by saying yes; it commits to something only as the answer to a request.
_ACCEPTS = re.compile(
    r"^\W*(?:sure|of\s+course|ok(?:ay)?|yes|yeah|yep|absolutely|no\s+problem|definitely|certainly|fine|"
    r"happy\s+to|with\s+pleasure|will\s+do|on\s+it|consider\s+it\s+done)\b",
    re.IGNORECASE,
)
# "Would you mind" before "would you": what is asked follows "mind".
_REQUEST = re.compile(
    r"\b(?:would|do)\s+you\s+mind\b|\b(?:can|could|would|will)\s+(?:you|someone|somebody|one\s+of\s+you)\b|\bplease\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Candidate:
    """A line the detector picked, with the request it may answer (said just before it, by someone else)."""

    utterance: Utterance
    request: Utterance | None
    # The words after the cue in the line, up to the end of its sentence: the action when the
    # LLM's phrase cannot be trusted.
    rest: str


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


def _cue(text: str) -> str | None:
    """The words after a cue of a commitment in `text` (a statement, not a question); None when
    it has none. Of several cues, the last one followed by words that mean something: in "Leave it
    with me, I'll call the plumber", what is promised follows "I'll"."""
    for sentence in _sentences(text):
        if _is_question(sentence):
            continue
        after = [_action(sentence[found.end() :]) for found in _PROMISE.finditer(sentence)]
        if after:
            return next((words for words in reversed(after) if _words(words)), after[0])
        if (
            _FIRST_PERSON.search(sentence)
            and SAID_DEADLINE.search(sentence)
            and not re.search(r"n't\b|\bnot\b", sentence)
        ):
            # "I'm dropping the keys off tomorrow": the action follows its subject.
            return _action(re.sub(r"^.*?\b(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+", "", sentence, count=1, flags=re.I))
    return None


def _action(words: str) -> str:
    """The words after a cue as an action: "to pack light" -> "pack light"."""
    words = words.strip(" ,.!;:")
    return re.sub(r"^to\s+", "", words, flags=re.IGNORECASE)


def _request_before(utterances: Sequence[Utterance], i: int) -> Utterance | None:
    """The line just before line `i`, when someone else said it and it asks for something."""
    if i == 0:
        return None
    before = utterances[i - 1]
    if before.speaker == utterances[i].speaker or not _REQUEST.search(before.text):
        return None
    return before


def candidates(utterances: Sequence[Utterance]) -> list[Candidate]:
    """The lines of a conversation (in time order) that may make a commitment: the cheap pass.

    A line that answers a request ("Sure.", "I'll do it") carries the request with it."""
    out = []
    for i, u in enumerate(utterances):
        request = _request_before(utterances, i)
        rest = _cue(u.text)
        accepts = _ACCEPTS.search(u.text) is not None
        if rest is None and not (request is not None and accepts):
            continue
        rest = rest or ""  # "Sure." alone: the action is the request's
        answers = accepts or not _words(SAID_DEADLINE.sub("", rest))
        out.append(Candidate(u, request if answers else None, rest))
    return out


def deadline(c: Candidate) -> str | None:
    """The deadline in the words said ("by Thursday"): the line's own, else the request's."""
    own = [s for s in _sentences(c.utterance.text) if not _is_question(s)]
    asked = _sentences(c.request.text) if c.request is not None else []
    for sentence in own + asked:
        found = SAID_DEADLINE.search(sentence)
        if found is not None:
            return found.group(0)
    return None


# --- the LLM's confirmation --------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What the judge made of one candidate: a commitment or not, and the action it commits to."""

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

INSTRUCTIONS = (
    "For each numbered line, say what kind of line it is:\n"
    + "\n".join(f"- {kind}: {meaning}" for kind, meaning in KINDS.items())
    + "\nFor a promise, an offer or an agreement, 'what' is the action the speaker will do, a verb and "
    "its object, in words from the line (or from the request it agrees to); otherwise 'what' is empty."
)

# Small enough that a reply (about 25 tokens a line) and its prompt stay short on a CPU.
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
                    "what": {"type": "string"},
                },
                "required": ["line", "kind", "what"],
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


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP_WORDS and len(w) > 2}


def grounded(what: str, c: Candidate) -> str:
    """The action as the model phrased it, when every word of it that carries meaning was said
    (in the line, or in the request it answers) and it is more than a verb; else the line's own
    words after its cue. An action with nothing but a pronoun for its object ("do it") is the
    request's. Without its deadline, which `deadline` reads from the words said."""
    due = deadline(c)

    def undated(words: str) -> str:
        words = " ".join(words.split()).strip(" ,.!?")
        if due and words.lower().endswith(due.lower()):
            words = words[: -len(due)].rstrip(" ,")
        return words

    said = c.utterance.text + " " + (c.request.text if c.request else "")
    what, meant = undated(what), _stems(what)
    # A copy of the line ("I'll send it") is not an action; nor is a bare verb ("send").
    copied = any(cue.search(what) for cue in (_PROMISE, _REQUEST)) or _FIRST_PERSON.match(what) is not None
    if copied or len(what.split()) < 2 or not meant or not meant <= _stems(said):
        what = undated(c.rest)
    if not _words(what) and c.request is not None:
        what = undated(_asked(c.request))
    return _third_person(what or c.utterance.text)


# The speaker's own things, told of them: "pack my suitcase" -> "pack their suitcase". Not "me"
# or "us", which may be the listener's too ("drive us to the airport").
_THIRD_PERSON = {"my": "their", "mine": "theirs", "myself": "themselves", "our": "their", "ours": "theirs"}


def _third_person(what: str) -> str:
    return re.sub(r"\b(?:my|mine|myself|our|ours)\b", lambda m: _THIRD_PERSON[m[0].lower()], what, flags=re.I)


def _stems(text: str) -> set[str]:
    # Crude, but enough to see that "picking up" was said as "pick up".
    return {re.sub(r"(?:ing|ed|es|s)$", "", w) for w in _words(text)}


def _asked(request: Utterance) -> str:
    """What a request asks for: "Could you also book the room?" -> "book the room", "Would you
    mind picking up the chairs?" -> "pick up the chairs"."""
    for sentence in _sentences(request.text):
        found = _REQUEST.search(sentence)
        if found is not None:
            rest = re.sub(r"^\W*(?:please|also|just|maybe)\s+", "", sentence[found.end() :].strip(), flags=re.I)
            return _infinitive(rest.strip(" ,.!?"))
    return request.text.strip(" ,.!?")


def _infinitive(phrase: str) -> str:
    """The phrase with a leading -ing verb in its plain form. Crude spelling rules, right for the
    common verbs: picking -> pick, getting -> get, taking -> take, calling -> call."""
    first, _, rest = phrase.partition(" ")
    if len(first) < 5 or not first.lower().endswith("ing"):
        return phrase
    stem = first[:-3]
    if stem[-1] == stem[-2] and stem[-1].lower() not in "lsz":
        stem = stem[:-1]  # a consonant doubled before -ing
    elif re.fullmatch(r"[^aeiou]*[aeiou][^aeiouwxy]", stem, flags=re.IGNORECASE):
        stem += "e"  # an e dropped before -ing
    return f"{stem} {rest}".strip()


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
            verdicts[number - 1] = Verdict(True, grounded(str(entry.get("what") or ""), batch[number - 1]))
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
