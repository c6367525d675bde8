"""Whether a line speaks of a person, or only to them.

A question about someone ("what did Sofia pick for the basement?") is answered by what they said
and by what others said of them ("Sofia picked the pine boards"). A name that only addresses the
listener ("Thanks, Sofia!", "Hey Sofia, can you help?", "That's great, Sofia.") says nothing of
them: in a conversation between two people, nearly half the lines name the other one, almost all
only to address them (185 of 419 lines in one development conversation, 183 of them so), so
counting those would rank a person's whole conversation as being about them.

A name addresses its listener when it stands apart from the sentence around it: a comma or the
end of a sentence after it, and before it the start of the sentence, a comma, or one word that
opens the sentence ("Hey", "Thanks"). Accents are compared as the lexical index compares them
("Zoe" names "Zoë").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ..records import Utterance
from ..sentences import sentences
from .words import without_accents

# What may stand before a name that addresses someone: nothing, a comma or a sentence's end, or a
# single word opening the line or a sentence ("Hey Sofia!").
_ADDRESS_BEFORE = re.compile(r"(?:^|[,.!?;:]\s*|(?:^|[.!?]\s+)\W*[^\W\d_]+\s+)$")
_ADDRESS_AFTER = frozenset(",.!?")


def speaks_of(text: str, name: str) -> bool:
    """Whether `text` names `name` other than to address them."""
    plain = _plain(text)
    for found in re.finditer(r"(?<!\w)" + re.escape(_plain(name)) + r"(?!\w)", plain, re.IGNORECASE):
        after = plain[found.end() : found.end() + 1]
        addressed = (after == "" or after in _ADDRESS_AFTER) and _ADDRESS_BEFORE.search(plain[: found.start()])
        if not addressed:
            return True
    return False


# Cached: recall reads the same turns against the same few dozen names for every question, and
# `talked_of` reads each turn of a talk again for every turn after it.
@lru_cache(maxsize=8192)
def _plain(text: str) -> str:
    return without_accents(text)


@lru_cache(maxsize=8192)
def _folded(text: str) -> str:
    return _plain(text).casefold()


def spoken_of(text: str, people: Iterable[str]) -> frozenset[str]:
    """Which of `people` (the speakers the memory knows) `text` speaks of, not only to."""
    return _spoken_of(text, tuple(people))


@lru_cache(maxsize=8192)
def _spoken_of(text: str, people: tuple[str, ...]) -> frozenset[str]:
    plain = _folded(text)
    return frozenset(p for p in people if _folded(p) in plain and speaks_of(text, p))


def talked_of(
    line: Utterance, before: Sequence[Utterance], people: Iterable[str], turns: int, conversation_gap: float | None
) -> frozenset[str]:
    """Who a line is about: the known people it speaks of, or where it names none, those the talk
    just before it spoke of. A conversation goes on about someone without naming them again
    ("Honestly, Esther's new place is at 96 Chestnut Lane." "Also, we lost the first flat, the new
    one is 177 Orchard Street."): the nearest of the `turns` turns `before` it (nearest first)
    that speaks of anyone says whom, within one conversation (no silence longer than
    `conversation_gap` seconds; none or 0: any). No one where no such turn names anyone."""
    people = list(people)
    own = spoken_of(line.text, people)
    if own:
        return own
    later = line.time
    for u in before[:turns]:
        if conversation_gap and later - u.time > conversation_gap:
            break
        named = spoken_of(u.text, people)
        if named:
            return named
        later = u.time
    return frozenset()


# A sentence is said to the listener, not of the speaker, where it speaks in the second person and
# not in the first ("Thank goodness your son's okay", against "I'm proud of you").
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves|ya)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves)\b", re.IGNORECASE)


def own_and_addressed(text: str) -> tuple[str, str]:
    """A line's sentences of its speaker's own, and those addressed to its listener: what it asks
    them and what it says of them ("Wow! What got you into running?" -> "Wow!", "What got you
    into running?"; "Oh no. Your wrist must be sore." -> "Oh no.", "Your wrist must be sore.")."""
    said = sentences(text)
    addressed = [s.rstrip().endswith("?") or _to_listener(s) for s in said]
    return (
        " ".join(s for s, a in zip(said, addressed, strict=True) if not a),
        " ".join(s for s, a in zip(said, addressed, strict=True) if a),
    )


def _to_listener(sentence: str) -> bool:
    return bool(_SECOND_PERSON.search(sentence)) and not _FIRST_PERSON.search(sentence)
