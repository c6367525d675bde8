"""`assistant bench speech`: the metrics on hand-made inputs, the recordings, bad input, and one real run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from assistant.bench.speech_listen import HeardPiece
from assistant.bench.speech_metrics import (
    Span,
    align,
    assign_by_trying,
    attribute,
    best_mapping,
    diarization_error,
    normalise,
)
from assistant.bench.speech_scoring import oracle_attribution, turn_delays
from assistant.bench.synth_conversation import Line, Pacing, Recording, SpokenTurn, build_recording
from assistant.bench.synth_speech import ToolMissing, check_tools
from assistant.cli import main
from assistant.errors import InputError
from assistant.records import SAMPLE_RATE

from .conftest import MODELS_DIR

DIALOGUE = [
    ("Ann", "Did you book the flights to Lisbon for the offsite?"),
    ("Bob", "Yes, I booked them this morning, we leave on the twelfth of May."),
    ("Ann", "Great. How much did finance approve for the trip?"),
    ("Bob", "They approved four thousand euros, and that includes the hotel."),
]


def locomo_file(path: Path, sessions: dict[str, list[tuple[str, str]]]) -> Path:
    """A LoCoMo-format file (one sample per entry of `sessions`) with one session each."""
    samples = []
    for name, turns in sessions.items():
        conversation = {
            "speaker_a": turns[0][0],
            "speaker_b": turns[-1][0],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(turns)],
        }
        samples.append({"sample_id": name, "conversation": conversation, "qa": []})
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def bench(tmp_path: Path, *args: str) -> tuple[int, str]:
    config = tmp_path / "config.yaml"
    config.write_text(f"paths:\n  data_dir: {tmp_path / 'data'}\n  models_dir: {MODELS_DIR}\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["--config", str(config), "bench", "speech", *args])
    return result.exit_code, result.output


# --- metrics ---------------------------------------------------------------------------------


def test_reference_and_hypothesis_are_normalised_alike():
    assert normalise("They approved 4,000 euros & that's the 12th!") == normalise(
        "they approved four thousand euros and thats the twelfth"
    )
    assert normalise("Twenty-two, 22; 100%") == ["twenty", "two", "twenty", "two", "one", "hundred", "percent"]


def test_word_errors_and_the_alignment():
    a = align("the trip moves to may".split(), "the ship moves may".split())
    # One substitution (trip/ship), one deletion (to).
    assert (a.errors.substitutions, a.errors.deletions, a.errors.insertions) == (1, 1, 0)
    assert a.errors.wer == pytest.approx(2 / 5)
    assert a.ref_to_hyp == (0, 1, 2, None, 3)
    extra = align("see you soon".split(), "see you very soon".split())
    assert extra.errors.insertions == 1 and extra.ref_to_hyp == (0, 1, 3)
    empty = align(["hello", "there"], [])
    assert empty.errors.wer == 1.0 and empty.ref_to_hyp == (None, None)


def test_attribution_finds_the_best_mapping_of_voices_to_speakers():
    ref = ["Ann", "Ann", "Bob", "Bob", "Bob"]
    # The chain's labels are arbitrary: "Speaker 2" is Ann, "Speaker 1" is Bob.
    hyp = ["Speaker 2", "Speaker 2", "Speaker 1", "Speaker 1", "Speaker 2"]
    result = attribute(ref, hyp, (0, 1, 2, 3, 4))
    assert result.accuracy == pytest.approx(4 / 5)
    assert {(m.cluster, m.speaker) for m in result.mapping} == {("Speaker 2", "Ann"), ("Speaker 1", "Bob")}
    # Deleted words are the WER's business; a third voice maps to nobody and its words are wrong.
    three = attribute(ref, ["Speaker 1", "Speaker 3", "Speaker 2"], (0, None, 1, 2, None))
    assert three.words == 3 and three.correct == 2


def test_brute_force_assignment_matches_the_hungarian_one():
    rng = np.random.default_rng(7)
    for shape in [(2, 2), (3, 2), (2, 4), (4, 4)]:
        score = rng.integers(0, 20, size=shape).astype(float)
        pairs = assign_by_trying(score)
        labels_r = [f"c{i}" for i in range(shape[0])]
        labels_c = [f"s{j}" for j in range(shape[1])]
        best = best_mapping(labels_r, labels_c, score)
        total = sum(score[labels_r.index(m.cluster), labels_c.index(m.speaker)] for m in best)
        assert sum(score[r, c] for r, c in pairs) == total
        assert len(pairs) == min(shape)


def test_diarization_error_counts_misses_false_alarms_and_confusion():
    ref = [Span(0, 10, "Ann"), Span(10, 20, "Bob")]
    assert diarization_error(ref, [Span(0, 10, "x"), Span(10, 20, "y")]).der == pytest.approx(0, abs=1e-9)
    # The change is found 2 s late: 2 s of Bob given to Ann's voice.
    late = diarization_error(ref, [Span(0, 12, "x"), Span(12, 20, "y")])
    assert late.confusion == pytest.approx(2, abs=0.02) and late.der == pytest.approx(0.1, abs=0.002)
    # 2 s of Ann not heard; 2 s of speech after Bob ended.
    gaps = diarization_error(ref, [Span(0, 8, "x"), Span(10, 22, "y")])
    assert gaps.missed == pytest.approx(2, abs=0.02) and gaps.false_alarm == pytest.approx(2, abs=0.02)
    assert gaps.der == pytest.approx(0.2, abs=0.002)
    # Ann and Bob overlap for 2 s, and the chain hears one voice there: a missed speaker.
    both = diarization_error([Span(0, 10, "Ann"), Span(8, 18, "Bob")], [Span(0, 10, "x"), Span(10, 18, "y")])
    assert both.speech == pytest.approx(20, abs=0.02)
    assert both.missed == pytest.approx(2, abs=0.02) and both.confusion == pytest.approx(0, abs=1e-9)
    # A collar forgives boundary slips and only those.
    slip = [Span(0, 10.3, "x"), Span(10.3, 20, "y")]
    assert diarization_error(ref, slip).der == pytest.approx(0.3 / 20, abs=0.002)
    assert diarization_error(ref, slip, collar=0.5).der == pytest.approx(0, abs=1e-9)


def test_delay_runs_from_the_end_of_a_turn_to_the_filing_of_its_last_words():
    turns = (
        SpokenTurn(0, "Ann", "the trip moves to may", "en-us", 1.0, 3.0, False),
        SpokenTurn(1, "Bob", "i booked the hotel", "en+f3", 4.0, 6.0, False),
        SpokenTurn(2, "Ann", "great thanks", "en-us", 7.0, 8.0, False),
    )
    recording = Recording(Path("talk.wav"), 9.0, turns, (), ())
    pieces = [
        HeardPiece(1.0, 2.0, "Speaker 1", "The trip", 3.5),
        HeardPiece(2.0, 3.0, "Speaker 1", "moves to May.", 4.5),
        HeardPiece(4.0, 6.0, "Speaker 2", "I booked the hotel.", 7.25),
    ]
    delays = turn_delays(recording, pieces)
    assert [(d.index, d.delay) for d in delays.turns] == [(0, pytest.approx(1.5)), (1, pytest.approx(1.25))]
    assert delays.missed == 1  # nothing of "great thanks" was heard
    assert [d.pause_after for d in delays.turns] == [pytest.approx(1.0), pytest.approx(1.0)]
    assert delays.p50 == pytest.approx(1.375)


def test_the_oracle_gives_each_utterance_the_nearest_voice_of_the_others():
    said = [
        ("Ann", "alpha beta"),
        ("Bob", "gamma delta"),
        ("Ann", "epsilon zeta"),
        ("Bob", "eta theta"),
        ("Ann", "iota kappa"),
        ("Bob", "lambda mu"),
        ("Cy", "nu xi"),
    ]
    turns = tuple(SpokenTurn(i, who, text, "en-us", 2.0 * i, 2.0 * i + 2, False) for i, (who, text) in enumerate(said))
    recording = Recording(Path("talk.wav"), 14.0, turns, (), ())

    def unit(*v: float) -> np.ndarray:
        return np.array(v, dtype=np.float32) / np.linalg.norm(v)

    voices = [
        unit(1, 0.1, 0),
        unit(0.1, 1, 0),
        unit(1, 0, 0.1),
        unit(0, 1, 0.1),
        unit(0.2, 1, 0),  # Ann, sounding like Bob
        None,  # too short to embed: keeps its true speaker
        unit(0, 0, 1),  # Cy's only utterance: no other to know the voice by
    ]
    # The chain's own labels play no part: it heard one voice throughout.
    pieces = [HeardPiece(t.start, t.end, "Speaker 1", t.text, t.end, v) for t, v in zip(turns, voices, strict=True)]
    oracle = oracle_attribution(recording, pieces)
    assert oracle is not None and (oracle.words, oracle.correct) == (14, 10)
    assert oracle_attribution(recording, [replace(p, voice=None) for p in pieces]) is None


# --- recordings ------------------------------------------------------------------------------


def test_recordings_have_two_voices_pauses_and_overlaps_where_the_reference_says(tmp_path):
    lines = [Line(s, t) for s, t in DIALOGUE]
    rec = build_recording(lines, tmp_path, name="talk", pacing=Pacing(overlap=1.0), seed=3)
    assert [t.voice for t in rec.turns] == ["en-us", "en+f3", "en-us", "en+f3"]
    assert all(t.overlapped for t in rec.turns[1:])
    audio, rate = sf.read(rec.path, dtype="float32")
    assert rate == 16_000 and rec.duration == pytest.approx(len(audio) / rate)
    # Sound only where a turn is, and at each turn's first and last sample.
    loud = np.abs(audio) > 0.02
    inside = np.zeros(len(audio), dtype=bool)
    for t in rec.turns:
        inside[int(t.start * rate) : int(t.end * rate) + 1] = True
        assert loud[int(t.start * rate) : int(t.start * rate) + 400].any()
    assert not (loud & ~inside).any()
    # The first N lines with the same seed make the start of the same recording.
    head = build_recording(lines[:2], tmp_path / "head", name="talk", pacing=Pacing(overlap=1.0), seed=3)
    assert [(t.start, t.end) for t in head.turns] == [(t.start, t.end) for t in rec.turns[:2]]


def test_a_missing_tool_names_its_debian_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match=r"espeak-ng and sox not found.*apt-get install espeak-ng sox"):
        check_tools()


# --- bad input -------------------------------------------------------------------------------


def test_a_missing_data_file_is_refused_by_name(tmp_path):
    code, out = bench(tmp_path, "--data", str(tmp_path / "nowhere.json"))
    assert code == 4 and "nowhere.json: no such file" in out


def test_an_unknown_conversation_is_refused_with_the_known_ones(tmp_path):
    data = locomo_file(tmp_path / "talks.json", {"talk-1": DIALOGUE})
    code, out = bench(tmp_path, "--data", str(data), "--conversations", "talk-1,talk-9")
    assert code == 4 and "no conversation(s) talk-9; it holds talk-1" in out


def test_a_conversation_with_one_speaker_is_refused(tmp_path):
    data = locomo_file(tmp_path / "talks.json", {"talk-1": DIALOGUE, "monologue": [("Ann", "Hello."), ("Ann", "Bye.")]})
    code, out = bench(tmp_path, "--data", str(data))
    assert code == 4 and "conversation monologue has one speaker (Ann)" in out


# --- the whole benchmark ---------------------------------------------------------------------


# Short turns: each pass costs a Whisper window per speech segment, and the real-time pass as long as its audio.
SHORT_DIALOGUE = [
    ("Ann", "Did you book the flights to Lisbon yet?"),
    ("Bob", "Yes, we leave on the twelfth of May."),
    ("Ann", "Great. How much did finance approve?"),
    ("Bob", "Four thousand euros, with the hotel."),
]


def test_the_benchmark_hears_a_spoken_dialogue_and_scores_it(tmp_path):
    data = locomo_file(tmp_path / "talks.json", {"talk-1": SHORT_DIALOGUE})
    out_json, out_md = tmp_path / "speech.json", tmp_path / "speech.md"
    code, out = bench(
        tmp_path,
        *("--data", str(data), "--stt", "whisper-tiny.en", "--realtime-turns", "1"),
        *("--json", str(out_json), "--markdown", str(out_md), "--keep-audio", str(tmp_path / "audio")),
    )
    assert code == 0, out
    report = json.loads(out_json.read_text())
    assert report["format"] == "assistant-bench-speech/1" and report["meta"]["stt"] == "whisper-tiny.en"
    overall = report["overall"]
    assert overall["turns"] == 4
    assert overall["wer"] < 0.35, report["conversations"][0]["pieces"]
    assert overall["attribution"] > 0.8
    assert overall["der"] < 0.5
    conv = report["conversations"][0]
    assert conv["speakers"] == {"reference": 2, "found": 2}
    rtf = overall["rtf"]
    assert 0 < rtf["stt"] < rtf["chain"] and rtf["vad"] + rtf["stt"] + rtf["diarization"] <= rtf["chain"]
    # The real-time pass: the turn is searchable after its speech ends (the VAD waits out a pause
    # first, then Whisper, the voice encoder and the memory run) but within seconds.
    assert conv["realtime"]["turns"] == 1 and conv["realtime"]["missed"] == 0
    assert all(0.3 < d["delay"] < 10 for d in conv["realtime"]["delays"])
    assert (tmp_path / "audio" / "talk-1.wav").exists() and (tmp_path / "audio" / "realtime" / "talk-1.wav").exists()
    assert "| talk-1 |" in out_md.read_text()


# --- the voice matrix --------------------------------------------------------------------------


def test_every_matrix_set_gives_each_voice_turns_by_its_pattern():
    import itertools
    import random

    from assistant.bench.voice_matrix_sets import BACKCHANNEL, SETS, set_script, speaker_order

    assert len(SETS) >= 12 and len({s.name for s in SETS}) == len(SETS)
    assert {len(s.voices) for s in SETS} >= {2, 3, 4}
    source = [f"Line number {i} of the conversation." for i in range(50)]
    for i, speaker_set in enumerate(SETS):
        lines = set_script(speaker_set, i, source, 24, seed=0)
        assert len(lines) == 24
        assert {line.speaker for line in lines} == set("ABCD"[: len(speaker_set.voices)])
        # Seeded: the same plan every run.
        assert lines == set_script(speaker_set, i, source, 24, seed=0)
    assert speaker_order("guest", 3, 10, random.Random(0)) == [0, 1, 0, 1, 2, 0, 1, 0, 1, 2]
    assert speaker_order("monologue", 2, 8, random.Random(0)) == [0, 0, 0, 0, 0, 0, 1, 0]
    order = speaker_order("round", 4, 24, random.Random(0))
    assert set(order) == {0, 1, 2, 3} and all(a != b for a, b in itertools.pairwise(order))
    back = next(s for s in SETS if s.pattern == "backchannel")
    replies = [line.text for line in set_script(back, 0, source, 24, seed=0) if line.speaker == "B"]
    assert sum(r in BACKCHANNEL for r in replies) == len(replies) // 2


def test_the_matrix_refuses_sets_it_does_not_have(tmp_path):
    data = locomo_file(tmp_path / "talks.json", {"talk-1": DIALOGUE})
    code, out = bench(tmp_path, "--data", str(data), "--matrix", "--sets", "0,99")
    assert code == 4 and "--sets: no set 99" in out
    code, out = bench(tmp_path, "--data", str(data), "--matrix", "--sets", "first")
    assert code == 4 and "--sets takes set numbers" in out
    code, out = bench(tmp_path, "--data", str(data), "--matrix", "--sets", "0,10", "--turns", "6")
    assert code == 4 and "--turns must be at least 8" in out  # the quartet


def test_the_matrix_hears_a_speaker_set_and_scores_it(tmp_path):
    data = locomo_file(tmp_path / "talks.json", {"talk-1": SHORT_DIALOGUE + DIALOGUE})
    out_json, out_md = tmp_path / "matrix.json", tmp_path / "matrix.md"
    code, out = bench(
        tmp_path,
        *("--data", str(data), "--stt", "whisper-tiny.en", "--matrix", "--sets", "4", "--turns", "6"),
        *("--json", str(out_json), "--markdown", str(out_md)),
    )
    assert code == 0, out
    report = json.loads(out_json.read_text())
    assert report["format"] == "assistant-bench-voice-matrix/1" and report["meta"]["turns"] == 6
    (only,) = report["sets"]
    assert only["name"] == "f3/gb-f4" and only["speakers"] == 2 and only["turns"] == 6
    assert only["found"] == 2 and only["attribution"] > 0.8 and only["wer"] < 0.4
    # Two clearly different voices: knowing everyone else's speaker, the embeddings tell them apart.
    assert only["oracle_attribution"] > 0.8
    assert report["summary"]["oracle_median"] == pytest.approx(only["oracle_attribution"], abs=5e-4)
    summary = report["summary"]
    assert summary["sets"] == 1 and summary["count_exact"] == 1
    assert summary["attribution_median"] == summary["attribution_worst"]
    assert summary["attribution_median"] == pytest.approx(only["attribution"], abs=5e-4)  # 4 digits against 3
    assert 0 < summary["chain_rtf"] < 1
    assert "| f3/gb-f4 | female pair | 2 of 2 |" in out_md.read_text()


def test_enrolling_is_refused_without_the_matrix(tmp_path):
    data = locomo_file(tmp_path / "talks.json", {"talk-1": DIALOGUE})
    code, out = bench(tmp_path, "--data", str(data), "--enrolled", "20")
    assert code == 4 and "--enrolled and --alone-minutes apply to the voice matrix" in out
    # Less than an enrollment takes is refused before any set is spoken.
    code, out = bench(tmp_path, "--data", str(data), "--matrix", "--enrolled", "2")
    assert code == 4 and "--enrolled 2: enrolling needs at least 5 s" in out


def test_a_household_is_enrolled_from_lines_no_set_speaks_and_the_guest_is_left_out(tmp_path):
    from assistant.bench.voice_matrix import enrolled_labels, enrollment_speech
    from assistant.bench.voice_matrix_sets import SETS

    trio = next(s for s in SETS if s.pattern == "guest")
    assert enrolled_labels(trio) == ("A", "B") and enrolled_labels(SETS[0]) == ("A", "B")
    source = [f"This is enrollment line number {i} for the test, spoken slowly and clearly." for i in range(40)]
    speech = enrollment_speech(trio, 0, source, 4.0, tmp_path, seed=0)
    assert sorted(speech) == ["Voice A", "Voice B"]
    assert all(len(s) == 4 * SAMPLE_RATE for s in speech.values())
    # Asked for more than the lines hold: refused by name, not heard short.
    with pytest.raises(InputError, match="said only"):
        enrollment_speech(trio, 0, source[:2], 3600.0, tmp_path, seed=0)


def test_a_guest_is_found_when_their_words_go_to_a_voice_no_one_enrolled():
    from types import SimpleNamespace

    from assistant.bench.speech_metrics import Attribution, Match
    from assistant.bench.voice_matrix import SetResult
    from assistant.bench.voice_matrix_sets import SETS

    def heard(mapping: tuple[Match, ...]) -> SetResult:
        result = SimpleNamespace(attribution=Attribution(0.9, 10, 9, mapping))
        online = Attribution(0.9, 10, 9, mapping)
        return SetResult(SETS[8], 3, 3, result, None, online, ("A", "B"), "C")  # type: ignore[arg-type]

    assert heard((Match("Voice A", "A"), Match("Voice B", "B"), Match("Speaker 3", "C"))).guest_found is True
    assert heard((Match("Voice A", "A"), Match("Voice B", "C"))).guest_found is False  # taken for B
    assert heard((Match("Voice A", "A"), Match("Voice B", "B"))).guest_found is False  # never heard apart
