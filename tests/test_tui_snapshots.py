"""Layout snapshots of the TUI (pytest-textual-snapshot): accept changes with --snapshot-update.

Only screens whose content is fixed: the no-daemon screen, help and the dialogs (over it, with
no daemon), and the main layout against a real daemon that heard only silence (no speech, an
empty memory: nothing that differs between runs).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from assistant.bench.synth_speech import silence
from assistant.tui.app import AssistantApp
from assistant.tui.enroll import EnrollScreen

from .daemon_helpers import DaemonProcess, daemon_config, kill_leftovers, running

SIZES = [(80, 24), (160, 48)]
# Shown on the no-daemon screen, so fixed: nothing may listen there.
NO_SOCKET = "/nonexistent/assistant-tui-snapshot/api.sock"


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


@pytest.fixture
def offline_config(tmp_path: Path) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(f"paths:\n  data_dir: {tmp_path / 'data'}\ndaemon:\n  socket: {NO_SOCKET}\n")
    return config


@pytest.fixture(scope="module")
def quiet_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("tui-snap")
    d = daemon_config(root / "d")
    d.shared = True
    with running(d, silence(root / "quiet.wav", 2.0), "the silence to be heard"):
        yield d


async def _settle(pilot: Pilot[Any], ok: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ok() and time.monotonic() < deadline:
        await pilot.pause(0.1)
    _steady_cursors(pilot.app)
    await pilot.pause(0.3)


def _steady_cursors(app: Any) -> None:
    """A focused Input blinks its cursor every half second from its mount, so a screenshot
    would catch it on or off depending on how long the daemon took to answer: hold it on."""
    for screen in app.screen_stack:
        for field in screen.query(Input):
            field.cursor_blink = False


@pytest.mark.parametrize("size", SIZES)
class TestOffline:
    def test_no_daemon_screen(self, snap_compare: Any, offline_config: Path, size: tuple[int, int]) -> None:
        app = AssistantApp(offline_config)

        async def ready(pilot: Pilot[Any]) -> None:
            await _settle(pilot, lambda: type(app.screen).__name__ == "NoDaemonScreen")

        assert snap_compare(app, terminal_size=size, run_before=ready)

    def test_help(self, snap_compare: Any, offline_config: Path, size: tuple[int, int]) -> None:
        app = AssistantApp(offline_config)

        async def ready(pilot: Pilot[Any]) -> None:
            await _settle(pilot, lambda: type(app.screen).__name__ == "NoDaemonScreen")
            await pilot.press("f1")
            await pilot.pause(0.3)

        assert snap_compare(app, terminal_size=size, run_before=ready)

    def test_export_dialog(self, snap_compare: Any, offline_config: Path, size: tuple[int, int]) -> None:
        app = AssistantApp(offline_config)

        async def ready(pilot: Pilot[Any]) -> None:
            await _settle(pilot, lambda: type(app.screen).__name__ == "NoDaemonScreen")
            app.action_export()
            await pilot.pause(0.3)
            app.screen.query_one("#path", Input).value = "/home/me/assistant-export.json"
            app.screen.set_focus(None)
            await pilot.pause(0.2)

        assert snap_compare(app, terminal_size=size, run_before=ready)

    def test_forget_dialog(self, snap_compare: Any, offline_config: Path, size: tuple[int, int]) -> None:
        app = AssistantApp(offline_config)

        async def ready(pilot: Pilot[Any]) -> None:
            await _settle(pilot, lambda: type(app.screen).__name__ == "NoDaemonScreen")
            app.action_forget()
            await pilot.pause(0.3)
            app.screen.set_focus(None)
            await pilot.pause(0.2)

        assert snap_compare(app, terminal_size=size, run_before=ready)

    def test_enroll_dialog(self, snap_compare: Any, offline_config: Path, size: tuple[int, int]) -> None:
        app = AssistantApp(offline_config)

        async def ready(pilot: Pilot[Any]) -> None:
            await _settle(pilot, lambda: type(app.screen).__name__ == "NoDaemonScreen")
            app.push_screen(EnrollScreen(app.client, limit_seconds=20))
            await pilot.pause(0.3)
            app.screen.query_one("#enroll-name", Input).value = "Robin"
            app.screen.set_focus(None)
            await pilot.pause(0.2)

        assert snap_compare(app, terminal_size=size, run_before=ready)


@pytest.mark.slow  # its daemon loads the LLM
@pytest.mark.parametrize("size", SIZES)
class TestConnected:
    def test_chat(self, snap_compare: Any, quiet_daemon: DaemonProcess, size: tuple[int, int]) -> None:
        app = AssistantApp(quiet_daemon.config)

        async def ready(pilot: Pilot[Any]) -> None:
            await _settle(pilot, lambda: app.connected and app.transcript.notice is None)

        assert snap_compare(app, terminal_size=size, run_before=ready)

    def test_memory(self, snap_compare: Any, quiet_daemon: DaemonProcess, size: tuple[int, int]) -> None:
        app = AssistantApp(quiet_daemon.config)

        async def ready(pilot: Pilot[Any]) -> None:
            await _settle(pilot, lambda: app.connected)
            await pilot.press("f3")
            await pilot.pause(0.5)

        assert snap_compare(app, terminal_size=size, run_before=ready)

    def test_speakers(self, snap_compare: Any, quiet_daemon: DaemonProcess, size: tuple[int, int]) -> None:
        app = AssistantApp(quiet_daemon.config)

        async def ready(pilot: Pilot[Any]) -> None:
            await _settle(pilot, lambda: app.connected)
            await pilot.press("f4")
            await pilot.pause(0.5)

        assert snap_compare(app, terminal_size=size, run_before=ready)
