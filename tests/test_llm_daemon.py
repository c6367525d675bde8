"""The daemon with `llm.backend: openai`: answers and distillation on a server, hearing always here.

A real daemon subprocess hears a fake microphone (tests/fake_microphone: only the hardware is
fake) or a file, and its LLM is llama-cpp-python's own server on the 0.5B model, which the tests
kill and start again; or a port where nothing listens.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from assistant.daemon.client import DaemonClient, DaemonRefused
from assistant.records import Answer

from .daemon_helpers import (
    PART_ONE,
    PART_TWO,
    DaemonProcess,
    daemon_config,
    kill_leftovers,
    make_recording,
    names_the_booked_day,
)
from .fake_portaudio import Playlist
from .llm_server import LLMServer, free_port, llm_server


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


def served_daemon(root: Path, base_url: str, *, distill: str = "llm") -> DaemonProcess:
    """A daemon whose LLM is served at `base_url`; a conversation is filed 2 s after its last word."""
    d = daemon_config(root, extra=f"  idle_flush_seconds: 2\nllm:\n  backend: openai\n  base_url: {base_url}\n")
    d.config.write_text(d.config.read_text().replace("mode: extractive", f"mode: {distill}"))
    return d


def ask(d: DaemonProcess, question: str) -> Answer:
    with DaemonClient(d.socket, timeout=300) as client:
        *_, answer = client.ask(question)
    assert isinstance(answer, Answer)
    return answer


def filed(s: dict[str, Any]) -> bool:
    """Everything heard is transcribed and cut into blocks (distilled or still pending)."""
    return s["idle"] and s["memory"]["buffered"] == 0


@dataclass
class Room:
    server: LLMServer
    daemon: DaemonProcess
    mic: Playlist
    recordings: Path

    def say(self, name: str, turns: list[tuple[str, str]]) -> None:
        """Play a conversation into the microphone; returns once the last of it was heard."""
        self.mic.wait_played(self.mic.play(make_recording(self.recordings / name, turns)), timeout=120)


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Room]:
    root = tmp_path_factory.mktemp("served-daemon")
    with llm_server(root / "server") as server:
        d = served_daemon(root / "daemon", server.base_url)
        d.shared = True
        mic = Playlist(root / "playlist")
        try:
            d.start(fake_mic=mic)
            yield Room(server, d, mic, root / "recordings")
            assert d.stop() == 0, d.log.read_text()[-5000:]
            assert "Traceback" not in d.log.read_text(), d.log.read_text()[-5000:]
        finally:
            if d.process is not None and d.process.poll() is None:
                d.process.kill()
                d.process.wait()


@pytest.mark.slow
def test_the_daemon_answers_with_evidence_and_distils_on_the_server(room):
    d, server = room.daemon, room.server
    before = server.chat_requests()
    room.say("two", PART_TWO)
    s = d.wait_for(
        lambda s: filed(s) and s["memory"]["pending_blocks"] == 0 and s["memory"]["events"] >= 1,
        "the conversation to be distilled",
    )
    # An event phrase and a scene label for each block, written by the server.
    assert server.chat_requests() - before >= 2
    # The model the server lists first (llama-cpp-python's server names it by its file).
    assert s["models"]["llm"].endswith(f"qwen2.5-coder-0.5b-instruct-q4_k_m.gguf at {server.base_url}"), s["models"]
    assert s["devices"]["llm"] == "served"

    answer = ask(d, "When will we book a table?")
    assert answer.knows and names_the_booked_day(answer.text), answer.text
    assert any("Friday" in e.text for e in answer.evidence), answer.evidence


@pytest.mark.slow
def test_a_server_killed_mid_answer_fails_clearly_and_all_resumes_when_it_is_back(room):
    d, server = room.daemon, room.server
    if d.status()["acknowledged"] == 0:  # run alone: the memory needs something to answer from
        room.say("two", PART_TWO)
        d.wait_for(lambda s: filed(s) and s["memory"]["pending_blocks"] == 0, "the conversation to be distilled")
    pieces: list[str] = []
    logged = len(d.log.read_text())
    # A question the memory can answer: a bare "not mentioned" is held back whole (for a second look),
    # so the server would be killed after the answer, not in the middle of it.
    with DaemonClient(d.socket, timeout=300) as client, pytest.raises(DaemonRefused) as caught:
        for item in client.ask("What was said about the Italian restaurant near the station?"):
            assert isinstance(item, str), f"the answer ended before the server was killed: {item}"
            pieces.append(item)
            if len(pieces) == 1:
                server.kill()
    assert pieces, "the server was to be killed after the first token"
    assert caught.value.message.startswith(f"the language model at {server.base_url} is unreachable"), caught.value

    # The daemon is still there, says what is wrong, and keeps hearing and filing speech.
    s = d.status()
    assert s["devices"]["llm"].startswith("unreachable: "), s["devices"]
    heard = s["acknowledged"]
    room.say("one", PART_ONE[:2])
    s = d.wait_for(lambda s: filed(s) and s["acknowledged"] >= heard + 2, "the new speech to be filed")
    # Its block waits for the server, and keeps waiting (backing off, not failing in a loop).
    assert s["memory"]["pending_blocks"] >= 1, s["memory"]
    time.sleep(8)
    assert d.status()["memory"]["pending_blocks"] >= 1
    with pytest.raises(DaemonRefused, match="is unreachable"):
        ask(d, "Where are we flying to?")
    # While the server was gone only backed-off probes reached for it, and the question above (whose
    # retries are the one "trying again" logged): no distillation request was sent.
    down = d.log.read_text()[logged:]
    assert down.count("trying again in 0.5 s") == 1, down
    waits = [int(w) for w in re.findall(r"pending distillation waits \(next try in (\d+) s\)", down)]
    assert len(waits) >= 2 and waits == sorted(waits) and waits[0] == 2, waits

    server.start()
    answer = ask(d, "When will we book a table?")
    assert answer.knows and names_the_booked_day(answer.text), answer.text
    # The pending block is distilled once the daemon's next probe finds the server (it backs off to 30 s).
    s = d.wait_for(lambda s: s["memory"]["pending_blocks"] == 0, "distillation to resume", timeout=180)
    assert s["devices"]["llm"] == "served"
    log = d.log.read_text()
    assert "pending distillation waits (next try in 2 s)" in log
    assert "answers again" in log
    assert "Traceback" not in log


def test_a_daemon_whose_server_is_not_there_starts_listens_and_says_so(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    d = served_daemon(tmp_path / "daemon", url)
    d.start(make_recording(tmp_path / "two", PART_TWO))
    s = d.wait_for(lambda s: s["state"] == "source ended" and filed(s), "the recording to be filed")
    # Heard and filed; the conversation's block waits for the LLM.
    assert s["acknowledged"] >= 3 and s["memory"]["pending_blocks"] >= 1, s
    assert s["devices"]["llm"].startswith("unreachable: cannot connect"), s["devices"]
    assert s["models"]["llm"] == f"the first model listed at {url}"
    with pytest.raises(DaemonRefused) as caught:
        ask(d, "When will we book a table?")
    assert caught.value.message.startswith(f"the language model at {url} is unreachable: cannot connect")
    assert "llm.base_url" in caught.value.message
    # A question the memory has nothing on needs no LLM, and is answered.
    assert not ask(d, "What colour is the submarine that Dara bought in Tokyo?").knows
    assert d.status()["memory"]["pending_blocks"] >= 1
    assert d.stop() == 0
    log = d.log.read_text()
    assert "Traceback" not in log, log
    assert "pending distillation waits (next try in 2 s)" in log
