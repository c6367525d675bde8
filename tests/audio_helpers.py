"""Real recordings for the audio tests, made on the spot with espeak-ng and sox."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from assistant.config import VadOptions
from assistant.records import SAMPLE_RATE

SENTENCE_A = "I will send the slides on Tuesday, after the budget meeting."
SENTENCE_B = "Sam said the Lisbon trip moves to May."


def espeak(path: Path, text: str, voice: str = "en-us", *extra: str) -> Path:
    subprocess.run(["espeak-ng", "-v", voice, *extra, "-w", str(path), text], check=True, capture_output=True)
    return path


def sox(*args: str | Path) -> None:
    # -D: no dither; -R: seeded noise generators. Without them the same recipe gave different
    # samples each run (random dither, random brown noise), and VAD decisions near a threshold
    # flipped between runs.
    subprocess.run(["sox", "-D", "-R", *map(str, args)], check=True, capture_output=True)


def to_16k(src: Path, dst: Path, *effects: str) -> Path:
    sox(src, "-r", str(SAMPLE_RATE), "-b", "16", "-c", "1", dst, *effects)
    return dst


def silence(path: Path, seconds: float) -> Path:
    sox("-n", "-r", str(SAMPLE_RATE), "-b", "16", "-c", "1", path, "trim", "0", str(seconds))
    return path


def speech_bounds(path: Path) -> tuple[float, float]:
    """First and last audible sample of a recording, in seconds (espeak-ng pads with digital silence)."""
    audio, rate = sf.read(path, dtype="float32")
    loud = np.nonzero(np.abs(audio) > 0.01)[0]
    return loud[0] / rate, loud[-1] / rate


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
    directory.mkdir(parents=True, exist_ok=True)
    a = to_16k(espeak(directory / "a_raw.wav", SENTENCE_A), directory / "a.wav")
    b = to_16k(espeak(directory / "b_raw.wav", SENTENCE_B, "en-gb+m3", "-p", "30", "-s", "150"), directory / "b.wav")
    between = silence(directory / "gap.wav", gap)
    out = directory / "dialog.wav"
    sox(a, between, b, out, "pad", str(lead), str(tail))
    a_start, a_end = speech_bounds(a)
    b_start, b_end = speech_bounds(b)
    b_offset = lead + sf.info(a).duration + gap
    return Dialog(out, [(lead + a_start, lead + a_end), (b_offset + b_start, b_offset + b_end)])
