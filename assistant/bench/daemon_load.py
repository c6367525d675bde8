"""`assistant bench daemon`: a real daemon under load, against the same daemon left alone.

A two-voice recording (espeak-ng and sox, `voices.build_recording`) is played to a real
`assistant daemon` subprocess as its file source, in real time, twice, each time into a fresh
data directory:

1. no load: only a fast live-transcript subscriber, which notes when each utterance is
   acknowledged;
2. load: the same fast subscriber, a slow one that reads a line every few seconds, and N clients
   that all start asking questions at once (once the first utterances are in memory, so that
   retrieval finds something and answers reach the LLM), each asking its share of a fixed list.

Ingestion stalls if what the daemon hears waits behind the answers: the delay from the end of a
turn's speech to its words being acknowledged on the live stream, and the lag `/status` reports,
are compared between the two passes. Ask latency is the time to the first streamed token and to
the final answer. The daemon is started and stopped here (no test helpers), so this runs from an
installed package; `espeak-ng` and `sox` must be on PATH.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..config import Settings
from ..errors import AssistantError
from .host import machine
from .stats import percentile
from .voices import Line, Pacing, Recording, build_recording, remove_parts

FORMAT = "assistant-bench-daemon/1"

# A weekend trip planned by two people: facts the questions below can be answered from.
SCRIPT: tuple[Line, ...] = (
    Line("Maya", "Tom, did you book the ferry to Whitby Island for our weekend trip?"),
    Line("Tom", "Yes, the ferry leaves at eight fifteen on Saturday morning from pier four."),
    Line("Maya", "Perfect. My neighbour Agnes will feed my cat Pepper while we are away."),
    Line("Tom", "Good. I reserved two rooms at the Harbour Lantern guest house for two nights."),
    Line("Maya", "How much did the rooms cost in the end?"),
    Line("Tom", "One hundred and ninety pounds in total, with breakfast included."),
    Line("Maya", "I will bring the blue tent in case we camp on Sunday night instead."),
    Line("Tom", "My brother Felix wants to join us on Sunday for the hike to the lighthouse."),
    Line("Maya", "Great. The lighthouse trail is about eleven kilometres long."),
    Line("Tom", "Remember that I am allergic to shellfish, so no seafood platter for me."),
    Line("Maya", "Noted. We can have dinner at the Italian place called Rosa's instead."),
    Line("Tom", "Rosa's closes at nine, so we should book a table for seven."),
    Line("Maya", "I will pack the first aid kit and the rain jackets."),
    Line("Tom", "The forecast says light rain on Saturday and sunshine on Sunday."),
    Line("Maya", "Then we should do the lighthouse hike on Sunday with Felix."),
    Line("Tom", "Agreed. The last ferry back leaves at six in the evening on Monday."),
    Line("Maya", "I need to be back for my dentist appointment on Tuesday at ten."),
    Line("Tom", "That works. I will drive us to the pier and leave the car in the long stay car park."),
    Line("Maya", "Parking costs twelve pounds a day there, I checked yesterday."),
    Line("Tom", "Fine. I will pay for parking and you can pay for dinner at Rosa's."),
)

QUESTIONS: tuple[str, ...] = (
    "When does the ferry leave on Saturday?",
    "Who will feed the cat?",
    "What is the name of the cat?",
    "Where are Maya and Tom staying?",
    "How much did the rooms cost?",
    "What is Tom allergic to?",
    "Who is joining the hike to the lighthouse?",
    "What time should they book the table at Rosa's?",
    "When is the dentist appointment?",
    "How much does parking cost per day?",
)

# Pauses longer than the VAD's hangover (600 ms), so each turn is a segment of its own and its
# acknowledgement is not held back by the next turn; no overlaps, for the same reason.
PACING = Pacing(min_gap=1.0, max_gap=2.0, overlap=0.0, lead=1.0, tail=2.0)
# The clients start once this many utterances are acknowledged: asked earlier, every question
# finds an empty memory and is answered "I don't know" without the LLM, which is no load at all.
LOAD_AFTER_UTTERANCES = 2
STATUS_EVERY = 0.5  # seconds between /status polls
READY_POLL = 0.02  # seconds between connection attempts while the daemon starts
START_TIMEOUT = 600.0  # loading every model on a busy two-core machine
SETTLE_TIMEOUT = 600.0  # after the recording ends: the queue drains, the buffer is filed
# An answer waits for the LLM behind every question asked before it; with 20 clients and the
# 0.5B model on two cores that is minutes, not seconds.
ASK_TIMEOUT = 1800.0
STOP_TIMEOUT = 60.0


class DaemonBenchError(AssistantError):
    """The daemon under test failed to start, answer or stop."""


@dataclass(frozen=True)
class Plan:
    llm: str
    clients: int = 20
    questions_per_client: int = 2
    slow_interval: float = 3.0  # seconds the slow subscriber waits between lines
    turns: int = len(SCRIPT)  # the first N lines of SCRIPT are spoken


# --- the daemon process -------------------------------------------------------------------------


@dataclass
class DaemonProcess:
    """One `assistant daemon` subprocess on its own config, data directory and socket."""

    root: Path
    socket: Path
    config: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.root / "daemon.log"

    def start(self, source: Path) -> float:
        """Start it on `source` and return the wall-clock time it first answered.

        The daemon starts reading its file source just before it starts answering, so this is the
        moment the recording's first sample plays, give or take the API's own start.
        """
        args = [sys.executable, "-m", "assistant", "--config", str(self.config), "-v", "daemon"]
        env = {**os.environ}
        env.setdefault("HF_HUB_OFFLINE", "1")  # the models are installed; never reach for the hub mid-run
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [*args, "--source", str(source)], stdout=log, stderr=subprocess.STDOUT, env=env
            )
        deadline = time.monotonic() + START_TIMEOUT
        with self.client(timeout=5) as c:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise DaemonBenchError(f"the daemon exited with {self.process.returncode}:\n{self._log_tail()}")
                try:
                    if c.get("/status").status_code == 200:
                        return time.time()
                except httpx.TransportError:
                    pass
                time.sleep(READY_POLL)
        raise DaemonBenchError(f"the daemon did not answer within {START_TIMEOUT:.0f} s:\n{self._log_tail()}")

    def client(self, timeout: float = 60.0, read: float | None = None) -> httpx.Client:
        return httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.socket)),
            base_url="http://assistant",
            timeout=httpx.Timeout(timeout, read=read if read is not None else timeout),
        )

    def status(self) -> dict[str, Any]:
        with self.client() as c:
            reply = c.get("/status")
            reply.raise_for_status()
            return reply.json()

    def memory_kib(self) -> tuple[int, int]:
        """Resident memory now and its peak (VmRSS, VmHWM), in KiB; (0, 0) where /proc is missing."""
        if self.process is None:
            return 0, 0
        try:
            text = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return 0, 0
        found = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", text, flags=re.M))
        return int(found.get("VmRSS", 0)), int(found.get("VmHWM", 0))

    def stop(self) -> int:
        """SIGTERM, as systemd stops it; SIGKILL if it is still there after STOP_TIMEOUT."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process is not None else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return -signal.SIGKILL

    def _log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


def write_config(root: Path, socket: Path, settings: Settings, llm: str) -> Path:
    """The daemon's own config: on top of the defaults and the user's file, like any daemon."""
    config = root / "config.yaml"
    # The models the invoking config uses, not only the defaults: a bench of the wrong model says nothing.
    models = {"llm": llm, "stt": str(settings.models.stt)}
    data = {
        "paths": {"data_dir": str(root / "data"), "models_dir": str(settings.models_dir)},
        "models": models,
        "memory": {"distill": {"mode": "extractive"}},
        # Whatever the user's file says: no TCP port to collide with their own daemon's, and no
        # quiet hours to silence a run at night.
        "daemon": {"socket": str(socket), "stop_seconds": 10, "tcp": {"enabled": False}, "quiet_hours": []},
    }
    # JSON is YAML, and it quotes every path whatever characters it holds.
    config.write_text(json.dumps(data, indent=1))
    return config


@contextmanager
def running_daemon(root: Path, settings: Settings, llm: str) -> Iterator[DaemonProcess]:
    """A daemon for one pass, always stopped on the way out (an exception, Ctrl-C)."""
    # Every pass hears the recording into an empty memory, also when --keep names an old run.
    shutil.rmtree(root / "data", ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    # A Unix socket path is limited to about 100 bytes; --keep may name a long directory.
    sockets = Path(tempfile.mkdtemp(prefix="assistant-bench-daemon-sock-"))
    socket = sockets / "api.sock"
    daemon = DaemonProcess(root, socket, write_config(root, socket, settings, llm))
    try:
        yield daemon
    except BaseException:
        daemon.stop()  # its exit status would only hide what went wrong first
        raise
    else:
        code = daemon.stop()
        if code != 0:
            raise DaemonBenchError(f"the daemon stopped with exit status {code}:\n{daemon._log_tail()}")
    finally:
        shutil.rmtree(sockets, ignore_errors=True)


# --- what the clients see -----------------------------------------------------------------------


@dataclass
class LiveReader:
    """The live transcript on a thread: each line with the wall-clock time it arrived.

    `interval` > 0 makes a slow reader: it waits that long after every line it reads, so lines
    pile up behind it (in the socket's buffers, then the daemon's per-subscriber backlog).
    """

    daemon: DaemonProcess
    interval: float = 0.0
    utterances: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    skipped: int = 0
    hello: dict[str, Any] | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        self._client = self.daemon.client(timeout=30, read=None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="live-reader", daemon=True)

    def start(self) -> LiveReader:
        self._thread.start()
        return self

    def _read(self) -> None:
        try:
            with self._client.stream("GET", "/utterances/stream") as response:
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    kind = event.get("type")
                    if kind == "utterance":
                        self.utterances.append((time.time(), event))
                    elif kind == "skipped":
                        self.skipped += int(event.get("count", 0))
                    elif kind == "hello":
                        self.hello = event
                    if self.interval and self._stop.wait(self.interval):
                        return
        except (httpx.TransportError, httpx.StreamError) as exc:
            if not self._stop.is_set():
                self.error = f"{type(exc).__name__}: {exc}"

    def close(self) -> None:
        self._stop.set()
        self._client.close()
        self._thread.join(5)


@dataclass
class StatusPoller:
    """/status every STATUS_EVERY seconds: the lag and queue it reports, and how long it took."""

    daemon: DaemonProcess
    samples: list[dict[str, Any]] = field(default_factory=list)
    failures: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="status-poller", daemon=True)

    def start(self) -> StatusPoller:
        self._thread.start()
        return self

    def _poll(self) -> None:
        with self.daemon.client(timeout=120) as c:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                try:
                    s = c.get("/status").json()
                except (httpx.TransportError, ValueError):
                    self.failures += 1
                else:
                    self.samples.append(
                        {
                            "at": time.time(),
                            "ms": (time.perf_counter() - t0) * 1000,
                            "lag": float(s["lag_seconds"]),
                            "queued": int(s["queued_segments"]) + int(s["spooled_segments"]),
                            "status": s,
                        }
                    )
                self._stop.wait(STATUS_EVERY)

    def last(self) -> dict[str, Any] | None:
        return self.samples[-1]["status"] if self.samples else None

    def close(self) -> None:
        self._stop.set()
        self._thread.join(130)


@dataclass
class AskResult:
    client: int
    question: str
    sent: float  # wall-clock
    first_token: float | None = None  # seconds after sending
    answer: float | None = None
    knows: bool | None = None
    used_llm: bool | None = None  # false: nothing relevant in memory, answered without the LLM
    text: str = ""
    error: str | None = None


def _ask(daemon: DaemonProcess, client: int, question: str) -> AskResult:
    result = AskResult(client, question, time.time())
    t0 = time.perf_counter()
    try:
        with (
            daemon.client(timeout=60, read=ASK_TIMEOUT) as c,
            c.stream("POST", "/ask", json={"question": question}) as response,
        ):
            if response.status_code != 200:
                result.error = f"HTTP {response.status_code}: {response.read().decode(errors='replace')[:200]}"
                return result
            for line in response.iter_lines():
                if not line.strip():
                    continue
                event = json.loads(line)
                if event["type"] == "token" and result.first_token is None:
                    result.first_token = time.perf_counter() - t0
                elif event["type"] == "answer":
                    result.answer = time.perf_counter() - t0
                    result.knows = bool(event["knows"])
                    result.used_llm = int(event["context_tokens"]) > 0
                    result.text = str(event["text"])
                elif event["type"] == "error":
                    result.error = str(event["error"])
    except (httpx.TransportError, httpx.StreamError, ValueError, KeyError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    return result


def _client_questions(plan: Plan, client: int) -> list[str]:
    # Each client starts at a different question, so the memory is asked about everything at once.
    return [QUESTIONS[(client + k * plan.clients) % len(QUESTIONS)] for k in range(plan.questions_per_client)]


# --- one pass -----------------------------------------------------------------------------------


# An utterance stamped this far outside every turn's speech belongs to none (a stray piece).
MATCH_SLACK = 1.0


def turn_of(recording: Recording, offset: float) -> int | None:
    """The turn whose speech is nearest to `offset` (seconds into the recording), within MATCH_SLACK.

    Matched by time, not by words: Whisper mishears some synthetic turns badly enough that few of
    their words survive ("Rosa's closes at nine" came back as "Roses glow in at high"), and turns
    are at least a second apart, far more than the error in where a piece is stamped.
    """
    best, distance = None, MATCH_SLACK
    for i, turn in enumerate(recording.turns):
        d = max(turn.start - offset, 0.0, offset - turn.end)
        if d <= distance:
            best, distance = i, d
    return best


def acknowledgements(recording: Recording, heard: list[tuple[float, dict[str, Any]]], t0: float) -> list[float | None]:
    """Per turn, when the last utterance holding its words was acknowledged (None: never).

    Each utterance carries the time its speech started, stamped by the daemon from the moment it
    started playing the file (`t0`, in epoch seconds; a turn heard as two pieces gets both).
    """
    done: list[float | None] = [None] * len(recording.turns)
    for received, event in heard:
        i = turn_of(recording, float(event["time"]) - t0)
        if i is not None:
            done[i] = max(done[i] or 0.0, received)
    return done


def _latency(values: list[float]) -> dict[str, float | int]:
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.5), 3),
        "p95": round(percentile(values, 0.95), 3),
        "max": round(max(values, default=0.0), 3),
    }


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}


def _wait(predicate: Callable[[], bool], timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def _settled(s: dict[str, Any] | None) -> bool:
    if s is None:
        return False
    m = s["memory"]
    return s["state"] == "source ended" and s["idle"] and m["pending_blocks"] == 0 and m["buffered"] == 0


def run_pass(
    name: str,
    recording: Recording,
    settings: Settings,
    plan: Plan,
    root: Path,
    *,
    load: bool,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    with running_daemon(root, settings, plan.llm) as daemon:
        started = time.time()
        t0 = daemon.start(recording.path)
        progress(f"{name}: daemon ready after {t0 - started:.1f} s; playing {recording.duration:.0f} s of speech")
        fast = LiveReader(daemon).start()
        poller = StatusPoller(daemon).start()
        slow = LiveReader(daemon, interval=plan.slow_interval).start() if load else None
        asks: list[AskResult] = []
        threads: list[threading.Thread] = []
        load_started = load_ended = None
        try:
            if load:
                _wait(lambda: len(fast.utterances) >= LOAD_AFTER_UTTERANCES, recording.duration + SETTLE_TIMEOUT)
                load_started = time.time()
                lock = threading.Lock()

                def client(i: int) -> None:
                    for question in _client_questions(plan, i):
                        result = _ask(daemon, i, question)
                        with lock:
                            asks.append(result)

                threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(plan.clients)]
                for thread in threads:
                    thread.start()
                progress(
                    f"{name}: {plan.clients} clients asking {plan.questions_per_client} question(s) each, "
                    f"{load_started - t0:.1f} s into the recording"
                )
            # The recording plays to its end whatever happens; then what was heard is filed.
            time.sleep(max(0.0, t0 + recording.duration - time.time()))
            if not _wait(lambda: _settled(poller.last()), SETTLE_TIMEOUT, step=0.5):
                progress(f"{name}: not settled {SETTLE_TIMEOUT:.0f} s after the recording ended")
            deadline = time.monotonic() + ASK_TIMEOUT
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            if load:
                load_ended = time.time()
            if slow is not None:
                # A slow reader still reading everything it was sent, or told what it lost.
                expected = len(fast.utterances)
                _wait(
                    lambda: len(slow.utterances) + slow.skipped >= expected,
                    timeout=expected * plan.slow_interval + 30,
                    step=0.5,
                )
            rss_kib, peak_kib = daemon.memory_kib()
            final = daemon.status()
        finally:
            fast.close()
            poller.close()
            if slow is not None:
                slow.close()
        wall = time.time() - started

    acked = acknowledgements(recording, fast.utterances, t0)
    heard = [
        {
            "acknowledged": round(at - t0, 3),
            "start": round(float(e["time"]) - t0, 3),
            "turn": turn_of(recording, float(e["time"]) - t0),
            "speaker": e.get("speaker"),
            "text": e.get("text"),
        }
        for at, e in fast.utterances
    ]
    # How far the daemon's stamps fall from the script's turn starts: the error of t0 (when the
    # daemon first answered) plus where Whisper puts a first word; small next to the delays.
    offsets = [h["start"] - recording.turns[h["turn"]].start for h in heard if h["turn"] is not None]
    delays = [
        {
            "index": turn.index,
            "speaker": turn.speaker,
            "end": round(turn.end, 3),
            "acknowledged": None if at is None else round(at - t0, 3),
            "delay": None if at is None else round(at - (t0 + turn.end), 3),
        }
        for turn, at in zip(recording.turns, acked, strict=True)
    ]
    # The turns whose speech ended while the questions were being answered: the ones load can stall.
    if load_started is not None and load_ended is not None:
        for d in delays:
            d["under_load"] = load_started - t0 <= d["end"] <= load_ended - t0
    measured = [d["delay"] for d in delays if d["delay"] is not None]
    samples = poller.samples
    during = [s for s in samples if load_started is None or (load_started <= s["at"] <= (load_ended or s["at"]))]
    report: dict[str, Any] = {
        "name": name,
        "wall_seconds": round(wall, 1),
        "ready_seconds": round(t0 - started, 1),
        "ingest": {
            "turns": len(recording.turns),
            "acknowledged_utterances": len(fast.utterances),
            "turns_acknowledged": len(measured),
            "missed_turns": [d["index"] for d in delays if d["delay"] is None],
            "delay": _latency(measured),
            "delays": delays,
            "stamp_offset_p50": round(percentile(offsets, 0.5), 3),
            "utterances": heard,
        },
        "status": {
            "polls": len(samples),
            "failed_polls": poller.failures,
            "lag_max": round(max((s["lag"] for s in samples), default=0.0), 2),
            "queued_max": max((s["queued"] for s in samples), default=0),
            "lag_max_under_load": round(max((s["lag"] for s in during), default=0.0), 2) if load else None,
            "status_ms": _latency([s["ms"] for s in samples]),
        },
        "daemon": {
            "rss_mib": round(rss_kib / 1024, 1),
            "peak_rss_mib": round(peak_kib / 1024, 1),
            "memory_tokens": final["memory"]["tokens"],
            "utterances": final["memory"]["utterances"],
            "speakers": len(final["speakers"]),
            "devices": final["devices"],
        },
        "live_stream_error": fast.error,
    }
    if load:
        assert slow is not None and load_started is not None
        done = [a for a in asks if a.error is None and a.answer is not None]
        with_llm = [a for a in done if a.used_llm]
        under = [d["delay"] for d in delays if d.get("under_load") and d["delay"] is not None]
        report["load"] = {
            "clients": plan.clients,
            "questions_per_client": plan.questions_per_client,
            "started_at": round(load_started - t0, 2),
            "seconds": round((load_ended or load_started) - load_started, 1),
            "asked": len(asks),
            "answered": len(done),
            "errors": [a.error for a in asks if a.error is not None][:10],
            "error_count": sum(1 for a in asks if a.error is not None),
            "answered_by_llm": len(with_llm),
            "knows": sum(1 for a in done if a.knows),
            "first_token": _latency([a.first_token for a in done if a.first_token is not None]),
            "answer": _latency([a.answer for a in done if a.answer is not None]),
            "first_token_llm": _latency([a.first_token for a in with_llm if a.first_token is not None]),
            "answer_llm": _latency([a.answer for a in with_llm if a.answer is not None]),
            "asks": [_rounded(asdict(a)) | {"sent": round(a.sent - t0, 2)} for a in asks],
            "turns_under_load": len(under),
        }
        report["slow_subscriber"] = {
            "interval_seconds": plan.slow_interval,
            "lines": len(slow.utterances),
            "expected": len(fast.utterances),
            "skipped": slow.skipped,
            "complete": len(slow.utterances) + slow.skipped >= len(fast.utterances),
            "all_lines": len(slow.utterances) >= len(fast.utterances) and slow.skipped == 0,
            "error": slow.error,
        }
    return report


# --- the whole bench ----------------------------------------------------------------------------


def make_recording(directory: Path, turns: int) -> Recording:
    lines = SCRIPT[: max(2, min(turns, len(SCRIPT)))]
    recording = build_recording(lines, directory, name="trip", pacing=PACING, seed=0)
    remove_parts(directory, "trip")
    return recording


def run_daemon_bench(
    settings: Settings,
    plan: Plan,
    work: Path,
    *,
    command: str = "",
    progress: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    host = machine()
    progress(f"speaking {plan.turns} turns with espeak-ng")
    recording = make_recording(work / "audio", plan.turns)
    idle = run_pass("no load", recording, settings, plan, work / "idle", load=False, progress=progress)
    loaded = run_pass("load", recording, settings, plan, work / "load", load=True, progress=progress)
    comparison = compare(idle, loaded)
    return {
        "format": FORMAT,
        "meta": {
            "command": command,
            "llm": plan.llm,
            "stt": str(settings.models.stt),
            "distill_mode": "extractive",
            "clients": plan.clients,
            "questions_per_client": plan.questions_per_client,
            "slow_interval": plan.slow_interval,
            "load_after_utterances": LOAD_AFTER_UTTERANCES,
            "turns": len(recording.turns),
            "audio_seconds": round(recording.duration, 2),
            "questions": list(QUESTIONS),
            "date": host.date,
            "machine": host.describe(),
            "cpus": host.cpus,
            "load_average": host.load_average,
        },
        "recording": [
            {"index": t.index, "speaker": t.speaker, "text": t.text, "start": round(t.start, 3), "end": round(t.end, 3)}
            for t in recording.turns
        ],
        "passes": {"idle": idle, "load": loaded},
        "comparison": comparison,
    }


def compare(idle: dict[str, Any], loaded: dict[str, Any]) -> dict[str, Any]:
    """The same turns, heard with and without the load."""
    under = {d["index"] for d in loaded["ingest"]["delays"] if d.get("under_load")}
    idle_by = {d["index"]: d["delay"] for d in idle["ingest"]["delays"]}
    load_by = {d["index"]: d["delay"] for d in loaded["ingest"]["delays"]}
    paired = [i for i in sorted(under) if idle_by.get(i) is not None and load_by.get(i) is not None]
    a = [idle_by[i] for i in paired]
    b = [load_by[i] for i in paired]
    return {
        "turns_compared": len(paired),
        "delay_p50_idle": round(percentile(a, 0.5), 3),
        "delay_p50_load": round(percentile(b, 0.5), 3),
        "delay_p95_idle": round(percentile(a, 0.95), 3),
        "delay_p95_load": round(percentile(b, 0.95), 3),
        "delay_increase_p50": round(percentile([y - x for x, y in zip(a, b, strict=True)], 0.5), 3),
        "lag_max_idle": idle["status"]["lag_max"],
        "lag_max_load": loaded["status"]["lag_max"],
        "missed_turns_idle": len(idle["ingest"]["missed_turns"]),
        "missed_turns_load": len(loaded["ingest"]["missed_turns"]),
        # Stalled: under load, something heard was never acknowledged that was without it, or the
        # daemon stopped answering /status. Slower acknowledgement is what the delays above show.
        "stalled": len(loaded["ingest"]["missed_turns"]) > len(idle["ingest"]["missed_turns"])
        or loaded["status"]["failed_polls"] > 0,
    }


def daemon_markdown(report: dict[str, Any]) -> str:
    meta, idle, loaded, cmp = report["meta"], report["passes"]["idle"], report["passes"]["load"], report["comparison"]
    load, slow = loaded["load"], loaded["slow_subscriber"]

    def lat(x: dict[str, Any]) -> str:
        return f"{x['p50']:.2f} s (p95 {x['p95']:.2f}, max {x['max']:.2f}; n={x['n']})"

    lines = [
        f"# Daemon under load ({meta['date']})",
        "",
        f"Machine: {meta['machine']}. LLM {meta['llm']}, speech to text {meta['stt']}, extractive distillation.",
        f"Recording: {meta['turns']} turns, {meta['audio_seconds']:.0f} s, two espeak-ng voices, played in real time.",
        f"Load: {load['clients']} clients x {load['questions_per_client']} question(s), all at once from "
        f"{load['started_at']:.1f} s into the recording, for {load['seconds']:.0f} s; a slow live-transcript "
        f"reader ({slow['interval_seconds']:.0f} s per line).",
        "",
        "| | no load | load |",
        "|---|---|---|",
        f"| end of speech to acknowledged, all turns | {lat(idle['ingest']['delay'])} "
        f"| {lat(loaded['ingest']['delay'])} |",
        f"| same, the {cmp['turns_compared']} turns that ended under load | {cmp['delay_p50_idle']:.2f} s "
        f"(p95 {cmp['delay_p95_idle']:.2f}) | {cmp['delay_p50_load']:.2f} s (p95 {cmp['delay_p95_load']:.2f}) |",
        f"| turns never acknowledged | {cmp['missed_turns_idle']} | {cmp['missed_turns_load']} |",
        f"| /status lag, max | {idle['status']['lag_max']:.2f} s | {loaded['status']['lag_max']:.2f} s |",
        f"| queued segments, max | {idle['status']['queued_max']} | {loaded['status']['queued_max']} |",
        f"| /status response time | {idle['status']['status_ms']['p50']:.0f} ms (p95 "
        f"{idle['status']['status_ms']['p95']:.0f}) | {loaded['status']['status_ms']['p50']:.0f} ms (p95 "
        f"{loaded['status']['status_ms']['p95']:.0f}) |",
        f"| daemon RSS at the end (peak) | {idle['daemon']['rss_mib']:.0f} MiB ({idle['daemon']['peak_rss_mib']:.0f})"
        f" | {loaded['daemon']['rss_mib']:.0f} MiB ({loaded['daemon']['peak_rss_mib']:.0f}) |",
        "",
        f"Asks: {load['answered']} of {load['asked']} answered ({load['error_count']} errors), "
        f"{load['answered_by_llm']} by the LLM (the rest found nothing relevant), {load['knows']} with an answer.",
        "",
        "| ask latency | first token | final answer |",
        "|---|---|---|",
        f"| all | {lat(load['first_token'])} | {lat(load['answer'])} |",
        f"| answered by the LLM | {lat(load['first_token_llm'])} | {lat(load['answer_llm'])} |",
        "",
        f"Slow subscriber: {slow['lines']} of {slow['expected']} lines, {slow['skipped']} skipped "
        f"({'every line' if slow['all_lines'] else 'told what it lost' if slow['complete'] else 'INCOMPLETE'}).",
        f"Stalled: {'YES' if cmp['stalled'] else 'no'} "
        f"(median extra delay under load {cmp['delay_increase_p50']:.2f} s).",
    ]
    return "\n".join(lines) + "\n"
