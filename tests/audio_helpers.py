"""Real recordings for the audio tests, made on the spot with espeak-ng and sox
(assistant/bench/synth_speech.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from assistant.bench.synth_conversation import Turn, speak_turns
from assistant.config import VadOptions
from assistant.records import SAMPLE_RATE

SENTENCE_A = "I will send the slides on Tuesday, after the budget meeting."
SENTENCE_B = "Sam said the Lisbon trip moves to May."


def read_int16(path: Path) -> np.ndarray:
    audio, _ = sf.read(path, dtype="int16")
    return audio


def vad_options(**over: Any) -> VadOptions:
    """The shipped defaults (config/default.yaml), with `over` replacing some."""
    values: dict[str, Any] = {
        "frame_ms": 30,
        "aggressiveness": 2,
        "pre_roll_ms": 300,
        "hangover_ms": 600,
        "min_segment_ms": 400,
        "max_segment_ms": 25000,
        "silero": False,
        "silero_threshold": 0.5,
    }
    values.update(over)
    return VadOptions(**values)


@dataclass(frozen=True)
class Dialog:
    path: Path
    #: (first, last) audible sample of each turn, in seconds from the start of the file.
    turns: list[tuple[float, float]]


def make_dialog(directory: Path, *, lead: float = 1.0, gap: float = 2.0, tail: float = 1.0) -> Dialog:
    """Two voices (en-us, then en-gb+m3 lower and slower), with silence before, between and after."""
    a = Turn("A", SENTENCE_A, ("en-us",), pause=lead)
    b = Turn("B", SENTENCE_B, ("en-gb+m3", "-p", "30", "-s", "150"), pause=gap)
    spoken = speak_turns(directory, [a, b], name="dialog", tail=tail)
    # A turn's end is the sample after its last audible one; a Dialog names the last.
    return Dialog(spoken.path, [(t.start, t.end - 1 / SAMPLE_RATE) for t in spoken.turns])
