"""A real `assistant daemon` process for the tests: its config, its socket, its recordings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .audio_helpers import espeak, silence, sox, to_16k
from .conftest import MODELS_DIR
from .fake_portaudio import Playlist

# Put first on a daemon's PYTHONPATH, its sitecustomize fakes the microphone (see there).
FAKE_MICROPHONE = Path(__file__).resolve().parent / "fake_microphone"

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


def make_recording(directory: Path, turns: list[tuple[str, str]], *, gap: float = 1.0) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    parts: list[Path] = [silence(directory / "lead.wav", 0.5)]
    between = silence(directory / "gap.wav", gap)
    for i, (who, text) in enumerate(turns):
        voice, *options = VOICES[who]
        parts.append(to_16k(espeak(directory / f"{i}_raw.wav", text, voice, *options), directory / f"{i}.wav"))
        parts.append(between)
    out = directory / "conversation.wav"
    sox(*parts, out)
    return out


@dataclass
class DaemonProcess:
    root: Path
    config: Path
    socket: Path
    process: subprocess.Popen[bytes] | None = None
    # Shared by a module's tests: its fixture ends it, not the per-test cleanup.
    shared: bool = False
    # The fake microphone the daemon hears when it has no source (set by `start(fake_mic=...)`).
    fake_mic: Playlist | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.root / "daemon.log"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
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
        args = [sys.executable, "-m", "assistant", "--config", str(self.config), "-v", "daemon"]
        if stdin is not None:
            args += ["--source", "-"]
        elif source is not None:
            args += ["--source", str(source)]
        with open(self.log, "ab") as log, open(stdin or os.devnull, "rb") as pcm:
            self.process = subprocess.Popen(args, stdin=pcm, stdout=log, stderr=subprocess.STDOUT, env=self.env())
        _STARTED.append(self)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the daemon exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                if self.client().get("/status").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"the daemon did not answer within {wait} s:\n{self.log.read_text()}")

    def client(self, timeout: float = 60) -> httpx.Client:
        return httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.socket)),
            base_url="http://assistant",
            timeout=httpx.Timeout(timeout, read=None),
        )

    def status(self) -> dict[str, Any]:
        with self.client() as c:
            return c.get("/status").json()

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

    def stop(self, timeout: float = 60) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def settled(s: dict[str, Any]) -> bool:
    """The source is done and everything it said is transcribed, filed and distilled."""
    m = s["memory"]
    return s["state"] == "source ended" and s["idle"] and m["pending_blocks"] == 0 and m["buffered"] == 0


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
        if d.process is not None and d.process.poll() is None:
            d.process.kill()
            d.process.wait()


def kill_leftovers() -> None:
    """A test that failed midway leaves its daemon running: end it (called by a fixture)."""
    for d in [d for d in _STARTED if not d.shared]:
        _STARTED.remove(d)
        if d.process is not None and d.process.poll() is None:
            d.process.kill()
            d.process.wait()


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
