"""The speaker sets of the voice matrix, and what each says: consecutive spoken lines of the
LoCoMo file, a different stretch per set, given out to its voices by the set's turn pattern."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .locomo import read_conversations
from .speech_metrics import normalise
from .speech_scripts import spoken_text
from .synth_conversation import Line, Voice

LABELS = ("A", "B", "C", "D")
# Short replies a listener gives while the other talks; Whisper and the voice encoder both get
# little to work with, which is the point of the back-channel set.
BACKCHANNEL = ("Yeah.", "Right.", "Okay, sure.", "Oh wow.", "Mm-hm, I see.", "Really?", "Totally.", "Nice.")


@dataclass(frozen=True)
class SpeakerSet:
    """Voices and how they take turns.

    `pattern`: "alternate" (A, B, A, B), "guest" (A and B alternate, every fifth turn a third
    voice), "round" (each turn a different voice than the last, drawn at random), "backchannel"
    (alternate, and every other turn of B a short reply), "monologue" (A speaks six lines in a
    row, then B one).
    """

    name: str
    kind: str  # what the set tests, for the report
    voices: tuple[Voice, ...]
    pattern: str = "alternate"
    overlap: float = 0.1


SETS: tuple[SpeakerSet, ...] = (
    SpeakerSet("us-m/gb-f", "mixed pair", (Voice("en-us+m3", 40, 160), Voice("en-gb+f2", 60, 170))),
    SpeakerSet("us-m/gb-m", "male pair", (Voice("en-us", 45, 165), Voice("en-gb", 35, 150))),
    SpeakerSet("scot-m/nyc-m", "male pair", (Voice("en-gb-scotland+m1", 40, 155), Voice("en-us-nyc+m4", 55, 175))),
    SpeakerSet(
        "m2 low/m2 high", "one voice, pitch and rate apart", (Voice("en-us+m2", 30, 145), Voice("en-us+m2", 70, 190))
    ),
    SpeakerSet("f3/gb-f4", "female pair", (Voice("en+f3", 65, 175), Voice("en-gb+f4", 75, 160))),
    SpeakerSet("us-f1/029-f5", "female pair", (Voice("en-us+f1", 55, 165), Voice("en-029+f5", 70, 180))),
    SpeakerSet("rp-m5/us-f2", "mixed pair", (Voice("en-gb-x-rp+m5", 40, 160), Voice("en-us+f2", 65, 170))),
    SpeakerSet(
        "klatt2/gb-f1", "mixed pair, another synthesis", (Voice("en-us+klatt2", 45, 160), Voice("en-gb+f1", 60, 170))
    ),
    SpeakerSet(
        "trio, guest",
        "three speakers, a guest every fifth turn",
        (Voice("en-us", 45, 165), Voice("en+f3", 65, 175), Voice("en-gb+m3", 30, 150)),
        pattern="guest",
    ),
    SpeakerSet(
        "trio, round",
        "three speakers in any order",
        (Voice("en-029+m5", 45, 160), Voice("en-gb+f1", 65, 170), Voice("en-us+m7", 35, 150)),
        pattern="round",
    ),
    SpeakerSet(
        "quartet",
        "four speakers in any order",
        (
            Voice("en-us", 45, 165),
            Voice("en+f3", 65, 175),
            Voice("en-gb-scotland+m2", 35, 150),
            Voice("en-gb+f4", 75, 160),
        ),
        pattern="round",
    ),
    SpeakerSet(
        "back-channel", "short replies", (Voice("en-us+m4", 45, 165), Voice("en-gb+f3", 65, 175)), pattern="backchannel"
    ),
    SpeakerSet(
        "overlaps", "four in ten changes cut in", (Voice("en-gb+m1", 40, 160), Voice("en-us+f4", 70, 170)), overlap=0.4
    ),
    SpeakerSet(
        "monologue",
        "one long speaker, short turns of another",
        (Voice("en-us-nyc+m6", 40, 160), Voice("en+f2", 65, 175)),
        pattern="monologue",
    ),
)


def speaker_order(pattern: str, speakers: int, turns: int, rng: random.Random) -> list[int]:
    """Who speaks each turn (indices into the set's voices)."""
    if pattern in ("alternate", "backchannel"):
        return [i % 2 for i in range(turns)]
    if pattern == "guest":
        if speakers < 3:
            raise ValueError("the guest pattern needs three voices")
        order, host = [], 0
        for i in range(turns):
            if i % 5 == 4:
                order.append(2)
            else:
                order.append(host)
                host = 1 - host
        return order
    if pattern == "round":
        # Drawn again until every voice speaks: a set that never hears one tests nothing about it.
        for _ in range(1000):
            order = [0]
            while len(order) < turns:
                order.append(rng.choice([s for s in range(speakers) if s != order[-1]]))
            if len(set(order)) == speakers:
                return order
        raise ValueError(f"{turns} turns are too few for {speakers} voices taking turns at random")
    if pattern == "monologue":
        return [0 if i % 7 < 6 else 1 for i in range(turns)]
    raise ValueError(f"unknown turn pattern {pattern!r}")


def spoken_lines(data: Path) -> list[str]:
    """Every line of the LoCoMo file that has words to speak, in order."""
    lines = []
    for conv in read_conversations(data):
        for u in conv.utterances:
            text = spoken_text(u.text)
            if normalise(text):
                lines.append(text)
    return lines


def set_script(speaker_set: SpeakerSet, index: int, source: Sequence[str], turns: int, seed: int) -> list[Line]:
    """The lines one set speaks: its own stretch of `source`, given out by its turn pattern."""
    if turns < 2 * len(speaker_set.voices):
        raise InputError(f"--turns must be at least {2 * len(speaker_set.voices)} for set {speaker_set.name!r}")
    rng = random.Random(f"{seed}:{speaker_set.name}")
    order = speaker_order(speaker_set.pattern, len(speaker_set.voices), turns, rng)
    start = (index * turns) % len(source)
    lines = []
    b_turns = 0
    for i, who in enumerate(order):
        text = source[(start + i) % len(source)]
        if speaker_set.pattern == "backchannel" and who == 1:
            b_turns += 1
            if b_turns % 2 == 0:
                text = rng.choice(BACKCHANNEL)
        lines.append(Line(LABELS[who], text))
    return lines
