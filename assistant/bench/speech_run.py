"""The speech benchmark (DESIGN.md §8): written conversations, spoken by two synthetic voices with
pauses and overlaps (`synth_conversation.py`), heard by the real listening chain, scored against
what was said.

Each conversation is listened to twice, each time by a fresh `Memory` in a temporary data dir:

1. as fast as the chain goes (the file read in 250 ms blocks, like `assistant ingest FILE`): word
   error rate, speaker attribution, diarization error rate and the real-time factor of each
   stage come from this pass;
2. its first `realtime_turns` turns paced at wall-clock speed in the audio device's block length
   (like `assistant ingest --realtime`): the delay from the end of each turn's speech to its
   words being searchable comes from this pass. Pacing makes a pass last as long as its audio,
   so it is kept short; its stage timings include the waits and are not reported.

A word counts as searchable once the chain's filing step for the utterance holding it has
returned: `Memory.add` has archived it and put it in the sensing buffer, which `Memory.search`
returns as short-term memory (distillation into the tree comes later and is not waited for).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..config import Settings
from ..speech.transcribe import transcriber_from_settings
from .host import Machine, machine
from .speech_listen import listen
from .speech_scoring import ConversationResult, score
from .speech_scripts import Prepared
from .synth_conversation import Pacing


@dataclass(frozen=True)
class SpeechRun:
    data: str
    stt: str
    distill_mode: str
    turns: int
    overlap: float
    seed: int
    realtime_turns: int
    pacing: Pacing
    hangover: float  # vad.hangover_ms in seconds: the silence that closes a speech segment
    seconds: float
    machine: Machine
    conversations: tuple[ConversationResult, ...]


def bench_settings(settings: Settings, stt: str | None, distill_mode: str) -> Settings:
    """The configured chain, with another speech model and distillation mode if asked."""
    models = replace(settings.models, stt=stt or settings.models.stt)
    memory = replace(settings.memory, distill=replace(settings.memory.distill, mode=distill_mode))
    return replace(settings, models=models, memory=memory)


def listening_seconds(prepared: Sequence[Prepared]) -> float:
    """Progress units of `run_speech`: seconds of audio heard, both passes."""
    return sum(p.recording.duration + (p.realtime.duration if p.realtime else 0.0) for p in prepared)


def run_speech(
    settings: Settings,
    data: Path,
    prepared: Sequence[Prepared],
    *,
    turns: int,
    seed: int,
    realtime_turns: int,
    pacing: Pacing,
    work_dir: Path | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> SpeechRun:
    """Listen to each prepared recording (and its real-time prefix) and score it.

    `settings` is the chain to measure (see `bench_settings`); `progress(seconds, label)` is
    called with the seconds of audio heard since the last call.
    """
    host = machine()
    started = time.perf_counter()
    transcriber = transcriber_from_settings(settings)
    results = []
    with tempfile.TemporaryDirectory(prefix="assistant-bench-speech-") as tmp:
        root = work_dir or Path(tmp)
        for p in prepared:
            name = p.script.name

            def heard(label: str) -> Callable[[float], None]:
                done = 0.0

                def advance(seconds: float) -> None:
                    nonlocal done
                    if progress:
                        progress(seconds - done, label)
                    done = seconds

                return advance

            listened = listen(
                settings,
                transcriber,
                p.recording,
                root / name / "batch",
                start_time=p.script.start_time,
                realtime=False,
                on_audio=heard(f"{name}: listening"),
            )
            realtime = None
            if p.realtime is not None:
                realtime = listen(
                    settings,
                    transcriber,
                    p.realtime,
                    root / name / "realtime",
                    start_time=p.script.start_time,
                    realtime=True,
                    on_audio=heard(f"{name}: real time"),
                )
            results.append(score(name, p.recording, listened, realtime, p.realtime))
    return SpeechRun(
        data=str(data),
        stt=settings.models.stt,
        distill_mode=settings.memory.distill.mode,
        turns=turns,
        overlap=pacing.overlap,
        seed=seed,
        realtime_turns=realtime_turns,
        pacing=pacing,
        hangover=settings.vad.hangover_ms / 1000,
        seconds=time.perf_counter() - started,
        machine=host,
        conversations=tuple(results),
    )
