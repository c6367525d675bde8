"""Whether a line speaks of a person or only addresses them (memory/mentions.py)."""

from __future__ import annotations

import pytest

from assistant.memory.mentions import said_and_asked, speaks_of


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


def test_a_line_is_read_as_what_it_states_and_what_it_asks() -> None:
    assert said_and_asked("Wow! What got you into running? I only walk.") == (
        "Wow! I only walk.",
        "What got you into running?",
    )
    assert said_and_asked("The boiler is fixed.") == ("The boiler is fixed.", "")
    assert said_and_asked("Who is feeding the cat?") == ("", "Who is feeding the cat?")
