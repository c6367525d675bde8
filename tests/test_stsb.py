import numpy as np

from assistant.config import STSBOptions
from assistant.memory.records import Utterance
from assistant.memory.stsb import SensingBuffer

A = np.array([1.0, 0.0], dtype=np.float32)
B = np.array([0.0, 1.0], dtype=np.float32)


def u(i: int) -> Utterance:
    return Utterance("S", f"line {i}", float(i), i)


def opts(capacity=5, min_block=1, window=10, drift=0.7) -> STSBOptions:
    return STSBOptions(drift_threshold=drift, capacity=capacity, min_block=min_block, leading_window=window)


def test_drift_cuts_before_the_new_topic():
    buf = SensingBuffer(opts())
    assert buf.push(u(1), A) == []
    assert buf.push(u(2), A) == []
    (cut,) = buf.push(u(3), B)
    assert [x.id for x in cut.utterances] == [1, 2]
    assert [x.id for x in buf.buffer] == [3]


def test_capacity_cuts_after_the_filling_utterance():
    buf = SensingBuffer(opts(capacity=3))
    cuts = [c for i in range(1, 7) for c in buf.push(u(i), A)]
    assert [[x.id for x in c.utterances] for c in cuts] == [[1, 2, 3], [4, 5, 6]]


def test_min_block_delays_a_drift_cut():
    buf = SensingBuffer(opts(min_block=3))
    assert buf.push(u(1), A) == []
    assert buf.push(u(2), B) == []  # drift, but only one utterance buffered
    assert buf.push(u(3), A) == []  # drift, two buffered
    (cut,) = buf.push(u(4), B)
    assert [x.id for x in cut.utterances] == [1, 2, 3]
    assert [x.id for x in buf.buffer] == [4]


def test_leading_window_is_context_only_and_bounded():
    buf = SensingBuffer(opts(capacity=2, window=3))
    cuts = [c for i in range(1, 7) for c in buf.push(u(i), A)]
    assert [x.id for x in cuts[1].context] == [1, 2]
    assert [x.id for x in cuts[2].context] == [2, 3, 4]
    assert [x.id for x in buf.context] == [4, 5, 6]
    assert buf.buffer == []
    assert [x.id for x in buf.visible] == [4, 5, 6]


def test_flush_cuts_what_is_buffered_once():
    buf = SensingBuffer(opts())
    buf.push(u(1), A)
    cut = buf.flush()
    assert cut is not None and [x.id for x in cut.utterances] == [1]
    assert buf.flush() is None
