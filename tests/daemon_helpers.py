"""A real `assistant daemon` process for the tests: its config, its socket, its recordings."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx

from assistant.bench import daemon_process
from assistant.bench.daemon_process import settled
from assistant.bench.synth_conversation import Turn, speak_turns

from .conftest import MODELS_DIR
from .fake_portaudio import Playlist

# Put first on a daemon's PYTHONPATH, its sitecustomize fakes the microphone (see there).
FAKE_MICROPHONE = Path(__file__).resolve().parent / "fake_microphone"

# `GET /push-to-talk` while nothing is being recorded, for a question or a voice to enroll.
NOT_RECORDING = {"recording": False, "seconds": 0.0, "level_dbfs": None, "purpose": None, "limit_seconds": None}

# Two voices the diarizer tells apart (tests/test_listen.py measures it).
VOICES = {"Sam": ("en-us", "-s", "160"), "Priya": ("en+f5", "-s", "145")}

PART_ONE = [
    ("Sam", "Morning Priya. Did you see the email about the Lisbon trip?"),
    ("Priya", "Yes. We fly out on the fourteenth of May and come back on the nineteenth."),
    ("Sam", "Great. I will send the slides for the client workshop by Thursday."),
    ("Priya", "Thanks. Finance approved twelve thousand euros for the whole trip."),
    ("Sam", "Who is looking after your dog while you are away?"),
    ("Priya", "My sister will take Biscuit. She loves that little dog."),
]
PART_TWO = [
    ("Sam", "The new Italian restaurant near the station is really good."),
    ("Priya", "I am allergic to peanuts, so I always ask them first."),
    ("Sam", "Then we will book a table for Friday evening at seven."),
]


def names_the_booked_day(answer: str) -> bool:
    """Whether an answer to "When will we book a table?" names the day PART_TWO books it for:
    "Friday", or the date written beside it in the context (the first Friday after the day it
    was said: today, or yesterday when a test crosses midnight)."""
    today = date.today()
    fridays = {d + timedelta(days=(4 - d.weekday() - 1) % 7 + 1) for d in (today, today - timedelta(days=1))}
    text = answer.lower()
    return "friday" in text or any(f"{d.day} {d.strftime('%B').lower()}" in text for d in fridays)


def make_recording(directory: Path, turns: list[tuple[str, str]], *, gap: float = 1.0) -> Path:
    """`turns` (who, words) said one after another, `gap` seconds apart, after half a second of silence."""
    said = [Turn(who, text, VOICES[who], pause=0.5 if i == 0 else gap) for i, (who, text) in enumerate(turns)]
    return speak_turns(directory, said, tail=gap).path


@dataclass
class DaemonProcess(daemon_process.DaemonProcess):
    """The package's daemon process, with what the tests add: a fake microphone, a clean-up list."""

    # Shared by a module's tests: its fixture ends it, not the per-test cleanup.
    shared: bool = False
    # The fake microphone the daemon hears when it has no source (set by `start(fake_mic=...)`).
    fake_mic: Playlist | None = None

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def env(self) -> dict[str, str]:
        env = {
            **super().env(),
            "XDG_CONFIG_HOME": str(self.root / "xdg"),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "HF_HUB_OFFLINE": "1",
        }
        if self.fake_mic is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAKE_MICROPHONE), os.environ.get("PYTHONPATH")]))
            env.update(self.fake_mic.env())
        return env

    def start(
        self,
        source: Path | None = None,
        *,
        wait: float = 300,
        fake_mic: Playlist | None = None,
        stdin: Path | None = None,
    ) -> DaemonProcess:
        """Start on `source`, or with none on the microphone: `fake_mic`'s when given (kept for restarts).

        `stdin` (raw 16 kHz mono s16le PCM) is heard as `--source -`: as fast as it can be read,
        not at the pace of speech, so segments arrive faster than they can be transcribed.
        """
        if fake_mic is not None:
            self.fake_mic = fake_mic
        # A restart adds to the log of the runs before it: tests read what every run said.
        self.launch(source, stdin=stdin, append_log=True)
        _STARTED.append(self)
        try:
            self.wait_until_answering(wait, poll=0.5)
        except daemon_process.DaemonError as exc:
            raise AssertionError(f"{exc.reason}:\n{self.log.read_text()}") from None
        return self

    def wait_for(self, predicate: Any, what: str, timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.status()
            if predicate(s):
                return s
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}; last status {s}")

    def signal(self, sig: int) -> None:
        assert self.process is not None
        self.process.send_signal(sig)


_STARTED: list[DaemonProcess] = []


def stored_utterances(data_dir: Path) -> dict[int, str]:
    """The utterance archive, read as any other reader of the WAL database may: a second read-only connection."""
    from assistant.store.db import _sqlite_module

    db = _sqlite_module().connect(f"file:{data_dir / 'memory.db'}?mode=ro", uri=True)
    try:
        return {row[0]: row[1] for row in db.execute("SELECT id, text FROM utterances")}
    finally:
        db.close()


@contextmanager
def running(
    d: DaemonProcess, recording: Path | None = None, what: str = "the recording to be filed"
) -> Iterator[DaemonProcess]:
    """`d` for the block (started on `recording` and everything filed, when one is given), then
    stopped cleanly; killed instead if a failure left it running."""
    try:
        if recording is not None:
            d.start(recording)
            d.wait_for(settled, what)
        yield d
        assert d.stop() == 0, d.log.read_text()[-5000:]
    finally:
        d.kill_if_running()


def kill_leftovers() -> None:
    """A test that failed midway leaves its daemon running: end it (called by a fixture)."""
    for d in [d for d in _STARTED if not d.shared]:
        _STARTED.remove(d)
        d.kill_if_running()


def daemon_config(
    root: Path, *, llm: str | None = "qwen2.5-coder-0.5b-instruct", budget: int = 32768, extra: str = ""
) -> DaemonProcess:
    """A config for a test daemon; `extra` is appended inside its `daemon:` section.

    The 0.5B answerer keeps daemon tests quick; `llm=None` keeps the product's default
    (config/default.yaml), for tests that check what an answer says: the 0.5B model answers
    "When do we fly out?" with the day the words were said, not the day they name.
    """
    root.mkdir(parents=True, exist_ok=True)
    socket = root / "run" / "assistant" / "api.sock"
    config = root / "config.yaml"
    models = f"models:\n  llm: {llm}\n" if llm is not None else ""
    config.write_text(
        f"paths:\n  data_dir: {root / 'data'}\n  models_dir: {MODELS_DIR}\n{models}"
        f"memory:\n  distill:\n    mode: extractive\n  budget:\n    token_budget: {budget}\n"
        f"daemon:\n  socket: {socket}\n  stop_seconds: 10\n" + extra
    )
    return DaemonProcess(root, config, socket)


class Transcript:
    """Reads the live transcript on a thread: what the daemon acknowledged, in order."""

    def __init__(self, daemon: DaemonProcess) -> None:
        self.events: list[dict[str, Any]] = []
        self.relabels: list[dict[str, Any]] = []
        self.skipped = 0
        self._client = daemon.client()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            with self._client.stream("GET", "/utterances/stream") as response:
                import json

                for line in response.iter_lines():
                    event = json.loads(line)
                    if event["type"] == "utterance":
                        self.events.append(event)
                    elif event["type"] == "relabel":
                        self.relabels.append(event)
                    elif event["type"] == "skipped":
                        self.skipped += event["count"]
        except (httpx.TransportError, httpx.StreamError):
            pass  # the daemon went away: what was read so far is what was acknowledged

    def wait(self, count: int, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while len(self.events) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(self.events) >= count, f"only {len(self.events)} utterances acknowledged"

    def close(self) -> None:
        self._client.close()


@dataclass
class MicRoom:
    """A daemon on a fake microphone, with its live transcript read since it started; each test
    file says how its people speak (`say`) and what it waits to hear."""

    daemon: DaemonProcess
    mic: Playlist
    live: Transcript
    recordings: Path

    def play(self, wav: Path) -> None:
        self.mic.wait_played(self.mic.play(wav))

    def settled(self) -> None:
        """Everything the segmenter has cut is transcribed and filed."""
        self.daemon.wait_for(lambda s: s["idle"] and s["queued_segments"] == 0, "the queue to drain")
