"""Who said it: online speaker diarization on a voice encoder's embeddings (Resemblyzer's GE2E by default).

A speech segment from the VAD often holds more than one turn: a pause shorter than the VAD's
hangover, or none at all, keeps two people in one segment (that, and a third cluster founded by
such mixed segments, is what held the simplest chain to 0.57 attribution). So each transcribed
segment is first cut into stretches of one voice:

1. the speech is embedded as overlapping 1.6 s windows (pauses cut out first);
2. it is cut at every pause between words, and at every word boundary where the windows just
   before and just after sound like different voices;
3. neighbouring stretches are merged back, most alike first, while they sound like one voice:
   both confidently matched to the same known speaker, or either too short to stand alone, or,
   among unknown voices, a cosine of at least `change_threshold`;
4. a change found without a pause is moved to the word boundary the windows best agree on.

Each stretch is then matched by cosine to the centroids of the voices heard so far:

- the best centroid at or above `match_threshold` takes it; the centroid moves toward it only
  when it beats the runner-up by `margin` (an ambiguous stretch must not drag a centroid toward
  another voice), as a running mean while the speaker is young, then by `centroid_weight`;
- below the threshold, a stretch with at least `min_new_speaker_seconds` of speech starts a new
  speaker; shorter unmatched speech goes to the closest known speaker, because a second of
  audio is too little to found a voice on.

The whole state is the list of `Voiceprint`s (id, optional name, centroid, seconds of speech): read
it with `speakers()`, restore it with `load()`, add a known voice with `enroll()`.

The voice encoder (speech/voice_encoders.py) is whichever model `models.speaker` names. Every
cosine threshold is on that model's scale: the defaults were calibrated on Resemblyzer, and an
ONNX speaker model takes its own from `diarization.onnx` (`diarizer_from_settings`).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..config import DiarizationOptions, Settings
from ..errors import InputError
from ..records import SAMPLE_RATE, Piece, SpeechSegment, Transcript, Voiceprint, Word, join_words
from .voice_encoders import (
    ONNX_SPEAKER,
    RESEMBLYZER,
    RESEMBLYZER_DIM,
    WINDOW_SECONDS,
    EncoderSpec,
    VoiceEncoder,
    encoder_spec,
)

log = logging.getLogger(__name__)

# The default encoder's embedding size (Resemblyzer); `Diarizer.dim` is the configured one's.
EMBEDDING_DIM = RESEMBLYZER_DIM
# Resemblyzer was trained on audio normalised to -30 dBFS; an ONNX model's fbank features are
# mean-normalised per window, so the gain makes no difference to it.
_TARGET_DBFS = -30.0
# Silence is found on 30 ms webrtcvad frames; three frames each side of speech are kept.
_VAD_FRAME_MS = 30
_VAD_PAD_FRAMES = 3
# When less than this much speech is found, the VAD is not trusted and nothing is cut.
_MIN_VOICED_SECONDS = 0.5

# start, end (seconds into the segment), speaker, cosine, the stretch's voice embedding
_Turn = tuple[float, float, Voiceprint, float, np.ndarray]


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return (v / n).astype(np.float32) if n > 0 else v.astype(np.float32)


def normalise_volume(samples: np.ndarray) -> np.ndarray:
    """Raise quiet audio to -30 dBFS RMS as Resemblyzer's preprocessing does (never lowers it)."""
    x = np.asarray(samples, dtype=np.float32)
    rms = float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0
    if rms <= 1e-6:
        return x
    gain = 10 ** (_TARGET_DBFS / 20) / rms
    return x * np.float32(gain) if gain > 1 else x


def voiced_mask(samples: np.ndarray) -> np.ndarray:
    """Per sample: is it within ~90 ms of a frame webrtcvad (mode 3) calls speech?

    Pauses inside a window pull its embedding toward "silence", which all voices share: measured
    here, a 1.6 s window holding a sentence-end pause scored 0.60 against the same voice, as low
    as two different voices. Resemblyzer's `preprocess_wav` cuts such pauses for the same reason,
    but it returns only the shortened audio; this mask lets window times be mapped back.
    """
    import webrtcvad

    frame = _VAD_FRAME_MS * SAMPLE_RATE // 1000
    n_frames = len(samples) // frame
    if n_frames == 0:
        return np.ones(len(samples), dtype=bool)
    pcm = (np.clip(samples[: n_frames * frame], -1.0, 1.0) * 32767).astype(np.int16)
    vad = webrtcvad.Vad(3)
    voiced = np.array([vad.is_speech(pcm[i * frame : (i + 1) * frame].tobytes(), SAMPLE_RATE) for i in range(n_frames)])
    kernel = np.ones(2 * _VAD_PAD_FRAMES + 1)
    keep = np.convolve(voiced.astype(np.float32), kernel)[_VAD_PAD_FRAMES : _VAD_PAD_FRAMES + n_frames] > 0
    mask = np.repeat(keep, frame)
    # The tail shorter than a frame follows the last frame's verdict.
    return np.concatenate([mask, np.full(len(samples) - len(mask), bool(keep[-1]))])


class Diarizer:
    """Online speaker diarization; keeps the known voices in memory. Thread-safe.

    `encoder` is the voice encoder to load on first use: an `EncoderSpec`, or a Resemblyzer weights
    file (None: the packaged weights).

    Knobs beyond `DiarizationOptions`, calibrated with Resemblyzer on two espeak-ng voices (en-us,
    en+f3), where neighbouring 1.6 s stretches of one voice scored a cosine of 0.78 on average (5th
    percentile 0.71) and of two voices 0.59 (95th percentile 0.66):

    - `change_threshold`: stretches of unknown voices with a lower cosine are different speakers;
    - `min_turn_seconds`: voice changes found without a pause are at least this far apart and
      from the segment's ends (and a change is refined within this distance);
    - `pause_seconds`: a gap between words at least this long is a place a turn may end;
    - `change_window_seconds`: how much audio either side of a word boundary is compared;
    - `partial_rate`: windows per second (finer changes, a little more CPU).
    """

    def __init__(
        self,
        encoder: EncoderSpec | str | Path | None,
        options: DiarizationOptions,
        *,
        change_threshold: float = 0.7,
        min_turn_seconds: float = 1.0,
        pause_seconds: float = 0.25,
        change_window_seconds: float = 2.4,
        partial_rate: float = 4.0,
    ) -> None:
        if partial_rate < 1 / WINDOW_SECONDS:
            raise ValueError(f"partial_rate must be at least {1 / WINDOW_SECONDS:.3f} so windows cover the audio")
        if not isinstance(encoder, EncoderSpec):
            encoder = EncoderSpec(RESEMBLYZER, str(encoder) if encoder is not None else None)
        self.encoder_spec = encoder
        self.options = options
        self.change_threshold = change_threshold
        self.min_turn_seconds = min_turn_seconds
        self.pause_seconds = pause_seconds
        self.change_window_seconds = change_window_seconds
        self.partial_rate = partial_rate
        self._encoder: VoiceEncoder | None = None
        self._speakers: dict[str, Voiceprint] = {}
        self._lock = threading.RLock()

    # --- the model ---------------------------------------------------------------------------

    @property
    def encoder(self) -> VoiceEncoder:
        """The voice encoder, loaded on first use (Resemblyzer: 0.1 s under onnxruntime, over a second in torch)."""
        with self._lock:
            if self._encoder is None:
                self._encoder = self.encoder_spec.load()
            return self._encoder

    @property
    def dim(self) -> int:
        """The size of the encoder's embeddings (known without loading it for Resemblyzer)."""
        return self.encoder_spec.dim or self.encoder.dim

    def warm_up(self) -> None:
        """Load the encoder and run it once: the first call pays for lazy set-up (in torch, librosa's: seconds)."""
        rng = np.random.default_rng(0)
        self._partials(rng.normal(0, 0.01, int(WINDOW_SECONDS * SAMPLE_RATE)).astype(np.float32))

    def _partials(self, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unit embeddings of overlapping 1.6 s windows of speech, and the (start, end) in seconds of the
        stretch of `samples` each window covers once pauses are cut out."""
        encoder = self.encoder
        wav = normalise_volume(samples)
        keep = voiced_mask(wav)
        if keep.sum() < _MIN_VOICED_SECONDS * SAMPLE_RATE:
            keep[:] = True
        where = np.flatnonzero(keep)  # position in `samples` of each kept sample
        speech = wav[where]
        window = int(WINDOW_SECONDS * SAMPLE_RATE)
        if len(speech) < window:
            # The encoder would pad with zeros, and silence-padded windows of different voices
            # resemble each other (short replies formed a cluster of their own here); repeating
            # the speech keeps the window all voice.
            speech = np.resize(speech, window)
            where = np.resize(where, window)
        partials, slices = encoder.windows(speech, self.partial_rate)
        last = len(where) - 1
        spans = np.array([(where[min(s.start, last)], where[min(s.stop, len(where)) - 1] + 1) for s in slices])
        spans = np.sort(spans, axis=1)  # a repeated short stretch wraps around
        return np.asarray(partials, dtype=np.float32), spans / SAMPLE_RATE

    def embed(self, samples: np.ndarray) -> np.ndarray:
        """One unit-length voice embedding for 16 kHz float32 speech."""
        if len(samples) == 0:
            raise InputError("cannot embed an empty recording")
        with self._lock:
            partials, _spans = self._partials(samples)
        return _unit(partials.mean(axis=0))

    # --- state -------------------------------------------------------------------------------

    def speakers(self) -> list[Voiceprint]:
        """The known voices, in the order they were first heard or loaded."""
        with self._lock:
            return list(self._speakers.values())

    def load(self, speakers: Iterable[Voiceprint]) -> None:
        """Replace the known voices (from the store, after a rename or a merge)."""
        loaded: dict[str, Voiceprint] = {}
        for sp in speakers:
            centroid = np.asarray(sp.centroid, dtype=np.float32).reshape(-1)
            if centroid.shape != (self.dim,):
                # Voices carry no record of the model that made them; a size mismatch is the one sign.
                raise InputError(
                    f"speaker {sp.id!r}: centroid must be {self.dim} values (the size of models.speaker's "
                    f"embeddings), not {centroid.size}; voices made with another speaker model must be enrolled again"
                )
            if not np.all(np.isfinite(centroid)) or not centroid.any():
                raise InputError(f"speaker {sp.id!r}: centroid must be {self.dim} finite values, not all zero")
            if sp.id in loaded:
                raise InputError(f"speaker id {sp.id!r} appears twice")
            loaded[sp.id] = replace(sp, centroid=_unit(centroid), seconds=max(float(sp.seconds), 0.0))
        with self._lock:
            self._speakers = loaded

    def forget(self, speaker_id: str) -> None:
        """Drop a voice (the person asked to be forgotten); their next words start a new speaker."""
        with self._lock:
            self._speakers.pop(speaker_id, None)

    def enroll(self, name_or_id: str, samples: np.ndarray | Sequence[np.ndarray]) -> Voiceprint:
        """Add speech of a known person: to the speaker with this id or name, else to a new speaker so named.

        Enrollment is deliberate, so its speech counts in full (a running mean by seconds), not
        through the small weight that unattended matches get. Five seconds or more make a usable
        voice; less still works but matches less surely.
        """
        recordings = [samples] if isinstance(samples, np.ndarray) else list(samples)
        recordings = [np.asarray(r, dtype=np.float32).reshape(-1) for r in recordings if len(r)]
        if not recordings:
            raise InputError(f"no speech given to enroll {name_or_id!r}")
        seconds = [len(r) / SAMPLE_RATE for r in recordings]
        vectors = np.stack([self.embed(r) for r in recordings])
        embedding = _unit((vectors * np.array(seconds)[:, None]).sum(axis=0))
        total = float(sum(seconds))
        with self._lock:
            found = self._speakers.get(name_or_id) or next(
                (s for s in self._speakers.values() if s.name == name_or_id), None
            )
            if found is None:
                speaker = Voiceprint(self._new_id(), name_or_id, embedding, total, enrolled=True)
            else:
                mixed = found.centroid * found.seconds + embedding * total
                speaker = replace(found, centroid=_unit(mixed), seconds=found.seconds + total, enrolled=True)
            self._speakers[speaker.id] = speaker
            return speaker

    def _new_id(self) -> str:
        n = len(self._speakers) + 1
        while f"S{n}" in self._speakers:
            n += 1
        return f"S{n}"

    # --- matching ----------------------------------------------------------------------------

    def _scores(self, embedding: np.ndarray) -> list[tuple[float, Voiceprint]]:
        return sorted(
            ((float(np.dot(s.centroid, embedding)), s) for s in self._speakers.values()),
            key=lambda pair: -pair[0],
        )

    def assign(self, embedding: np.ndarray, seconds: float) -> tuple[Voiceprint, float]:
        """Attribute one embedded stretch of speech and learn from it; the speaker and the cosine to it."""
        opts = self.options
        with self._lock:
            scores = self._scores(embedding)
            best_sim, best = scores[0] if scores else (-1.0, None)
            runner_up = scores[1][0] if len(scores) > 1 else -1.0
            if best is None or (best_sim < opts.match_threshold and seconds >= opts.min_new_speaker_seconds):
                speaker = Voiceprint(self._new_id(), None, _unit(embedding), seconds)
                self._speakers[speaker.id] = speaker
                log.debug("new speaker %s (best cosine %.3f, %.1f s)", speaker.id, best_sim, seconds)
                return speaker, 1.0
            if best_sim >= opts.match_threshold and best_sim - runner_up >= opts.margin and not best.enrolled:
                # A young centroid rests on little speech: let it follow its speech as a running mean
                # until centroid_weight takes over, so the first, possibly odd, piece does not define it.
                weight = max(opts.centroid_weight, seconds / (best.seconds + seconds)) if seconds > 0 else 0.0
                centroid = _unit((1 - weight) * best.centroid + weight * embedding)
                best = replace(best, centroid=centroid, seconds=best.seconds + seconds)
                self._speakers[best.id] = best
            return best, best_sim

    # --- segments ----------------------------------------------------------------------------

    def diarize(self, segment: SpeechSegment, transcripts: Sequence[Transcript]) -> list[Piece]:
        """Split a transcribed segment where the voice changes and attribute each piece to a speaker.

        Returns one piece per run of one speaker within each transcript, in time order. Audio
        Whisper found no words in is neither attributed nor learned from.
        """
        transcripts = [t for t in transcripts if t.text]
        if not transcripts or len(segment.samples) == 0:
            return []
        t0 = segment.start
        words = [(w.start - t0, w.end - t0) for t in transcripts for w in t.words]
        duration = len(segment.samples) / SAMPLE_RATE
        # The VAD's pre-roll and hangover are not the speaker's voice; keep to where words were heard.
        lo = max(0.0, min(t.start for t in transcripts) - t0 - 0.1)
        hi = min(duration, max(t.end for t in transcripts) - t0 + 0.1)
        if hi - lo < 0.1:
            lo, hi = 0.0, duration
        with self._lock:
            audio = segment.samples[int(lo * SAMPLE_RATE) : int(np.ceil(hi * SAMPLE_RATE))]
            partials, spans = self._partials(audio)
            view = _Partials(segment.samples, partials, spans + lo)
            pauses = {
                (a_end + b_start) / 2
                for (_, a_end), (b_start, _) in itertools.pairwise(words)
                if b_start - a_end >= self.pause_seconds
            }
            units = self._units(view, words, pauses, lo, hi)
            turns: list[_Turn] = []
            for unit in units:
                speaker, sim = self.assign(unit.embedding, unit.end - unit.start)
                turns.append((unit.start, unit.end, speaker, sim, unit.embedding))
            for i in range(len(turns) - 1):
                (a, c, left, s1, e1), (_, b, right, s2, e2) = turns[i], turns[i + 1]
                if left.id != right.id and c not in pauses:
                    c = self._refine(view, words, e1, e2, a, c, b)
                    turns[i], turns[i + 1] = (a, c, left, s1, e1), (c, b, right, s2, e2)
            # Each line keeps the voice of its own audio, not of the stretch it was matched with:
            # stretches that both matched one voice are merged, and when that voice is two people
            # the online pass has not told apart yet, the merged stretch holds both. Re-clustering
            # reads these voices; a line's own is one person's (voice matrix, BENCHMARKS.md).
            return [
                replace(piece, embedding=self._embedding(view, piece.start - t0, piece.end - t0))
                if piece.embedding is not None and piece.words
                else piece
                for piece in _pieces(transcripts, turns, t0)
            ]

    def _refine(
        self,
        view: _Partials,
        words: Sequence[tuple[float, float]],
        before: np.ndarray,
        after: np.ndarray,
        a: float,
        c: float,
        b: float,
    ) -> float:
        """Move a voice change found without a pause to the word boundary that best fits the windows.

        A 1.6 s window is mostly the second voice exactly when its centre is past the change, so
        each window near `c` votes for a side by which of the two voices it is closer to; the
        boundary chosen is the word gap with the fewest votes against it. Comparing windows
        left and right of each gap, as `_voice_changes` does, is blurred by windows holding both
        voices and lands a word or three off.
        """
        reach = self.min_turn_seconds
        centres = view.spans.mean(axis=1)
        near = np.abs(centres - c) <= reach + WINDOW_SECONDS / 2
        if not near.any():
            return c
        lean = view.partials[near] @ after - view.partials[near] @ before  # > 0: sounds like the second voice
        x = centres[near]
        gaps = [(e + s) / 2 for (_, e), (s, _) in itertools.pairwise(words)]
        options = [g for g in gaps if abs(g - c) <= reach and a < g < b] or [c]

        def against(t: float) -> float:
            return float(np.clip(lean[x < t], 0, None).sum() + np.clip(-lean[x >= t], 0, None).sum())

        return min(options, key=lambda t: (against(t), abs(t - c)))

    def _units(
        self, view: _Partials, words: Sequence[tuple[float, float]], pauses: set[float], lo: float, hi: float
    ) -> list[_Unit]:
        """Stretches of one voice: cut at every pause and every likely voice change, then merged back
        wherever the two sides sound like one person."""
        cuts = pauses | set(self._voice_changes(view, words, lo, hi))
        edges = [lo, *sorted(c for c in cuts if lo < c < hi), hi]
        units = [_Unit(a, b, self._embedding(view, a, b)) for a, b in itertools.pairwise(edges)]
        while len(units) > 1:
            best: tuple[float, int] | None = None
            for i in range(len(units) - 1):
                score = self._same_voice(units[i], units[i + 1])
                if score is not None and (best is None or score > best[0]):
                    best = (score, i)
            if best is None:
                break
            i = best[1]
            a, b = units[i].start, units[i + 1].end
            units[i : i + 2] = [_Unit(a, b, self._embedding(view, a, b))]
        return units

    def _same_voice(self, u: _Unit, v: _Unit) -> float | None:
        """How surely two neighbouring stretches are one voice (higher merges first); None: keep them apart."""
        sim = float(np.dot(u.embedding, v.embedding))
        who_u, who_v = self._match(u.embedding), self._match(v.embedding)
        if who_u is not None and who_v is not None:
            # Known voices decide: the same one merges, two different confident ones never do.
            return sim + 1.0 if who_u == who_v else None
        if min(u.end - u.start, v.end - v.start) < self.options.min_new_speaker_seconds:
            # Too short to found a voice and not surely a known one: it joins the neighbour it
            # sounds more like, most likely the same speaker finishing or starting a sentence.
            return sim
        return sim if sim >= self.change_threshold else None

    def _match(self, embedding: np.ndarray) -> str | None:
        """The known speaker that would confidently take this embedding (above the threshold, by the margin)."""
        scores = self._scores(embedding)
        if not scores or scores[0][0] < self.options.match_threshold:
            return None
        if len(scores) > 1 and scores[0][0] - scores[1][0] < self.options.margin:
            return None
        return scores[0][1].id

    def _embedding(self, view: _Partials, a: float, b: float) -> np.ndarray:
        inside = (view.spans[:, 0] >= a - 1e-6) & (view.spans[:, 1] <= b + 1e-6)
        if inside.any():
            return _unit(view.partials[inside].mean(axis=0))
        # No whole window fits inside: embed its own audio (repeated to fill a window).
        return self.embed(view.samples[int(a * SAMPLE_RATE) : max(int(b * SAMPLE_RATE), int(a * SAMPLE_RATE) + 1)])

    def _voice_changes(
        self, view: _Partials, words: Sequence[tuple[float, float]], lo: float, hi: float
    ) -> list[float]:
        """Word boundaries where the windows just before and just after sound like different voices.

        Only local windows are compared, so a short turn between two turns of another speaker is
        found too. Candidates only: the merging in `_units` has the last word.
        """
        reach = self.change_window_seconds
        scored: list[tuple[float, float]] = []
        if words:
            times = [(a_end + b_start) / 2 for (_, a_end), (b_start, _) in itertools.pairwise(words)]
        else:
            times = list(np.arange(lo + self.min_turn_seconds, hi - self.min_turn_seconds, 0.25))
        for t in times:
            if t - lo < self.min_turn_seconds or hi - t < self.min_turn_seconds:
                continue
            left = (view.spans[:, 0] >= t - reach - 1e-6) & (view.spans[:, 1] <= t + 1e-6)
            right = (view.spans[:, 0] >= t - 1e-6) & (view.spans[:, 1] <= t + reach + 1e-6)
            if left.any() and right.any():
                sim = float(np.dot(_unit(view.partials[left].mean(axis=0)), _unit(view.partials[right].mean(axis=0))))
                scored.append((sim, t))
        changes: list[float] = []
        for sim, t in sorted(scored):  # most different first; no two changes closer than a turn
            if sim >= self.change_threshold:
                break
            if all(abs(t - c) >= self.min_turn_seconds for c in changes):
                log.debug("possible voice change at %.2f s (cosine %.3f)", t, sim)
                changes.append(t)
        return sorted(changes)


@dataclass(frozen=True)
class _Partials:
    """A segment's samples and its partial embeddings, with each window's (start, end) in seconds."""

    samples: np.ndarray
    partials: np.ndarray
    spans: np.ndarray


@dataclass(frozen=True)
class _Unit:
    start: float
    end: float
    embedding: np.ndarray


def _pieces(transcripts: Sequence[Transcript], turns: list[_Turn], t0: float) -> list[Piece]:
    """Cut each transcript where the speaker changes; a word goes to the turn holding its middle."""

    def turn_at(t: float) -> _Turn:
        return next((turn for turn in turns if t < turn[1] + t0), turns[-1])

    pieces: list[Piece] = []
    for tr in transcripts:
        if not tr.words:
            _a, _b, speaker, sim, embedding = turn_at((tr.start + tr.end) / 2)
            pieces.append(Piece(speaker.id, speaker.name, tr.text, tr.start, tr.end, (), sim, embedding))
            continue
        run: list[Word] = []
        current: _Turn | None = None
        for w in tr.words:
            turn = turn_at((w.start + w.end) / 2)
            if current is not None and turn[2].id != current[2].id:
                pieces.append(_piece(current, run))
                run = []
            if current is None or turn[2].id != current[2].id:
                current = turn
            run.append(w)
        if current is not None:
            pieces.append(_piece(current, run))
    return [p for p in pieces if p.text]


def _piece(turn: _Turn, words: list[Word]) -> Piece:
    _a, _b, speaker, sim, embedding = turn
    return Piece(
        speaker.id, speaker.name, join_words(words), words[0].start, words[-1].end, tuple(words), sim, embedding
    )


def diarizer_from_settings(settings: Settings, **kwargs: Any) -> Diarizer:
    """A diarizer with the configured speaker model; the encoder itself loads on first use.

    An ONNX speaker model scores cosines on another scale than Resemblyzer, so it brings its own
    match and change thresholds (`diarization.onnx`); `kwargs` still override them.
    """
    spec = encoder_spec(settings)
    options = settings.diarization
    if spec.format == ONNX_SPEAKER:
        kwargs = {"change_threshold": options.onnx.change_threshold, **kwargs}
        options = replace(options, match_threshold=options.onnx.match_threshold)
    return Diarizer(spec, options, **kwargs)
