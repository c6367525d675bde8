"""Make `assistant/data/demo_recording.ogg`, the two-voice recording `assistant demo` listens to.

    python -m tests.make_demo_recording

The script (speaker, espeak-ng voice, pause, words) is `assistant/data/demo_recording.tsv`. The
result is small (Vorbis, 16 kHz mono) because it ships inside the package.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from assistant.bench.synth_speech import espeak, silence, sox, to_16k

DATA = Path(__file__).resolve().parent.parent / "assistant" / "data"
SCRIPT = DATA / "demo_recording.tsv"
RECORDING = DATA / "demo_recording.ogg"


@dataclass(frozen=True)
class Turn:
    speaker: str
    voice: str
    pause: float
    text: str


def read_script(path: Path = SCRIPT) -> list[Turn]:
    turns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            speaker, voice, pause, text = line.split("\t")
            turns.append(Turn(speaker, voice, float(pause), text))
    return turns


def make(out: Path = RECORDING) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        parts: list[Path] = []
        for i, turn in enumerate(read_script()):
            parts.append(silence(Path(tmp, f"{i}_gap.wav"), turn.pause))
            voice, *options = turn.voice.split()
            raw = espeak(Path(tmp, f"{i}_raw.wav"), turn.text, voice, *options)
            parts.append(to_16k(raw, Path(tmp, f"{i}.wav")))
        parts.append(silence(Path(tmp, "tail.wav"), 1.0))
        sox(*parts, "-C", "2", out)
    return out


if __name__ == "__main__":
    path = make()
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
