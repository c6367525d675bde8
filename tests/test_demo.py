"""`assistant demo`: the shipped two-voice recording, heard, remembered and asked about, as a user runs it."""

import re

import jiwer
import pytest

from .make_demo_recording import RECORDING, read_script
from .test_cli import run


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def test_the_shipped_recording_is_small_and_matches_its_script():
    # It ships in the wheel; regenerating it from the script must stay cheap to keep.
    assert RECORDING.stat().st_size < 250_000
    assert len({t.speaker for t in read_script()}) == 2


@pytest.mark.slow
def test_demo_hears_two_voices_names_them_and_answers_with_evidence(tmp_path):
    out = run(["demo"], tmp_path)
    assert out.returncode == 0, out.stderr
    heard = re.findall(r"^  (Speaker \d): (.+)$", out.stdout, flags=re.M)
    script = read_script()
    assert len(heard) == len(script)
    # Both voices told apart, turn by turn, in the order they speak.
    assert [who for who, _ in heard] == ["Speaker 1", "Speaker 2"] * (len(script) // 2)
    wer = jiwer.wer(_words(" ".join(t.text for t in script)), _words(" ".join(text for _, text in heard)))
    assert wer < 0.2, wer
    assert "assistant speakers name 1 Sam" in out.stdout and "assistant speakers name 2 Priya" in out.stdout
    answers = out.stdout.split("Q: ")[1:]
    assert len(answers) == 5
    # Evidence is cited under the new names: the relabel reached the transcript.
    assert "14" in answers[0] and "└ Priya" in answers[0]
    assert "Thursday" in answers[1] and "└ Sam" in answers[1]
    assert "Biscuit" in answers[2].title()
    assert "12,000" in answers[3] or "twelve thousand" in answers[3].lower()
    assert "don't know" in answers[4]
