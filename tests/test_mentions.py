"""Whether a line speaks of a person or only addresses them (memory/mentions.py)."""

from __future__ import annotations

import pytest

from assistant.memory.mentions import own_and_addressed, speaks_of, spoken_of, talked_of
from assistant.records import Utterance


@pytest.mark.parametrize(
    "text",
    [
        "Priya booked the ferry for Saturday.",
        "I lent my drill to Priya.",
        "Did you see Priya at the market?",
        "Priya's landlord raised the rent again.",
        "We met Priya, and she told us about the move.",
        "Honestly, Priya has the keys.",
    ],
)
def test_a_name_in_the_sentence_speaks_of_them(text: str) -> None:
    assert speaks_of(text, "Priya")


@pytest.mark.parametrize(
    "text",
    [
        "Thanks, Priya!",
        "Hey Priya, can you carry the sofa?",
        "Hey, Priya, can you carry the sofa?",
        "That sounds lovely, Priya.",
        "Priya, are you coming tonight?",
        "Great news. Thanks Priya, really.",
        "Priyanka bought the tickets.",
        "Nobody is named here.",
    ],
)
def test_a_name_that_addresses_the_listener_does_not(text: str) -> None:
    assert not speaks_of(text, "Priya")


def test_accents_are_compared_as_the_lexical_index_compares_them() -> None:
    assert speaks_of("Zoe rang the plumber this morning.", "Zoë")
    assert speaks_of("Zoë rang the plumber this morning.", "Zoe")
    assert not speaks_of("Thanks, Zoë!", "Zoe")


def test_a_line_is_read_as_its_speakers_own_and_what_it_addresses_to_the_listener() -> None:
    assert own_and_addressed("Wow! What got you into running? I only walk.") == (
        "Wow! I only walk.",
        "What got you into running?",
    )
    assert own_and_addressed("The boiler is fixed.") == ("The boiler is fixed.", "")
    assert own_and_addressed("Who is feeding the cat?") == ("", "Who is feeding the cat?")
    # The second person alone speaks of the listener; with the first it is the speaker's own.
    assert own_and_addressed("Oh no. Your wrist must be sore. I'm proud of you anyway.") == (
        "Oh no. I'm proud of you anyway.",
        "Your wrist must be sore.",
    )


PEOPLE = ("Priya", "Tomás", "Ines")


def test_the_people_a_line_speaks_of_are_the_known_ones_it_names_not_only_to_address_them() -> None:
    assert spoken_of("Thanks, Ines! Priya and Tomas took the van.", PEOPLE) == {"Priya", "Tomás"}
    assert spoken_of("Hey Priya, Marta's van is outside.", PEOPLE) == frozenset()


def _talk(*lines: tuple[str, float]) -> list[Utterance]:
    return [Utterance("Ines", text, t) for text, t in lines]


def test_a_line_that_names_no_one_is_about_whom_the_talk_before_it_spoke_of() -> None:
    line = Utterance("Ines", "Also, the first flat fell through, the new one is on Mill Lane.", 400.0)
    # Nearest first: the turn just before names no one, the one before that speaks of Priya.
    before = _talk(("The van is booked for Saturday.", 300.0), ("Any news on Priya's move?", 100.0),
                   ("Tomás sold his bike.", 50.0))  # fmt: skip
    assert talked_of(line, before, PEOPLE, 8, 1800.0) == {"Priya"}
    # Only as far back as `turns` reaches, and within one conversation (200 s of silence before
    # the van).
    assert talked_of(line, before, PEOPLE, 1, 1800.0) == frozenset()
    assert talked_of(line, before, PEOPLE, 8, 150.0) == frozenset()
    assert talked_of(line, before, PEOPLE, 8, None) == {"Priya"}
    # A line that names someone is about them, whatever was said before it; one that only
    # addresses someone names no one.
    named = Utterance("Ines", "Tomás found a flat on Quay Street.", 400.0)
    assert talked_of(named, before, PEOPLE, 8, 1800.0) == {"Tomás"}
    addressed = Utterance("Ines", "Thanks, Tomás! The new one is on Quay Street.", 400.0)
    assert talked_of(addressed, before, PEOPLE, 8, 1800.0) == {"Priya"}
