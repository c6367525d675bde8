"""Names a voice gives itself ("I'm Sam", "this is Priya"): offered to the user, never applied.

A voice the chain labelled "Speaker 3" that says "Hi, this is Sam" is probably Sam. The memory
offers that name (`assistant speakers`, the TUI's speakers pane) and the user accepts it or not:
a wrong name spreads to every line the voice said, so nothing is renamed without them.

Only the forms in which a speaker names themselves count:

- "my name is Sam", "I'm Sam", "I am Sam";
- "this is Sam", "Sam here", "Sam speaking", opening the line (after a greeting at most):
  "Dara, this is Sam" introduces Sam to Dara, and is someone else's name.

A name said to someone ("Morning, Priya", "Thanks, Sam") is theirs, not the speaker's, and none of
these forms takes it. The name is one or two capitalised words, as Whisper writes names; a
possessive ("I'm Sam's brother") or a word that often follows "I'm" capitalised ("I'm English")
is not one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..records import Evidence, NameSuggestion, Speaker, Utterance
from .speakers import MAX_NAME_CHARS

# A greeting may open the line, to the room at most ("Hi everyone, this is Sam"); "Everyone, this
# is Priya" introduces someone to the room.
_GREETING = (
    r"(?:(?:hi|hello|hey|(?:good\s+)?(?:morning|afternoon|evening)|yes|yeah|so|ok|okay|oh|right)"
    r"(?:\s+(?:everyone|everybody|all|there|folks|guys))?[,.!]?\s+)*"
)
_WORD = r"[^\W\d_][\w'\u2019-]*"
_NAME = rf"(?P<name>{_WORD}(?:\s+{_WORD})?)"
_FORMS = (
    re.compile(rf"\bmy name is\s+{_NAME}", re.IGNORECASE),
    re.compile(rf"\bI(?:'m|\u2019m|\s+am)\s+{_NAME}", re.IGNORECASE),
    re.compile(rf"^\s*{_GREETING}this is\s+{_NAME}", re.IGNORECASE),
    re.compile(rf"^\s*{_GREETING}{_NAME}\s+(?:here|speaking)\b", re.IGNORECASE),
)
# Capitalised words that follow these forms without being a name: "I'm English", "I am Catholic",
# "this is Monday", "I'm OK". Not every such word (a user can always say no), the common ones.
_NOT_NAMES = frozenset(
    """
    i i'm im ok okay sorry fine good great here back home done ready sure not just so also still
    really very totally afraid glad happy english british irish scottish welsh american canadian
    australian french german spanish italian portuguese dutch polish swedish danish norwegian
    finnish greek turkish russian ukrainian chinese japanese korean indian catholic christian
    jewish muslim hindu vegan vegetarian monday tuesday wednesday thursday friday saturday sunday
    speaker everyone everybody nobody somebody someone hello hi hey the a an this that it
    """.split()
)
# What a line must hold to be read at all: the store looks these up (case aside) before any
# pattern runs, so a long archive is not read line by line.
FRAGMENTS = ("name is", "i'm", "i\u2019m", "i am", "this is", "here", "speaking")


def introduced_names(text: str) -> list[str]:
    """The names `text` says its speaker has, in the order said, each once."""
    found: list[str] = []
    for form in _FORMS:
        for m in form.finditer(text):
            name = _name(text, m)
            if name and name not in found:
                found.append(name)
    return found


def _name(text: str, m: re.Match[str]) -> str | None:
    words = m.group("name").split()
    # Only capitalised words are the name: "I'm Sam and" keeps "Sam", "I'm Sam Okafor" both words.
    kept: list[str] = []
    for w in words:
        if not w[0].isupper():
            break
        kept.append(w)
    if not kept or kept[0].casefold().strip("'\u2019") in _NOT_NAMES:
        return None
    name = " ".join(kept)
    after = text[m.start("name") + len(name) :]
    if re.match(r"['\u2019]s\b", after) or name.endswith(("'s", "\u2019s")):
        return None  # "I'm Sam's brother": someone else's name
    return name[:MAX_NAME_CHARS].rstrip("'\u2019-")


@dataclass
class _Tally:
    times: int
    first: Utterance


def name_suggestions(voices: Sequence[Speaker], lines: Iterable[Utterance]) -> list[NameSuggestion]:
    """For each voice in `voices`, the names its own `lines` introduce it by (most said first),
    leaving out the name it already has."""
    by_name = {sp.name: sp for sp in voices}
    tallies: dict[tuple[str, str], _Tally] = {}
    for u in lines:
        sp = by_name.get(u.speaker)
        if sp is None:
            continue
        for name in introduced_names(u.text):
            if name == sp.name:
                continue
            tally = tallies.setdefault((sp.name, name), _Tally(0, u))
            tally.times += 1
    ranked = sorted(tallies.items(), key=lambda kv: (-kv[1].times, by_name[kv[0][0]].id, kv[0][1]))
    return [
        NameSuggestion(speaker=by_name[voice], name=name, times=t.times, example=Evidence.of(t.first))
        for (voice, name), t in ranked
    ]
