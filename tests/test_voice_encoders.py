"""Voice encoders: the Kaldi fbank, an ONNX speaker model built here, and Resemblyzer, in torch and
under onnxruntime.

No trained WeSpeaker weights can be downloaded where these tests run, so the ONNX backend is
tested on a small model made with the `onnx` package: pooled statistics of the fbank frames
through a fixed, seeded projection. It knows nothing of voices, but two espeak-ng voices differ
in their spectra, so its embeddings tell them apart only if the features are right.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
import soundfile as sf
from onnx import TensorProto, helper, numpy_helper

from assistant.bench.synth_speech import espeak, speech_bounds, to_16k
from assistant.cli import _export_speaker
from assistant.config import load_settings
from assistant.embed import export_dir
from assistant.errors import ConfigError, InputError, ModelError
from assistant.records import SAMPLE_RATE, Voiceprint
from assistant.speech import ge2e
from assistant.speech.diarize import Diarizer, diarizer_from_settings, normalise_volume, voiced_mask
from assistant.speech.ge2e import OnnxGE2EEncoder, mel_spectrogram, partial_slices
from assistant.speech.voice_encoders import (
    ONNX_SPEAKER,
    RESEMBLYZER,
    EncoderSpec,
    OnnxSpeakerEncoder,
    ResemblyzerEncoder,
    fbank_frames,
    kaldi_fbank,
)

from .conftest import MODELS_DIR

VOICE_A = "en-us"
VOICE_B = "en+f3"
TEXTS = [
    "Good morning. Did you get a chance to look at the budget for the Lisbon trip?",
    "I did. The flights are more expensive than we planned, about 400 euros each.",
    "That is a lot. Could we fly on Tuesday instead of Friday?",
]
DIM = 32


# --- helpers -----------------------------------------------------------------------------------


def say(text: str, voice: str, folder: Path) -> np.ndarray:
    """espeak-ng speech, 16 kHz float32, without espeak's leading and trailing silence."""
    folder.mkdir(parents=True, exist_ok=True)
    n = len(list(folder.iterdir()))
    wav = to_16k(espeak(folder / f"raw{n}.wav", text, voice), folder / f"say{n}.wav")
    audio, _ = sf.read(wav, dtype="float32")
    start, end = speech_bounds(wav)
    return audio[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE) + 1]


def pooling_model(path: Path, *, dim: int = DIM, seed: int = 0, mels: int = 80) -> Path:
    """feats [B, T, mels] -> [mean over time, std over time less its mean over bins] @ W -> embs [B, dim].

    The std profile is centred over the bins because raw standard deviations are all positive and
    point every voice the same way (cosines of 0.99 between any two voices, measured here).
    """
    w = np.random.default_rng(seed).standard_normal((2 * mels, dim)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["feats"], ["mean"], axes=[1], keepdims=0),
        helper.make_node("ReduceMean", ["feats"], ["mean_t"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["feats", "mean_t"], ["centred"]),
        helper.make_node("Mul", ["centred", "centred"], ["square"]),
        helper.make_node("ReduceMean", ["square"], ["var"], axes=[1], keepdims=0),
        helper.make_node("Sqrt", ["var"], ["std"]),
        helper.make_node("ReduceMean", ["std"], ["std_level"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["std", "std_level"], ["std_profile"]),
        helper.make_node("Concat", ["mean", "std_profile"], ["stats"], axis=1),
        helper.make_node("MatMul", ["stats", "w"], ["embs"]),
    ]
    graph = helper.make_graph(
        nodes,
        "pooled-statistics speaker model",
        [helper.make_tensor_value_info("feats", TensorProto.FLOAT, ["B", "T", mels])],
        [helper.make_tensor_value_info("embs", TensorProto.FLOAT, ["B", dim])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what onnxruntime releases of the last years all read
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def settings_for(tmp_path: Path, speaker: str, *, models_dir: str | Path = MODELS_DIR, **diarization: object):
    """Settings from a YAML file, as a user would write it."""
    lines = [f"paths:\n  data_dir: {tmp_path / 'data'}\n  models_dir: {models_dir}", f"models:\n  speaker: '{speaker}'"]
    if diarization:
        lines.append("diarization:\n" + "".join(f"  {k}: {v}\n" for k, v in diarization.items()))
    config = tmp_path / "config.yaml"
    config.write_text("\n".join(lines) + "\n")
    return load_settings(config, user_file=tmp_path / "no-user-config.yaml")


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    return pooling_model(tmp_path_factory.mktemp("onnx") / "speaker.onnx")


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> dict[str, list[np.ndarray]]:
    work = tmp_path_factory.mktemp("speech")
    return {v: [say(t, v, work / v.replace("+", "-")) for t in TEXTS] for v in (VOICE_A, VOICE_B)}


# --- Kaldi fbank -------------------------------------------------------------------------------

# kaldi-native-fbank 1.23.0 (Kaldi's own algorithm in C++) on the signal below, with the options
# WeSpeaker's inference gives torchaudio's kaldi.fbank (dither 0, Hamming, 80 bins from 20 Hz,
# no energy): frames 0, 40, 80, 120, 160 by bins 0, 10, ..., 70, 79. torchaudio is not
# installed here to compare with directly.
KALDI_FRAMES = [0, 40, 80, 120, 160]
KALDI_BINS = [0, 10, 20, 30, 40, 50, 60, 70, 79]
KALDI_REFERENCE = np.array(
    [
        [14.6715, 16.8228, 12.2299, 12.4398, 13.0238, 16.2419, 14.1966, 12.9303, 12.7666],
        [11.5679, 11.4801, 14.9659, 16.0191, 14.5078, 16.1999, 14.6424, 13.7512, 13.6907],
        [10.8738, 10.8147, 12.8374, 15.1585, 17.6298, 16.3613, 15.1724, 14.4673, 14.4286],
        [11.2710, 11.5086, 11.4065, 13.9945, 16.4389, 17.7094, 15.8195, 15.0575, 14.9787],
        [11.8048, 12.1603, 11.3709, 13.7313, 15.0575, 17.9977, 16.8661, 15.5981, 15.4036],
    ]
)


def test_fbank_matches_kaldi():
    t = np.arange(2 * SAMPLE_RATE) / SAMPLE_RATE
    chirp = (0.3 * np.sin(2 * np.pi * (200 + 900 * t) * t) + 0.1 * np.sin(2 * np.pi * 3000 * t)).astype(np.float32)
    feats = kaldi_fbank(chirp)
    assert feats.shape == (198, 80) and feats.dtype == np.float32
    assert np.abs(feats[np.ix_(KALDI_FRAMES, KALDI_BINS)] - KALDI_REFERENCE).max() < 1e-3


@pytest.mark.parametrize("n", [0, 399, 400, 559, 560, 16000, 25600, 25601])
def test_fbank_frame_count(n: int):
    expected = 0 if n < 400 else 1 + (n - 400) // 160
    assert fbank_frames(n) == expected
    assert kaldi_fbank(np.full(n, 0.1, np.float32)).shape == (expected, 80)


def _kaldi_bin_of(hz: float) -> int:
    """The mel bin whose triangle peaks nearest `hz`: 80 triangles evenly spaced on 1127 ln(1 + f/700)
    from 20 Hz to 8 kHz, bin i peaking at the (i + 1)th of 81 steps."""
    mel = lambda f: 1127 * np.log(1 + f / 700)  # noqa: E731
    lo, hi = mel(20), mel(8000)
    centres = lo + (np.arange(80) + 1) * (hi - lo) / 81
    return int(np.argmin(np.abs(centres - mel(hz))))


@pytest.mark.parametrize("hz", [300.0, 1000.0, 2500.0, 6000.0])
def test_a_pure_tone_peaks_in_its_mel_bin(hz: float):
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    feats = kaldi_fbank((0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32))
    peaks = feats.argmax(axis=1)
    assert set(peaks.tolist()) == {_kaldi_bin_of(hz)}


def test_silence_sits_on_the_log_floor():
    feats = kaldi_fbank(np.zeros(SAMPLE_RATE, np.float32))
    assert np.allclose(feats, np.log(np.finfo(np.float32).eps))


# --- the ONNX backend --------------------------------------------------------------------------


def test_the_config_picks_the_onnx_backend_and_its_thresholds(tmp_path, model_path, speech):
    settings = settings_for(tmp_path, str(model_path))
    diarizer = diarizer_from_settings(settings)

    assert diarizer.encoder_spec == EncoderSpec(ONNX_SPEAKER, str(model_path), "cpu")
    assert isinstance(diarizer.encoder, OnnxSpeakerEncoder) and diarizer.dim == DIM
    # Resemblyzer's cosines do not carry over: the ONNX model's own thresholds apply.
    assert diarizer.options.match_threshold == settings.diarization.onnx.match_threshold == 0.55
    assert diarizer.change_threshold == settings.diarization.onnx.change_threshold == 0.4
    assert settings.diarization.match_threshold == 0.75  # untouched for Resemblyzer

    embedding = diarizer.embed(speech[VOICE_A][0])
    assert embedding.shape == (DIM,) and embedding.dtype == np.float32
    assert np.linalg.norm(embedding) == pytest.approx(1.0, abs=1e-5)


def test_onnx_embeddings_tell_two_voices_apart(tmp_path, model_path, speech):
    diarizer = diarizer_from_settings(settings_for(tmp_path, str(model_path)))
    embeddings = np.stack([diarizer.embed(x) for voice in (VOICE_A, VOICE_B) for x in speech[voice]])
    voice = np.repeat([0, 1], len(TEXTS))
    cosines = embeddings @ embeddings.T
    same = cosines[(voice[:, None] == voice[None, :]) & ~np.eye(len(voice), dtype=bool)]
    different = cosines[voice[:, None] != voice[None, :]]
    # Measured: one voice's sentences 0.84 alike on average (0.74 at least), the two voices' 0.40
    # (0.59 at most: a projection of spectral statistics also hears what is said).
    assert same.mean() > different.mean() + 0.3, (same.mean(), different.mean())
    # Every sentence sounds most like another sentence of its own voice.
    np.fill_diagonal(cosines, -np.inf)
    assert (voice[cosines.argmax(axis=1)] == voice).all(), cosines


def test_onnx_windows_cover_the_speech_at_the_rate(model_path, speech):
    encoder = OnnxSpeakerEncoder(model_path)
    x = normalise_volume(speech[VOICE_B][0])
    embeddings, slices = encoder.windows(x, 4.0)

    assert embeddings.shape == (len(slices), DIM)
    assert np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)
    assert all(s.stop - s.start == int(1.6 * SAMPLE_RATE) for s in slices)
    assert [s.start for s in slices[:-1]] == [i * SAMPLE_RATE // 4 for i in range(len(slices) - 1)]
    assert slices[-1].stop > len(x) - 160  # the last window reaches the end (within a frame)
    # One fbank of the whole stretch, cut into windows, gives what each window alone gives.
    for i in (0, len(slices) // 2, len(slices) - 1):
        alone, _ = encoder.windows(x[slices[i]], 4.0)
        assert np.allclose(alone[0], embeddings[i], atol=1e-5)
    # Each window's features are mean-normalised, so loudness does not change the voice.
    quieter, _ = encoder.windows(x * 0.25, 4.0)
    assert np.allclose(quieter, embeddings, atol=1e-4)


def test_an_enrolled_voice_is_recognised_with_the_onnx_backend(tmp_path, model_path, speech):
    diarizer = diarizer_from_settings(settings_for(tmp_path, str(model_path)))
    alice = diarizer.enroll("Alice", speech[VOICE_B][:2])
    assert alice.centroid.shape == (DIM,)

    who, similarity = diarizer.assign(diarizer.embed(speech[VOICE_B][2]), 3.0)
    assert who.id == alice.id and similarity >= diarizer.options.match_threshold
    stranger, _ = diarizer.assign(diarizer.embed(speech[VOICE_A][0]), 3.0)
    assert stranger.id != alice.id and len(diarizer.speakers()) == 2
    # Voices stored by a model of another size are refused, naming what to do.
    with pytest.raises(InputError, match=f"must be {DIM} values .* enrolled again"):
        diarizer.load([Voiceprint("x", None, np.ones(256, np.float32), 1.0)])


def test_a_missing_onnx_file_names_the_key_and_the_forms(tmp_path):
    for value in (str(tmp_path / "missing.onnx"), "models/missing.onnx"):
        with pytest.raises(ModelError) as err:
            diarizer_from_settings(settings_for(tmp_path, value))
        message = str(err.value)
        assert "models.speaker" in message and "not an existing file" in message, message
        assert "org/name:file.onnx" in message, message


def test_a_hub_id_offline_says_how_to_give_a_local_path(tmp_path):
    # conftest sets HF_HUB_OFFLINE=1: the real download code runs and finds no network.
    hub_id = "Wespeaker/wespeaker-voxceleb-resnet34-LM:voxceleb_resnet34_LM.onnx"
    diarizer = diarizer_from_settings(settings_for(tmp_path, hub_id))
    assert diarizer.encoder_spec.format == ONNX_SPEAKER and diarizer.encoder_spec.source == hub_id
    with pytest.raises(ModelError) as err:
        diarizer.embed(np.zeros(SAMPLE_RATE, np.float32))
    message = str(err.value)
    assert "models.speaker" in message and "voxceleb_resnet34_LM.onnx" in message, message
    assert "set models.speaker to its local path" in message, message
    # A hub repository alone names no file to load.
    with pytest.raises(ModelError, match=r"org/name:file\.onnx"):
        diarizer_from_settings(settings_for(tmp_path, "Wespeaker/wespeaker-voxceleb-resnet34-LM"))


def test_an_onnx_file_that_is_not_a_speaker_model_is_refused(tmp_path):
    wrong = pooling_model(tmp_path / "forty.onnx", mels=40)
    with pytest.raises(ModelError, match=r"models.speaker: .* is not a WeSpeaker-style speaker model"):
        OnnxSpeakerEncoder(wrong)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model")
    with pytest.raises(ModelError, match=r"models\.speaker: cannot load the ONNX speaker model"):
        EncoderSpec(ONNX_SPEAKER, str(garbage)).load()


def test_the_device_falls_back_to_the_cpu(model_path, caplog):
    has_cuda = "CUDAExecutionProvider" in onnxruntime.get_available_providers()
    assert OnnxSpeakerEncoder(model_path, "cpu").device == "cpu"
    with caplog.at_level(logging.WARNING):
        encoder = OnnxSpeakerEncoder(model_path, "cuda")
    assert encoder.device == ("cuda" if has_cuda else "cpu")
    assert has_cuda or "diarization.device is cuda" in caplog.text


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("diarization:\n  device: gpu\n", "diarization.device must be one of auto, cpu, cuda"),
        ("diarization:\n  onnx:\n    match_threshold: 1.5\n", "diarization.onnx.match_threshold must be at most 1"),
        ("diarization:\n  onnx:\n    change: 0.4\n", "unknown key 'diarization.onnx.change'"),
    ],
)
def test_bad_encoder_knobs_are_refused_naming_the_key(tmp_path, text, needle):
    config = tmp_path / "config.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_settings(config, user_file=tmp_path / "absent.yaml")


# --- Resemblyzer ------------------------------------------------------------------------------


def test_resemblyzer_stays_the_default_and_gives_the_same_embedding(tmp_path, speech):
    from resemblyzer import VoiceEncoder

    diarizer = diarizer_from_settings(settings_for(tmp_path, "resemblyzer-ge2e"))
    assert diarizer.encoder_spec.format == RESEMBLYZER
    assert diarizer.encoder_spec.cache_dir == export_dir(Path(MODELS_DIR))
    # On the CPU the default runs under onnxruntime; the same numbers, to the LSTM's float rounding.
    assert isinstance(diarizer.encoder, OnnxGE2EEncoder)
    assert diarizer.options.match_threshold == 0.75 and diarizer.change_threshold == 0.7

    # What the diarizer did before encoders were pluggable: Resemblyzer on the voiced samples.
    x = speech[VOICE_A][1]
    wav = normalise_volume(x)
    voiced = wav[voiced_mask(wav)]
    direct = VoiceEncoder(device="cpu", verbose=False)
    _whole, partials, _slices = direct.embed_utterance(voiced, return_partials=True, rate=4.0, min_coverage=0.5)
    assert np.allclose(diarizer.embed(x), unit(partials.mean(axis=0)), atol=1e-5)
    # The same windows, over a whole step of lengths (whether a thin last window is kept varies).
    for cut in range(0, SAMPLE_RATE // 4, SAMPLE_RATE // 16):
        stretch = voiced[: len(voiced) - cut]
        _whole, partials, slices = direct.embed_utterance(stretch, return_partials=True, rate=4.0, min_coverage=0.5)
        ours, our_slices = diarizer.encoder.windows(stretch, 4.0)
        assert our_slices == list(slices)
        assert np.allclose(ours, partials, atol=1e-5)
    # The old constructor form, a weights path or None, still means Resemblyzer, in torch.
    assert Diarizer(None, diarizer.options).encoder_spec == EncoderSpec(RESEMBLYZER, None, "cpu")
    assert isinstance(Diarizer(None, diarizer.options).encoder, ResemblyzerEncoder)


# --- Resemblyzer under onnxruntime -------------------------------------------------------------

# Lengths around a frame (160 samples), an FFT (400), a window (25600) and a step at 4 a second
# (4000), odd ones among them; the windows' own padding makes the encoder's mels all of
# 25600 samples or more, but the spectrogram holds for any length.
MEL_LENGTHS = [1, 159, 160, 399, 400, 401, 559, 4001, 25599, 25600, 25601, 33333]


@pytest.fixture(scope="module")
def ge2e_exports(tmp_path_factory) -> Path:
    """Where this module's export of the packaged weights goes (made once, by the first test that loads it)."""
    return tmp_path_factory.mktemp("ge2e-exports")


def _close_relative(got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype == np.float32
    error = np.abs(got.astype(np.float64) - want) / np.maximum(np.abs(want), np.finfo(np.float32).tiny)
    assert error.max() <= rtol, f"relative error {error.max():.3g} at {np.unravel_index(error.argmax(), error.shape)}"


@pytest.mark.parametrize("n", MEL_LENGTHS)
def test_the_numpy_mel_spectrogram_is_librosas_at_edge_lengths(n: int):
    from resemblyzer.audio import wav_to_mel_spectrogram

    x = np.random.default_rng(n).normal(0, 0.1, n).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # librosa's, that a signal shorter than its FFT is short
        want = wav_to_mel_spectrogram(x)
    assert want.shape == (1 + n // 160, 40)
    _close_relative(mel_spectrogram(x), want, 1e-5)


def test_the_numpy_mel_spectrogram_is_librosas_on_speech(speech):
    from resemblyzer.audio import wav_to_mel_spectrogram

    for voice in (VOICE_A, VOICE_B):
        x = normalise_volume(np.concatenate(speech[voice]))
        want = wav_to_mel_spectrogram(x)
        assert want.max() > 1.0  # loud speech: the relative check weighs its quiet bins as its loud ones
        _close_relative(mel_spectrogram(x), want, 1e-5)


@pytest.mark.parametrize("rate", [0.625, 1.0, 1.3, 3.0, 4.0, 7.0, 100.0])
def test_the_windows_are_cut_where_resemblyzer_cuts_them(rate: float):
    from resemblyzer import VoiceEncoder

    # 28800 and 38400: a last window exactly half audio at 1 and 0.625 windows a second (kept).
    for n in [*MEL_LENGTHS, 0, 28800, 38400, 2 * SAMPLE_RATE - 1, 5 * SAMPLE_RATE + 4321]:
        for coverage in (0.5, 0.75, 1.0):
            assert partial_slices(n, rate, coverage) == VoiceEncoder.compute_partial_slices(n, rate, coverage)


def test_resemblyzer_under_onnxruntime_gives_torchs_windows(ge2e_exports, speech):
    encoder = EncoderSpec(RESEMBLYZER, None, "cpu", ge2e_exports).load()
    assert isinstance(encoder, OnnxGE2EEncoder) and encoder.dim == 256 and encoder.device == "cpu"
    torch_encoder = ResemblyzerEncoder(None)
    x = normalise_volume(speech[VOICE_B][0])
    # Less than a window, one exactly, several; at 0.625 a second a last window that is a fifth
    # audio is dropped and one that is four fifths is kept.
    for rate, n in [(4.0, 8000), (4.0, 25600), (4.0, len(x)), (0.625, 30600), (0.625, 45600), (1.3, len(x) - 1)]:
        got, got_slices = encoder.windows(x[:n], rate)
        want, want_slices = torch_encoder.windows(x[:n], rate)
        assert got_slices == want_slices, (rate, n)
        assert got.shape == want.shape and got.dtype == np.float32
        assert np.abs(got - want).max() < 1e-5, (rate, n, np.abs(got - want).max())


def test_the_export_is_made_once_per_weights_file(ge2e_exports, tmp_path):
    weights = ge2e.packaged_weights()
    assert weights is not None and weights.is_file()
    exported = ge2e.prepare_onnx(weights, ge2e_exports)
    assert exported == ge2e.onnx_file(weights, ge2e_exports)
    stamp = exported.stat().st_mtime_ns
    assert ge2e.prepare_onnx(weights, ge2e_exports) == exported and exported.stat().st_mtime_ns == stamp
    # Other weights (here a copy: another path, another mtime) get an export of their own.
    copy = tmp_path / "pretrained.pt"
    copy.write_bytes(weights.read_bytes())
    assert ge2e.onnx_file(copy, ge2e_exports) != exported


def test_the_onnx_path_imports_neither_torch_nor_librosa(ge2e_exports):
    ge2e.prepare_onnx(ge2e.packaged_weights() or Path(), ge2e_exports)  # the export is torch's, made here
    script = (
        "import sys, numpy as np\n"
        "from pathlib import Path\n"
        "from assistant.speech.voice_encoders import RESEMBLYZER, EncoderSpec\n"
        f"encoder = EncoderSpec(RESEMBLYZER, None, 'cpu', Path({str(ge2e_exports)!r})).load()\n"
        "embeddings, _ = encoder.windows(np.random.default_rng(0).normal(0, 0.1, 40000).astype(np.float32), 4.0)\n"
        "heavy = sorted({'torch', 'librosa', 'resemblyzer'} & set(sys.modules))\n"
        "print(json.dumps([type(encoder).__name__, list(embeddings.shape), heavy]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", "import json\n" + script], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    windows = len(partial_slices(40000, 4.0)[0])
    assert json.loads(out.stdout) == ["OnnxGE2EEncoder", [windows, 256], []], out.stdout


def test_without_an_export_resemblyzer_loads_with_torch(tmp_path, caplog):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the exports would go")
    with caplog.at_level(logging.WARNING, logger="assistant.speech.voice_encoders"):
        encoder = EncoderSpec(RESEMBLYZER, None, "cpu", blocked).load()
    assert isinstance(encoder, ResemblyzerEncoder)
    assert "cannot run the speaker encoder under onnxruntime" in caplog.text and "loading it with torch" in caplog.text
    embeddings, _slices = encoder.windows(np.zeros(SAMPLE_RATE, np.float32) + 0.01, 4.0)
    assert embeddings.shape == (1, 256)


def test_models_install_exports_the_speaker_encoder_once(tmp_path, capsys):
    settings = settings_for(tmp_path, "resemblyzer-ge2e", models_dir=tmp_path / "models")
    _export_speaker(settings)
    assert "resemblyzer-ge2e: exporting it for onnxruntime (once)" in capsys.readouterr().err
    assert len(list((tmp_path / "models" / "onnx").glob("ge2e-*.onnx"))) == 1
    _export_speaker(settings)
    assert capsys.readouterr().err == ""  # found: nothing to say
    # Where the export cannot be written, it says so and that torch will load the model.
    (tmp_path / "blocked").write_text("a file where the models directory would be")
    _export_speaker(settings_for(tmp_path, "resemblyzer-ge2e", models_dir=tmp_path / "blocked"))
    err = capsys.readouterr().err
    assert "resemblyzer-ge2e: cannot export it for onnxruntime" in err and "it will load with torch" in err
