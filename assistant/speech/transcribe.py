"""Speech segments to text with faster-whisper, guarded against text Whisper invents.

Whisper was trained on subtitles, so silence, noise and hard audio make it write plausible text
that nobody said ("Thank you.", credits, one phrase looped). The guards, all set under `stt:`:

- every segment is decoded on its own (`condition_on_previous_text=False`), so one invented
  line cannot seed the next;
- a Whisper segment is dropped when its no-speech probability is above `no_speech_threshold` or
  its average token log-probability is below `log_prob_threshold` (see `is_invented`);
- a segment whose text compresses better than `compression_ratio_threshold` is a loop: dropped;
- a word or phrase repeated more than `max_repeats` times in a row is cut to one occurrence.

Beyond the config: Whisper's temperature fallback is off and a decode may write at most
`max_tokens_per_second` tokens per second of audio, so noise that slips past the VAD costs a
bounded, small amount of CPU (see the constants below for why and what was measured).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import zlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..config import Settings, SttOptions
from ..cpus import usable_cpus
from ..devices import pick_device
from ..errors import ModelError
from ..models import load_manifest, resolve
from ..records import SAMPLE_RATE, SpeechSegment, Transcript, Word, join_words

if TYPE_CHECKING:
    from faster_whisper.transcribe import Segment

log = logging.getLogger(__name__)

# Whisper's fallback (decode again with sampling when a decode loops or has a low log-probability)
# is off by default: on the speech measured here it never fired, while on noise it added a quarter
# more decoding time and only produced other invented text ("I'll see you in the next video.")
# that the guards then dropped. Pass Whisper's (0.0, 0.2, 0.4, 0.6, 0.8, 1.0) to restore it.
TEMPERATURES: tuple[float, ...] = (0.0,)
# A decode may produce at most this many tokens per second of audio (plus a floor): English
# speech needs about 3-7, and a loop on noise otherwise runs to Whisper's 448-token limit, which
# costs more time than the audio lasted on a small CPU.
MAX_TOKENS_PER_SECOND = 12.0
_MIN_TOKENS = 32
# Whisper decodes at most 448 tokens, prompt included; the prompt is the 3-4 start tokens and,
# with hotwords, one more and theirs.
_MAX_TOKENS = 440
# Hotwords are a prompt, and every prompt token is one the answer cannot use: 200 characters (about
# 40-60 tokens: twenty or so names) still leave 380 tokens for 30 s of speech, which needs at most ~250.
HOTWORD_CHARS = 200

_WORD_KEY = re.compile(r"[^\w']+")


def pick_compute_type(compute_type: str, device: str) -> str:
    """`auto`: float16 on a GPU, int8 on a CPU (the fastest type each runs well)."""
    if compute_type != "auto":
        return compute_type
    return "float16" if device == "cuda" else "int8"


def stt_source(settings: Settings) -> str:
    """What WhisperModel should open for `models.stt`: a local CTranslate2 directory, a hub id, or a size name.

    faster-whisper's own size names ("base.en", "small") are accepted as they are, because users
    know them from its documentation; faster-whisper fetches them from the hub on first use.
    """
    value = settings.models.stt
    if value not in load_manifest() and value in _faster_whisper_sizes():
        return value
    return resolve(settings, "stt").source


def _faster_whisper_sizes() -> set[str]:
    try:
        from faster_whisper.utils import available_models
    except ImportError:  # pragma: no cover - depends on the install
        return set()
    return set(available_models())


def is_invented(no_speech_prob: float, avg_logprob: float, options: SttOptions) -> bool:
    """Whether a decoded segment should be dropped as text Whisper made up.

    Either signal alone is enough. faster-whisper (like openai-whisper) skips a window only when
    both hold, and that lets most invented text through: measured here (int8, CPU), Whisper wrote
    "You" on digital silence with no-speech 0.75-0.95 but log-probability -0.75 to -0.82, and
    looped "I'm sorry, I'm sorry, ..." (base) or "I'm going to take a look at this one, and ..."
    (tiny.en) on white and brown noise with no-speech 0.72-0.98 but log-probability -0.1 to -0.4,
    as confident as fluent speech. Espeak-ng speech in three voices, short
    replies ("Okay.", "Thank you.") included, never crossed either line: no-speech at most 0.51
    (tiny.en) and 0.28 (base), log-probability at least -0.72. So either signal drops the segment.
    """
    return no_speech_prob > options.no_speech_threshold or avg_logprob < options.log_prob_threshold


def compression_ratio(text: str) -> float:
    """Whisper's loop detector: how much better than usual the text compresses with zlib."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def _key(text: str) -> str:
    return _WORD_KEY.sub("", text.lower())


def cut_repeats(keys: Sequence[str], max_repeats: int) -> list[int]:
    """Indices to keep so that no run of a word or n-gram repeated more than `max_repeats` times survives.

    A run that is too long is cut to its first occurrence. The shortest repeating unit wins, so
    "no no no no" loses three "no"s rather than being read as two "no no"s.
    """
    n = len(keys)
    keep: list[int] = []
    i = 0
    while i < n:
        cut = None
        for size in range(1, (n - i) // (max_repeats + 1) + 1):
            unit = list(keys[i : i + size])
            reps = 1
            while list(keys[i + reps * size : i + (reps + 1) * size]) == unit:
                reps += 1
            if reps > max_repeats:
                cut = (size, reps)
                break
        if cut is None:
            keep.append(i)
            i += 1
        else:
            size, reps = cut
            keep.extend(range(i, i + size))
            i += size * reps
    return keep


class Transcriber:
    """A faster-whisper model with the guards above. Safe to call from several threads (one decode at a time)."""

    def __init__(
        self,
        source: str,
        options: SttOptions,
        *,
        cpu_threads: int = 0,  # 0: one per core, at most 4
        temperatures: tuple[float, ...] = TEMPERATURES,
        max_tokens_per_second: float = MAX_TOKENS_PER_SECOND,
    ) -> None:
        self.source = source
        self.options = options
        self.device = pick_device(options.device)
        self.compute_type = pick_compute_type(options.compute_type, self.device)
        self.temperatures = temperatures
        self.max_tokens_per_second = max_tokens_per_second
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ModelError(f"faster-whisper is not installed ({exc}); pip install faster-whisper") from None
        # CTranslate2 defaults to 4 threads whatever the machine; on fewer cores they only contend
        # (measured on 2 cores: 4 threads cost 15% more CPU time per second of audio than 1 or 2).
        threads = cpu_threads or min(4, usable_cpus())
        try:
            self._model = WhisperModel(source, device=self.device, compute_type=self.compute_type, cpu_threads=threads)
        except Exception as exc:
            raise ModelError(
                f"cannot load the speech-to-text model {source!r} on {self.device} ({self.compute_type}): {exc}. "
                f"`models.stt` takes a manifest name (`assistant models install` installs the default), "
                f"a CTranslate2 Whisper directory, a hub id or a faster-whisper size name"
            ) from exc
        self.multilingual = bool(self._model.model.is_multilingual)
        # English-only models cannot take another language; asking is a configuration mistake.
        if not self.multilingual and options.language not in (None, "en"):
            raise ModelError(
                f"stt.language is {options.language!r} but {source!r} is an English-only model; "
                f"set models.stt to a multilingual model or stt.language to en"
            )
        self._lock = threading.Lock()

    def transcribe(self, segment: SpeechSegment, names: Sequence[str] = ()) -> list[Transcript]:
        """The text of one speech segment, one record per Whisper segment, times in epoch seconds.

        `names` (people the memory knows) join `stt.hotwords` as Whisper's hotwords: spelled as given.
        """
        audio = np.ascontiguousarray(segment.samples, dtype=np.float32)
        if audio.size == 0:
            return []
        opts = self.options
        duration = len(audio) / SAMPLE_RATE
        # Whisper reads at most 30 s at once; the cap is per window, so a longer segment gets 30 s worth.
        max_tokens = min(_MIN_TOKENS + int(self.max_tokens_per_second * min(duration, 30.0)), _MAX_TOKENS)
        hotwords = hotword_prompt((*opts.hotwords, *names))
        out = guard(self._decode(audio, max_tokens, hotwords), segment, opts)
        if hotwords and out and echoes_hotwords(out, hotwords):
            # On silence and some noise Whisper reads the hotwords back ("Jaxon Bryndis Saoirse"),
            # and with confidence, so the guards keep it. Speech made only of those names is rare:
            # decode it again without them, which drops an echo and keeps a real "Jaxon!" (spelled
            # as Whisper would have spelled it anyway).
            log.debug("the transcript only repeated the hotwords; decoding without them")
            out = guard(self._decode(audio, max_tokens, None), segment, opts)
        return out

    def _decode(self, audio: np.ndarray, max_tokens: int, hotwords: str | None) -> list[Segment]:
        opts = self.options
        if hotwords:
            # The prompt's tokens (and its start token) come out of the 448 Whisper decodes in all.
            prompt_tokens = len(self._model.hf_tokenizer.encode(" " + hotwords).ids) + 1
            max_tokens = min(max_tokens, _MAX_TOKENS - prompt_tokens)
        with self._lock:
            segments, _info = self._model.transcribe(
                audio,
                language=opts.language if self.multilingual else "en",
                beam_size=opts.beam_size,
                temperature=list(self.temperatures),
                compression_ratio_threshold=opts.compression_ratio_threshold,
                log_prob_threshold=opts.log_prob_threshold,
                no_speech_threshold=opts.no_speech_threshold,
                condition_on_previous_text=False,
                word_timestamps=True,
                vad_filter=False,  # segments come from our own VAD; a second pass would cut words
                max_new_tokens=max_tokens,
                hotwords=hotwords,
            )
            return list(segments)  # the generator decodes lazily: consume it under the lock


def echoes_hotwords(transcripts: Sequence[Transcript], hotwords: str) -> bool:
    """Whether every word of the transcripts is one of the hotwords (Whisper reading its prompt back)."""
    known = {_key(w) for w in hotwords.split()}
    said = [_key(w) for t in transcripts for w in t.text.split()]
    return bool(said) and all(w in known for w in said if w)


def hotword_prompt(words: Iterable[str]) -> str | None:
    """Whisper's hotwords: each word once, in order, within what its prompt keeps (None for none)."""
    seen: dict[str, None] = {}
    for word in words:
        clean = " ".join(word.split())
        if clean and clean.casefold() not in {w.casefold() for w in seen}:
            seen[clean] = None
    prompt = ""
    for word in seen:
        # Whole words only: a name cut in half would teach Whisper a wrong spelling.
        if len(prompt) + len(word) + 1 > HOTWORD_CHARS:
            break
        prompt = f"{prompt} {word}" if prompt else word
    return prompt or None


def guard(raw: Iterable[Segment], segment: SpeechSegment, options: SttOptions) -> list[Transcript]:
    """Whisper's segments for `segment`, less invented text and loops, with times in epoch seconds."""
    duration = len(segment.samples) / SAMPLE_RATE

    def at(t: float) -> float:  # Whisper may place a time a little outside the audio it was given
        return segment.start + min(max(float(t), 0.0), duration)

    out: list[Transcript] = []
    for seg in raw:
        if is_invented(seg.no_speech_prob, seg.avg_logprob, options):
            # Logs never carry words: a forget could not reach them in the journal.
            log.debug(
                "dropped as invented (no_speech %.2f, logprob %.2f, %d characters)",
                seg.no_speech_prob,
                seg.avg_logprob,
                len(seg.text),
            )
            continue
        text = seg.text.strip()
        ratio = compression_ratio(text)
        if ratio > options.compression_ratio_threshold:
            log.debug("dropped as a loop (compression ratio %.2f, %d characters)", ratio, len(text))
            continue
        words = tuple(Word(w.word, at(w.start), at(w.end), float(w.probability)) for w in seg.words or ())
        if words:
            words = tuple(words[i] for i in cut_repeats([_key(w.text) for w in words], options.max_repeats))
            text = join_words(words)
        else:
            tokens = text.split()
            text = " ".join(tokens[i] for i in cut_repeats([_key(t) for t in tokens], options.max_repeats))
        if not _key(text):
            continue
        start, end = (words[0].start, words[-1].end) if words else (at(seg.start), at(seg.end))
        out.append(Transcript(text, start, end, words, float(seg.avg_logprob), float(seg.no_speech_prob), ratio))
    return out


@functools.lru_cache(maxsize=2)
def load_transcriber(source: str, options: SttOptions, cpu_threads: int = 0) -> Transcriber:
    """One model per source and options per process: loading base costs about a second and 150 MB."""
    log.info("loading speech-to-text model %s", source)
    return Transcriber(source, options, cpu_threads=cpu_threads)


def transcriber_from_settings(settings: Settings, *, cpu_threads: int = 0) -> Transcriber:
    return load_transcriber(stt_source(settings), settings.stt, cpu_threads)
