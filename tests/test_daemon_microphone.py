"""The real daemon on a microphone: only the hardware is fake (tests/fake_microphone, at sounddevice).

The device records only at 48 kHz in stereo, as many USB microphones do, so everything heard
here also went through the microphone source's resampling and downmixing. Recordings are played
into it in real time while the daemon runs; one daemon serves the module, and each test checks
what became of its own sentences (which are all different).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import jiwer
import pytest

from assistant.bench.synth_speech import espeak, silence, sox

from .daemon_helpers import (
    NOT_RECORDING,
    PART_ONE,
    VOICES,
    MicRoom,
    Transcript,
    daemon_config,
    kill_leftovers,
    make_recording,
    stored_utterances,
)
from .fake_portaudio import Playlist

RATE, CHANNELS = 48000, 2
CONVERSATION = PART_ONE[:4]
QUESTION = "When do we fly to Lisbon?"


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def wer(reference: str, hypothesis: str) -> float:
    return float(jiwer.wer(" ".join(words(reference)), " ".join(words(hypothesis)) or "-"))


def mentions(texts: Iterable[str], *keywords: str) -> bool:
    """Every keyword is a word somewhere in `texts` (whisper spells the rest as it likes)."""
    heard = set(words(" ".join(texts)))
    return all(k in heard for k in keywords)


def turn_of(text: str) -> int:
    """The turn of CONVERSATION that shares the most words with `text`."""
    heard = set(words(text))
    return max(range(len(CONVERSATION)), key=lambda i: len(set(words(CONVERSATION[i][1])) & heard))


def wait_until(check: Callable[[], bool], what: str | Callable[[], str], timeout: float = 300) -> None:
    """Poll `check`; `what` (or what it returns, at the time of failure) says what was waited for."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what if isinstance(what, str) else what()}")
        time.sleep(0.2)


def say(directory: Path, who: str, text: str, *, tail: float, rate: int, channels: int) -> Path:
    """`who` says `text`, then exactly `tail` seconds of silence (espeak-ng's own is trimmed off)."""
    name = "-".join(words(text)[:6])
    voice, *options = VOICES[who]
    raw = espeak(directory / f"{name}-raw.wav", text, voice, *options)
    out = directory / f"{name}.wav"
    trim_end = ("reverse", "silence", "1", "0.01", "0.5%", "reverse")
    sox(raw, "-r", str(rate), "-c", str(channels), "-b", "16", out, *trim_end, "pad", "0.3", str(tail))
    return out


class Room(MicRoom):
    """The daemon, its fake microphone, and its live transcript, read since it started."""

    def say(self, who: str, text: str, *, tail: float = 1.5) -> Path:
        """A spoken sentence at the device's rate, with `tail` seconds of room silence after it."""
        return say(self.recordings, who, text, tail=tail, rate=RATE, channels=CHANNELS)

    def heard(self, *keywords: str, timeout: float = 300) -> None:
        """Wait until an acknowledged utterance mentions all of `keywords`."""
        wait_until(
            lambda: any(mentions([e["text"]], *keywords) for e in self.live.events),
            lambda: f"an utterance with {keywords} (heard: {[e['text'] for e in self.live.events]})",
            timeout,
        )

    def stored(self) -> dict[int, str]:
        return stored_utterances(self.daemon.data_dir)


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Room]:
    root = tmp_path_factory.mktemp("daemon-mic")
    mic = Playlist(root / "playlist", rate=RATE, channels=CHANNELS, only_native_channels=True)
    d = daemon_config(root / "daemon")
    d.shared = True
    try:
        d.start(fake_mic=mic)
        live = Transcript(d)
        (root / "recordings").mkdir()
        yield Room(d, mic, live, root / "recordings")
        live.close()
        mic.replug()  # a failed test may have left it out
        assert d.stop() == 0, d.log.read_text()
        log = d.log.read_text()
        assert "Traceback" not in log, log
    finally:
        if d.process is not None and d.process.poll() is None:
            d.process.kill()
            d.process.wait()


@pytest.fixture(scope="module")
def conversation(room: Room) -> list[dict[str, Any]]:
    """A short two-voice conversation played into the microphone, once everything of it is filed."""
    recorded = make_recording(room.recordings / "conversation", CONVERSATION)
    played = room.recordings / "conversation-48k.wav"
    sox(recorded, "-r", str(RATE), "-c", str(CHANNELS), "-b", "16", played)
    room.play(played)
    room.heard("finance", "approved")  # the last turn (whisper writes "euros" as "Euro" or a sign at times)
    room.settled()
    return list(room.live.events)


@pytest.mark.slow
def test_the_daemon_hears_a_conversation_through_the_microphone(room: Room, conversation: list[dict[str, Any]]) -> None:
    status = room.daemon.status()
    assert status["source"] == "microphone 'Fake Microphone (playlist)'"
    assert status["state"] == "listening"
    said = " ".join(text for _, text in CONVERSATION)
    heard = " ".join(e["text"] for e in conversation)
    assert wer(said, heard) < 0.25, heard
    # Two voices, told apart: each turn's utterances carry the speaker of that turn.
    assert len(conversation) >= len(CONVERSATION)
    turns = [turn_of(e["text"]) for e in conversation]
    assert sorted(set(turns)) == list(range(len(CONVERSATION))), conversation  # every turn heard
    voices: dict[str, set[int]] = {}
    for event, turn in zip(conversation, turns, strict=True):
        voices.setdefault(CONVERSATION[turn][0], set()).add(event["speaker_id"])
    assert len(voices) == 2 and all(len(ids) == 1 for ids in voices.values()), (voices, conversation)
    assert voices["Sam"] != voices["Priya"], (voices, conversation)
    # Acknowledged means stored, word for word.
    stored = room.stored()
    for event in conversation:
        assert stored[event["utterance_id"]] == event["text"]
    assert "opened at 48000 Hz x 2 ch, converted here" in room.daemon.log.read_text()


@pytest.mark.slow
def test_push_to_talk_answers_a_spoken_question_and_stores_none_of_it(
    room: Room, conversation: list[dict[str, Any]]
) -> None:
    question = room.say("Sam", QUESTION)
    after = room.say("Priya", "The printer on the third floor is broken again.")
    before, heard_before = room.stored(), len(room.live.events)
    with room.daemon.client() as c:
        assert c.post("/push-to-talk/start").json() == {"state": "recording"}
        assert room.daemon.status()["push_to_talk"] is True
        room.play(question)
        reply = c.post("/push-to-talk/stop")
    assert reply.status_code == 200, reply.text
    lines = [json.loads(line) for line in reply.text.splitlines()]
    assert lines[0]["type"] == "question"
    assert wer(QUESTION, lines[0]["text"]) <= 0.2, lines[0]
    answer = lines[-1]
    assert answer["type"] == "answer", lines
    assert answer["text"].strip()
    assert {line["type"] for line in lines[1:-1]} <= {"token"}
    # The conversation said when: "We fly out on the fourteenth of May".
    assert "may" in words(answer["text"]) or "14" in answer["text"], answer
    assert room.daemon.status()["push_to_talk"] is False

    # The conversation goes on, and what was filed since is that, not the question.
    room.play(after)
    room.heard("printer", "broken")
    room.settled()
    new = {uid: text for uid, text in room.stored().items() if uid not in before}
    new_live = [e["text"] for e in room.live.events[heard_before:]]
    assert new and all(mentions([text], "printer") for text in new.values()), new
    assert new_live == list(new.values())


@pytest.mark.slow
def test_push_to_talk_cancel_drops_the_recording(room: Room, conversation: list[dict[str, Any]]) -> None:
    dropped = room.say("Sam", "The plumber is coming on Wednesday morning.")
    after = room.say("Priya", "My brother plays the violin in an orchestra.")
    before, heard_before = room.stored(), len(room.live.events)
    with room.daemon.client() as c:
        stop = c.post("/push-to-talk/stop")
        assert stop.status_code == 400 and "not recording" in stop.json()["error"]
        assert c.get("/push-to-talk").json() == NOT_RECORDING
        assert c.post("/push-to-talk/start").status_code == 200
        second = c.post("/push-to-talk/start")
        assert second.status_code == 400 and "already recording" in second.json()["error"]
        # The indicator's level meter: the silent room, then the sentence as it is spoken.
        wait_until(lambda: c.get("/push-to-talk").json()["seconds"] > 0.3, "the recording to start")
        quiet = c.get("/push-to-talk").json()["level_dbfs"]
        queued, levels = room.mic.play(dropped), []
        deadline = time.monotonic() + 60
        while not queued.with_name(queued.name + ".played").exists() and time.monotonic() < deadline:
            state = c.get("/push-to-talk").json()
            assert state["recording"] is True
            levels.append(state["level_dbfs"])
            time.sleep(0.05)
        room.mic.wait_played(queued)
        assert quiet <= -60 and max(levels) > -35, (quiet, levels)
        assert c.post("/push-to-talk/cancel").json() == {"state": "cancelled"}
        assert c.get("/push-to-talk").json()["recording"] is False
        # Cancelled is over: there is nothing left to answer or to cancel.
        assert c.post("/push-to-talk/stop").status_code == 400
        assert c.post("/push-to-talk/cancel").status_code == 400
    room.play(after)
    room.heard("brother", "orchestra")  # whisper-base has heard "violin" as "myelin"
    room.settled()
    new = {uid: text for uid, text in room.stored().items() if uid not in before}
    assert new and all(mentions([text], "brother") or mentions([text], "orchestra") for text in new.values()), new
    assert not any(mentions([text], "plumber") or mentions([text], "wednesday") for text in new.values())
    assert [e["text"] for e in room.live.events[heard_before:]] == list(new.values())


# (what is said before the plug is pulled, its keywords), (what is said after it is back, its keywords)
UNPLUGGED = {
    "finish": (
        ("The parcel from Berlin arrived this afternoon.", ("parcel", "berlin")),
        ("Remember to call the bank tomorrow morning.", ("bank", "tomorrow")),
    ),
    "stall": (
        ("Our train to Paris leaves at noon.", ("train", "paris")),
        ("Please water the plants on the balcony.", ("plants", "balcony")),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", UNPLUGGED)
def test_a_microphone_unplugged_mid_stream_comes_back_and_nothing_heard_is_lost(room: Room, mode: str) -> None:
    (before_text, before_words), (after_text, after_words) = UNPLUGGED[mode]
    # Little silence after it: the segmenter still holds the sentence open when the plug is pulled.
    first = room.say("Sam", before_text, tail=0.1)
    second = room.say("Priya", after_text)
    stored_before = room.stored()
    log_before = len(room.daemon.log.read_text())

    def log() -> str:
        return room.daemon.log.read_text()[log_before:]

    room.play(first)
    room.mic.unplug(mode)
    try:
        # "finish": PortAudio ends the stream; "stall": it stays open and silent until the timeout.
        wait_until(lambda: "reopening it" in log(), "the daemon to notice the microphone is gone", timeout=30)
        wait_until(lambda: "still unavailable" in log(), "a failed attempt to reopen it", timeout=30)
        # It keeps running and answering while the device is away, and says the device is away.
        status = room.daemon.status()
        assert status["state"] == "source lost" and room.daemon.process.poll() is None
        assert "reopening" in status["source_problem"] and status["source"] in status["source_problem"]
        # What was said just before the plug was pulled is heard now, not once the device is back.
        room.heard(*before_words)
    finally:
        room.mic.replug()
    wait_until(lambda: "opened at" in log(), "the microphone to be reopened", timeout=60)
    status = room.daemon.status()
    assert status["state"] == "listening" and status["source_problem"] is None
    room.play(second)
    room.heard(*before_words)
    room.heard(*after_words)
    room.settled()
    new = [text for uid, text in room.stored().items() if uid not in stored_before]
    # Both sentences, whole: the one cut short by the outage's silence was not clipped either.
    (heard_before,) = [text for text in new if mentions([text], *before_words)]
    assert wer(before_text, heard_before) <= 0.25, heard_before
    assert mentions(new, *after_words), new


@pytest.mark.slow
def test_nothing_is_heard_while_paused(room: Room, conversation: list[dict[str, Any]]) -> None:
    unheard = room.say("Sam", "The spare key is hidden under the flower pot.")
    heard = room.say("Priya", "We should paint the kitchen yellow this summer.")
    before, heard_before = room.stored(), len(room.live.events)
    with room.daemon.client() as c:
        assert c.post("/pause").json()["state"] == "paused"
        try:
            room.play(unheard)
        finally:
            assert c.post("/resume").json()["state"] == "listening"
    room.play(heard)
    room.heard("kitchen", "yellow")
    room.settled()
    new = {uid: text for uid, text in room.stored().items() if uid not in before}
    assert new and all(mentions([text], "kitchen") or mentions([text], "summer") for text in new.values()), new
    assert not any(mentions([text], "key") or mentions([text], "flower") for text in new.values())
    assert [e["text"] for e in room.live.events[heard_before:]] == list(new.values())


@pytest.mark.slow
def test_stopping_while_the_microphone_is_away_keeps_what_it_heard(tmp_path: Path) -> None:
    # A daemon of its own, as it ends: on a plain 16 kHz mono device this time.
    mic = Playlist(tmp_path / "playlist")
    d = daemon_config(tmp_path / "daemon")
    d.start(fake_mic=mic)
    spoken = say(tmp_path, "Sam", "The boiler was serviced on Friday.", tail=0.1, rate=16000, channels=1)
    mic.wait_played(mic.play(spoken))
    # The sentence ended just before the plug was pulled, well within the VAD's hangover: the
    # break the microphone marks closes its segment, so stopping must file or spool it.
    mic.unplug()
    wait_until(lambda: "reopening it" in d.log.read_text(), "the daemon to notice the microphone is gone", 30)
    started = time.monotonic()
    assert d.stop() == 0
    took = time.monotonic() - started
    log = d.log.read_text()
    assert "Traceback" not in log, log
    # A microphone waiting for its device must not hold the stop up until stop_seconds (10) run out.
    assert took < 8, f"stopping took {took:.1f} s"
    # Whether the sentence was filed before the stop or spooled by it, the next start ends with it
    # stored, once (the spool is transcribed first; a second of silence is all it hears after).
    spooled = list((d.data_dir / "spool").glob("*.wav"))
    print(f"the sentence was {'spooled' if spooled else 'filed before the stop'}")
    d.start(silence(tmp_path / "quiet.wav", 1.0))
    d.wait_for(lambda s: s["state"] == "source ended" and s["idle"], "the spool to be filed")
    assert not list((d.data_dir / "spool").glob("*.wav"))
    boiler = [t for t in stored_utterances(d.data_dir).values() if mentions([t], "boiler", "friday")]
    assert len(boiler) == 1, (spooled, stored_utterances(d.data_dir), log)
    assert d.stop() == 0
