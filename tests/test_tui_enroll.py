"""Enrolling a voice from the TUI's speakers screen (Textual's Pilot), against a real daemon on a fake
microphone (tests/fake_microphone fakes only the sound card): the name, the REC line while the daemon
records, a stop at the length limit by itself, the refusals said in the dialog with the name kept,
and the table showing the seconds enrolled and, once the voice speaks, how surely it matched."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from assistant.tui.app import AssistantApp
from assistant.tui.enroll import NAMING, RECORDING, EnrollScreen

from .daemon_helpers import daemon_config, kill_leftovers, make_recording
from .fake_portaudio import Playlist
from .test_enroll import ENROLL_TEXT
from .test_tui import until

LIMIT_SECONDS = 8


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


def message(screen: EnrollScreen) -> str:
    return str(screen.query_one("#enroll-message", Static).render())


def row_of(app: AssistantApp, name: str) -> list[str] | None:
    table = app.main.query_one("#speakers-table", DataTable)
    rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
    return next((row for row in rows if row[1] == name), None)


@pytest.mark.slow
def test_a_voice_is_enrolled_from_the_speakers_screen(tmp_path: Path) -> None:
    mic = Playlist(tmp_path / "playlist")
    sample = make_recording(tmp_path / "robin", [("Priya", line) for line in ENROLL_TEXT])
    short = make_recording(tmp_path / "kim", [("Priya", "Hello there.")])
    later = make_recording(tmp_path / "later", [("Priya", "The garden needs watering before the weekend.")])
    d = daemon_config(tmp_path / "d", extra=f"  enroll_seconds: {LIMIT_SECONDS}\n")
    d.start(fake_mic=mic)

    async def play(wav: Path) -> None:
        await asyncio.to_thread(mic.wait_played, mic.play(wav))

    async def scenario() -> None:
        app = AssistantApp(d.config)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            await pilot.press("f4", "e")
            await until(pilot, lambda: isinstance(app.screen, EnrollScreen), "the enrollment dialog")
            screen = app.screen
            assert isinstance(screen, EnrollScreen)
            # No name: nothing starts. A bad one: the daemon's check says why, and the box keeps it.
            await pilot.press("enter")
            assert "Type their name first" in message(screen)
            await pilot.press(*"4711", "enter")
            await until(pilot, lambda: "digits alone" in message(screen), "the name refused")
            assert screen.phase == NAMING and screen.name_box.value == "4711"

            # Too short: stopped early (Enter), refused with how much speech it held; the name stays.
            screen.name_box.value = "Kim"
            await pilot.press("enter")
            await until(pilot, lambda: screen.phase == RECORDING, "the recording to start")
            await until(pilot, lambda: "REC" in str(screen.indicator.render()), "the REC line")
            assert "Enter stops and enrolls" in str(screen.indicator.render())
            await play(short)
            await pilot.press("enter")
            await until(pilot, lambda: "too short to enroll 'Kim'" in message(screen), "the refusal")
            assert screen.phase == NAMING and screen.name_box.value == "Kim" and not screen.name_box.disabled
            assert not screen.indicator.display

            # Escape while recording drops it: the daemon records nothing any more.
            await pilot.press("enter")
            await until(pilot, lambda: screen.phase == RECORDING, "the recording to start again")
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, EnrollScreen), "the dialog to close")
            assert d.status()["push_to_talk"] is False
            assert row_of(app, "Kim") is None

            # Name, speak: the dialog stops by itself at the limit and enrolls; the table shows it.
            await pilot.press("e")
            await until(pilot, lambda: isinstance(app.screen, EnrollScreen), "the enrollment dialog")
            await pilot.press(*"Robin", "enter")
            await until(pilot, lambda: app.screen.phase == RECORDING, "the recording to start")  # type: ignore[attr-defined]
            queued = mic.play(sample)
            await until(pilot, lambda: not isinstance(app.screen, EnrollScreen), "the enrollment", LIMIT_SECONDS + 30)
            # The dismissal's callback says so once the dialog is gone.
            await until(
                pilot, lambda: any("Enrolled Robin" in str(n.message) for n in app._notifications), "the notice"
            )
            await until(pilot, lambda: row_of(app, "Robin") is not None, "Robin in the table")
            row = row_of(app, "Robin")
            assert row is not None and row[4] == f"0:{LIMIT_SECONDS:02d}" and row[5] == "", row
            await asyncio.to_thread(mic.wait_played, queued)

            # Robin speaks: the line is hers, and the table says how surely it matched her voice.
            await play(later)
            await until(pilot, lambda: (row_of(app, "Robin") or [""] * 6)[5] != "", "a match for Robin", 120)
            row = row_of(app, "Robin")
            assert row is not None and row[2] == "1" and row[5].endswith("(1)"), row
            assert float(row[5].split()[0]) >= 0.75, row

    try:
        asyncio.run(scenario())
    finally:
        assert d.stop() == 0, d.log.read_text()[-5000:]
