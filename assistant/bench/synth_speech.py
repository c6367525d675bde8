"""Synthetic speech: espeak-ng says a line, sox converts, pads, trims and joins the audio.

The few primitives every recording here is made of, for the benchmarks and the tests alike;
`synth_conversation.py` builds whole conversations out of them. Both programs are system
packages, not pip ones, so `check_tools` names what to install when one is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import soundfile as sf

from ..errors import AssistantError
from ..records import SAMPLE_RATE

# What each tool is called in Debian's archive.
TOOLS = {"espeak-ng": "espeak-ng", "sox": "sox"}
# espeak-ng pads its output with digital silence; anything louder than this is speech.
AUDIBLE = 0.01


class ToolMissing(AssistantError):
    """A program the recordings are made with is not installed."""


def check_tools() -> None:
    """Fail early, naming the Debian package to install, when espeak-ng or sox is missing."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        packages = " ".join(TOOLS[t] for t in missing)
        raise ToolMissing(
            f"{' and '.join(missing)} not found on PATH; the speech benchmark speaks and mixes its recordings "
            f"with them: install the Debian package(s) with `sudo apt-get install {packages}`"
        )


def _run(args: Sequence[str | Path]) -> None:
    try:
        subprocess.run([str(a) for a in args], check=True, capture_output=True)
    except FileNotFoundError:
        check_tools()
        raise
    except subprocess.CalledProcessError as exc:
        reason = exc.stderr.decode("utf-8", "replace").strip() or f"exit status {exc.returncode}"
        raise AssistantError(f"{args[0]} failed: {reason}") from None


def espeak(path: Path, text: str, voice: str = "en-us", *options: str) -> Path:
    """`text` said in espeak-ng's `voice` (with options of its own, such as "-s", "160") into `path`."""
    # The text goes through a file: a line starting with "-" would read as an option.
    script = path.with_name(f"{path.name}.txt")
    script.write_text(text, encoding="utf-8")
    try:
        _run(["espeak-ng", "-v", voice, *options, "-f", script, "-w", path])
    finally:
        script.unlink(missing_ok=True)
    return path


def sox(*args: str | Path) -> None:
    # -D: no dither; -R: seeded noise generators. Without them the same recipe gave different
    # samples each run (random dither, random brown noise): VAD decisions near a threshold
    # flipped between runs, and a ±1 LSB change where speech fades out moved a turn's last
    # audible sample by tens of milliseconds.
    _run(["sox", "-D", "-R", *args])


def to_16k(src: Path, dst: Path, *effects: str) -> Path:
    """`src` as the pipeline hears it (16 kHz, 16-bit, mono), then sox `effects` applied."""
    sox(src, "-r", str(SAMPLE_RATE), "-b", "16", "-c", "1", dst, *effects)
    return dst


def silence(path: Path, seconds: float) -> Path:
    sox("-n", "-r", str(SAMPLE_RATE), "-b", "16", "-c", "1", path, "trim", "0", str(seconds))
    return path


def audible_span(path: Path) -> tuple[int, int] | None:
    """First and last audible sample of a recording (its first channel); None when it is silent."""
    audio, _rate = sf.read(path, dtype="float32", always_2d=True)
    loud = np.flatnonzero(np.abs(audio[:, 0]) > AUDIBLE)
    return (int(loud[0]), int(loud[-1])) if len(loud) else None


def speech_bounds(path: Path) -> tuple[float, float]:
    """First and last audible sample of a recording, in seconds."""
    span = audible_span(path)
    if span is None:
        raise ValueError(f"{path}: no audible sample")
    rate = sf.info(path).samplerate
    return span[0] / rate, span[1] / rate
