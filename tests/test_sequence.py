"""Attribution over the sequence: a line's own voice weighed against the pause before it and who spoke before."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from assistant.config import load_settings
from assistant.speech.recluster import VoiceSample, plan_moves
from assistant.speech.sequence import decode

DIM = 16


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def voice_at(cosines: dict[int, float], axes: dict[int, np.ndarray], rest: np.ndarray) -> np.ndarray:
    """A unit vector with (about) the given cosines to orthogonal voice axes, the rest spent on an axis of its own."""
    v = sum(c * axes[k] for k, c in cosines.items())
    left = max(0.0, 1.0 - float(np.dot(v, v)))
    return unit(v + np.sqrt(left) * rest)


@pytest.fixture
def sequence():
    return load_settings().diarization.recluster.sequence


@pytest.fixture
def axes():
    eye = np.eye(DIM, dtype=np.float32)
    return {k: eye[k] for k in range(DIM)}


class Talk:
    """A conversation built line by line: each line's voice, length, pause before it and speaker."""

    def __init__(self, axes: dict[int, np.ndarray]) -> None:
        self.axes = axes
        self.rng = np.random.default_rng(7)
        self.lines: list[tuple[np.ndarray, float, float, int]] = []

    def say(self, speaker: int, seconds: float, gap: float, cosines: dict[int, float] | None = None) -> None:
        # A clear line sits near its own voice's axis, a little noise apart from every other line.
        noise = self.rng.normal(size=DIM).astype(np.float32)
        noise[:4] = noise[10] = 0.0  # off the voices' axes and the unclear lines' own
        noise = unit(noise)
        cos = cosines if cosines is not None else {speaker: 0.95}
        self.lines.append((voice_at(cos, self.axes, noise), seconds, gap, speaker))

    def turns(self, count: int, lines: int) -> None:
        """Two people take `count` turns of `lines` lines: a long pause before a turn, short ones inside."""
        for turn in range(count):
            for i in range(lines):
                self.say(turn % 2, 3.0, 1.5 if i == 0 else 0.2)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        e, s, g, who = zip(*self.lines, strict=True)
        return np.stack(e), np.array(s), np.array(g), np.array(who)


def centroids(embeddings: np.ndarray, labels: np.ndarray, k: int, unclear: int) -> np.ndarray:
    """The voices' mean voices, over the clear lines (as re-clustering has them)."""
    clear = np.arange(len(labels)) != unclear
    return np.stack([unit(embeddings[clear & (labels == c)].sum(axis=0)) for c in range(k)])


def test_a_short_unclear_line_inside_a_turn_stays_with_the_turn(axes, sequence):
    # Two people take turns of two lines, close together within a turn, a long pause between
    # turns: half the lines change speaker, none after a short pause. One short line inside a
    # turn of 0's sounds a shade more like 1 than like 0.
    talk = Talk(axes)
    talk.turns(10, 2)
    talk.lines.insert(13, (voice_at({0: 0.80, 1: 0.83}, axes, axes[10]), 0.8, 0.2, 0))
    e, s, g, truth = talk.arrays()
    c = centroids(e, truth, 2, unclear=13)
    alone = np.argmax(e @ c.T, axis=1)
    assert alone[13] == 1  # one line's own voice gets it wrong
    assert decode(e, s, g, c, alone, sequence).tolist() == truth.tolist()


def test_a_clear_line_is_not_swallowed_by_the_turn_around_it(axes, sequence):
    talk = Talk(axes)
    talk.turns(10, 2)
    # 1 cuts in with a long line in the middle of 0's turn: its voice is plain.
    talk.lines.insert(13, (voice_at({0: 0.55, 1: 0.95}, axes, axes[10]), 4.0, 0.2, 1))
    e, s, g, truth = talk.arrays()
    c = centroids(e, truth, 2, unclear=13)
    labels = np.argmax(e @ c.T, axis=1)
    assert decode(e, s, g, c, labels, sequence).tolist() == truth.tolist()


def test_who_speaks_next_follows_who_spoke_before(axes, sequence):
    # Three people speak in a round, 0 -> 1 -> 2 -> 0. The last line, after 1's, is 2's but
    # sounds about as much like 0 as like 2 (a shade nearer 0): in this conversation 2 is who
    # follows 1.
    talk = Talk(axes)
    for turn in range(11):
        talk.say(turn % 3, 3.0, 1.2)
    talk.lines.append((voice_at({0: 0.86, 2: 0.85}, axes, axes[10]), 3.0, 1.2, 2))
    e, s, g, truth = talk.arrays()
    c = centroids(e, truth, 3, unclear=11)
    alone = np.argmax(e @ c.T, axis=1)
    assert alone[11] == 0
    assert decode(e, s, g, c, alone, sequence)[11] == 2


def test_re_clustering_decodes_the_window_in_the_order_said(axes, sequence):
    # The whole path: re-clustering finds the two voices, and a line too short to shape the
    # clusters, matched online to 1 by its own voice, goes to 0, whose turn it was said in.
    options = load_settings().diarization.recluster
    talk = Talk(axes)
    talk.turns(10, 2)
    talk.lines.insert(9, (voice_at({0: 0.80, 1: 0.83}, axes, axes[10]), 0.8, 0.2, 0))
    samples, clock = [], 0.0
    for i, (embedding, seconds, gap, who) in enumerate(talk.lines):
        clock += gap
        online = 2 if i == 9 else who + 1  # the short line went to speaker 2 online
        samples.append(VoiceSample(100 + i, online, embedding, seconds, clock))
        clock += seconds
    moves = plan_moves(samples, options, fixed=set())
    assert [(m.speaker_id, m.utterance_ids) for m in moves] == [(1, (109,))]
    # Judged by its own voice alone, the short line stays where the online pass put it.
    alone = dataclasses.replace(options, sequence=dataclasses.replace(sequence, enabled=False))
    assert plan_moves(samples, alone, fixed=set()) == []
