"""The segment queue on a real spool directory: a stop keeps every segment once, in the order spoken."""

from __future__ import annotations

import numpy as np

from assistant.daemon.spool import SegmentQueue
from assistant.records import SAMPLE_RATE, SpeechSegment


def segment(start: float, seconds: float = 0.5) -> SpeechSegment:
    samples = np.full(int(seconds * SAMPLE_RATE), 0.1, dtype=np.float32)
    return SpeechSegment(samples, start, start + seconds)


def drain(queue: SegmentQueue) -> list[float]:
    starts = []
    while (item := queue.take(timeout=0)) is not None:
        starts.append(item.segment.start)
        queue.done(item)
    return starts


def test_a_segment_given_back_twice_is_kept_once(tmp_path):
    queue = SegmentQueue(tmp_path, capacity=4)
    queue.put(segment(1.0))
    queue.put(segment(2.0))
    taken = queue.take(timeout=0)
    # The stop and the transcription thread may both give back the segment that was in flight.
    queue.requeue(taken)
    queue.requeue(taken)
    assert queue.spool_all() == 2
    assert drain(SegmentQueue(tmp_path, capacity=4)) == [1.0, 2.0]


def test_what_arrives_after_the_stop_spooled_goes_to_disk_in_spoken_order(tmp_path):
    queue = SegmentQueue(tmp_path, capacity=4)
    for start in (1.0, 2.0, 3.0):
        queue.put(segment(start))
    in_flight = queue.take(timeout=0)
    assert queue.spool_all() == 2
    # Given back after the spool (a transcription that outlived the stop), and the capture's last
    # segment flushed after it: both must be on disk, the first ahead of what was spooled.
    queue.requeue(in_flight)
    queue.put(segment(4.0))
    assert len(list(tmp_path.glob("*.wav"))) == 4
    assert drain(SegmentQueue(tmp_path, capacity=4)) == [1.0, 2.0, 3.0, 4.0]
