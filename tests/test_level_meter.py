"""The push-to-talk level: dBFS of real 16-bit signals, and the meter the indicator draws from it."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.audio.level import FLOOR_DBFS, level_dbfs
from assistant.records import RecordingState
from assistant.tui.recording import METER_CELLS, level_meter, recording_line


def sine(amplitude: float, seconds: float = 0.1, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return np.round(amplitude * 32767 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)


def test_a_full_scale_sine_is_three_db_below_full_scale() -> None:
    assert level_dbfs(sine(1.0)) == pytest.approx(-3.01, abs=0.05)


def test_each_tenfold_drop_in_amplitude_is_twenty_db() -> None:
    assert level_dbfs(sine(0.1)) == pytest.approx(-23.01, abs=0.05)
    assert level_dbfs(sine(0.01)) == pytest.approx(-43.0, abs=0.1)


def test_silence_and_nothing_sit_on_the_floor() -> None:
    assert level_dbfs(np.zeros(1600, dtype=np.int16)) == FLOOR_DBFS
    assert level_dbfs(np.zeros(0, dtype=np.int16)) == FLOOR_DBFS
    # One bit of noise is about -96 dBFS: below the floor, so shown as the floor.
    assert level_dbfs(np.ones(1600, dtype=np.int16)) == FLOOR_DBFS


def lit(meter: str) -> int:
    return meter.count("▮")


def test_the_meter_lights_more_cells_as_the_level_rises() -> None:
    counts = [lit(level_meter(db).plain) for db in (-90, -60, -45, -30, -15, -3, 0, 6)]
    assert counts == sorted(counts)
    assert counts[0] == counts[1] == 0 and counts[-2] == counts[-1] == METER_CELLS
    assert all(len(level_meter(db).plain.split()[0]) == METER_CELLS for db in (-90, -30, 0))


def test_the_meter_turns_red_only_near_clipping() -> None:
    def colours(db: float) -> set[str]:
        meter = level_meter(db)
        return {str(span.style) for span in meter.spans if "▮" in meter.plain[span.start : span.end]}

    assert colours(-30) == {"green"}
    assert "red" not in colours(-10)
    assert "red" in colours(-1)


def test_before_any_sound_the_meter_says_it_is_waiting() -> None:
    assert "waiting for sound" in level_meter(None).plain


def test_the_indicator_shows_time_level_and_the_limit() -> None:
    line = recording_line(75.4, True, RecordingState(True, 12.0, -24.0), 30.0).plain
    assert line.startswith("● REC 1:15")
    assert "-24 dB" in line and "limit" not in line and "Escape cancels" in line
    full = recording_line(31.0, False, RecordingState(True, 30.0, -70.0), 30.0).plain
    assert full.startswith("○ REC 0:31") and "30 s limit reached" in full
    assert "waiting for sound" in recording_line(0.2, True, None, 30.0).plain
