"""How loud a stretch of audio is, in dBFS: what a level meter shows while a question is recorded."""

from __future__ import annotations

import math

import numpy as np

# The level reported for silence: a little above the quietest 16-bit signal (one bit of noise,
# about -96 dBFS), so digital silence and a dead-quiet room read the same.
FLOOR_DBFS = -90.0


def level_dbfs(samples: np.ndarray) -> float:
    """The RMS level of 16-bit samples relative to full scale (0 dBFS is a full-scale square wave)."""
    if samples.size == 0:
        return FLOOR_DBFS
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    if rms <= 0.0:
        return FLOOR_DBFS
    return max(FLOOR_DBFS, 20.0 * math.log10(rms / 32768.0))
