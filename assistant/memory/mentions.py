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

from ..sentences import sentences
from .words import without_accents

# What may stand before a name that addresses someone: nothing, a comma or a sentence's end, or a
# single word opening the line or a sentence ("Hey Sofia!").
_ADDRESS_BEFORE = re.compile(r"(?:^|[,.!?;:]\s*|(?:^|[.!?]\s+)\W*[^\W\d_]+\s+)$")
_ADDRESS_AFTER = frozenset(",.!?")


def speaks_of(text: str, name: str) -> bool:
    """Whether `text` names `name` other than to address them."""
    plain = without_accents(text)
    for found in re.finditer(r"(?<!\w)" + re.escape(without_accents(name)) + r"(?!\w)", plain, re.IGNORECASE):
        after = plain[found.end() : found.end() + 1]
        addressed = (after == "" or after in _ADDRESS_AFTER) and _ADDRESS_BEFORE.search(plain[: found.start()])
        if not addressed:
            return True
    return False


def said_and_asked(text: str) -> tuple[str, str]:
    """A line's sentences that state, and those that ask ("Wow! What got you into running?" ->
    "Wow!", "What got you into running?")."""
    said = sentences(text)
    return (
        " ".join(s for s in said if not s.rstrip().endswith("?")),
        " ".join(s for s in said if s.rstrip().endswith("?")),
    )
