"""Scoring one conversation of the speech benchmark: what was heard against what was said,
turn by turn, and how soon each turn's words were searchable."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .speech_listen import HeardPiece, ListenPass
from .speech_metrics import (
    Attribution,
    DiarizationError,
    Span,
    WordErrors,
    align,
    attribute,
    diarization_error,
    normalise,
)
from .stats import percentile
from .synth_conversation import Recording, SpokenTurn

# Forgiveness around reference turn boundaries when scoring DER (NIST md-eval's usual 0.25 s):
# Whisper's word times are only good to a few hundred milliseconds. DER without it is reported too.
COLLAR_SECONDS = 0.25


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


def attribution_of(recording: Recording, pieces: Sequence[HeardPiece], labels: Sequence[str]) -> Attribution:
    """Attribution had each piece been given `labels[i]` instead of its final speaker: how a single
    mechanism (the online pass alone, say) would have scored on the same words."""
    w = _words(recording, pieces)
    alignment = align(w.ref, w.hyp)
    ref_speakers = [recording.turns[t].speaker for t in w.ref_turn]
    return attribute(ref_speakers, [labels[p] for p in w.hyp_piece], alignment.ref_to_hyp)


def oracle_attribution(recording: Recording, pieces: Sequence[HeardPiece]) -> Attribution | None:
    """Attribution if who said each utterance were known for every utterance but the one labelled:
    each utterance goes to the speaker whose other utterances' mean voice is nearest its own.

    It measures the voice embeddings as stored, not the clustering: no clustering of the same
    embeddings can be expected to beat a nearest-voice rule that knows everyone else's speaker, so
    where this is low the embeddings limit attribution (the encoder, or a stored voice that is not
    the utterance's own: a stretch of two people merged online). An utterance's true speaker is the one who said
    most of its recognised words; utterances with no voice embedding keep their true speaker (the
    oracle is, if anything, flattering). None when no utterance has a voice.
    """
    w = _words(recording, pieces)
    alignment = align(w.ref, w.hyp)
    said: list[dict[str, int]] = [{} for _ in pieces]
    for r, h in enumerate(alignment.ref_to_hyp):
        if h is not None:
            who = recording.turns[w.ref_turn[r]].speaker
            piece = said[w.hyp_piece[h]]
            piece[who] = piece.get(who, 0) + 1
    truth = [max(counts, key=lambda k: counts[k]) if counts else None for counts in said]
    voiced = [i for i, p in enumerate(pieces) if p.voice is not None and truth[i] is not None]
    if not voiced:
        return None
    speakers = sorted({truth[i] for i in voiced if truth[i] is not None})
    # Seconds-weighted sums of each speaker's voices, as the re-clustering weights its centroids.
    weight = {i: max(pieces[i].end - pieces[i].start, 1e-3) for i in voiced}
    sums = {s: sum(np.asarray(pieces[i].voice) * weight[i] for i in voiced if truth[i] == s) for s in speakers}
    label: list[str | None] = list(truth)
    for i in voiced:
        own = np.asarray(pieces[i].voice) * weight[i]
        best, best_score = truth[i], -np.inf
        for s in speakers:
            rest = sums[s] - own if s == truth[i] else sums[s]
            norm = float(np.linalg.norm(rest))
            if norm < 1e-6:  # the speaker's only utterance: nothing else to know the voice by
                continue
            score = float(np.dot(rest / norm, pieces[i].voice))
            if score > best_score:
                best, best_score = s, score
        label[i] = best
    hyp_speakers = [label[p] or pieces[p].speaker for p in w.hyp_piece]
    ref_speakers = [recording.turns[t].speaker for t in w.ref_turn]
    return attribute(ref_speakers, hyp_speakers, alignment.ref_to_hyp)
