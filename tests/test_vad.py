"""Segmentation on real speech made by espeak-ng, and on silence and noise made by sox."""

from __future__ import annotations

import dataclasses
import time
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from assistant.audio.files import FileSource
from assistant.audio.silero import SileroCheck
from assistant.audio.vad import Segmenter, speech_segments
from assistant.bench.synth_speech import espeak, silence, sox, speech_bounds, to_16k
from assistant.config import load_settings
from assistant.records import SAMPLE_RATE, AudioBlock, SpeechSegment
from tests.audio_helpers import Dialog, make_dialog, read_int16, vad_options

FRAME = 0.03


@pytest.fixture(scope="module")
def dialog(tmp_path_factory: pytest.TempPathFactory) -> Dialog:
    return make_dialog(tmp_path_factory.mktemp("dialog"))


@pytest.fixture(scope="module")
def silero() -> SileroCheck:
    return SileroCheck(0.5)


def segment_file(path: Path, **options: object) -> list[SpeechSegment]:
    return list(Segmenter(vad_options(**options)).run(FileSource(path, start_time=0.0)))


def blocks_of(samples: np.ndarray, size: int, start: float = 0.0) -> list[AudioBlock]:
    return [
        AudioBlock(samples=samples[i : i + size], start=start + i / SAMPLE_RATE) for i in range(0, len(samples), size)
    ]


def test_each_turn_is_one_segment_and_pre_roll_keeps_the_first_syllable(dialog: Dialog) -> None:
    segments = segment_file(dialog.path)
    assert len(segments) == len(dialog.turns) == 2
    for segment, (first, last) in zip(segments, dialog.turns, strict=True):
        # Starts about pre_roll_ms (300) before the first audible sample: the onset is inside.
        assert first - 0.36 <= segment.start <= first - 0.2
        # Ends after the last audible sample, but without the whole second of silence after it.
        assert last <= segment.end <= last + 0.45
        assert segment.samples.dtype == np.float32
        assert len(segment.samples) == round(segment.duration * SAMPLE_RATE)
        assert np.abs(segment.samples).max() <= 1.0
    # The audio of a segment is the file's audio at the segment's times.
    audio = read_int16(dialog.path).astype(np.float32) / 32768
    first = segments[0]
    offset = round(first.start * SAMPLE_RATE)
    np.testing.assert_array_equal(first.samples, audio[offset : offset + len(first.samples)])

    without = segment_file(dialog.path, pre_roll_ms=0)
    assert [round(s.start - w.start, 2) for s, w in zip(segments, without, strict=True)] == [-0.3, -0.3]
    assert all(w.start <= first + FRAME for w, (first, _) in zip(without, dialog.turns, strict=True))


@pytest.mark.parametrize(("frame_ms", "aggressiveness"), [(10, 0), (20, 1), (20, 3), (30, 3)])
def test_every_frame_length_and_aggressiveness_finds_the_turns(
    dialog: Dialog, frame_ms: int, aggressiveness: int
) -> None:
    segments = segment_file(dialog.path, frame_ms=frame_ms, aggressiveness=aggressiveness)
    assert len(segments) == 2
    for segment, (first, last) in zip(segments, dialog.turns, strict=True):
        assert segment.start < first < last <= segment.end + 0.1


def test_block_size_does_not_change_the_segments(dialog: Dialog) -> None:
    samples = read_int16(dialog.path)
    reference = segment_file(dialog.path)
    for size in (7, 480, 4093, len(samples)):
        segmenter = Segmenter(vad_options())
        got = [s for block in blocks_of(samples, size, start=100.0) for s in segmenter.feed(block)]
        got += segmenter.flush()
        assert [t - 100.0 for s in got for t in (s.start, s.end)] == pytest.approx(
            [t for s in reference for t in (s.start, s.end)], abs=1e-6
        )
        for a, b in zip(got, reference, strict=True):
            np.testing.assert_array_equal(a.samples, b.samples)


def test_pauses_shorter_than_the_hangover_stay_inside_one_segment(tmp_path: Path) -> None:
    short = make_dialog(tmp_path / "short", gap=0.1)
    (first_end, second_start) = short.turns[0][1], short.turns[1][0]
    assert second_start - first_end < 0.55  # espeak-ng's own silence included
    assert len(segment_file(short.path)) == 1
    assert len(segment_file(short.path, hangover_ms=150)) == 2


def test_speech_shorter_than_min_segment_is_dropped(tmp_path: Path) -> None:
    word = to_16k(espeak(tmp_path / "word.wav", "yes"), tmp_path / "yes.wav")
    first, _ = speech_bounds(word)
    click = tmp_path / "click.wav"
    sox(word, click, "trim", str(first), "0.2", "pad", "1", "1")
    segmenter = Segmenter(vad_options())
    assert list(segmenter.run(FileSource(click, start_time=0.0))) == []
    assert segmenter.dropped == 1
    assert len(segment_file(click, min_segment_ms=100)) == 1


def test_long_monologue_is_split_below_max_length_between_sentences(tmp_path: Path) -> None:
    sentences = [
        "We drove to Lisbon in May",
        "the weather was warm and the streets were full",
        "Sam booked a small hotel near the river",
        "every morning we walked to the market",
        "the bakery on the corner sold custard tarts",
        "in the evenings we listened to music in old bars",
        "on the last day it rained",
        "and we took the train home on Sunday",
    ]
    parts, gaps, offset = [], [], 0.0
    for i, text in enumerate(sentences):
        # 0.2 s of extra silence after each sentence: pauses well under the 600 ms hangover.
        part = to_16k(espeak(tmp_path / f"s{i}.wav", text), tmp_path / f"p{i}.wav", "pad", "0", "0.2")
        first, last = speech_bounds(part)
        gaps.append((offset + last, None))
        if i:
            gaps[i - 1] = (gaps[i - 1][0], offset + first)
        parts.append(part)
        offset += sf.info(part).duration
    monologue = tmp_path / "monologue.wav"
    sox(*parts, monologue)
    pauses = [(a, b) for a, b in gaps if b is not None]
    assert max(b - a for a, b in pauses) < 0.6  # one stretch of speech for the hangover

    segments = segment_file(monologue, max_segment_ms=6000)
    assert len(segments) >= 3
    assert all(s.duration <= 6.0 + 1e-9 for s in segments)
    for before, after in pairwise(segments):
        # Consecutive pieces touch: nothing between them is lost...
        assert after.start == pytest.approx(before.end, abs=1e-6)
        # ...and the cut falls in a pause between sentences, never inside speech.
        assert any(a <= before.end <= b for a, b in pauses), (before.end, pauses)


@pytest.mark.parametrize(
    "extreme",
    [
        {"hangover_ms": 0, "pre_roll_ms": 0, "min_segment_ms": 0, "max_segment_ms": 1000},
        {"hangover_ms": 30, "pre_roll_ms": 5000, "frame_ms": 10, "max_segment_ms": 1000},
        {"hangover_ms": 10000, "aggressiveness": 0, "max_segment_ms": 2000},
    ],
)
def test_extreme_options_keep_segments_ordered_bounded_and_disjoint(
    tmp_path: Path, dialog: Dialog, extreme: dict[str, int]
) -> None:
    noise, noisy = tmp_path / "noise.wav", tmp_path / "noisy.wav"
    duration = str(sf.info(dialog.path).duration)
    sox("-n", "-r", "16000", "-b", "16", "-c", "1", noise, "synth", duration, "whitenoise", "vol", "0.05")
    sox("-m", dialog.path, noise, noisy)
    for path in (dialog.path, noisy):
        found = segment_file(path, **extreme)
        assert found
        limit = extreme["max_segment_ms"] / 1000
        assert all(0 < s.duration <= limit + 1e-9 for s in found)
        assert all(a.end <= b.start + 1e-9 for a, b in pairwise(found))


def test_flush_closes_speech_cut_off_by_the_end_of_the_stream(dialog: Dialog) -> None:
    samples = read_int16(dialog.path)
    first, last = dialog.turns[0]
    cut = round((first + last) / 2 * SAMPLE_RATE)  # the stream ends mid-sentence
    segmenter = Segmenter(vad_options())
    fed = [s for block in blocks_of(samples[:cut], 4000) for s in segmenter.feed(block)]
    assert fed == []
    (segment,) = segmenter.flush()
    assert segment.end == pytest.approx(cut / SAMPLE_RATE, abs=FRAME)
    assert segmenter.flush() == []


def test_a_gap_in_the_timeline_ends_the_open_segment(dialog: Dialog) -> None:
    samples = read_int16(dialog.path)
    first, last = dialog.turns[0]
    cut = round((first + last) / 2 * SAMPLE_RATE)
    segmenter = Segmenter(vad_options())
    out = [s for block in blocks_of(samples[:cut], 4000) for s in segmenter.feed(block)]
    assert out == []
    # The microphone was away for five seconds; the rest of the audio comes from after that.
    later = blocks_of(samples[cut:], 4000, start=cut / SAMPLE_RATE + 5.0)
    out = [s for block in later for s in segmenter.feed(block)] + segmenter.flush()
    assert len(out) == 3
    assert out[0].end == pytest.approx(cut / SAMPLE_RATE, abs=FRAME)
    assert out[1].start >= cut / SAMPLE_RATE + 5.0
    assert out[2].start == pytest.approx(dialog.turns[1][0] + 5.0 - 0.3, abs=0.06)


def test_an_empty_block_is_a_break_that_ends_the_open_segment(dialog: Dialog) -> None:
    samples = read_int16(dialog.path)
    first, last = dialog.turns[0]
    cut = round((first + last) / 2 * SAMPLE_RATE)
    segmenter = Segmenter(vad_options())
    assert [s for block in blocks_of(samples[:cut], 4000) for s in segmenter.feed(block)] == []
    # The microphone vanished mid-sentence: no more audio, so no silence will close the segment.
    (segment,) = segmenter.feed(AudioBlock(np.zeros(0, dtype=np.int16), start=cut / SAMPLE_RATE))
    assert segment.start == pytest.approx(first - 0.3, abs=0.06) and segment.end == pytest.approx(cut / SAMPLE_RATE)
    assert segmenter.feed(AudioBlock(np.zeros(0, dtype=np.int16), start=cut / SAMPLE_RATE)) == []
    assert segmenter.flush() == []


@pytest.mark.parametrize(
    ("kind", "volume"), [("silence", 0.0), ("whitenoise", 0.05), ("pinknoise", 0.05), ("brownnoise", 0.05)]
)
def test_ten_minutes_of_silence_or_noise_yield_no_segments(tmp_path: Path, kind: str, volume: float) -> None:
    path = tmp_path / f"{kind}.flac"
    if kind == "silence":
        silence(path, 600)
    else:
        sox("-n", "-r", "16000", "-b", "16", "-c", "1", path, "synth", "600", kind, "vol", str(volume))
    assert segment_file(path) == []


def test_silero_drops_what_webrtcvad_mistakes_for_speech(tmp_path: Path, silero: SileroCheck) -> None:
    # Loud broadband noise fools webrtcvad at every aggressiveness; silero is not fooled.
    noise = tmp_path / "noise.wav"
    sox("-n", "-r", "16000", "-b", "16", "-c", "1", noise, "synth", "60", "brownnoise", "vol", "0.3")
    segments = segment_file(noise, max_segment_ms=10000)
    assert len(segments) >= 5
    before = silero.dropped
    assert list(silero.filter(segments)) == []
    assert silero.dropped - before == len(segments)


def test_silero_keeps_speech_and_can_trim_it(dialog: Dialog, silero: SileroCheck) -> None:
    segments = segment_file(dialog.path)
    assert all(silero.check(s) is s for s in segments)
    # A segment with a second of silence either side: trimming keeps the speech and its pad only.
    audio = read_int16(dialog.path).astype(np.float32) / 32768
    padded = SpeechSegment(samples=audio[: round(5.5 * SAMPLE_RATE)], start=50.0, end=55.5)
    trimmer = SileroCheck(0.5, trim=True, pad_ms=200)
    trimmed = trimmer.check(padded)
    assert trimmed is not None
    first, last = dialog.turns[0]
    assert 50.0 + first - 0.3 <= trimmed.start <= 50.0 + first
    assert 50.0 + last <= trimmed.end <= 50.0 + last + 0.4
    assert trimmed.duration == pytest.approx(len(trimmed.samples) / SAMPLE_RATE)


def test_speech_segments_runs_both_checks(tmp_path: Path, dialog: Dialog) -> None:
    noisy = tmp_path / "noisy.wav"
    loud = tmp_path / "loud.wav"
    sox("-n", "-r", "16000", "-b", "16", "-c", "1", loud, "synth", "30", "whitenoise", "vol", "0.3")
    sox(loud, dialog.path, noisy)
    options = vad_options(silero=True, max_segment_ms=10000)
    plain = segment_file(noisy, max_segment_ms=10000)
    checked = list(speech_segments(FileSource(noisy, start_time=0.0), options))
    assert len(plain) > len(checked) == 2
    for segment, (first, last) in zip(checked, dialog.turns, strict=True):
        assert segment.start < 30.0 + first < 30.0 + last < segment.end


def test_segmentation_costs_little_cpu(dialog: Dialog) -> None:
    samples = np.tile(read_int16(dialog.path), 10)  # about two minutes
    segmenter = Segmenter(vad_options())
    began = time.process_time()
    count = sum(len(segmenter.feed(b)) for b in blocks_of(samples, 4000)) + len(segmenter.flush())
    spent = time.process_time() - began
    assert count == 20
    # Measured 0.0006 of real time on 2 cores; the bound leaves room for a slow, busy machine.
    assert spent < 0.05 * len(samples) / SAMPLE_RATE


def test_defaults_from_the_config_file_work(dialog: Dialog) -> None:
    settings = load_settings(user_file=Path("/nonexistent/config.yaml"))
    found = list(speech_segments(FileSource(dialog.path, start_time=0.0), settings.vad))
    # The shipped settings hear each turn whole, as one segment, with its first and last sound.
    assert len(found) == len(dialog.turns) == 2
    for segment, (first, last) in zip(found, dialog.turns, strict=True):
        assert segment.start < first < last < segment.end


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"frame_ms": 25}, "frame_ms"),
        ({"aggressiveness": 4}, "aggressiveness"),
        ({"min_segment_ms": 30000}, "min_segment_ms"),
    ],
)
def test_impossible_options_are_refused(change: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Segmenter(dataclasses.replace(vad_options(), **change))
