import numpy as np

from assistant.config import STSBOptions
from assistant.memory.stsb import SensingBuffer
from assistant.records import Utterance

A = np.array([1.0, 0.0], dtype=np.float32)
B = np.array([0.0, 1.0], dtype=np.float32)


def u(i: int, time: float | None = None) -> Utterance:
    return Utterance("S", f"line {i}", float(i) if time is None else time, i)


def opts(capacity=5, min_block=1, window=10, drift=0.7, gap=None) -> STSBOptions:
    return STSBOptions(
        drift_threshold=drift, capacity=capacity, min_block=min_block, leading_window=window, max_gap_seconds=gap
    )


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


def test_a_long_silence_cuts_before_the_next_session_whatever_the_block_size():
    # min_block 3 would hold a drift cut; a gap longer than max_gap_seconds cuts anyway, and
    # the same topic (vector A throughout) after the gap still opens a new block.
    buf = SensingBuffer(opts(min_block=3, gap=1800))
    assert buf.push(u(1, 0.0), A) == []
    assert buf.push(u(2, 60.0), A) == []
    (cut,) = buf.push(u(3, 60.0 + 1801), A)
    assert [x.id for x in cut.utterances] == [1, 2]
    assert [x.id for x in buf.buffer] == [3]
    assert [x.id for x in buf.context] == [1, 2]


def test_a_gap_of_exactly_the_limit_does_not_cut():
    buf = SensingBuffer(opts(min_block=3, gap=1800))
    buf.push(u(1, 0.0), A)
    assert buf.push(u(2, 1800.0), A) == []
    assert [x.id for x in buf.buffer] == [1, 2]


def test_no_gap_limit_when_null_or_zero():
    for gap in (None, 0.0):
        buf = SensingBuffer(opts(min_block=3, gap=gap))
        buf.push(u(1, 0.0), A)
        assert buf.push(u(2, 10 * 86400.0), A) == []


def test_a_gap_then_a_full_buffer_makes_two_cuts():
    buf = SensingBuffer(opts(capacity=2, min_block=2, gap=100))
    buf.push(u(1, 0.0), A)
    cuts = buf.push(u(2, 500.0), A)
    assert cuts and [x.id for x in cuts[0].utterances] == [1]
    assert [x.id for x in buf.buffer] == [2]
    (cut,) = buf.push(u(3, 510.0), A)  # fills the buffer: cut after it
    assert [x.id for x in cut.utterances] == [2, 3]


def test_a_gap_is_measured_from_a_restored_buffer():
    # As the engine restores it from the store: the open buffer and its context, no vector.
    buf = SensingBuffer(opts(min_block=3, gap=1800), buffer=[u(4, 100.0), u(5, 200.0)], context=[u(3, 50.0)])
    (cut,) = buf.push(u(6, 200.0 + 7200), A)
    assert [x.id for x in cut.utterances] == [4, 5] and [x.id for x in cut.context] == [3]
    assert [x.id for x in buf.buffer] == [6]


def test_a_gap_after_a_flush_has_nothing_to_cut():
    buf = SensingBuffer(opts(gap=100))
    buf.push(u(1, 0.0), A)
    buf.flush()
    assert buf.push(u(2, 1000.0), A) == []
    assert [x.id for x in buf.buffer] == [2]


def test_the_gap_knob_is_configured_and_checked(tmp_path):
    import pytest

    from assistant.config import load_settings
    from assistant.errors import ConfigError

    assert load_settings(user_file=tmp_path / "absent.yaml").memory.stsb.max_gap_seconds == 1800
    bad = tmp_path / "config.yaml"
    bad.write_text("memory:\n  stsb:\n    max_gap_seconds: -5\n")
    with pytest.raises(ConfigError, match=r"config.yaml:3: memory.stsb.max_gap_seconds must be at least 0"):
        load_settings(bad, user_file=tmp_path / "absent.yaml")
    bad.write_text("memory:\n  stsb:\n    max_gap_seconds: null\n")
    assert load_settings(bad, user_file=tmp_path / "absent.yaml").memory.stsb.max_gap_seconds is None
