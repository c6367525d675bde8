"""Online diarization with Resemblyzer on two espeak-ng voices, transcribed by Whisper tiny.en."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pytest

from assistant.config import DiarizationOptions, load_settings
from assistant.errors import InputError, ModelError
from assistant.records import SAMPLE_RATE, Piece, Voiceprint
from assistant.speech.diarize import EMBEDDING_DIM, Diarizer, diarizer_from_settings
from assistant.speech.transcribe import Transcriber

from .test_transcribe import (
    T0,
    VOICE_A,
    VOICE_B,
    Turn,
    dialogue,
    segment,
    speak,
    stt_settings,
    tiny,  # noqa: F401 - the fixture, shared
    vad_like_segments,
    word_error_rate,
)

TEXTS = [
    "Good morning. Did you get a chance to look at the budget for the Lisbon trip?",
    "I did. The flights are more expensive than we planned, about 400 euros each.",
    "That is a lot. Could we fly on Tuesday instead of Friday?",
    "Tuesday is cheaper, but Sam cannot leave before Wednesday because of the conference.",
    "Then let us ask Sam whether he can join us one day later.",
    "Good idea. I will send him a message this afternoon.",
    "What about the hotel? The one near the river looked nice.",
    "It is fully booked in May. I found another one close to the old town.",
]
# After each turn. Pauses under the VAD's 0.6 s hangover keep two turns in one segment, as in
# conversation, so three of the five segments hold a change of speaker.
PAUSES = [0.9, 0.35, 0.8, 0.4, 1.0, 0.3, 0.8, 0.5]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("voices")


@pytest.fixture
def diarizer(tmp_path) -> Diarizer:
    return diarizer_from_settings(stt_settings(tmp_path, "whisper-tiny.en"))


def options(**changes: float) -> DiarizationOptions:
    """The shipped diarization options (the rules below assume match 0.75, margin 0.05, 1.5 s, 0.1)."""
    shipped = load_settings(user_file=Path("/nonexistent/config.yaml")).diarization
    assert (shipped.match_threshold, shipped.margin, shipped.min_new_speaker_seconds, shipped.centroid_weight) == (
        0.75,
        0.05,
        1.5,
        0.1,
    )
    return dataclasses.replace(shipped, **changes)


def attribution(pieces: list[Piece], turns: list[Turn]) -> float:
    """Share of recognised words given to the right voice, under the best one-to-one naming of speakers."""

    def voice_at(t: float) -> int:
        inside = [x for x in turns if x.start <= t <= x.end]
        return (inside or sorted(turns, key=lambda x: min(abs(t - x.start), abs(t - x.end))))[0].voice

    pairs = [(voice_at((w.start + w.end) / 2), p.speaker) for p in pieces for w in p.words]
    voices = sorted({t.voice for t in turns})
    found = sorted({s for _, s in pairs})
    best = 0
    for names in itertools.permutations(found, min(len(found), len(voices))):
        mapping = dict(zip(names, voices, strict=False))
        best = max(best, sum(mapping.get(s) == v for v, s in pairs))
    return best / max(1, len(pairs))


def test_a_two_voice_dialogue_gets_two_speakers(tiny: Transcriber, diarizer: Diarizer, workdir):  # noqa: F811
    audio, turns = dialogue(TEXTS, (VOICE_A, VOICE_B), PAUSES, workdir)
    segments = vad_like_segments(audio, turns)
    assert len(segments) == 5
    pieces: list[Piece] = []
    for seg in segments:
        got = diarizer.diarize(seg, tiny.transcribe(seg))
        assert all(seg.start <= p.start <= p.end <= seg.end for p in got)
        pieces += got

    assert len(diarizer.speakers()) == 2
    assert attribution(pieces, turns) >= 0.9
    assert word_error_rate(" ".join(TEXTS), " ".join(p.text for p in pieces)) <= 0.3
    assert all(a.start <= b.start for a, b in itertools.pairwise(pieces))
    for p in pieces:
        assert p.text == "".join(w.text for w in p.words).strip()
    # Every turn of the dialogue begins a piece of its own: turns are not glued together.
    assert len(pieces) >= len(turns)
    heard = sum(s.seconds for s in diarizer.speakers())
    assert 0.8 * sum(t.end - t.start for t in turns) <= heard <= audio.size / SAMPLE_RATE


@pytest.mark.parametrize("voices", [(VOICE_A, VOICE_B), (VOICE_B, VOICE_A)], ids=["us-then-f3", "f3-then-us"])
def test_a_change_of_voice_without_a_pause_splits_the_segment(voices, tiny: Transcriber, diarizer, workdir):  # noqa: F811
    first = speak(
        "The Lisbon trip moves to May, so we should book the flights before the end of the week.", voices[0], workdir
    )
    second = speak("That is fine with me, I will ask Sam to send the budget on Tuesday.", voices[1], workdir)
    quiet = np.zeros(int(0.3 * SAMPLE_RATE), np.float32)
    seg = segment(np.concatenate([quiet, first, second, quiet]))
    change = T0 + (len(quiet) + len(first)) / SAMPLE_RATE

    pieces = diarizer.diarize(seg, tiny.transcribe(seg))

    speakers = [p.speaker for p in pieces]
    switches = sum(a != b for a, b in itertools.pairwise(speakers))
    assert len(set(speakers)) == 2 and switches == 1, [(p.speaker, p.text) for p in pieces]
    # The second voice starts within a word or so of where it really does (whisper's word times
    # and 1.6 s voice windows both blur it by about 0.2 s).
    turn = next(p for p in pieces if p.speaker != speakers[0])
    assert abs(turn.start - change) <= 0.6, (turn.start - change, [(p.speaker, p.text) for p in pieces])


def test_an_enrolled_voice_is_recognised_later(tiny: Transcriber, diarizer: Diarizer, workdir):  # noqa: F811
    enrolled = diarizer.enroll(
        "Alice",
        [
            speak("Hello, my name is Alice and I work on the budget.", VOICE_B, workdir),
            speak("I usually travel to Lisbon twice a year for the conference.", VOICE_B, workdir),
        ],
    )
    assert enrolled.name == "Alice" and enrolled.label == "Alice" and enrolled.seconds > 5 and enrolled.enrolled
    assert enrolled.centroid.shape == (EMBEDDING_DIM,)
    assert np.linalg.norm(enrolled.centroid) == pytest.approx(1.0, abs=1e-5)

    other = segment(speak(TEXTS[0], VOICE_A, workdir))
    strangers = diarizer.diarize(other, tiny.transcribe(other))
    assert strangers and all(p.speaker != enrolled.id and p.name is None for p in strangers)

    later = segment(speak(TEXTS[1], VOICE_B, workdir), T0 + 60)
    pieces = diarizer.diarize(later, tiny.transcribe(later))
    assert pieces and {(p.speaker, p.name, p.label) for p in pieces} == {(enrolled.id, "Alice", "Alice")}
    assert pieces[0].similarity >= 0.75
    assert len(diarizer.speakers()) == 2

    again = diarizer.enroll("Alice", speak("One more sentence from me.", VOICE_B, workdir))
    assert again.id == enrolled.id and again.seconds > enrolled.seconds
    assert diarizer.enroll(enrolled.id, speak("And by my id.", VOICE_B, workdir)).id == enrolled.id


def test_speakers_survive_a_save_and_load(tiny: Transcriber, tmp_path, workdir):  # noqa: F811
    settings = stt_settings(tmp_path, "whisper-tiny.en")
    first = diarizer_from_settings(settings)
    for voice, text in [(VOICE_A, TEXTS[0]), (VOICE_B, TEXTS[1])]:
        seg = segment(speak(text, voice, workdir))
        first.diarize(seg, tiny.transcribe(seg))
    saved = first.speakers()
    assert [s.id for s in saved] == ["S1", "S2"]

    second = diarizer_from_settings(settings)
    second.load(saved)
    seg = segment(speak(TEXTS[2], VOICE_A, workdir))
    pieces = second.diarize(seg, tiny.transcribe(seg))
    assert {p.speaker for p in pieces} == {"S1"}
    assert len(second.speakers()) == 2
    # New ids never reuse a loaded one, whatever the loaded ids look like.
    second.load([Voiceprint("S1", "Sam", saved[0].centroid, 10.0), Voiceprint("S3", None, saved[1].centroid, 5.0)])
    stranger, _ = second.assign(np.eye(EMBEDDING_DIM, dtype=np.float32)[0], 3.0)
    assert stranger.id not in {"S1", "S3"} and len(second.speakers()) == 3

    with pytest.raises(InputError, match="256"):
        second.load([Voiceprint("x", None, np.ones(10, np.float32), 1.0)])
    with pytest.raises(InputError, match="twice"):
        second.load([saved[0], saved[0]])


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def test_matching_rules():
    # The rules on plain vectors: no audio, so the encoder is never loaded.
    d = Diarizer(None, options())
    e1, e2 = np.eye(EMBEDDING_DIM, dtype=np.float32)[:2]

    s1, sim = d.assign(e1, 3.0)
    assert (s1.id, sim, s1.seconds) == ("S1", 1.0, 3.0)
    # Unmatched but too short to found a voice: the closest speaker takes it and does not move.
    who, sim = d.assign(e2, 1.0)
    assert who.id == "S1" and sim == pytest.approx(0.0)
    assert np.allclose(d.speakers()[0].centroid, e1) and d.speakers()[0].seconds == 3.0
    # Long enough: a new speaker.
    s2, _ = d.assign(e2, 2.0)
    assert s2.id == "S2" and len(d.speakers()) == 2

    # A confident match moves a young centroid as a running mean (3 s + 1 s: a quarter of the way)...
    near = _unit(e1 + 0.5 * np.eye(EMBEDDING_DIM, dtype=np.float32)[2])
    who, sim = d.assign(near, 1.0)
    assert who.id == "S1" and sim == pytest.approx(float(near @ e1))
    moved = d.speakers()[0]
    assert moved.seconds == 4.0 and np.allclose(moved.centroid, _unit(0.75 * e1 + 0.25 * near), atol=1e-6)
    # ...and an old one by centroid_weight.
    d.load([Voiceprint("S1", None, e1, 1000.0)])
    d.assign(near, 1.0)
    assert np.allclose(d.speakers()[0].centroid, _unit(0.9 * e1 + 0.1 * near), atol=1e-6)
    # An enrolled voice is matched but never moved: a guest who sounds alike must not drag it.
    d.load([Voiceprint("S1", "Alice", e1, 20.0, enrolled=True)])
    who, _ = d.assign(near, 3.0)
    assert who.name == "Alice" and np.allclose(d.speakers()[0].centroid, e1) and d.speakers()[0].seconds == 20.0

    # Two speakers nearly as close: attributed to the better one, but neither learns from it.
    c2 = _unit(0.8 * e1 + 0.6 * e2)
    d.load([Voiceprint("A", None, e1, 50.0), Voiceprint("B", None, c2, 50.0)])
    between = _unit(0.95 * e1 + 0.31 * e2)
    who, _ = d.assign(between, 3.0)
    assert who.id == "A"
    assert [(s.seconds, float(s.centroid @ e1)) for s in d.speakers()] == [
        (50.0, pytest.approx(1.0)),
        (50.0, pytest.approx(0.8)),
    ]


def test_nothing_transcribed_is_nothing_attributed(diarizer: Diarizer, workdir):
    seg = segment(speak("Hello there.", VOICE_A, workdir))
    assert diarizer.diarize(seg, []) == []
    assert diarizer.speakers() == []


def test_a_missing_speaker_model_names_the_install_command(tmp_path):
    d = Diarizer(tmp_path / "missing.pt", options())
    with pytest.raises(ModelError, match="assistant models install resemblyzer-ge2e"):
        d.embed(np.zeros(SAMPLE_RATE, np.float32))
    with pytest.raises(InputError):
        Diarizer(None, options()).enroll("Bob", [])


def test_each_line_keeps_the_voice_of_its_own_audio(tiny: Transcriber, diarizer: Diarizer, workdir):  # noqa: F811
    first = speak("The Lisbon trip moves to May, so we should book the flights soon.", VOICE_A, workdir)
    second = speak("That is fine with me, I will ask Sam to send the budget.", VOICE_B, workdir)
    quiet, pause = (np.zeros(int(s * SAMPLE_RATE), np.float32) for s in (0.3, 0.5))
    seg = segment(np.concatenate([quiet, first, pause, second, quiet]))
    later = T0 + (len(quiet) + len(first) + len(pause)) / SAMPLE_RATE
    a, b = diarizer.embed(first), diarizer.embed(second)
    # The two people the online pass has not told apart yet: one learned voice between them, which
    # both stretches match, so they are matched as one stretch.
    mixed = (a + b) / np.linalg.norm(a + b)
    diarizer.load([Voiceprint("S1", None, mixed, 60.0)])
    transcripts = tiny.transcribe(segment(np.concatenate([quiet, first]))) + tiny.transcribe(
        segment(np.concatenate([second, quiet]), later)
    )

    pieces = diarizer.diarize(seg, transcripts)

    assert {p.speaker for p in pieces} == {"S1"}
    mine = [p for p in pieces if p.end <= later]
    theirs = [p for p in pieces if p.start >= later]
    assert mine and theirs
    assert all(float(p.embedding @ a) > float(p.embedding @ b) for p in mine)
    assert all(float(p.embedding @ b) > float(p.embedding @ a) for p in theirs)
