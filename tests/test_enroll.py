"""Enrolling a voice into the running daemon: from its microphone (only the sound card is fake,
tests/fake_microphone) and from a file through `assistant speakers enroll`; the daemon recognises
the voice in what is said next, and what was recorded to enroll is never filed as conversation.
The recording mechanism itself (shared with push-to-talk questions) is checked in-process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant.daemon import push_to_talk
from assistant.daemon.push_to_talk import ENROLLMENT, QUESTION, PushToTalk
from assistant.errors import InputError

from .cli_runner import assistant
from .daemon_helpers import NOT_RECORDING, MicRoom, Transcript, daemon_config, kill_leftovers, make_recording
from .fake_portaudio import Playlist

# Read aloud to enroll: about ten seconds of one voice.
ENROLL_TEXT = [
    "Hello, I am recording a sample of my voice so the assistant knows who is speaking.",
    "This is how I usually sound when I talk at my desk on a normal working day.",
]


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


class Room(MicRoom):
    def say(self, name: str, turns: list[tuple[str, str]]) -> Path:
        return make_recording(self.recordings / name, turns)

    def heard(self, word: str, timeout: float = 300) -> dict[str, Any]:
        """The first acknowledged utterance with `word` in it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [e for e in self.live.events if word in e["text"].lower()]
            if found:
                return found[0]
            time.sleep(0.2)
        raise AssertionError(f"no utterance with {word!r}; heard {[e['text'] for e in self.live.events]}")


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Room]:
    root = tmp_path_factory.mktemp("enroll")
    mic = Playlist(root / "playlist")
    d = daemon_config(root / "daemon")
    d.shared = True
    try:
        d.start(fake_mic=mic)
        live = Transcript(d)
        yield Room(d, mic, live, root / "recordings")
        live.close()
        assert d.stop() == 0, d.log.read_text()
        log = d.log.read_text()
        assert "Traceback" not in log, log
    finally:
        d.kill_if_running()


def speaker(room: Room, name: str) -> dict[str, Any] | None:
    with room.daemon.client() as c:
        return next((sp for sp in c.get("/speakers").json() if sp["name"] == name), None)


@pytest.mark.slow
def test_voices_enrolled_from_the_microphone_and_from_a_file_name_what_they_say_next(room: Room) -> None:
    robin = room.say("robin", [("Priya", line) for line in ENROLL_TEXT])
    alex = room.say("alex", [("Sam", line) for line in ENROLL_TEXT])
    with room.daemon.client() as c:
        assert c.post("/speakers/enroll/start", json={"name": "Robin"}).json() == {"state": "recording"}
        state = c.get("/push-to-talk").json()
        assert state["recording"] is True and state["purpose"] == "enrollment"
        # The daemon's limit, which the TUI's indicator follows whatever its own config says.
        assert state["limit_seconds"] == 20
        # The one microphone records one thing: a question neither starts nor stops meanwhile.
        refused = c.post("/push-to-talk/start")
        assert refused.status_code == 400 and "already recording a voice to enroll" in refused.json()["error"]
        refused = c.post("/push-to-talk/stop")
        assert refused.status_code == 400 and "recording a voice to enroll, not a question" in refused.json()["error"]
        room.play(robin)
        done = c.post("/speakers/enroll/stop")
    assert done.status_code == 200, done.text
    enrolled = done.json()
    assert enrolled["name"] == "Robin" and enrolled["enrolled"] is True
    assert enrolled["enrolled_seconds"] >= 9.0, enrolled
    assert room.daemon.status()["push_to_talk"] is False

    # From a file, through the CLI: with a daemon running it goes through the daemon.
    out = assistant(
        ["--config", str(room.daemon.config), "speakers", "enroll", "Alex", str(alex)],
        cwd=room.recordings,
        env=room.daemon.env(),
    )
    assert out.returncode == 0, out.stderr
    assert "enrolled 'Alex'" in out.stdout and "0m1" in out.stdout, out.stdout

    # Nothing said to enroll became conversation.
    room.settled()
    assert room.live.events == [], room.live.events

    # What each says next carries their name: the running diarizer knows both voices at once.
    room.play(
        room.say(
            "next",
            [
                ("Priya", "The garden needs watering before the weekend."),
                ("Sam", "I will fix the bicycle tomorrow morning."),
            ],
        )
    )
    assert room.heard("garden")["speaker"] == "Robin", room.live.events
    assert room.heard("bicycle")["speaker"] == "Alex", room.live.events
    room.settled()
    # The listing: seconds enrolled, and how surely what followed matched each voice.
    for name in ("Robin", "Alex"):
        sp = speaker(room, name)
        assert sp is not None and sp["enrolled_seconds"] >= 9.0, sp
        assert sp["match_utterances"] >= 1 and sp["match_cosine"] >= 0.75, sp


@pytest.mark.slow
def test_a_recording_too_short_or_badly_named_is_refused_and_nothing_is_enrolled(room: Room) -> None:
    short = room.say("kim", [("Priya", "Hello there.")])
    with room.daemon.client() as c:
        # A bad name is refused before anyone speaks.
        for name, why in (("   ", "cannot be empty"), ("4711", "digits alone"), ("x" * 101, "at most 100")):
            reply = c.post("/speakers/enroll/start", json={"name": name})
            assert reply.status_code in (400, 422) and why in reply.text, (name, reply.text)
        assert c.get("/push-to-talk").json()["recording"] is False
        # Too little speech: refused, saying how much there was and how much is needed.
        assert c.post("/speakers/enroll/start", json={"name": "Kim"}).status_code == 200
        room.play(short)
        reply = c.post("/speakers/enroll/stop")
        assert reply.status_code == 400, reply.text
        error = reply.json()["error"]
        assert "too short to enroll 'Kim'" in error and "at least 5 s" in error, error
        assert c.get("/push-to-talk").json() == NOT_RECORDING
        # Cancelled: nothing enrolled either, and nothing left to stop.
        assert c.post("/speakers/enroll/start", json={"name": "Lee"}).status_code == 200
        assert c.post("/speakers/enroll/cancel").json() == {"state": "cancelled"}
        stop = c.post("/speakers/enroll/stop")
        assert stop.status_code == 400 and "not recording a voice to enroll" in stop.json()["error"]
    assert speaker(room, "Kim") is None and speaker(room, "Lee") is None
    room.settled()
    assert not any("hello" in e["text"].lower() for e in room.live.events), room.live.events


# --- the recording mechanism, in-process ----------------------------------------------------------


def _never(segment: object) -> list[Any]:
    raise AssertionError("nothing here is transcribed")


def test_a_daemon_on_a_file_or_a_lost_microphone_cannot_record() -> None:
    with pytest.raises(InputError, match="recording a voice to enroll needs the microphone; this daemon listens"):
        PushToTalk(microphone=False, transcribe=_never).start(ENROLLMENT, limit_seconds=20, name="Ana")
    lost = PushToTalk(microphone=True, transcribe=_never, problem=lambda: "the device is gone; reopening it")
    with pytest.raises(InputError, match="cannot record now: the device is gone"):
        lost.start(QUESTION, limit_seconds=60)
    assert not lost.recording


def test_an_enrollment_keeps_every_block_from_the_conversation_and_hands_them_over_whole() -> None:
    ptt = PushToTalk(microphone=True, transcribe=_never)
    block = np.full(480, 1000, dtype=np.int16)  # 30 ms
    assert ptt.take(block) is False  # nothing recorded: the block is the conversation's
    ptt.start(ENROLLMENT, limit_seconds=0.09, name="Ana")
    assert all(ptt.take(block) for _ in range(5))  # past the limit too: the speaker is not the room
    with pytest.raises(InputError, match="recording a voice to enroll, not a question"):
        ptt.stop()
    assert ptt.state().purpose == "enrollment" and ptt.state().seconds == pytest.approx(0.09)
    assert ptt.state().limit_seconds == 0.09  # the daemon's limit, which clients follow
    recorded = ptt.finish(ENROLLMENT)
    assert recorded.name == "Ana" and len(recorded.samples) == 3 * 480
    assert recorded.samples.dtype == np.float32 and recorded.samples[0] == pytest.approx(1000 / 32768)
    assert ptt.take(block) is False and not ptt.recording


def test_a_recording_nobody_stops_gives_the_room_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(push_to_talk, "ABANDONED_SECONDS", 0.05)
    ptt = PushToTalk(microphone=True, transcribe=_never)
    block = np.zeros(480, dtype=np.int16)
    ptt.start(ENROLLMENT, limit_seconds=0.03, name="Ana")
    assert ptt.take(block) and ptt.take(block)  # the limit is reached; the rest waits for a stop
    time.sleep(0.1)
    assert ptt.take(block) is False and not ptt.recording
