"""`assistant bench daemon`: a real daemon under load, against the same daemon left alone.

A two-voice recording (espeak-ng and sox, `synth_conversation.build_recording`) is played to a real
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
the final answer. The daemon is started and stopped by `daemon_process.py`, which the tests use
too, so this runs from an installed package; `espeak-ng` and `sox` must be on PATH.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config import Settings
from .daemon_load_clients import ASK_TIMEOUT, AskResult, LiveReader, StatusPoller, ask
from .daemon_load_plan import LOAD_AFTER_UTTERANCES, PACING, QUESTIONS, SCRIPT, Plan, client_questions
from .daemon_load_scoring import ObservedPass, compare, score_pass
from .daemon_process import DaemonError, DaemonProcess
from .host import machine
from .synth_conversation import Recording, build_recording, remove_parts

FORMAT = "assistant-bench-daemon/1"
READY_POLL = 0.02  # seconds between connection attempts while the daemon starts
START_TIMEOUT = 600.0  # loading every model on a busy two-core machine
SETTLE_TIMEOUT = 600.0  # after the recording ends: the queue drains, the buffer is filed
STOP_TIMEOUT = 60.0


# --- the daemon of one pass ---------------------------------------------------------------------


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
    daemon = DaemonProcess(root, config=write_config(root, socket, settings, llm), socket=socket)
    try:
        yield daemon
    except BaseException:
        daemon.stop(STOP_TIMEOUT)  # its exit status would only hide what went wrong first
        raise
    else:
        code = daemon.stop(STOP_TIMEOUT)
        if code != 0:
            raise DaemonError(f"the daemon stopped with exit status {code}", daemon.log_tail())
    finally:
        shutil.rmtree(sockets, ignore_errors=True)


# --- one pass -----------------------------------------------------------------------------------


def _wait(predicate: Callable[[], bool], timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


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
        daemon.launch(recording.path)
        t0 = daemon.wait_until_answering(START_TIMEOUT, poll=READY_POLL)
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
                    for question in client_questions(plan, i):
                        result = ask(daemon, i, question)
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
            if not _wait(lambda: (s := poller.last()) is not None and s.settled, SETTLE_TIMEOUT, step=0.5):
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
            with daemon.service(read=60) as service:
                final = service.status()
        finally:
            fast.close()
            poller.close()
            if slow is not None:
                slow.close()
        wall = time.time() - started

    return score_pass(
        ObservedPass(
            name=name,
            recording=recording,
            plan=plan,
            load=load,
            started=started,
            t0=t0,
            wall=wall,
            fast=fast,
            slow=slow,
            poller=poller,
            asks=asks,
            load_started=load_started,
            load_ended=load_ended,
            rss_kib=rss_kib,
            peak_kib=peak_kib,
            final=final,
        )
    )


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
