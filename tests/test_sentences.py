"""The one sentence splitter: where a transcribed line's sentences begin and end."""

import pytest

from assistant.memory.context import Candidate, trimmed
from assistant.memory.words import stems
from assistant.records import Evidence
from assistant.sentences import sentence_spans, sentences


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "The plumber came. He fixed the tap! Did he charge much?",
            ["The plumber came.", "He fixed the tap!", "Did he charge much?"],
        ),
        # A title, a saint's name, an initial and a time keep their full stops inside the sentence.
        ("Noor moved from Dr. Varga to Dr. Osei last week.", ["Noor moved from Dr. Varga to Dr. Osei last week."]),
        (
            "Mrs. Adeyemi lives near St. Brigid's church. We visit on Sundays.",
            ["Mrs. Adeyemi lives near St. Brigid's church.", "We visit on Sundays."],
        ),
        ("The form is signed by T. Lindqvist.", ["The form is signed by T. Lindqvist."]),
        ("The call is at 4 p.m. on Thursday. Don't be late.", ["The call is at 4 p.m. on Thursday.", "Don't be late."]),
        ("We land on Sept. 3 in the evening.", ["We land on Sept. 3 in the evening."]),
        # A number's point has no space after it.
        (
            "The sofa was 1,249.99 euros. Version 2.1 of the app is out.",
            ["The sofa was 1,249.99 euros.", "Version 2.1 of the app is out."],
        ),
        ('She said "not today." Then she left.', ['She said "not today."', "Then she left."]),
        ("Wait... what?! No way", ["Wait...", "what?!", "No way"]),
        (
            "Look at this [a photo of a red kite. It is huge] amazing, right?",
            ["Look at this", "[a photo of a red kite. It is huge]", "amazing, right?"],
        ),
        ("   ", []),
        ("no full stop at all", ["no full stop at all"]),
    ],
)
def test_sentences(line: str, expected: list[str]) -> None:
    assert sentences(line) == expected


def test_spans_point_into_the_line() -> None:
    line = "  Ask Dr. Kim.   Then call me.  "
    spans = sentence_spans(line)
    assert [line[a:b] for a, b in spans] == ["Ask Dr. Kim.", "Then call me."]
    assert spans[0][0] == 2


def test_a_line_cut_to_its_matching_sentence_keeps_the_name_after_a_title() -> None:
    line = "We talked for ages. In the end Aiko went to Dr. Brandt about her wrist."
    cut = trimmed(Candidate(Evidence(1, "Sam", 0.0, line)), stems("Who did Aiko see about her wrist?"))
    assert cut.text == "… In the end Aiko went to Dr. Brandt about her wrist."
