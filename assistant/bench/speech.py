"""The speech benchmark (DESIGN.md §8): written conversations, spoken by two synthetic voices with
pauses and overlaps (`voices.py`), heard by the real listening chain, scored against what was said.

Each conversation is listened to twice, each time by a fresh `Memory` in a temporary data dir:

1. as fast as the chain goes (the file read in 250 ms blocks, like `assistant ingest FILE`): word
   error rate, speaker attribution, diarization error rate and the real-time factor of each
   stage come from this pass;
2. its first `realtime_turns` turns paced at wall-clock speed in the audio device's block length
   (like `assistant ingest --realtime`): the delay from the end of each turn's speech to its
   words being searchable comes from this pass. Pacing makes a pass last as long as its audio,
   so it is kept short; its stage timings include the waits and are not reported.

A word counts as searchable once the chain's filing step for the utterance holding it has
returned: `Memory.add` has archived it and put it in the sensing buffer, which `Memory.search`
returns as short-term memory (distillation into the tree comes later and is not waited for).
"""

from __future__ import annotations

import itertools
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import jiwer
import numpy as np

from ..audio.sources import open_source
from ..config import Settings
from ..errors import InputError
from ..listening import Heard, Listener
from ..memory.api import Memory
from ..records import AudioBlock, Piece
from ..speech.diarize import diarizer_from_settings
from ..speech.transcribe import Transcriber, transcriber_from_settings
from ..transcripts import read_conversations
from .host import Machine, machine
from .stats import percentile
from .voices import Line, Pacing, Recording, SpokenTurn, build_recording, check_tools, remove_parts

FORMAT = "assistant-bench-speech/1"
# Forgiveness around reference turn boundaries when scoring DER (NIST md-eval's usual 0.25 s):
# Whisper's word times are only good to a few hundred milliseconds. DER without it is reported too.
COLLAR_SECONDS = 0.25
# The reader appends a photo's caption to its turn; nobody says it aloud.
_PHOTO = re.compile(r"\s*\[shares a photo: [^\]]*\]\s*$")


# --- what is listened to ---------------------------------------------------------------------


@dataclass(frozen=True)
class Script:
    """The turns of one conversation that get spoken."""

    name: str
    lines: tuple[Line, ...]
    start_time: float  # epoch seconds of the conversation's first turn: stamps the recording


@dataclass(frozen=True)
class Prepared:
    script: Script
    recording: Recording
    realtime: Recording | None  # the first realtime_turns turns alone


def read_scripts(data: Path, names: Sequence[str], turns: int) -> list[Script]:
    """The first `turns` spoken turns of each named conversation (all when `names` is empty)."""
    if turns < 2:
        raise InputError(f"--turns must be at least 2 (a dialogue), got {turns}")
    convs = read_conversations(data)
    known = [c.name for c in convs]
    missing = [n for n in names if n not in known]
    if missing:
        raise InputError(f"{data}: no conversation(s) {', '.join(missing)}; it holds {', '.join(known)}")
    scripts = []
    for conv in convs:
        if names and conv.name not in names:
            continue
        lines = [Line(u.speaker, _PHOTO.sub("", u.text)) for u in conv.utterances]
        spoken = [line for line in lines if normalise(line.text)]
        chosen = tuple(spoken[:turns])
        speakers = sorted({line.speaker for line in chosen})
        if len(speakers) < 2:
            who = speakers[0] if speakers else "nobody"
            raise InputError(
                f"{data}: conversation {conv.name} has one speaker ({who}) in its first {len(chosen)} spoken turns; "
                "the speech benchmark needs at least two voices"
            )
        scripts.append(Script(conv.name, chosen, conv.utterances[0].time))
    return scripts


def prepare(
    scripts: Sequence[Script],
    directory: Path,
    *,
    pacing: Pacing,
    seed: int,
    realtime_turns: int,
    progress: Callable[[int], None] | None = None,
) -> list[Prepared]:
    """Speak every script into `directory` (and the real-time prefix beside it); `progress(1)` per line."""
    check_tools()
    out = []
    for script in scripts:
        rec = build_recording(script.lines, directory, name=script.name, pacing=pacing, seed=seed, progress=progress)
        remove_parts(directory, script.name)
        realtime = None
        if realtime_turns > 0:
            # Same seed and name: the same timing as the start of the full recording.
            head = script.lines[:realtime_turns]
            realtime = build_recording(
                head, directory / "realtime", name=script.name, pacing=pacing, seed=seed, progress=progress
            )
            remove_parts(directory / "realtime", script.name)
        out.append(Prepared(script, rec, realtime))
    return out


def count_lines(scripts: Sequence[Script], realtime_turns: int) -> int:
    """Progress units of `prepare`."""
    return sum(len(s.lines) + min(realtime_turns, len(s.lines)) for s in scripts)


# --- metrics ---------------------------------------------------------------------------------


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


# --- listening -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeardPiece:
    """An utterance the chain filed: times are seconds into the recording."""

    start: float
    end: float
    speaker: str  # the store's name for the voice ("Speaker 1")
    text: str
    filed_at: float  # when it became searchable, on the recording's clock (real-time pass)


@dataclass(frozen=True)
class StageSeconds:
    """Seconds each stage took (VAD includes decoding the file), and the audio they covered."""

    audio: float
    vad: float
    stt: float
    diarization: float
    memory: float
    chain: float

    def rtf(self) -> RealTimeFactors:
        a = self.audio or 1.0
        return RealTimeFactors(self.vad / a, self.stt / a, self.diarization / a, self.memory / a, self.chain / a)


@dataclass(frozen=True)
class RealTimeFactors:
    """Seconds of work per second of audio, per stage and for the whole chain."""

    vad: float
    stt: float
    diarization: float
    memory: float
    chain: float


@dataclass(frozen=True)
class ListenPass:
    pieces: tuple[HeardPiece, ...]
    seconds: StageSeconds
    segments: int
    speakers: int  # voices the chain told apart


@dataclass(frozen=True)
class _Filed:
    piece: Piece
    heard: Heard
    at: float  # time.monotonic() once filed


class _Recorder(Listener):
    """The real chain, noting each utterance it files with its time span and the moment it was filed.

    `Heard` carries no end time, and the delay needs the moment each piece became searchable,
    so the pieces are caught as the filing step (`Listener._file`) returns them.
    """

    def __init__(self, memory: Memory, transcriber: Transcriber, settings: Settings) -> None:
        super().__init__(memory, transcriber, diarizer_from_settings(settings))
        self.filed: list[_Filed] = []

    def _file(self, piece: Piece, known: dict[str, int]) -> Heard:
        heard = super()._file(piece, known)
        self.filed.append(_Filed(piece, heard, time.monotonic()))
        return heard


def listen(
    settings: Settings,
    transcriber: Transcriber,
    recording: Recording,
    data_dir: Path,
    *,
    start_time: float,
    realtime: bool,
    on_audio: Callable[[float], None] | None = None,
) -> ListenPass:
    """Run the whole chain on `recording` into a fresh memory at `data_dir`."""
    settings = replace(settings, paths=replace(settings.paths, data_dir=str(data_dir)))
    clock0: float | None = None

    def timed(blocks: Iterable[AudioBlock]) -> Iterator[AudioBlock]:
        nonlocal clock0
        for block in blocks:
            if clock0 is None:
                # A paced source hands a block over once its last sample is "recorded".
                clock0 = time.monotonic() - (block.duration if realtime else 0.0)
            yield block

    with (
        Memory(settings) as memory,
        open_source(recording.path, settings.audio, realtime=realtime, start_time=start_time) as source,
    ):
        listener = _Recorder(memory, transcriber, settings)
        listener.warm_up()
        report = listener.run(timed(source.blocks()), settings, on_audio=on_audio)
        names = {sp.id: sp.name for sp in memory.speakers()}
        # Who said each utterance in the end: the session's re-clustering may have moved it since.
        final = {u.id: u.speaker for u in memory.store.utterances(f.heard.utterance.id for f in listener.filed)}
    origin = clock0 if clock0 is not None else time.monotonic()
    pieces = tuple(
        HeardPiece(
            f.piece.start - start_time,
            f.piece.end - start_time,
            final.get(f.heard.utterance.id) or names.get(f.heard.speaker_id, str(f.heard.speaker_id)),
            f.heard.utterance.text,
            f.at - origin,
        )
        for f in listener.filed
    )
    seconds = StageSeconds(
        report.audio_seconds,
        report.vad_seconds,
        report.stt_seconds,
        report.diarize_seconds,
        report.memory_seconds,
        report.wall_seconds,
    )
    return ListenPass(pieces, seconds, report.segments, len(report.speakers))


# --- scoring one conversation ----------------------------------------------------------------


@dataclass(frozen=True)
class TurnResult:
    index: int
    speaker: str
    start: float
    end: float
    overlapped: bool
    words: int
    recognised: int  # aligned to a hypothesis word
    attributed: int  # recognised and given to the mapped voice
    hypothesis: str  # the aligned hypothesis words


@dataclass(frozen=True)
class TurnDelay:
    index: int
    speaker: str
    end: float  # the turn's last audible sample, seconds into the recording
    searchable: float  # when the last piece holding its words was filed, same clock
    delay: float
    # Seconds from this turn's end to the next turn's start (negative: the next one cut in);
    # None for the last turn. A pause shorter than the VAD's hangover keeps both in one segment.
    pause_after: float | None


@dataclass(frozen=True)
class Delays:
    turns: tuple[TurnDelay, ...]
    missed: int  # turns none of whose words were recognised
    p50: float | None
    p95: float | None


@dataclass(frozen=True)
class ConversationResult:
    name: str
    recording: Recording
    listened: ListenPass
    realtime: ListenPass | None
    errors: WordErrors
    attribution: Attribution
    der: DiarizationError
    der_no_collar: DiarizationError
    turns: tuple[TurnResult, ...]
    delays: Delays | None


@dataclass(frozen=True)
class _Words:
    ref: list[str]
    ref_turn: list[int]  # index into recording.turns
    hyp: list[str]
    hyp_piece: list[int]


def _words(recording: Recording, pieces: Sequence[HeardPiece]) -> _Words:
    w = _Words([], [], [], [])
    for i, turn in enumerate(recording.turns):
        tokens = normalise(turn.text)
        w.ref.extend(tokens)
        w.ref_turn.extend([i] * len(tokens))
    for i, piece in enumerate(pieces):
        tokens = normalise(piece.text)
        w.hyp.extend(tokens)
        w.hyp_piece.extend([i] * len(tokens))
    return w


def reference_spans(turns: Sequence[SpokenTurn]) -> list[Span]:
    return [Span(t.start, t.end, t.speaker) for t in turns]


def hypothesis_spans(pieces: Sequence[HeardPiece]) -> list[Span]:
    return [Span(p.start, p.end, p.speaker) for p in pieces]


def turn_delays(recording: Recording, pieces: Sequence[HeardPiece]) -> Delays:
    """Per turn: from its last audible sample to the filing of the last piece holding its words."""
    w = _words(recording, pieces)
    alignment = align(w.ref, w.hyp)
    holders: dict[int, set[int]] = {}
    for r, h in enumerate(alignment.ref_to_hyp):
        if h is not None:
            holders.setdefault(w.ref_turn[r], set()).add(w.hyp_piece[h])
    out = []
    turns = recording.turns
    for i, turn in enumerate(turns):
        if i in holders:
            searchable = max(pieces[p].filed_at for p in holders[i])
            pause = turns[i + 1].start - turn.end if i + 1 < len(turns) else None
            out.append(TurnDelay(turn.index, turn.speaker, turn.end, searchable, searchable - turn.end, pause))
    values = [d.delay for d in out]
    return Delays(
        tuple(out),
        len(recording.turns) - len(out),
        statistics.median(values) if values else None,
        percentile(values, 0.95) if values else None,
    )


def score(
    name: str,
    recording: Recording,
    listened: ListenPass,
    realtime: ListenPass | None,
    realtime_recording: Recording | None,
) -> ConversationResult:
    pieces = listened.pieces
    w = _words(recording, pieces)
    alignment = align(w.ref, w.hyp)
    ref_speakers = [recording.turns[t].speaker for t in w.ref_turn]
    hyp_speakers = [pieces[p].speaker for p in w.hyp_piece]
    attribution = attribute(ref_speakers, hyp_speakers, alignment.ref_to_hyp)
    mapped = {m.cluster: m.speaker for m in attribution.mapping}
    turns = []
    for i, turn in enumerate(recording.turns):
        rows = [r for r, t in enumerate(w.ref_turn) if t == i]
        hits = [alignment.ref_to_hyp[r] for r in rows if alignment.ref_to_hyp[r] is not None]
        right = sum(1 for h in hits if h is not None and mapped.get(hyp_speakers[h]) == turn.speaker)
        hypothesis = " ".join(w.hyp[h] for h in hits if h is not None)
        turns.append(
            TurnResult(
                turn.index, turn.speaker, turn.start, turn.end, turn.overlapped, len(rows), len(hits), right, hypothesis
            )
        )
    ref_spans, hyp_spans = reference_spans(recording.turns), hypothesis_spans(pieces)
    delays = turn_delays(realtime_recording, realtime.pieces) if realtime and realtime_recording else None
    return ConversationResult(
        name=name,
        recording=recording,
        listened=listened,
        realtime=realtime,
        errors=alignment.errors,
        attribution=attribution,
        der=diarization_error(ref_spans, hyp_spans, collar=COLLAR_SECONDS),
        der_no_collar=diarization_error(ref_spans, hyp_spans),
        turns=tuple(turns),
        delays=delays,
    )


# --- the whole run ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SpeechRun:
    data: str
    stt: str
    distill_mode: str
    turns: int
    overlap: float
    seed: int
    realtime_turns: int
    pacing: Pacing
    hangover: float  # vad.hangover_ms in seconds: the silence that closes a speech segment
    seconds: float
    machine: Machine
    conversations: tuple[ConversationResult, ...]


def bench_settings(settings: Settings, stt: str | None, distill_mode: str) -> Settings:
    """The configured chain, with another speech model and distillation mode if asked."""
    models = replace(settings.models, stt=stt or settings.models.stt)
    memory = replace(settings.memory, distill=replace(settings.memory.distill, mode=distill_mode))
    return replace(settings, models=models, memory=memory)


def listening_seconds(prepared: Sequence[Prepared]) -> float:
    """Progress units of `run_speech`: seconds of audio heard, both passes."""
    return sum(p.recording.duration + (p.realtime.duration if p.realtime else 0.0) for p in prepared)


def run_speech(
    settings: Settings,
    data: Path,
    prepared: Sequence[Prepared],
    *,
    turns: int,
    seed: int,
    realtime_turns: int,
    pacing: Pacing,
    work_dir: Path | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> SpeechRun:
    """Listen to each prepared recording (and its real-time prefix) and score it.

    `settings` is the chain to measure (see `bench_settings`); `progress(seconds, label)` is
    called with the seconds of audio heard since the last call.
    """
    host = machine()
    started = time.perf_counter()
    transcriber = transcriber_from_settings(settings)
    results = []
    with tempfile.TemporaryDirectory(prefix="assistant-bench-speech-") as tmp:
        root = work_dir or Path(tmp)
        for p in prepared:
            name = p.script.name

            def heard(label: str) -> Callable[[float], None]:
                done = 0.0

                def advance(seconds: float) -> None:
                    nonlocal done
                    if progress:
                        progress(seconds - done, label)
                    done = seconds

                return advance

            listened = listen(
                settings,
                transcriber,
                p.recording,
                root / name / "batch",
                start_time=p.script.start_time,
                realtime=False,
                on_audio=heard(f"{name}: listening"),
            )
            realtime = None
            if p.realtime is not None:
                realtime = listen(
                    settings,
                    transcriber,
                    p.realtime,
                    root / name / "realtime",
                    start_time=p.script.start_time,
                    realtime=True,
                    on_audio=heard(f"{name}: real time"),
                )
            results.append(score(name, p.recording, listened, realtime, p.realtime))
    return SpeechRun(
        data=str(data),
        stt=settings.models.stt,
        distill_mode=settings.memory.distill.mode,
        turns=turns,
        overlap=pacing.overlap,
        seed=seed,
        realtime_turns=realtime_turns,
        pacing=pacing,
        hangover=settings.vad.hangover_ms / 1000,
        seconds=time.perf_counter() - started,
        machine=host,
        conversations=tuple(results),
    )


# --- reporting -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Totals:
    """Pooled over conversations: errors over all reference words, time over all audio."""

    audio_seconds: float
    turns: int
    overlapped: int
    wer: float
    attribution: float
    der: float
    der_no_collar: float
    rtf: RealTimeFactors
    delay_p50: float | None
    delay_p95: float | None
    delay_turns: int
    delay_missed: int
    # Split by what follows a turn: a pause of at least the VAD hangover (the segment closes) or
    # not (the turn waits for the next one to end).
    delay_p50_after_pause: float | None
    delay_after_pause_turns: int
    delay_p50_run_on: float | None
    delay_run_on_turns: int


def _pooled_der(ders: Sequence[DiarizationError]) -> float:
    speech = sum(d.speech for d in ders)
    return sum(d.missed + d.false_alarm + d.confusion for d in ders) / speech if speech else 0.0


def totals(run: SpeechRun) -> Totals:
    convs = run.conversations
    ref_words = sum(c.errors.reference_words for c in convs)
    errors = sum(c.errors.substitutions + c.errors.deletions + c.errors.insertions for c in convs)
    aligned = sum(c.attribution.words for c in convs)
    stages = [c.listened.seconds for c in convs]
    seconds = StageSeconds(
        audio=sum(s.audio for s in stages),
        vad=sum(s.vad for s in stages),
        stt=sum(s.stt for s in stages),
        diarization=sum(s.diarization for s in stages),
        memory=sum(s.memory for s in stages),
        chain=sum(s.chain for s in stages),
    )
    timed = [d for c in convs if c.delays for d in c.delays.turns]
    delays = [d.delay for d in timed]
    paused = [d.delay for d in timed if d.pause_after is None or d.pause_after >= run.hangover]
    run_on = [d.delay for d in timed if d.pause_after is not None and d.pause_after < run.hangover]
    return Totals(
        audio_seconds=seconds.audio,
        turns=sum(len(c.recording.turns) for c in convs),
        overlapped=sum(sum(t.overlapped for t in c.recording.turns) for c in convs),
        wer=errors / ref_words if ref_words else 0.0,
        attribution=sum(c.attribution.correct for c in convs) / aligned if aligned else 0.0,
        der=_pooled_der([c.der for c in convs]),
        der_no_collar=_pooled_der([c.der_no_collar for c in convs]),
        rtf=seconds.rtf(),
        delay_p50=statistics.median(delays) if delays else None,
        delay_p95=percentile(delays, 0.95) if delays else None,
        delay_turns=len(delays),
        delay_missed=sum(c.delays.missed for c in convs if c.delays),
        delay_p50_after_pause=statistics.median(paused) if paused else None,
        delay_after_pause_turns=len(paused),
        delay_p50_run_on=statistics.median(run_on) if run_on else None,
        delay_run_on_turns=len(run_on),
    )


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def _rtf(r: RealTimeFactors) -> dict[str, float | None]:
    return {k: _r(v, 4) for k, v in asdict(r).items()}


def speech_json(run: SpeechRun) -> dict[str, Any]:
    t = totals(run)
    conversations = []
    for c in run.conversations:
        rec = c.recording
        conversations.append(
            {
                "name": c.name,
                "audio_seconds": _r(rec.duration),
                "speech_seconds": _r(sum(x.duration for x in rec.turns)),
                "turns": len(rec.turns),
                "overlapped": sum(x.overlapped for x in rec.turns),
                "silent_lines": list(rec.silent),
                "voices": {cast.speaker: asdict(cast.voice) for cast in rec.cast},
                "word_errors": asdict(c.errors),
                "attribution": asdict(c.attribution),
                "der": asdict(c.der),
                "der_no_collar": asdict(c.der_no_collar),
                "speakers": {"reference": len(rec.cast), "found": c.listened.speakers},
                "segments": c.listened.segments,
                "utterances": len(c.listened.pieces),
                "stage_seconds": asdict(c.listened.seconds),
                "rtf": _rtf(c.listened.seconds.rtf()),
                "realtime": None
                if c.delays is None or c.realtime is None
                else {
                    "audio_seconds": _r(c.realtime.seconds.audio),
                    "turns": len(c.delays.turns) + c.delays.missed,
                    "missed": c.delays.missed,
                    "delay_p50": _r(c.delays.p50),
                    "delay_p95": _r(c.delays.p95),
                    "delays": [asdict(d) for d in c.delays.turns],
                },
                "turn_results": [asdict(x) for x in c.turns],
                "reference": [asdict(x) for x in rec.turns],
                "pieces": [asdict(p) for p in c.listened.pieces],
            }
        )
    return {
        "format": FORMAT,
        "meta": {
            "data": run.data,
            "stt": run.stt,
            "distill_mode": run.distill_mode,
            "turns": run.turns,
            "overlap": run.overlap,
            "seed": run.seed,
            "realtime_turns": run.realtime_turns,
            "pacing": asdict(run.pacing),
            "collar": COLLAR_SECONDS,
            "hangover": run.hangover,
            "seconds": _r(run.seconds, 1),
            "date": run.machine.date,
            "machine": run.machine.describe(),
        },
        "overall": {
            "audio_seconds": _r(t.audio_seconds),
            "turns": t.turns,
            "overlapped": t.overlapped,
            "wer": _r(t.wer),
            "attribution": _r(t.attribution),
            "der": _r(t.der),
            "der_no_collar": _r(t.der_no_collar),
            "rtf": _rtf(t.rtf),
            "delay_p50": _r(t.delay_p50),
            "delay_p95": _r(t.delay_p95),
            "delay_turns": t.delay_turns,
            "delay_missed": t.delay_missed,
            "delay_p50_after_pause": _r(t.delay_p50_after_pause),
            "delay_after_pause_turns": t.delay_after_pause_turns,
            "delay_p50_run_on": _r(t.delay_p50_run_on),
            "delay_run_on_turns": t.delay_run_on_turns,
        },
        "conversations": conversations,
    }


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}m{s:02d}s"


def speech_markdown(run: SpeechRun) -> str:
    t = totals(run)
    lines = [
        f"## Speech benchmark ({run.stt}, {run.machine.date})",
        "",
        f"Data {run.data}; the first {run.turns} turns of each conversation, {run.overlap:.0%} of speaker "
        "changes overlapped, "
        f"pauses {run.pacing.min_gap}-{run.pacing.max_gap} s, seed {run.seed}; distillation {run.distill_mode}; "
        f"{run.machine.describe()}; {run.seconds:.0f} s in all.",
        "",
        "| conversation | audio | turns (overlapped) | WER | attribution | DER | DER, no collar "
        "| speakers found | delay p50 | delay p95 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in run.conversations:
        rec = c.recording
        d = c.delays
        lines.append(
            f"| {c.name} | {_minutes(rec.duration)} | {len(rec.turns)} ({sum(x.overlapped for x in rec.turns)}) "
            f"| {_f(c.errors.wer)} | {_f(c.attribution.accuracy)} | {_f(c.der.der)} | {_f(c.der_no_collar.der)} "
            f"| {c.listened.speakers} of {len(rec.cast)} | {_f(d.p50 if d else None, 2)} s "
            f"| {_f(d.p95 if d else None, 2)} s |"
        )
    lines.append(
        f"| **all** | {_minutes(t.audio_seconds)} | {t.turns} ({t.overlapped}) | {_f(t.wer)} | {_f(t.attribution)} "
        f"| {_f(t.der)} | {_f(t.der_no_collar)} | | {_f(t.delay_p50, 2)} s | {_f(t.delay_p95, 2)} s |"
    )
    lines += [
        "",
        "Real-time factor (stage seconds / audio seconds, the unpaced pass):",
        "",
        "| conversation | VAD | speech to text | diarization | memory | whole chain |",
        "|---|---|---|---|---|---|",
    ]
    for c in run.conversations:
        r = c.listened.seconds.rtf()
        lines.append(
            f"| {c.name} | {_f(r.vad, 4)} | {_f(r.stt)} | {_f(r.diarization)} | {_f(r.memory)} | {_f(r.chain)} |"
        )
    r = t.rtf
    lines.append(f"| **all** | {_f(r.vad, 4)} | {_f(r.stt)} | {_f(r.diarization)} | {_f(r.memory)} | {_f(r.chain)} |")
    lines += [
        "",
        f"WER over all reference words; attribution over recognised words after the best voice-to-speaker "
        f"mapping; DER with a {COLLAR_SECONDS} s collar around reference turn edges. Delays: end of a turn's "
        f"speech to its words being searchable, with the first {run.realtime_turns} turns of each conversation "
        f"fed in real time ({t.delay_turns} turns measured, {t.delay_missed} not recognised). Median delay of "
        f"turns followed by a pause of at least the VAD hangover ({run.hangover} s): "
        f"{_f(t.delay_p50_after_pause, 2)} s ({t.delay_after_pause_turns} turns); of turns followed by a shorter "
        f"pause or an overlap, which wait in one segment for the next turn to end: {_f(t.delay_p50_run_on, 2)} s "
        f"({t.delay_run_on_turns} turns).",
    ]
    return "\n".join(lines)
