"""The whole listening chain on real recordings: file, VAD, Whisper, voices, memory, through the CLI."""

from __future__ import annotations

import re

import jiwer

from assistant.bench.synth_speech import espeak, silence, sox, to_16k

from .test_cli import run

VOICE_A = ("en-us",)
# A male and a female espeak voice: two male ones sound alike to the voice encoder.
VOICE_B = ("en+f3",)
SCRIPT = [
    (VOICE_A, "Did you book the flights to Lisbon for the offsite?"),
    (VOICE_B, "Yes, I booked them this morning, we leave on the twelfth of May."),
    (VOICE_A, "Great. How much did finance approve for the trip?"),
    (VOICE_B, "They approved four thousand euros, and that includes the hotel."),
    (VOICE_A, "Perfect. I will send the agenda to everyone by Friday."),
    (VOICE_B, "Thanks. My neighbour is looking after the dog while we are away."),
]


def record(directory, turns, name: str, gap: float = 0.8):
    directory.mkdir(parents=True, exist_ok=True)
    parts = []
    pause = silence(directory / f"{name}-pause.wav", gap)
    for i, (voice, text) in enumerate(turns):
        raw = espeak(directory / f"{name}-{i}-raw.wav", text, voice[0], *voice[1:])
        parts += [to_16k(raw, directory / f"{name}-{i}.wav"), pause]
    out = directory / f"{name}.wav"
    sox(*parts, out)
    return out


def words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def voice_of(text: str) -> tuple[str, ...]:
    """The voice of the script's turn that shares the most words with `text`."""
    heard = set(words(text).split())
    return max(SCRIPT, key=lambda turn: len(set(words(turn[1]).split()) & heard))[0]


def said_by(heard: list[tuple[str, str]], name: str, voice: tuple[str, ...]) -> int:
    return sum(len(words(text).split()) for who, text in heard if who == name and voice_of(text) == voice)


def attributed(heard: list[tuple[str, str]], names: dict[tuple[str, ...], str]) -> float:
    """The share of heard words given to the name of the voice that said them."""
    total = sum(len(words(text).split()) for _, text in heard)
    return sum(said_by(heard, name, voice) for voice, name in names.items()) / total


def archived(tmp_path) -> list[tuple[str, str]]:
    from assistant.store.db import Database

    db = Database(tmp_path / "data" / "memory.db")
    try:
        rows = db.all("SELECT s.name, u.text FROM utterances u JOIN speakers s ON s.id = u.speaker_id ORDER BY u.time")
        return [(r[0], r[1]) for r in rows]
    finally:
        db.close()


def test_a_recording_becomes_attributed_utterances_in_memory(tmp_path):
    wav = record(tmp_path / "audio", SCRIPT, "talk")
    out = run(["ingest", str(wav)], tmp_path)
    assert out.returncode == 0, out.stderr
    assert re.search(r"talk\.wav: 0m\d\ds of audio, \d+ speech segments, \d+ utterances remembered", out.stdout)
    assert "real-time factor" in out.stdout
    heard = archived(tmp_path)
    said = " ".join(t for _, t in SCRIPT)
    error = jiwer.wer(words(said), words(" ".join(t for _, t in heard)))
    assert error < 0.2, (error, heard)
    # Unknown voices get labels the user can rename; each keeps a learned voice.
    assert all(re.fullmatch(r"Speaker \d+", name) for name, _ in heard)
    # Two voices found, one label each: the words of each voice went to its own label.
    names = {name for name, _ in heard}
    assert len(names) == 2, heard
    label = {v: max(names, key=lambda n, v=v: said_by(heard, n, v)) for v in (VOICE_A, VOICE_B)}
    assert label[VOICE_A] != label[VOICE_B], heard
    assert attributed(heard, label) >= 0.9, heard
    listed = run(["speakers"], tmp_path).stdout
    assert "learned" in listed
    # Memory was built from the words: the tree mentions the trip.
    tree = run(["memory"], tmp_path).stdout
    assert "Lisbon" in tree or "lisbon" in tree.lower()


def test_enrolled_voices_name_what_they_say(tmp_path):
    audio = tmp_path / "audio"
    alice = record(
        audio, [(VOICE_A, "Hello, this is Alice. I am recording a sample of my voice for the assistant.")] * 2, "alice"
    )
    bob = record(
        audio, [(VOICE_B, "Good morning, my name is Bob, and this is how my voice sounds on a normal day.")] * 2, "bob"
    )
    for name, wav in (("Alice", alice), ("Bob", bob)):
        out = run(["speakers", "enroll", name, str(wav)], tmp_path)
        assert out.returncode == 0, out.stderr
        assert f"enrolled '{name}'" in out.stdout
    listed = run(["speakers"], tmp_path).stdout
    assert listed.count("enrolled") == 2
    out = run(["ingest", str(record(audio, SCRIPT, "talk"))], tmp_path)
    assert out.returncode == 0, out.stderr
    heard = archived(tmp_path)
    # Words said by each voice, given to the right name.
    assert attributed(heard, {VOICE_A: "Alice", VOICE_B: "Bob"}) >= 0.9, heard


def test_a_named_voice_is_spelled_as_named_in_what_follows(tmp_path):
    audio = tmp_path / "audio"
    sample = record(
        audio, [(VOICE_A, "Hello, I am recording a sample of my voice for the assistant today.")] * 2, "sample"
    )
    talk = record(
        audio, [(VOICE_B, "Bryndis will bring the cake."), (VOICE_A, "I met Jaxon at the station yesterday.")], "talk"
    )
    off = tmp_path / "off"
    off.mkdir()
    for data in (tmp_path, off):
        for name in ("Bryndis", "Jaxon"):
            out = run(["speakers", "enroll", name, str(sample)], data)
            assert out.returncode == 0, out.stderr
    # Without the names Whisper writes "Print it, we'll bring the cake" and "I met Yaksana ...".
    out = run(["ingest", str(talk)], off, extra_config="stt:\n  hotwords_from_speakers: false\n")
    assert out.returncode == 0, out.stderr
    plain = " ".join(text for _, text in archived(off))
    assert "Bryndis" not in plain and "Jaxon" not in plain, plain
    out = run(["ingest", str(talk)], tmp_path)
    assert out.returncode == 0, out.stderr
    heard = " ".join(text for _, text in archived(tmp_path))
    assert "Bryndis" in heard and "Jaxon" in heard, heard


def test_bad_recordings_are_refused_by_name(tmp_path):
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    out = run(["ingest", str(broken)], tmp_path)
    assert out.returncode == 4 and "broken.wav" in out.stderr
    short = silence(tmp_path / "short.wav", 0.3)
    # Under a second of silence is a recording with nothing to remember, not an error.
    out = run(["ingest", str(short)], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "0 speech segments, 0 utterances remembered" in out.stdout
    out = run(["speakers", "enroll", "Alice", str(short)], tmp_path)
    assert out.returncode == 4 and "too short to enroll 'Alice': 0.0 s of speech in 0.3 s recorded" in out.stderr
    assert "at least 5 s" in out.stderr
