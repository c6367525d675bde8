"""`assistant demo`: the shipped two-voice recording, heard, remembered and asked about, as a user runs it."""

from __future__ import annotations

import re
import statistics

import jiwer
import numpy as np
import pytest
import soundfile as sf

from assistant.memory.answer import says_unknown

from .make_demo_recording import RECORDING, read_script
from .test_cli import before_citations, run

# Between sentences espeak-ng pauses up to 0.42 s inside a turn and pads up to 0.42 s after it;
# the script's pauses between turns are 0.8-1.1 s. So a quiet stretch of 0.6 s or more ends a turn.
TURN_GAP = 0.6
ESPEAK_PAD = 0.5


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def _turns(audio: np.ndarray, rate: int) -> list[tuple[int, int]]:
    """(start, end) sample of each stretch of speech: loud 10 ms frames, joined across short pauses."""
    hop = rate // 100
    loud = np.abs(audio[: len(audio) // hop * hop]).reshape(-1, hop).max(axis=1) > 0.02
    edges = np.flatnonzero(np.diff(np.r_[0, loud.astype(np.int8), 0]))
    turns: list[list[int]] = []
    for start, end in zip(edges[::2], edges[1::2], strict=True):
        if turns and start - turns[-1][1] < TURN_GAP * 100:
            turns[-1][1] = end
        else:
            turns.append([start, end])
    return [(s * hop, e * hop) for s, e in turns]


def _pitch(speech: np.ndarray, rate: int) -> float:
    """Median fundamental frequency (Hz) over the voiced 40 ms windows, by autocorrelation."""
    n, found = int(0.04 * rate), []
    for i in range(0, len(speech) - n, n):
        w = speech[i : i + n] - speech[i : i + n].mean()
        if np.abs(w).max() < 0.05:
            continue
        c = np.correlate(w, w, "full")[n - 1 :]
        lo, hi = rate // 400, rate // 70
        lag = lo + int(np.argmax(c[lo:hi]))
        if c[lag] > 0.3 * c[0]:
            found.append(rate / lag)
    return float(np.median(found))


def test_the_shipped_recording_is_small_and_matches_its_script():
    # It ships in the wheel; regenerating it from the script must stay cheap to keep.
    assert RECORDING.stat().st_size < 250_000
    script = read_script()
    audio, rate = sf.read(RECORDING, dtype="float32")
    turns = _turns(audio, rate)
    # One stretch of speech per line of the script, each after that line's pause.
    assert len(turns) == len(script), [(s / rate, e / rate) for s, e in turns]
    ends = [0, *(e for _, e in turns[:-1])]
    for (start, end), previous, line in zip(turns, ends, script, strict=True):
        gap = (start - previous) / rate
        assert line.pause <= gap + 0.02 <= line.pause + ESPEAK_PAD + 0.02, (line, gap)
        # About 0.05-0.07 s per character at these espeak-ng speeds: the words are this line's.
        assert 0.04 <= (end - start) / rate / len(line.text) <= 0.09, (line, (end - start) / rate)
    # Two speakers, one espeak-ng voice each, as the script casts them: the turns of one voice
    # share its pitch (measured: about 100 and 205 Hz), and the two voices differ.
    assert len({(line.speaker, line.voice) for line in script}) == len({line.speaker for line in script}) == 2
    pitch: dict[str, list[float]] = {line.voice: [] for line in script}
    for (start, end), line in zip(turns, script, strict=True):
        pitch[line.voice].append(_pitch(audio[start:end], rate))
    medians = {voice: statistics.median(hz) for voice, hz in pitch.items()}
    for voice, hz in pitch.items():
        assert all(abs(f / medians[voice] - 1) < 0.15 for f in hz), pitch
    low, high = sorted(medians.values())
    assert high / low > 1.5, medians


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
    blocks = out.stdout.split("\nQ: ")[1:]
    assert len(blocks) == 5
    # Each block: the question's line, the answer, then the lines it cites ("  └ who, when: words").
    asked = [block.split("\n", 1) for block in blocks]
    answers = [before_citations(rest) for _, rest in asked]
    cited = [rest[len(before_citations(rest)) :] for _, rest in asked]
    assert "14" in answers[0] or "fourteenth" in answers[0].lower(), answers[0]
    assert "Thursday" in answers[1], answers[1]
    assert "Biscuit" in answers[2].title(), answers[2]
    assert "12,000" in answers[3] or "twelve thousand" in answers[3].lower(), answers[3]
    assert says_unknown(answers[4]), answers[4]
    # Evidence is cited under the new names: the relabel reached the transcript.
    assert "└ Priya" in cited[0] and "└ Sam" in cited[1], cited
