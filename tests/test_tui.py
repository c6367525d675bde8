"""The TUI driven by Textual's Pilot against a real daemon subprocess (tests/daemon_helpers.py).

Nothing is faked on the TUI's side: it talks HTTP over the daemon's Unix socket. The push-to-talk
test runs its daemon on tests/fake_microphone, which fakes only the sound card.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input, Static

from assistant.config import load_settings
from assistant.daemon.instance import running_pid
from assistant.tui.app import AssistantApp
from assistant.tui.chat import AnswerView, EvidenceList, Notice, QuestionView
from assistant.tui.dialogs import ConfirmScreen, ContextScreen, HelpScreen, NameScreen
from assistant.tui.digest import DigestPane
from assistant.tui.memory import MemoryTree, keep
from assistant.tui.offline import NoDaemonScreen

from .daemon_helpers import (
    PART_ONE,
    PART_TWO,
    DaemonProcess,
    daemon_config,
    kill_leftovers,
    make_recording,
    running,
)
from .fake_portaudio import Playlist


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tui-audio")
    return make_recording(root / "one", PART_ONE), make_recording(root / "two", PART_TWO)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, recordings: tuple[Path, Path]) -> Iterator[DaemonProcess]:
    """One daemon that heard PART_ONE, everything filed. The last test kills and restarts it."""
    # The default answerer: the chat tests check what it says.
    d = daemon_config(tmp_path_factory.mktemp("tui-daemon"), llm=None)
    d.shared = True
    with running(d, recordings[0]):
        yield d


async def until(pilot: Pilot[None], ok: Callable[[], object], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)


def answers(app: AssistantApp) -> list[AnswerView]:
    return list(app.main.query(AnswerView))


def notices(app: AssistantApp) -> list[str]:
    return [str(n.render()) for n in app.main.query(Notice)]


def run(scenario: Callable[[], object]) -> None:
    asyncio.run(scenario())  # type: ignore[arg-type]


# --- chat ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_typed_question_streams_its_answer_and_evidence(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            await pilot.press(*"When do we fly out?", "enter")
            await until(pilot, lambda: answers(app) and answers(app)[-1].done, "the answer")
            answer = answers(app)[-1]
            assert "14" in answer.text, answer.text
            assert answer.tokens > 0  # it streamed, token by token
            assert str(app.main.query(QuestionView).last().render()).endswith("When do we fly out?")
            evidence = app.main.query_one(EvidenceList)
            texts = [item.evidence.text for item in evidence.children]  # type: ignore[attr-defined]
            assert any("May" in t and ("14" in t or "fourteenth" in t) for t in texts), texts
            assert all(item.evidence.speaker for item in evidence.children)  # type: ignore[attr-defined]
            # Selecting a piece of evidence opens the transcript around it, from the archive.
            evidence.focus()
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ContextScreen), "the context")
            lines = app.screen.query_one("#context-lines", Static)
            await until(pilot, lambda: "May" in str(lines.render()), "the neighbouring utterances")
            assert "Lisbon" in str(lines.render())  # the line before it, too
            await pilot.press("escape")
            assert not isinstance(app.screen, ContextScreen)

    run(scenario)


@pytest.mark.slow
def test_an_empty_question_sends_nothing(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            await pilot.press("space", "space", "enter")
            await pilot.pause(0.2)
            assert not answers(app)
            assert any("Type a question first" in str(n.message) for n in app._notifications)

    run(scenario)


@pytest.mark.slow
def test_a_50000_character_paste_is_refused_with_the_limit(daemon: DaemonProcess) -> None:
    limit = load_settings(daemon.config).memory.answer.max_question_chars

    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            started = time.monotonic()
            app.chat.input.post_message(events.Paste("a" * 50_000))
            await pilot.pause()
            await pilot.press("enter")
            await until(pilot, lambda: notices(app), "the refusal", timeout=10)
            assert time.monotonic() - started < 5  # never a freeze
            assert f"{limit:,}" in notices(app)[-1] and "50,000" in notices(app)[-1], notices(app)
            assert not answers(app)
            assert app.chat.input.value == ""
            # The UI still answers keys.
            await pilot.press("a")
            assert app.chat.input.value == "a"

    run(scenario)


@pytest.mark.slow
def test_push_to_talk_on_a_file_daemon_says_it_needs_the_microphone(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            await pilot.press("ctrl+t")
            await until(pilot, lambda: notices(app), "the refusal", timeout=10)
            assert "needs the microphone" in notices(app)[-1]
            assert app.recording_since is None
            assert not app.main.query_one("#recording").display

    run(scenario)


# --- speakers, memory, layout -------------------------------------------------------------------


@pytest.mark.slow
def test_renaming_a_speaker_relabels_the_list_and_the_transcript(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.speakers_pane.speakers, "the speakers")
            await pilot.press("f4")
            first = app.speakers_pane.speakers[0]
            await pilot.press("n")
            await until(pilot, lambda: isinstance(app.screen, NameScreen), "the rename dialog")
            app.screen.query_one("#name", Input).value = ""
            await pilot.press(*"Navigator", "enter")
            await until(
                pilot,
                lambda: any(s.id == first.id and s.name == "Navigator" for s in app.speakers_pane.speakers),
                "the new name in the list",
                timeout=30,
            )
            # The transcript pane labels lines by speaker id with the current names.
            assert app.transcript.names[first.id] == "Navigator"
            assert any(s["name"] == "Navigator" for s in daemon.status()["speakers"])

    run(scenario)


@pytest.mark.slow
def test_the_digest_tab_shows_the_day_with_its_lines_and_steps_a_day_back(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.connected, "the connection")
            await pilot.press("ctrl+g")
            pane = app.main.query_one(DigestPane)
            await until(pilot, lambda: pane.digest is not None, "the day's digest", timeout=300)
            day = pane.digest
            assert day is not None and day.topics and day.utterances == daemon.status()["memory"]["utterances"]
            shown = "\n".join(str(item.render()) for item in pane.query(".digest-item"))
            for topic in day.topics:
                assert topic.text in shown and all(e.text in shown for e in topic.evidence)
            for c in day.commitments:
                assert c.who in shown and c.what in shown
            await pilot.press("left_square_bracket")
            await until(pilot, lambda: pane.digest is not None and pane.digest.day != day.day, "the day before")
            assert pane.digest is not None and pane.digest.utterances == 0 and not pane.digest.topics
            assert "0 lines by nobody" in str(app.main.query_one("#digest-summary").render())

    run(scenario)


@pytest.mark.slow
def test_forgetting_a_subtree_lowers_the_gauge(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.memory_pane.nodes and app.memory_pane.tokens, "the memory tree")
            before = app.memory_pane.tokens
            await pilot.press("f3")
            tree = app.main.query_one(MemoryTree)
            await until(pilot, lambda: tree.root.children, "the tree")
            # The filter narrows the tree to matching nodes.
            word = app.memory_pane.nodes[0].text.split()[0]
            app.main.query_one("#memory-filter", Input).value = word
            await pilot.pause(0.2)
            assert tree.root.children
            assert all(keep(child.data, word.lower()) is not None for child in tree.root.children if child.data)
            app.main.query_one("#memory-filter", Input).value = ""
            await pilot.pause(0.2)
            tree.focus()
            await until(pilot, lambda: tree.cursor_node is not None, "the first node selected")
            await pilot.press("d")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
            await pilot.click("#yes")
            await until(pilot, lambda: app.memory_pane.tokens < before, "the gauge to fall", timeout=30)
            assert app.memory_pane.tokens < before

    run(scenario)


@pytest.mark.slow
def test_a_40x10_terminal_does_not_crash(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            await pilot.resize_terminal(40, 10)
            for key in ("f3", "f4", "f2", "f1", "escape", "f6", "escape", "f7", "escape"):
                await pilot.press(key)
                await pilot.pause(0.1)
            await pilot.press("ctrl+p")
            await pilot.pause(0.2)
            await pilot.press("escape")
            assert app.is_running
            assert app.size == (40, 10)

    run(scenario)


@pytest.mark.slow
def test_help_and_every_action_in_the_palette(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            app.set_focus(None)
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            titles = {c.title for c in app.get_system_commands(app.screen)}
            for wanted in ("Push-to-talk", "Memory browser", "Export the memory", "Forget…", "Help"):
                assert wanted in titles
            theme = app.theme
            await pilot.press("f8")
            assert app.theme != theme

    run(scenario)


@pytest.mark.slow
def test_without_a_daemon_it_says_so_and_starts_one(tmp_path: Path) -> None:
    d = daemon_config(tmp_path / "d")
    settings = load_settings(d.config)

    async def scenario() -> None:
        # Started from the app itself, so it runs with the app's environment: point XDG there.
        os.environ["XDG_RUNTIME_DIR"] = str(d.root / "run")
        app = AssistantApp(d.config)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, NoDaemonScreen), "the no-daemon screen", 10)
            await until(pilot, lambda: app.screen.query("#offline-title"), "its text", 10)
            assert "No daemon is running" in str(app.screen.query_one("#offline-title", Static).render())
            await pilot.press("s")
            await until(pilot, lambda: app.connected, "the daemon it started", timeout=300)
            assert not isinstance(app.screen, NoDaemonScreen)

    try:
        run(scenario)
    finally:
        pid = running_pid(settings)
        if pid and pid > 0:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 60
            while running_pid(settings) is not None and time.monotonic() < deadline:
                time.sleep(0.2)
            if running_pid(settings) is not None:
                os.kill(pid, signal.SIGKILL)


# --- push-to-talk on a (fake) microphone ----------------------------------------------------------


@pytest.mark.slow
def test_push_to_talk_records_shows_the_question_and_answers(tmp_path: Path) -> None:
    mic = Playlist(tmp_path / "playlist")
    question = make_recording(tmp_path / "q", [("Sam", "What is the capital of France?")])
    d = daemon_config(tmp_path / "d")
    d.start(fake_mic=mic)

    async def scenario() -> None:
        app = AssistantApp(d.config)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            # Escape drops a recording.
            await pilot.press("ctrl+t")
            await until(pilot, lambda: app.recording_since is not None, "recording")
            assert "REC" in str(app.main.query_one("#recording", Static).render())
            await pilot.press("escape")
            await until(pilot, lambda: any("cancelled" in n for n in notices(app)), "the cancel")
            # A spoken question: recorded, transcribed into the box, then asked.
            await pilot.press("ctrl+t")
            await until(pilot, lambda: app.recording_since is not None, "recording")
            queued = mic.play(question)
            await asyncio.to_thread(mic.wait_played, queued)
            await pilot.pause(1.5)
            shown = str(app.main.query_one("#recording", Static).render())
            # The time so far, and the level meter fed by the daemon's recording (the room is
            # silent again once the question has played: the floor).
            assert "REC 0:0" in shown and "▯" in shown and " dB" in shown, shown
            assert app.recording_state is not None and app.recording_state.seconds > 1.0
            await pilot.press("ctrl+t")
            await until(pilot, lambda: answers(app) and answers(app)[-1].done, "the spoken answer", timeout=180)
            asked = str(app.main.query(QuestionView).last().render())
            # The tiny test model hears espeak's "France" variously; "capital" it always gets.
            assert "capital" in asked.lower(), asked
            assert "✖" not in str(answers(app)[-1].render())

    run(scenario)
    assert d.stop() == 0


# --- the daemon going away (last: it restarts the module's daemon) --------------------------------


@pytest.mark.slow
def test_the_daemon_dying_mid_answer_is_survived(daemon: DaemonProcess, recordings: tuple[Path, Path]) -> None:
    async def scenario() -> None:
        app = AssistantApp(daemon.config)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.connected, "the app to connect")
            await pilot.press(*"How much money did finance approve?", "enter")
            await until(pilot, lambda: answers(app), "the question to be sent")
            await pilot.pause(0.3)
            await asyncio.to_thread(daemon.kill)
            answer = answers(app)[-1]
            await until(pilot, lambda: answer.done, "the cut-off answer", timeout=30)
            assert "daemon went away" in str(answer.render())
            await until(pilot, lambda: not app.connected, "the status bar to notice", timeout=30)
            assert "reconnecting" in str(app.main.query_one("#status-bar", Static).render())
            assert app.is_running
            # Back, on the rest of the conversation: the live transcript picks it up as it is heard.
            await asyncio.to_thread(daemon.start, recordings[1])
            await until(pilot, lambda: app.connected, "the app to reconnect", timeout=60)
            assert any("back" in n for n in notices(app))
            await until(pilot, lambda: app.transcript.lines_kept, "live utterances after the restart", 300)
            labels = {app.transcript.label(line) for line in app.transcript.lines_kept}
            assert labels <= {s["name"] for s in daemon.status()["speakers"]}
            await pilot.press(*"Who will take Biscuit?", "enter")
            await until(pilot, lambda: answers(app)[-1].done, "an answer after the restart", timeout=180)
            assert "✖" not in str(answers(app)[-1].render())

    run(scenario)
