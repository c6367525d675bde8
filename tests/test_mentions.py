"""Whether a line speaks of a person or only addresses them (memory/mentions.py)."""

from __future__ import annotations

import pytest

from assistant.memory.mentions import own_and_addressed, speaks_of


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
