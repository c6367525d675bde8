"""What the speech benchmark says: the first turns of each LoCoMo conversation, and their recordings."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..transcripts import read_conversations
from .speech_metrics import normalise
from .synth_conversation import Line, Pacing, Recording, build_recording, remove_parts
from .synth_speech import check_tools

# The reader appends a photo's caption to its turn; nobody says it aloud.
_PHOTO = re.compile(r"\s*\[shares a photo: [^\]]*\]\s*$")


def spoken_text(text: str) -> str:
    """A turn of a LoCoMo file as it is said: without the caption of a photo it shares."""
    return _PHOTO.sub("", text)


@dataclass(frozen=True)
class Script:
    """The turns of one conversation that get spoken."""

    name: str
    lines: tuple[Line, ...]
    start_time: float  # epoch seconds of the conversation's first turn: stamps the recording


@dataclass(frozen=True)
class Prepared:
    script: Script
    recording: Recording
    realtime: Recording | None  # the first realtime_turns turns alone


def read_scripts(data: Path, names: Sequence[str], turns: int) -> list[Script]:
    """The first `turns` spoken turns of each named conversation (all when `names` is empty)."""
    if turns < 2:
        raise InputError(f"--turns must be at least 2 (a dialogue), got {turns}")
    convs = read_conversations(data)
    known = [c.name for c in convs]
    missing = [n for n in names if n not in known]
    if missing:
        raise InputError(f"{data}: no conversation(s) {', '.join(missing)}; it holds {', '.join(known)}")
    scripts = []
    for conv in convs:
        if names and conv.name not in names:
            continue
        lines = [Line(u.speaker, spoken_text(u.text)) for u in conv.utterances]
        spoken = [line for line in lines if normalise(line.text)]
        chosen = tuple(spoken[:turns])
        speakers = sorted({line.speaker for line in chosen})
        if len(speakers) < 2:
            who = speakers[0] if speakers else "nobody"
            raise InputError(
                f"{data}: conversation {conv.name} has one speaker ({who}) in its first {len(chosen)} spoken turns; "
                "the speech benchmark needs at least two voices"
            )
        scripts.append(Script(conv.name, chosen, conv.utterances[0].time))
    return scripts


def prepare(
    scripts: Sequence[Script],
    directory: Path,
    *,
    pacing: Pacing,
    seed: int,
    realtime_turns: int,
    progress: Callable[[int], None] | None = None,
) -> list[Prepared]:
    """Speak every script into `directory` (and the real-time prefix beside it); `progress(1)` per line."""
    check_tools()
    out = []
    for script in scripts:
        rec = build_recording(script.lines, directory, name=script.name, pacing=pacing, seed=seed, progress=progress)
        remove_parts(directory, script.name)
        realtime = None
        if realtime_turns > 0:
            # Same seed and name: the same timing as the start of the full recording.
            head = script.lines[:realtime_turns]
            realtime = build_recording(
                head, directory / "realtime", name=script.name, pacing=pacing, seed=seed, progress=progress
            )
            remove_parts(directory / "realtime", script.name)
        out.append(Prepared(script, rec, realtime))
    return out


def count_lines(scripts: Sequence[Script], realtime_turns: int) -> int:
    """Progress units of `prepare`."""
    return sum(len(s.lines) + min(realtime_turns, len(s.lines)) for s in scripts)
