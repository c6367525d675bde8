"""`assistant tui` in a real terminal (tmux, 120x40) against a real daemon: ask, see the answer, quit."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .daemon_helpers import PART_ONE, DaemonProcess, daemon_config, kill_leftovers, make_recording, settled
from .requirements import need_binary


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


def tmux(server: str, *args: str) -> str:
    # Its own server (-L), so the test never touches a tmux the user runs.
    done = subprocess.run(["tmux", "-L", server, *args], capture_output=True, text=True, timeout=30, check=True)
    return done.stdout


def wait_for_pane(server: str, wanted: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        pane = tmux(server, "capture-pane", "-p", "-t", "tui")
        if wanted in pane:
            return pane
        if time.monotonic() > deadline:
            raise AssertionError(f"{wanted!r} never appeared; the pane shows:\n{pane}")
        time.sleep(0.5)


def answer_in(pane: str, question: str) -> str:
    """The answer's words alone: the chat's lines under the question, down to the first piece of
    evidence it cites (evidence lines hold " · " and a date; they quote the transcript, which may
    hold the right words under a wrong answer)."""
    lines = pane.splitlines()
    start = next(i for i, line in enumerate(lines) if f"› {question}" in line)
    answer: list[str] = []
    for line in lines[start + 1 :]:
        chat = line.split("▏")[0]  # on a wide terminal the transcript pane starts at its border
        if " · 20" in chat or not chat.strip():
            break
        answer.append(chat.strip())
    return " ".join(answer)


@pytest.mark.slow
def test_ask_and_quit_in_tmux(tmp_path: Path) -> None:
    need_binary("tmux", "tmux")
    # The default answerer: the test checks what it says.
    d: DaemonProcess = daemon_config(tmp_path / "d", llm=None)
    d.start(make_recording(tmp_path / "audio", PART_ONE))
    d.wait_for(settled, "the recording to be filed")
    server = f"assistant-tui-test-{time.monotonic_ns()}"
    status_file = tmp_path / "exit-status"
    command = (
        f"cd {shlex.quote(str(Path.cwd()))} && {shlex.quote(sys.executable)} -m assistant "
        f"--config {shlex.quote(str(d.config))} tui; echo $? > {shlex.quote(str(status_file))}"
    )
    try:
        tmux(server, "new-session", "-d", "-s", "tui", "-x", "120", "-y", "40", command)
        tmux(server, "set-option", "-t", "tui", "remain-on-exit", "on")
        tmux(server, "resize-window", "-t", "tui", "-x", "120", "-y", "40")
        wait_for_pane(server, "Ask a question", timeout=60)
        wait_for_pane(server, "lag", timeout=60)  # the status bar: connected
        tmux(server, "send-keys", "-t", "tui", "-l", "When do we fly out?")
        tmux(server, "send-keys", "-t", "tui", "Enter")
        pane = wait_for_pane(server, " · 20", timeout=300)  # the evidence's date, under the answer
        answer = answer_in(pane, "When do we fly out?")
        assert "14" in answer or "fourteenth" in answer.lower(), pane
        tmux(server, "send-keys", "-t", "tui", "C-q")
        deadline = time.monotonic() + 30
        while not status_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        final = tmux(server, "capture-pane", "-p", "-t", "tui")
        assert status_file.read_text().strip() == "0", final
        assert "Traceback" not in final, final
    finally:
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True, timeout=30)
    assert d.stop() == 0
