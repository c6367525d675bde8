"""Names a voice gives itself, offered as suggestions: "I'm Sam" yes, "Morning, Priya" never to the speaker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assistant.memory.introductions import introduced_names
from assistant.records import Utterance

from .conftest import open_memory

T0 = 1_700_000_000.0


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("Hi everyone, this is Sam.", ["Sam"]),
        ("Good morning, this is Ngozi from the lettings office.", ["Ngozi"]),
        ("I'm Tomás Okafor and I run the stall on Fridays.", ["Tomás Okafor"]),
        ("I\u2019m Zoë, by the way.", ["Zoë"]),
        ("My name is Aiko, I called about the boiler.", ["Aiko"]),
        ("Hello there, Jonas here.", ["Jonas"]),
        ("Okay, Dara speaking, can everyone hear me?", ["Dara"]),
        # Names said to someone, or about someone, are not the speaker's.
        ("Morning, Priya! Did you sleep well?", []),
        ("Thanks Sam, this is great.", []),
        ("Dara, this is Sam, he's joining the team.", []),
        ("Everyone, this is Priya, our new designer.", []),
        ("I'm Sam's brother, he asked me to call.", []),
        ("Say hi to Priya when you see her.", []),
        # Not names: a nationality, a state, lower case, the chain's own label.
        ("I'm English, actually.", []),
        ("I'm tired, can we stop?", []),
        ("i am batman", []),
        ("I am Speaker 3.", []),
    ],
)
def test_only_a_name_the_speaker_gives_themselves_counts(line: str, names: list[str]) -> None:
    assert introduced_names(line) == names


def _memory_with_voices(data_dir: Path):
    mem = open_memory(data_dir)
    mem.add_many(
        [
            Utterance("Speaker 1", "Hi everyone, this is Sam. Can you all hear me?", T0),
            Utterance("Speaker 2", "Morning, Sam! Yes, loud and clear.", T0 + 20),
            Utterance("Speaker 2", "I'm Priya, I do the budget.", T0 + 40),
            Utterance("Speaker 1", "Hello, this is Sam again, the line dropped.", T0 + 600),
            Utterance("Alex", "I'm Alexander, really, but Alex is fine.", T0 + 620),
        ]
    )
    return mem


def test_unnamed_voices_are_offered_the_names_they_gave_and_nothing_is_renamed(tmp_path: Path) -> None:
    with _memory_with_voices(tmp_path / "data") as mem:
        suggestions = mem.name_suggestions()
        assert [(s.speaker.name, s.name, s.times) for s in suggestions] == [
            ("Speaker 1", "Sam", 2),
            ("Speaker 2", "Priya", 1),
        ]
        # The first line that said it, to show the user; "Morning, Sam!" gave Speaker 2 nothing; a
        # voice a person already named ("Alex") is not second-guessed.
        assert suggestions[0].example.text == "Hi everyone, this is Sam. Can you all hear me?"
        assert {sp.name for sp in mem.speakers()} == {"Speaker 1", "Speaker 2", "Alex"}

        mem.rename_speaker(suggestions[1].speaker.id, "Priya")
        assert [(s.speaker.name, s.name) for s in mem.name_suggestions()] == [("Speaker 1", "Sam")]


def test_the_speakers_command_offers_the_name_and_the_command_that_gives_it(tmp_path: Path) -> None:
    from .test_cli import run

    with _memory_with_voices(tmp_path / "data") as mem:
        sam = next(sp.id for sp in mem.speakers() if sp.name == "Speaker 1")
    out = run(["speakers"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert (
        f"perhaps Sam: {sam} 'Speaker 1' said \u201cHi everyone, this is Sam. Can you all hear me?\u201d, 2 times; "
        f"if so: assistant speakers name {sam} Sam"
    ) in out.stdout


@pytest.mark.slow
def test_the_tui_accepts_a_suggested_name_with_one_key(tmp_path: Path) -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable, Static

    from assistant.bench.synth_speech import silence
    from assistant.daemon.client import AsyncDaemonClient
    from assistant.tui.speakers import SpeakersPane

    from .daemon_helpers import daemon_config, running
    from .test_tui import until

    d = daemon_config(tmp_path / "d")
    _memory_with_voices(d.data_dir).close()

    class Pane(App[None]):
        def compose(self) -> ComposeResult:
            yield SpeakersPane(AsyncDaemonClient(d.socket), enroll_seconds=20, id="speakers-pane")

    async def scenario() -> None:
        app = Pane()
        async with app.run_test() as pilot:
            pane = app.query_one(SpeakersPane)
            speakers = await pane.client.speakers()
            pane.show_speakers(tuple(speakers))
            shown = app.query_one("#name-suggestions", Static)
            await until(pilot, lambda: "perhaps Sam" in str(shown.render()), "the suggested name")
            row = next(i for i, s in enumerate(pane.speakers) if s.name == "Speaker 2")
            app.query_one(DataTable).move_cursor(row=row)
            await pilot.press("a")
            await until(
                pilot,
                lambda: any(s["name"] == "Priya" for s in d.status()["speakers"]),
                "the voice named Priya",
                timeout=30,
            )

    with running(d, silence(tmp_path / "quiet.wav", 1.0), "the silence to be heard"):
        asyncio.run(scenario())
        names = {s["name"] for s in d.status()["speakers"]}
    assert "Priya" in names and "Speaker 1" in names  # only the selected voice was renamed


def test_the_tui_asks_for_suggestions_when_the_voices_change_not_with_every_line() -> None:
    from dataclasses import replace

    from assistant.records import Speaker
    from assistant.tui.speakers import SUGGESTIONS_EVERY_SECONDS, suggestions_due

    heard = (Speaker(1, "Speaker 1", 3, 4.0), Speaker(2, "Speaker 2", 5, 7.5))
    one_more_line = (heard[0], replace(heard[1], utterances=6, speech_seconds=9.0))
    assert not suggestions_due(heard, one_more_line, since_asked=1.0)
    assert suggestions_due(heard, one_more_line, since_asked=SUGGESTIONS_EVERY_SECONDS)
    assert suggestions_due(heard, (heard[0], replace(heard[1], name="Priya")), since_asked=1.0)
    assert suggestions_due(heard, (*heard, Speaker(3, "Speaker 3", 1, 2.0)), since_asked=1.0)
    assert suggestions_due(heard, heard[:1], since_asked=1.0)  # a merge
    assert suggestions_due(heard, (heard[0], replace(heard[1], enrolled=True)), since_asked=1.0)
