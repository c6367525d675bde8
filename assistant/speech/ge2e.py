"""Resemblyzer's GE2E voice encoder without torch or librosa: the same window embeddings.

Resemblyzer computes a mel power spectrogram with librosa and runs a 3-layer LSTM with torch;
importing the two and loading the model take 1.4 s on 2 cores, and the first call 1.7 s more
(librosa's lazy set-up), paid at every daemon start (`Listener.warm_up`). Here the spectrogram is
numpy (librosa 0.11's numbers to float32 rounding, `mel_spectrogram`), the windows are cut as
`VoiceEncoder.embed_utterance` cuts them (`partial_slices`), and the network, exported once with
torch from the same weights into the models directory (`prepare_onnx`), runs under onnxruntime
(within 1e-6 of torch; tests/test_voice_encoders.py compares all three with Resemblyzer): 0.1 s
to load and run once, and as fast as torch after that.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from pathlib import Path

import numpy as np

from ..embed import keyed_export, onnx_session, write_onnx
from ..records import SAMPLE_RATE

log = logging.getLogger(__name__)

DIM = 256
# Resemblyzer keeps a last window that is at least half speech and pads the rest with zeros; a
# thinner last window would be mostly padding, and silence-padded windows of different voices
# resemble each other.
MIN_COVERAGE = 0.5

# Resemblyzer's hyperparameters (resemblyzer/hparams.py): 25 ms frames every 10 ms at 16 kHz, 40
# mel bins, windows of 160 frames (1.6 s).
_N_FFT = 400
_HOP = 160
_N_MELS = 40
_WINDOW_FRAMES = 160

# Part of the exported file's name: a change to how the export is made makes a new one.
_EXPORT_FORMAT = "1"


# --- the mel spectrogram -----------------------------------------------------------------------

# librosa's Slaney mel scale: linear to 1 kHz, logarithmic above.
_LINEAR_HZ_PER_MEL = 200.0 / 3
_LOG_FROM_HZ = 1000.0
_LOG_FROM_MEL = _LOG_FROM_HZ / _LINEAR_HZ_PER_MEL
_LOG_STEP = np.log(6.4) / 27.0


def _hz_to_mel(hz: float) -> float:
    if hz < _LOG_FROM_HZ:
        return hz / _LINEAR_HZ_PER_MEL
    return float(_LOG_FROM_MEL + np.log(hz / _LOG_FROM_HZ) / _LOG_STEP)


def _mel_to_hz(mels: np.ndarray) -> np.ndarray:
    return np.where(
        mels >= _LOG_FROM_MEL, _LOG_FROM_HZ * np.exp(_LOG_STEP * (mels - _LOG_FROM_MEL)), _LINEAR_HZ_PER_MEL * mels
    )


@functools.cache
def _mel_filters() -> np.ndarray:
    """`librosa.filters.mel(sr=16000, n_fft=400, n_mels=40)`, (40, 201) float32: Slaney-scale
    triangles from 0 Hz to Nyquist with Slaney's area normalisation, rounded to float32 where
    librosa rounds (the triangles, then the scaled triangles), so the numbers are its own."""
    bins_hz = np.fft.rfftfreq(_N_FFT, 1.0 / SAMPLE_RATE)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(SAMPLE_RATE / 2), _N_MELS + 2))
    widths = np.diff(edges)
    ramps = np.subtract.outer(edges, bins_hz)
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    triangles = np.maximum(0.0, np.minimum(rising, falling)).astype(np.float32)
    area = 2.0 / (edges[2:] - edges[:-2])
    return (triangles * area[:, None]).astype(np.float32)


@functools.cache
def _hann() -> np.ndarray:
    # The periodic Hann window (scipy's `get_window("hann", 400)`, librosa's default): the
    # symmetric one of N + 1 points without its last.
    return np.hanning(_N_FFT + 1)[:-1]


def mel_spectrogram(wav: np.ndarray) -> np.ndarray:
    """Resemblyzer's `audio.wav_to_mel_spectrogram` of 16 kHz float audio: librosa's
    `melspectrogram(y, sr=16000, n_fft=400, hop_length=160, n_mels=40)` (frames centred on every
    160th sample, the signal padded with 200 zeros each side, power spectrum), (frames, 40) float32.

    librosa windows the float32 samples in float64, keeps the spectrum as complex64 and applies
    float32 filters; the same steps here give its numbers."""
    y = np.asarray(wav, dtype=np.float32).reshape(-1)
    padded = np.pad(y, _N_FFT // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, _N_FFT)[::_HOP]
    spectrum = np.fft.rfft(frames * _hann(), axis=-1).astype(np.complex64)
    power = np.abs(spectrum) ** 2
    return np.ascontiguousarray(power @ _mel_filters().T, dtype=np.float32)


# --- the windows -------------------------------------------------------------------------------


def partial_slices(n_samples: int, rate: float, min_coverage: float = MIN_COVERAGE) -> tuple[list[slice], list[slice]]:
    """Resemblyzer's `VoiceEncoder.compute_partial_slices`: the samples and the mel frames of each
    1.6 s window, `rate` windows per second, covering `n_samples`; the last window may run past the
    end (the audio is padded with zeros to it) unless less than `min_coverage` of it is audio and
    another window remains."""
    n_frames = int(np.ceil((n_samples + 1) / _HOP))
    frame_step = int(np.round((SAMPLE_RATE / rate) / _HOP))
    if not 0 < frame_step <= _WINDOW_FRAMES:
        raise ValueError(f"{rate} windows a second: a window must step by 1 to 160 frames of 10 ms")
    wav_slices, mel_slices = [], []
    for i in range(0, max(1, n_frames - _WINDOW_FRAMES + frame_step + 1), frame_step):
        mel_slices.append(slice(i, i + _WINDOW_FRAMES))
        wav_slices.append(slice(i * _HOP, (i + _WINDOW_FRAMES) * _HOP))
    last = wav_slices[-1]
    coverage = (n_samples - last.start) / (last.stop - last.start)
    if coverage < min_coverage and len(mel_slices) > 1:
        return wav_slices[:-1], mel_slices[:-1]
    return wav_slices, mel_slices


# --- the network -------------------------------------------------------------------------------


def packaged_weights() -> Path | None:
    """Resemblyzer's own `pretrained.pt`, found without importing the package (which imports torch);
    None when resemblyzer is not installed."""
    spec = importlib.util.find_spec("resemblyzer")
    return Path(spec.origin).parent / "pretrained.pt" if spec is not None and spec.origin is not None else None


def onnx_file(weights: Path, cache_dir: Path) -> Path:
    """Where the export of `weights` lives in `cache_dir` (`keyed_export`)."""
    return keyed_export(cache_dir, "ge2e", _EXPORT_FORMAT, weights, [weights])


def export_onnx(weights: Path, path: Path) -> Path:
    """Export Resemblyzer's network with `weights` to `path` (with torch, once): mel windows
    [batch, 160, 40] in, unit embeddings [batch, 256] out. Resemblyzer's own module is exported,
    loaded by its own code, so the graph computes what its `forward` does."""
    import torch
    from resemblyzer import VoiceEncoder

    model = VoiceEncoder(device="cpu", verbose=False, weights_fpath=weights).eval()
    sample = (torch.zeros((2, _WINDOW_FRAMES, _N_MELS)),)
    axes = {"mels": {0: "batch"}, "embeddings": {0: "batch"}}
    return write_onnx(model, sample, path, input_names=["mels"], output_names=["embeddings"], dynamic_axes=axes)


def prepare_onnx(weights: Path, cache_dir: Path) -> Path:
    """The export of `weights`, made now if it is missing."""
    path = onnx_file(weights, cache_dir)
    if not path.is_file():
        log.info("exporting the speaker encoder %s to %s (once)", weights, path)
        export_onnx(weights, path)
    return path


class OnnxGE2EEncoder:
    """Resemblyzer's encoder under onnxruntime: `ResemblyzerEncoder`'s windows and embeddings,
    without torch or librosa. onnxruntime runs one session from several threads at once."""

    dim = DIM

    def __init__(self, path: Path, weights: Path) -> None:
        self._session = onnx_session(path)
        self.name = f"resemblyzer ({weights}) under onnxruntime"
        self.device = "cpu"

    def windows(self, speech: np.ndarray, rate: float) -> tuple[np.ndarray, list[slice]]:
        wav = np.asarray(speech, dtype=np.float32).reshape(-1)
        wav_slices, mel_slices = partial_slices(len(wav), rate, MIN_COVERAGE)
        if wav_slices[-1].stop >= len(wav):
            wav = np.pad(wav, (0, wav_slices[-1].stop - len(wav)))
        mel = mel_spectrogram(wav)
        mels = np.stack([mel[s] for s in mel_slices])
        embeddings = self._session.run(None, {"mels": mels})[0]
        return np.asarray(embeddings, dtype=np.float32), wav_slices
