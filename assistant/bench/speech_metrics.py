"""How what was heard compares with what was said: word errors, speaker attribution and
diarization error, each against a reference, on inputs any test can make by hand."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import jiwer
import numpy as np

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ((10**9, "billion"), (10**6, "million"), (1000, "thousand"), (100, "hundred"))
_ORDINALS = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth"}
_ORDINALS |= {"nine": "ninth", "twelve": "twelfth"}


def number_words(n: int) -> list[str]:
    """A whole number as it is said, without "and": 4000 -> four thousand, 21 -> twenty one."""
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        return [_TENS[n // 10]] + ([_ONES[n % 10]] if n % 10 else [])
    for scale, word in _SCALES:
        if n >= scale:
            if n // scale >= 1000 and scale == 10**9:
                return [_ONES[int(d)] for d in str(n)]  # beyond what anyone says as one number
            return [*number_words(n // scale), word] + (number_words(n % scale) if n % scale else [])
    raise AssertionError(n)  # pragma: no cover - every n >= 100 meets a scale


def _ordinal(words: list[str]) -> list[str]:
    last = words[-1]
    spoken = _ORDINALS.get(last) or (last[:-1] + "ieth" if last.endswith("y") else last + "th")
    return [*words[:-1], spoken]


def normalise(text: str) -> list[str]:
    """Words for scoring, the same for reference and hypothesis: lower case, no punctuation,
    apostrophes dropped ("don't" = "dont"), "&" read as "and", "%" as "percent", and numbers in
    digits spelled out ("4,000" = "four thousand", "12th" = "twelfth").

    espeak-ng reads digits aloud and Whisper writes most numbers as digits, so without the last
    step every number would count as an error however well it was heard.
    """
    text = text.lower().replace("&", " and ").replace("%", " percent ")
    text = re.sub(r"['\u2019]", "", text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    words: list[str] = []
    for token in re.findall(r"[^\W_]+", text):
        ordinal = re.fullmatch(r"(\d+)(?:st|nd|rd|th)", token)
        if ordinal:
            words += _ordinal(number_words(int(ordinal.group(1))))
            continue
        for part in re.findall(r"\d+|[^\W\d_]+", token):
            words += number_words(int(part)) if part.isdigit() else [part]
    return words


@dataclass(frozen=True)
class WordErrors:
    wer: float
    hits: int
    substitutions: int
    deletions: int
    insertions: int
    reference_words: int
    hypothesis_words: int


@dataclass(frozen=True)
class Alignment:
    """The word error count and, per reference word, the hypothesis word aligned to it (None: deleted)."""

    errors: WordErrors
    ref_to_hyp: tuple[int | None, ...]


def align(reference: Sequence[str], hypothesis: Sequence[str]) -> Alignment:
    """Levenshtein alignment of two word sequences (jiwer's, so the same one the WER counts).

    Hypothesis words are matched to reference words by text, not by time. Whisper's word times
    are off by a few hundred milliseconds and, where two people talk at once, both turns share
    the same stretch of time, so a time could not say which turn a word belongs to; the text can.
    Attribution and delays then rest on exactly the words the WER calls recognised (equal or
    substituted); a substituted word is still a word of that turn, said by that voice.
    """
    if not reference:
        raise ValueError("the reference holds no words")
    if not hypothesis:
        errors = WordErrors(1.0, 0, 0, len(reference), 0, len(reference), 0)
        return Alignment(errors, (None,) * len(reference))
    out = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
    ref_to_hyp: list[int | None] = [None] * len(reference)
    for chunk in out.alignments[0]:
        if chunk.type in ("equal", "substitute"):
            for k in range(chunk.ref_end_idx - chunk.ref_start_idx):
                ref_to_hyp[chunk.ref_start_idx + k] = chunk.hyp_start_idx + k
    errors = WordErrors(
        float(out.wer), out.hits, out.substitutions, out.deletions, out.insertions, len(reference), len(hypothesis)
    )
    return Alignment(errors, tuple(ref_to_hyp))


@dataclass(frozen=True)
class Match:
    """A hypothesis speaker (cluster) taken to be a reference speaker."""

    cluster: str
    speaker: str


def best_mapping(clusters: Sequence[str], speakers: Sequence[str], score: np.ndarray) -> tuple[Match, ...]:
    """The one-to-one cluster -> speaker mapping with the highest total `score[cluster, speaker]`.

    Clusters beyond the number of speakers stay unmapped (their words or time count as wrong), and
    so does a pair that shares nothing. Hungarian assignment with scipy when it is installed;
    otherwise every assignment is tried, which is instant for the few speakers of a conversation.
    """
    if not len(clusters) or not len(speakers):
        return ()
    score = np.asarray(score, dtype=np.float64)
    try:
        from scipy.optimize import linear_sum_assignment
    except ImportError:
        pairs = assign_by_trying(score)
    else:
        rows, cols = linear_sum_assignment(score, maximize=True)
        pairs = list(zip(rows.tolist(), cols.tolist(), strict=True))
    return tuple(Match(clusters[r], speakers[c]) for r, c in sorted(pairs) if score[r, c] > 0)


def assign_by_trying(score: np.ndarray) -> list[tuple[int, int]]:
    """(row, column) pairs, one per row or column (the fewer), maximising the total: brute force."""
    n, m = score.shape
    if n <= m:
        options = ([(r, c) for r, c in enumerate(p)] for p in itertools.permutations(range(m), n))
    else:
        options = ([(r, c) for c, r in enumerate(p)] for p in itertools.permutations(range(n), m))
    return max(options, key=lambda pairs: sum(score[r, c] for r, c in pairs))


@dataclass(frozen=True)
class Attribution:
    """Share of the recognised reference words whose hypothesis speaker maps to their true speaker."""

    accuracy: float
    words: int  # recognised reference words (aligned to a hypothesis word)
    correct: int
    mapping: tuple[Match, ...]


def attribute(
    reference_speakers: Sequence[str], hypothesis_speakers: Sequence[str], ref_to_hyp: Sequence[int | None]
) -> Attribution:
    """Score speaker attribution over aligned words, after the best cluster -> speaker mapping.

    Deleted words are left out (the WER counts them), so this measures the diarizer, not Whisper.
    """
    pairs = [(hypothesis_speakers[h], reference_speakers[r]) for r, h in enumerate(ref_to_hyp) if h is not None]
    if not pairs:
        return Attribution(0.0, 0, 0, ())
    clusters = sorted({c for c, _ in pairs})
    speakers = sorted({s for _, s in pairs})
    counts = np.zeros((len(clusters), len(speakers)))
    for c, s in pairs:
        counts[clusters.index(c), speakers.index(s)] += 1
    mapping = best_mapping(clusters, speakers, counts)
    correct = int(sum(counts[clusters.index(m.cluster), speakers.index(m.speaker)] for m in mapping))
    return Attribution(correct / len(pairs), len(pairs), correct, mapping)


@dataclass(frozen=True)
class Span:
    """Someone speaking from `start` to `end` (seconds into the recording)."""

    start: float
    end: float
    label: str


@dataclass(frozen=True)
class DiarizationError:
    """Time-based DER = (missed + false alarm + confusion) / reference speech, all in seconds.

    Where several people speak at once each counts: a frame with two reference speakers and one
    hypothesis speaker has one speaker missed.
    """

    der: float
    missed: float
    false_alarm: float
    confusion: float
    speech: float  # reference speaker-seconds scored
    collar: float
    mapping: tuple[Match, ...]


def diarization_error(
    reference: Sequence[Span], hypothesis: Sequence[Span], *, collar: float = 0.0, step: float = 0.01
) -> DiarizationError:
    """DER on a grid of `step` seconds, NIST style, without pyannote.

    Hypothesis labels are mapped one-to-one onto reference labels to maximise the time they
    share; frames within `collar` seconds of a reference turn's start or end are not scored.
    """
    end = max((s.end for s in (*reference, *hypothesis)), default=0.0)
    n = int(np.ceil(end / step)) + 1
    centres = (np.arange(n) + 0.5) * step

    def activity(spans: Sequence[Span]) -> tuple[list[str], np.ndarray]:
        labels = sorted({s.label for s in spans})
        active = np.zeros((len(labels), n), dtype=bool)
        for s in spans:
            active[labels.index(s.label)] |= (centres >= s.start) & (centres < s.end)
        return labels, active

    ref_labels, ref = activity(reference)
    hyp_labels, hyp = activity(hypothesis)
    scored = np.ones(n, dtype=bool)
    if collar > 0:
        for s in reference:
            for edge in (s.start, s.end):
                scored &= np.abs(centres - edge) > collar
    ref, hyp = ref[:, scored], hyp[:, scored]
    shared = hyp.astype(np.float64) @ ref.T.astype(np.float64)
    mapping = best_mapping(hyp_labels, ref_labels, shared)
    n_ref = ref.sum(axis=0)
    n_hyp = hyp.sum(axis=0)
    right = np.zeros(ref.shape[1], dtype=np.int64)
    for m in mapping:
        right += hyp[hyp_labels.index(m.cluster)] & ref[ref_labels.index(m.speaker)]
    missed = float(np.maximum(n_ref - n_hyp, 0).sum()) * step
    false_alarm = float(np.maximum(n_hyp - n_ref, 0).sum()) * step
    confusion = float((np.minimum(n_ref, n_hyp) - right).sum()) * step
    speech = float(n_ref.sum()) * step
    der = (missed + false_alarm + confusion) / speech if speech else 0.0
    return DiarizationError(der, missed, false_alarm, confusion, speech, collar, mapping)
