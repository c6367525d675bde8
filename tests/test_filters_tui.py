"""The chat's filter row, driven by Textual's Pilot against a real daemon (see test_filters_api.py).

The daemon holds the sample conversation (Sam, Priya, Alex; 16 and 17 November 2026) and runs
in Tokyo time; it loads the LLM at start, so these tests are slow.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from assistant.tui.app import AssistantApp
from assistant.tui.chat import AnswerView, FilterNote, Notice
from assistant.tui.recall import RecallBar

from .daemon_helpers import DaemonProcess, kill_leftovers, running
from .test_filters_api import sample_daemon, tokyo

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    d = sample_daemon(tmp_path_factory.mktemp("filters-tui"))
    d.shared = True
    with running(d):
        yield d


async def until(pilot: Pilot[None], ok: Callable[[], object], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)


def answers(app: AssistantApp) -> list[AnswerView]:
    return list(app.main.query(AnswerView))


def run(scenario: Callable[[], object]) -> None:
    asyncio.run(scenario())  # type: ignore[arg-type]


def test_a_limited_question_carries_its_filter_and_shows_it(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            bar = app.main.query_one(RecallBar)
            await until(pilot, lambda: len(bar.speakers) == 3, "the speakers in the filter row")
            assert not bar.has_class("-active")

            # ctrl+l goes to the row, from anywhere; the speaker list is the daemon's.
            await pilot.press("f3", "ctrl+l")
            select = bar.speaker_select
            assert app.focused is select
            priya = next(sp for sp in bar.speakers if sp.name == "Priya")
            select.value = str(priya.id)
            await pilot.press("tab", *"2026-11-16", "tab", *"2026-11-17 12:00", "enter")
            # Enter in the row hands the focus back to the question; the row says it limits.
            assert app.focused is app.chat.input
            assert bar.has_class("-active")
            assert bar.limits() == {
                "since": tokyo("2026-11-16T00:00"),
                "until": tokyo("2026-11-17T12:00"),
                "speaker": str(priya.id),
            }

            await pilot.press(*"Who will take care of Biscuit?", "enter")
            await until(pilot, lambda: answers(app) and answers(app)[-1].done, "the answer", timeout=180)
            # The note under the answer is the daemon's account of the filter it applied: the
            # request carried the row's speaker and window.
            notes = [str(n.render()) for n in app.main.query(FilterNote)]
            assert notes == ["limited to Priya, from 2026-11-16 00:00 JST, before 2026-11-17 12:00 JST"], notes
            assert "✖" not in str(answers(app)[-1].render())

            # ctrl+r (in the row) clears it; the next question is not limited.
            await pilot.press("ctrl+l", "ctrl+r", "escape")
            assert not bar.has_class("-active") and bar.limits() == {}
            assert app.focused is app.chat.input
            await pilot.press(*"Who will take care of Biscuit?", "enter")
            await until(pilot, lambda: len(answers(app)) == 2 and answers(app)[-1].done, "the second answer", 180)
            assert len(app.main.query(FilterNote)) == 1

    run(scenario)


def test_a_malformed_limit_sends_nothing_and_keeps_the_question(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            bar = app.main.query_one(RecallBar)
            since = bar.query_one("#recall-since", Input)
            since.value = "last tuesday"
            await pilot.pause(0.1)
            assert since.has_class("-invalid")
            app.chat.input.focus()
            await pilot.press(*"Where is the hotel?", "enter")
            await pilot.pause(0.2)
            assert not answers(app)
            shown = [str(n.render()) for n in app.main.query(Notice)]
            assert shown and "since: 'last tuesday' is not a time" in shown[-1], shown
            assert app.chat.input.value == "Where is the hotel?"
            # An empty window is refused the same way, before anything is sent.
            since.value = "2026-11-17"
            bar.query_one("#recall-until", Input).value = "2026-11-16"
            await pilot.pause(0.1)
            assert not since.has_class("-invalid")
            app.chat.input.focus()
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert not answers(app)
            assert "must be before until" in str(app.main.query(Notice).last().render())
            assert bar.speaker_select.is_blank()

    run(scenario)


def test_the_filter_row_fits_a_narrow_terminal(daemon: DaemonProcess, tmp_path: Path) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(60, 16)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            bar = app.main.query_one(RecallBar)
            assert bar.region.height == 1 and bar.region.width <= 60
            assert app.chat.input.region.y > bar.region.y

    run(scenario)
