"""Speaker (voice) encoders: speech in, unit-length voice embeddings of overlapping windows out.

The diarizer needs one thing from a speaker model: embeddings of 1.6 s windows stepped at a
given rate, and which samples each window covers (`VoiceEncoder.windows`). Two backends give it,
chosen by the format of the model `models.speaker` names (`encoder_spec`):

- `resemblyzer`: Resemblyzer's GE2E LSTM (the default; its weights install from PyPI offline).
  On a CPU it runs under onnxruntime (speech/ge2e.py): the mel spectrogram in numpy, the network
  exported once with torch from the same weights into the models directory (`EncoderSpec.cache_dir`),
  the same windows and embeddings (within 1e-6) without importing torch or librosa: loading it
  and its first call take 0.1 s instead of 3 s, paid at every daemon start. Without a cache
  directory, on a GPU, or where the export fails (said in a warning) it runs in torch through
  Resemblyzer itself;
- `onnx-speaker`: a WeSpeaker-style ONNX export (e.g. `voxceleb_resnet34_LM.onnx` from
  Wespeaker/wespeaker-voxceleb-resnet34-LM) that maps log-mel fbank features [batch, frames, 80]
  to embeddings [batch, dim]. The features are computed here in numpy as WeSpeaker's own
  inference computes them with `torchaudio.compliance.kaldi.fbank` (`kaldi_fbank`; it agrees with
  Kaldi's own implementation to 1e-3, tests/test_voice_encoders.py).

An `EncoderSpec` says what to load and is cheap to make; the model loads on the first `load()`
and is shared by every diarizer that asks for the same spec.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..config import Settings
from ..devices import pick_device
from ..embed import export_dir
from ..errors import ModelError
from ..models import ResolvedModel, resolve
from ..records import SAMPLE_RATE
from .ge2e import DIM as GE2E_DIM
from .ge2e import MIN_COVERAGE as _RESEMBLYZER_MIN_COVERAGE
from .ge2e import OnnxGE2EEncoder, packaged_weights, prepare_onnx

log = logging.getLogger(__name__)

WINDOW_SECONDS = 1.6
RESEMBLYZER = "resemblyzer"
ONNX_SPEAKER = "onnx-speaker"
RESEMBLYZER_DIM = GE2E_DIM
KEY = "models.speaker"

# Kaldi fbank as WeSpeaker's inference configures it: 25 ms Hamming frames every 10 ms at 16 kHz,
# padded to a 512-point FFT, 80 mel bins from 20 Hz to Nyquist.
_FRAME = 400
_SHIFT = 160
_N_FFT = 512
_N_MELS = 80
_LOW_HZ = 20.0
_PREEMPHASIS = 0.97
# torchaudio floors mel energies at float32's epsilon before the log.
_LOG_FLOOR = float(np.finfo(np.float32).eps)


class VoiceEncoder(Protocol):
    """A loaded speaker model."""

    name: str
    dim: int

    def windows(self, speech: np.ndarray, rate: float) -> tuple[np.ndarray, list[slice]]:
        """Unit embeddings (float32, N x dim) of WINDOW_SECONDS windows of 16 kHz `speech`, `rate`
        windows per second, covering all of it, and the slice of `speech` each window covers
        (a slice may run past the end where the encoder padded the last window)."""
        ...


@dataclass(frozen=True)
class EncoderSpec:
    """Which speaker model to load and how: `format` is a backend name, `source` a local file or,
    for ONNX, a hub `org/name:file.onnx` (None: Resemblyzer's packaged weights); `cache_dir` is
    where a Resemblyzer model's ONNX export is kept (None: it runs in torch)."""

    format: str
    source: str | None = None
    device: str = "cpu"
    cache_dir: Path | None = None

    @property
    def dim(self) -> int | None:
        """The embedding size when known without loading the model."""
        return RESEMBLYZER_DIM if self.format == RESEMBLYZER else None

    def load(self) -> VoiceEncoder:
        return _load(self)


@functools.lru_cache(maxsize=4)
def _load(spec: EncoderSpec) -> VoiceEncoder:
    if spec.format == RESEMBLYZER:
        return _load_resemblyzer(spec)
    if spec.format == ONNX_SPEAKER:
        if spec.source is None:
            raise ModelError(f"{KEY}: an ONNX speaker model needs a path to its .onnx file")
        return OnnxSpeakerEncoder(_onnx_file(spec.source), spec.device)
    raise ModelError(f"{KEY}: no voice encoder for the model format {spec.format!r} ({RESEMBLYZER}, {ONNX_SPEAKER})")


def model_format(model: ResolvedModel) -> str:
    """The backend for a resolved speaker model: the manifest's format, else by its file name
    (a `.onnx` file, local or in a hub repository, is an ONNX speaker model)."""
    if model.spec is not None:
        return model.spec.format
    return ONNX_SPEAKER if model.source.lower().endswith(".onnx") else RESEMBLYZER


def encoder_spec(settings: Settings) -> EncoderSpec:
    """The configured speaker model as an `EncoderSpec`; nothing is loaded."""
    model = resolve(settings, "speaker")
    fmt = model_format(model)
    if fmt == RESEMBLYZER and model.path is None:
        raise ModelError(
            f"{KEY}: {settings.models.speaker!r} is a hub id, but Resemblyzer loads only a local weights "
            f"file; run: assistant models install resemblyzer-ge2e (an ONNX speaker model on the hub is "
            f"named org/name:file.onnx)"
        )
    # Only Resemblyzer's weights are exported; an ONNX speaker model is one already.
    cache_dir = export_dir(settings.models_dir) if fmt == RESEMBLYZER else None
    return EncoderSpec(fmt, model.source, settings.diarization.device, cache_dir)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


def _cuda_wanted(device: str, available: bool, what: str) -> bool:
    if device == "cuda" and not available:
        log.warning("diarization.device is cuda but %s cannot use a GPU here; the speaker model runs on the CPU", what)
    return device in ("cuda", "auto") and available


# --- Resemblyzer -------------------------------------------------------------------------------


def onnx_export(spec: EncoderSpec) -> tuple[Path, Path] | None:
    """The Resemblyzer weights `spec` runs under onnxruntime and the directory their export goes in;
    None where it runs with torch: another format, no cache directory, a GPU, or no weights file
    (whose error torch's loader gives, saying how to install them)."""
    if spec.format != RESEMBLYZER or spec.cache_dir is None or pick_device(spec.device) != "cpu":
        return None
    weights = Path(spec.source) if spec.source is not None else packaged_weights()
    return (weights, spec.cache_dir) if weights is not None and weights.is_file() else None


def _load_resemblyzer(spec: EncoderSpec) -> VoiceEncoder:
    if (export := onnx_export(spec)) is not None:
        weights, cache_dir = export
        try:
            path = prepare_onnx(weights, cache_dir)
            log.info("loading the speaker encoder %s with onnxruntime", weights)
            return OnnxGE2EEncoder(path, weights)
        # onnxruntime's errors derive from Exception alone; whatever fails here (no onnx package,
        # an unwritable models directory, a failed export) the same weights still load with torch.
        except Exception as exc:  # noqa: BLE001
            log.warning("cannot run the speaker encoder under onnxruntime (%s); loading it with torch", exc)
    return ResemblyzerEncoder(spec.source, spec.device)


class ResemblyzerEncoder:
    """Resemblyzer's GE2E encoder: 256-d, all components positive, so cosines sit high."""

    dim = RESEMBLYZER_DIM

    def __init__(self, weights: str | None, device: str = "cpu") -> None:
        try:
            import torch
            from resemblyzer import VoiceEncoder as GE2E
        except ImportError as exc:
            raise ModelError(
                f"resemblyzer is not installed ({exc}); run: assistant models install resemblyzer-ge2e"
            ) from None
        if weights is not None and not Path(weights).is_file():
            raise ModelError(f"speaker model not found: {weights}; run: assistant models install resemblyzer-ge2e")
        torch_device = "cuda" if _cuda_wanted(device, torch.cuda.is_available(), "torch") else "cpu"
        try:
            self._model = GE2E(device=torch_device, verbose=False, weights_fpath=weights)
        except Exception as exc:
            raise ModelError(f"cannot load the speaker encoder {weights or 'resemblyzer default'}: {exc}") from exc
        self.name = f"resemblyzer ({weights or 'packaged weights'})"
        self.device = torch_device

    def windows(self, speech: np.ndarray, rate: float) -> tuple[np.ndarray, list[slice]]:
        _whole, partials, slices = self._model.embed_utterance(
            speech, return_partials=True, rate=rate, min_coverage=_RESEMBLYZER_MIN_COVERAGE
        )
        return np.asarray(partials, dtype=np.float32), list(slices)


# --- Kaldi fbank -------------------------------------------------------------------------------


def _mel(hz: np.ndarray | float) -> np.ndarray:
    return 1127.0 * np.log1p(np.asarray(hz, dtype=np.float64) / 700.0)


@functools.cache
def _mel_banks(sample_rate: int) -> np.ndarray:
    """Kaldi's triangular mel filters, (80, n_fft/2 + 1); the Nyquist bin gets no weight, as in Kaldi."""
    lo, hi = _mel(_LOW_HZ), _mel(sample_rate / 2)
    delta = (hi - lo) / (_N_MELS + 1)
    left = lo + np.arange(_N_MELS)[:, None] * delta
    centre, right = left + delta, left + 2 * delta
    bins = _mel(np.arange(_N_FFT // 2) * sample_rate / _N_FFT)[None, :]
    up, down = (bins - left) / (centre - left), (right - bins) / (right - centre)
    banks = np.maximum(0.0, np.minimum(up, down))
    return np.pad(banks, ((0, 0), (0, 1)))


@functools.cache
def _hamming() -> np.ndarray:
    # Kaldi's Hamming window is the symmetric one (cosine over N - 1), as numpy's.
    return np.hamming(_FRAME)


def fbank_frames(n_samples: int) -> int:
    """How many 25 ms frames Kaldi cuts from `n_samples` (edges snipped: no partial frames)."""
    return 0 if n_samples < _FRAME else 1 + (n_samples - _FRAME) // _SHIFT


def kaldi_fbank(samples: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """80-bin log-mel filterbank of float audio in [-1, 1], as `torchaudio.compliance.kaldi.fbank`
    computes it for WeSpeaker (int16 scale, dither 0, DC removed, pre-emphasis 0.97, Hamming,
    power spectrum, no energy); (frames, 80) float32."""
    x = np.asarray(samples, dtype=np.float64).reshape(-1) * 32768.0
    count = fbank_frames(len(x))
    if count == 0:
        return np.zeros((0, _N_MELS), dtype=np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(x, _FRAME)[::_SHIFT][:count]
    frames = frames - frames.mean(axis=1, keepdims=True)
    previous = np.concatenate([frames[:, :1], frames[:, :-1]], axis=1)  # the first sample is its own predecessor
    frames = (frames - _PREEMPHASIS * previous) * _hamming()
    power = np.abs(np.fft.rfft(frames, n=_N_FFT)) ** 2
    energies = power @ _mel_banks(sample_rate).T
    return np.log(np.maximum(energies, _LOG_FLOOR)).astype(np.float32)


# --- ONNX speaker models -----------------------------------------------------------------------


def _onnx_file(source: str) -> Path:
    """A local .onnx path as is; `org/name:file.onnx` downloaded from the Hugging Face hub."""
    path = Path(source).expanduser()
    if path.exists() or ":" not in source:
        if not path.is_file():
            raise ModelError(f"{KEY}: ONNX speaker model not found: {path}; set {KEY} to the path of a .onnx file")
        return path
    repo, filename = source.rsplit(":", 1)
    # huggingface_hub reads HF_HUB_OFFLINE once, at import; honour it as it is now, or an offline
    # machine spends half a minute on retries before failing.
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(repo_id=repo, filename=filename, local_files_only=offline))
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
        if offline:
            why = "it is not in the local hub cache, and HF_HUB_OFFLINE is set"
        raise ModelError(
            f"{KEY}: cannot fetch {filename} from the Hugging Face hub repository {repo} ({why}); "
            f"without network, download the file elsewhere and set {KEY} to its local path"
        ) from exc


def _providers(device: str) -> list[str]:
    import onnxruntime as ort

    cuda = "CUDAExecutionProvider" in ort.get_available_providers()
    if _cuda_wanted(device, cuda, "onnxruntime (no CUDAExecutionProvider)"):
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


class OnnxSpeakerEncoder:
    """A WeSpeaker-style ONNX model: one float input [batch, frames, 80] of mean-normalised log-mel
    fbank, one output [batch, dim]. Such embeddings are not confined to positive components as
    Resemblyzer's are, so their cosines spread wider: hence `diarization.onnx`'s own thresholds."""

    def __init__(self, path: Path, device: str = "cpu") -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ModelError(f"onnxruntime is not installed ({exc}); pip install onnxruntime") from None
        try:
            self._session = ort.InferenceSession(str(path), providers=_providers(device))
        except Exception as exc:
            raise ModelError(f"{KEY}: cannot load the ONNX speaker model {path}: {exc}") from exc
        self._input, self._output = self._check_signature(path)
        self.name = f"onnx ({path})"
        self.device = "cuda" if "CUDAExecutionProvider" in self._session.get_providers() else "cpu"
        self.dim = self._probe_dim()

    def _check_signature(self, path: Path) -> tuple[str, str]:
        inputs, outputs = self._session.get_inputs(), self._session.get_outputs()
        shape = list(inputs[0].shape) if len(inputs) == 1 else []
        # A dimension may be symbolic (a name) or unknown (None); only a fixed wrong size is refused.
        mels_ok = len(shape) == 3 and (shape[2] == _N_MELS or not isinstance(shape[2], int))
        ok = len(inputs) == 1 and len(outputs) >= 1 and inputs[0].type == "tensor(float)" and mels_ok
        if not ok:
            got = ", ".join(f"{i.name} {i.type} {i.shape}" for i in inputs)
            raise ModelError(
                f"{KEY}: {path} is not a WeSpeaker-style speaker model: it takes {got}; expected one float "
                f"input [batch, frames, {_N_MELS}] of log-mel fbank features and an output [batch, dim]"
            )
        return inputs[0].name, outputs[0].name

    def _probe_dim(self) -> int:
        declared = self._session.get_outputs()[0].shape
        if len(declared) == 2 and isinstance(declared[1], int):
            return declared[1]
        # A dynamic embedding size: one run on a window of silence tells it.
        probe = self._embed(np.zeros((1, fbank_frames(int(WINDOW_SECONDS * SAMPLE_RATE)), _N_MELS), np.float32))
        return int(probe.shape[1])

    def _embed(self, feats: np.ndarray) -> np.ndarray:
        try:
            out: Any = self._session.run([self._output], {self._input: feats})[0]
        except Exception as exc:
            raise ModelError(f"{KEY}: {self.name} failed on features of shape {feats.shape}: {exc}") from exc
        out = np.asarray(out, dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != feats.shape[0]:
            raise ModelError(f"{KEY}: the ONNX speaker model {self.name} returned {out.shape}, not [batch, dim]")
        return out

    def windows(self, speech: np.ndarray, rate: float) -> tuple[np.ndarray, list[slice]]:
        speech = np.asarray(speech, dtype=np.float32).reshape(-1)
        if len(speech) < _FRAME:
            speech = np.resize(speech, _FRAME)  # too short for one frame: repeat it, never pad with silence
        # Windows start on frame boundaries, so every window's frames are rows of one fbank of
        # the whole stretch (the same numbers as per-window fbanks, computed once).
        feats = kaldi_fbank(speech)
        starts, span = _window_frames(len(feats), rate)
        batch = np.stack([feats[s : s + span] for s in starts])
        batch -= batch.mean(axis=1, keepdims=True)  # cepstral mean normalisation, per window
        embeddings = _unit_rows(self._embed(batch))
        window = int(WINDOW_SECONDS * SAMPLE_RATE)
        return embeddings, [slice(s * _SHIFT, min(len(speech), s * _SHIFT + window)) for s in starts]


def _window_frames(n_frames: int, rate: float) -> tuple[list[int], int]:
    """First frame of each window, and frames per window: windows of WINDOW_SECONDS stepped at `rate`
    per second, the last one ending at the last frame so the whole stretch is covered; a stretch
    shorter than a window is one window."""
    span = fbank_frames(int(WINDOW_SECONDS * SAMPLE_RATE))
    if n_frames <= span:
        return [0], n_frames
    step = max(1, round(SAMPLE_RATE / rate / _SHIFT))
    starts = list(range(0, n_frames - span + 1, step))
    if starts[-1] + span < n_frames:
        starts.append(n_frames - span)
    return starts, span
