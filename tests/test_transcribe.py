"""Transcription with faster-whisper on real recordings made with espeak-ng and sox.

The helpers at the top (speech, silence, noise, a dialogue with known turns) are shared with
test_diarize.py.
"""

from __future__ import annotations

import itertools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import jiwer
import numpy as np
import pytest
import soundfile as sf

from assistant.config import Settings, load_settings
from assistant.devices import pick_device
from assistant.errors import ConfigError, ModelError
from assistant.records import SAMPLE_RATE, SpeechSegment, Transcript
from assistant.speech.transcribe import (
    HOTWORD_CHARS,
    Transcriber,
    compression_ratio,
    cut_repeats,
    echoes_hotwords,
    guard,
    hotword_prompt,
    is_invented,
    pick_compute_type,
    stt_source,
)

from .conftest import MODELS_DIR

# No skip when espeak-ng or sox is missing: the README's test command installs them, and a
# silently skipped speech test would hide a broken set-up.

# Two voices a listener tells apart at once: espeak's default American male and a female variant.
# (`en-gb+m3` would not do: espeak-ng ignores variants on the en-gb alias, so it is plain en-gb.)
VOICE_A = "en-us"
VOICE_B = "en+f3"
T0 = 1_763_000_000.0  # segments carry epoch times; any fixed origin shows the offsets are applied

SENTENCE = "The Lisbon trip moves to May, so we should book the flights before the end of the week."


# --- recordings ------------------------------------------------------------------------------


def _run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def speak(text: str, voice: str, workdir: Path, *, speed: int = 165) -> np.ndarray:
    """espeak-ng speech as 16 kHz mono float32, with espeak's own leading and trailing silence cut."""
    workdir.mkdir(parents=True, exist_ok=True)
    n = len(list(workdir.iterdir()))
    raw, out = workdir / f"say{n}.wav", workdir / f"say{n}-16k.wav"
    _run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), text])
    _run(["sox", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(out)])
    samples, rate = sf.read(out, dtype="float32")
    assert rate == SAMPLE_RATE
    loud = np.flatnonzero(np.abs(samples) > 1e-3)
    return samples[loud[0] : loud[-1] + 1]


def sox_synth(workdir: Path, seconds: float, *effects: str) -> np.ndarray:
    """`sox -n` audio: no effects = digital silence; e.g. ("synth", "60", "brownnoise", "vol", "0.3")."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"synth{len(list(workdir.iterdir()))}.wav"
    if effects:
        _run(["sox", "-n", "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(out), *effects])
    else:
        _run(["sox", "-n", "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(out), "trim", "0", str(seconds)])
    samples, _ = sf.read(out, dtype="float32")
    return samples


def segment(samples: np.ndarray, start: float = T0) -> SpeechSegment:
    return SpeechSegment(samples, start, start + len(samples) / SAMPLE_RATE)


@dataclass(frozen=True)
class Turn:
    voice: int  # index into the voices the dialogue was made with
    text: str
    start: float  # epoch seconds
    end: float


def dialogue(
    texts: list[str], voices: tuple[str, ...], pauses: list[float], workdir: Path, *, lead: float = 0.3
) -> tuple[np.ndarray, list[Turn]]:
    """Alternating voices with the given pauses after each turn; audio and the turns' true times."""
    parts = [np.zeros(int(lead * SAMPLE_RATE), np.float32)]
    turns, t = [], T0 + lead
    for i, text in enumerate(texts):
        voice = i % len(voices)
        speech = speak(text, voices[voice], workdir)
        turns.append(Turn(voice, text, t, t + len(speech) / SAMPLE_RATE))
        parts += [speech, np.zeros(int(pauses[i] * SAMPLE_RATE), np.float32)]
        t += (len(speech) + len(parts[-1])) / SAMPLE_RATE
    return np.concatenate(parts), turns


def vad_like_segments(audio: np.ndarray, turns: list[Turn], *, hangover: float = 0.6, pad: float = 0.3) -> list:
    """Segments as the VAD cuts them: a pause shorter than the hangover stays inside a segment."""
    groups: list[list[Turn]] = [[turns[0]]]
    for turn in turns[1:]:
        if turn.start - groups[-1][-1].end < hangover:
            groups[-1].append(turn)
        else:
            groups.append([turn])
    out = []
    for g in groups:
        a = max(0, int((g[0].start - pad - T0) * SAMPLE_RATE))
        b = min(len(audio), int((g[-1].end + pad - T0) * SAMPLE_RATE))
        out.append(SpeechSegment(audio[a:b], T0 + a / SAMPLE_RATE, T0 + b / SAMPLE_RATE))
    return out


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]", " ", text.lower().replace("-", " ")).split())


def word_error_rate(reference: str, hypothesis: str) -> float:
    return float(jiwer.wer(normalise(reference), normalise(hypothesis)))


# --- fixtures --------------------------------------------------------------------------------


def stt_settings(tmp: Path, model: str, **stt: object) -> Settings:
    over: dict[str, object] = {
        "paths": {"data_dir": str(tmp), "models_dir": MODELS_DIR},
        "models": {"stt": model},
    }
    if stt:
        over["stt"] = stt
    return load_settings(user_file=tmp / "no-user-config.yaml", overrides=over)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> Transcriber:
    settings = stt_settings(tmp_path_factory.mktemp("stt"), "whisper-tiny.en")
    return Transcriber(stt_source(settings), settings.stt)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("audio")


# --- recognition -----------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["whisper-tiny.en", "whisper-base"])
def test_a_sentence_is_transcribed_with_word_times(model, tmp_path, workdir):
    settings = stt_settings(tmp_path, model)
    transcriber = Transcriber(stt_source(settings), settings.stt)
    import ctranslate2

    gpu = ctranslate2.get_cuda_device_count() > 0
    assert (transcriber.device, transcriber.compute_type) == (("cuda", "float16") if gpu else ("cpu", "int8"))

    speech = np.concatenate([np.zeros(4800, np.float32), speak(SENTENCE, VOICE_A, workdir)])
    seg = segment(speech)
    out = transcriber.transcribe(seg)

    assert out and all(isinstance(t, Transcript) for t in out)
    assert word_error_rate(SENTENCE, " ".join(t.text for t in out)) <= 0.15
    words = [w for t in out for w in t.words]
    assert len(words) >= 15
    # Word times are epoch seconds inside the segment, in order, and the text is made of the words.
    assert all(seg.start <= w.start <= w.end <= seg.end for w in words)
    assert all(a.start <= b.start for a, b in itertools.pairwise(words))
    for t in out:
        assert t.text == "".join(w.text for w in t.words).strip()
        assert (t.start, t.end) == (t.words[0].start, t.words[-1].end)
        assert t.no_speech_prob <= 0.6 and t.avg_logprob >= -1.0


# Names Whisper spells its own way on espeak's voice without help (whisper-base: "I met Yaksana
# ...", "Print it, we'll bring the cake").
NAMED_LINES = {
    "Jaxon": "I met Jaxon at the station yesterday.",
    "Bryndis": "Bryndis will bring the cake.",
}


def test_known_names_are_spelled_their_way_and_never_invented(tmp_path, workdir):
    settings = stt_settings(tmp_path, "whisper-base")
    transcriber = Transcriber(stt_source(settings), settings.stt)
    names = tuple(NAMED_LINES)
    for name, line in NAMED_LINES.items():
        seg = segment(speak(line, VOICE_A, workdir))
        plain = " ".join(t.text for t in transcriber.transcribe(seg))
        hinted = " ".join(t.text for t in transcriber.transcribe(seg, names))
        assert name not in plain and name in hinted, (plain, hinted)
        assert word_error_rate(line, hinted) <= 0.35, hinted
    # On silence and brown noise whisper-base reads its hotwords back, with confidence: that must
    # never become something somebody said.
    for audio in (sox_synth(workdir, 20), sox_synth(workdir, 20, "synth", "20", "brownnoise", "vol", "0.3")):
        assert transcriber.transcribe(segment(audio), names) == []


def test_configured_hotwords_are_passed_with_every_segment(tmp_path, workdir):
    settings = stt_settings(tmp_path, "whisper-base", hotwords=["Jaxon"])
    transcriber = Transcriber(stt_source(settings), settings.stt)
    out = transcriber.transcribe(segment(speak(NAMED_LINES["Jaxon"], VOICE_A, workdir)))
    assert "Jaxon" in " ".join(t.text for t in out)


def test_the_hotword_prompt_keeps_each_name_once_and_whole():
    assert hotword_prompt([]) is None and hotword_prompt(["  "]) is None
    assert hotword_prompt(["Jaxon", "jaxon", " Mary   Ann ", "Bryndis"]) == "Jaxon Mary Ann Bryndis"
    many = [f"Name{i:03d}" for i in range(100)]
    prompt = hotword_prompt(many)
    assert prompt is not None and len(prompt) <= HOTWORD_CHARS
    assert all(word in many for word in prompt.split())  # no name cut in half
    echo = [Transcript("Jaxon, Bryndis.", 0.0, 1.0, (), -0.2, 0.1, 1.0)]
    said = [Transcript("Jaxon brings the cake.", 0.0, 1.0, (), -0.2, 0.1, 1.0)]
    assert echoes_hotwords(echo, "Jaxon Bryndis") and not echoes_hotwords(said, "Jaxon Bryndis")


@pytest.mark.parametrize(
    ("value", "problem"),
    [('"Jaxon"', "must be a list"), ('[""]', "1 to 60 characters"), ("[3]", "must be str")],
)
def test_bad_hotwords_are_refused_with_the_key(tmp_path, value, problem):
    config = tmp_path / "config.yaml"
    config.write_text(f"stt:\n  hotwords: {value}\n")
    with pytest.raises(ConfigError, match=problem) as caught:
        load_settings(config, user_file=tmp_path / "none.yaml")
    assert "stt.hotwords" in str(caught.value) and "config.yaml" in str(caught.value)


def test_silence_and_noise_give_no_text(tiny, workdir):
    # A minute each, in 20 s pieces like the longest segments the VAD lets through. tiny.en writes
    # "You" on the silence and the brown noise and loops "I'm going to take a look at this one,
    # and ..." on the white noise, all with a log-probability above -1: faster-whisper's own rule
    # (no-speech AND low log-probability) keeps them; ours drops them on no-speech alone.
    recordings = {
        "silence": sox_synth(workdir, 60),
        "white noise": sox_synth(workdir, 60, "synth", "60", "whitenoise", "vol", "0.05"),
        "brown noise": sox_synth(workdir, 60, "synth", "60", "brownnoise", "vol", "0.3"),
    }
    for name, audio in recordings.items():
        for k in range(0, len(audio), 20 * SAMPLE_RATE):
            out = tiny.transcribe(segment(audio[k : k + 20 * SAMPLE_RATE], T0 + k / SAMPLE_RATE))
            assert out == [], (name, k / SAMPLE_RATE, [t.text for t in out])


def test_empty_segment_gives_no_text(tiny):
    assert tiny.transcribe(segment(np.zeros(0, np.float32))) == []


# --- the guards ------------------------------------------------------------------------------


def _whisper_segment(text: str, starts: list[float], *, no_speech: float = 0.05, logprob: float = -0.2):
    """A segment as faster-whisper returns it, one word per whitespace-separated token of `text`."""
    from faster_whisper.transcribe import Segment
    from faster_whisper.transcribe import Word as WhisperWord

    tokens = text.split()
    words = [WhisperWord(s, s + 0.25, " " + tok, 0.9) for s, tok in zip(starts, tokens, strict=True)]
    return Segment(
        0, 0, starts[0], starts[-1] + 0.25, " " + text, [], logprob, compression_ratio(text), no_speech, words, 0.0
    )


def test_either_signal_marks_text_as_invented(tmp_path):
    opts = stt_settings(tmp_path, "whisper-tiny.en").stt
    assert (opts.no_speech_threshold, opts.log_prob_threshold) == (0.6, -1.0)
    assert not is_invented(0.3, -0.5, opts)
    assert is_invented(0.75, -0.75, opts)  # "You" on silence: confident text, but no speech heard
    assert is_invented(0.3, -1.3, opts)  # speech-like audio, but text Whisper is unsure of
    assert is_invented(0.9, -1.5, opts)


def test_invented_text_and_loops_are_dropped_and_repeats_cut(tmp_path):
    opts = stt_settings(tmp_path, "whisper-tiny.en").stt
    seg = segment(np.zeros(10 * SAMPLE_RATE, np.float32))
    times = [0.5 + 0.3 * i for i in range(30)]

    loop = "I'm sorry, " * 12
    assert compression_ratio(loop) > opts.compression_ratio_threshold
    assert guard([_whisper_segment(loop, times[:24])], seg, opts) == []
    assert guard([_whisper_segment("Thank you.", times[:2], no_speech=0.8)], seg, opts) == []

    stutter = "We should go. No, no, no, no, no. Now."
    (out,) = guard([_whisper_segment(stutter, times[:9])], seg, opts)
    assert out.text == "We should go. No, Now."
    assert [w.text for w in out.words] == [" We", " should", " go.", " No,", " Now."]
    assert out.words[4].start == pytest.approx(T0 + times[8])  # the kept words keep their own times
    assert out.start == pytest.approx(T0 + 0.5) and out.end == pytest.approx(T0 + times[8] + 0.25)

    (kept,) = guard([_whisper_segment("ha ha ha, that was funny", times[:6])], seg, opts)
    assert kept.text == "ha ha ha, that was funny"  # max_repeats (3) in a row is still speech


def test_cut_repeats_keeps_one_of_each_run():
    def cut(text: str, limit: int = 3) -> str:
        keys = text.split()
        return " ".join(keys[i] for i in cut_repeats(keys, limit))

    assert cut("a a a a") == "a"
    assert cut("a a a") == "a a a"
    assert cut("the cat the cat the cat the cat sat down") == "the cat sat down"
    assert cut("x y z y z y z y z w") == "x y z w"
    assert cut("one two three one two three one two three one two three") == "one two three"
    assert cut("no no", 1) == "no"
    assert cut("") == ""


# --- models and devices ----------------------------------------------------------------------


def test_device_and_compute_type_follow_the_gpu(monkeypatch):
    import ctranslate2

    monkeypatch.setattr(ctranslate2, "get_cuda_device_count", lambda: 1)
    assert pick_device("auto") == "cuda"
    monkeypatch.setattr(ctranslate2, "get_cuda_device_count", lambda: 0)
    assert pick_device("auto") == "cpu"
    assert pick_device("cuda") == "cuda"
    assert pick_compute_type("auto", "cuda") == "float16"
    assert pick_compute_type("auto", "cpu") == "int8"
    assert pick_compute_type("float32", "cpu") == "float32"


def test_model_names_paths_and_sizes(tmp_path):
    tiny = stt_settings(tmp_path, "whisper-tiny.en")
    assert (Path(stt_source(tiny)) / "model.bin").is_file()
    local = stt_settings(tmp_path, stt_source(tiny))
    assert stt_source(local) == stt_source(tiny)
    # faster-whisper's own size names and hub ids go to faster-whisper as they are.
    assert stt_source(stt_settings(tmp_path, "base.en")) == "base.en"
    assert stt_source(stt_settings(tmp_path, "Systran/faster-whisper-small")) == "Systran/faster-whisper-small"


def test_missing_model_names_the_install_command(tmp_path):
    settings = load_settings(
        user_file=tmp_path / "none.yaml",
        overrides={"paths": {"models_dir": str(tmp_path / "empty")}, "models": {"stt": "whisper-base"}},
    )
    with pytest.raises(ModelError, match="assistant models install whisper-base"):
        stt_source(settings)
    with pytest.raises(ModelError, match="assistant models install"):
        Transcriber(str(tmp_path), settings.stt)  # a directory without a model in it


def test_an_english_only_model_refuses_another_language(tmp_path):
    settings = stt_settings(tmp_path, "whisper-tiny.en", language="fr")
    with pytest.raises(ModelError, match="English-only"):
        Transcriber(stt_source(settings), settings.stt)
