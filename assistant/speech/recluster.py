"""Re-clustering the session: the labels the online pass gave are revised as evidence accumulates.

The online diarizer must label a stretch of speech the moment it is heard, against one global
threshold, and that threshold cannot suit every pair of voices: measured over the voice matrix
(`assistant bench speech --matrix`), whole turns of one synthetic voice score a cosine of 0.93-0.97
with each other, and turns of two different voices 0.67-0.94 depending on the pair. So two close
voices fall into one speaker, and a voice heard at an odd moment can found a second one.

What separates voices is relative: within a session, the turns of one person are closer to
each other than to anyone else's. Every `every_seconds` of new speech, the recent utterances'
voice embeddings (the last `window` of them) are clustered again, agglomeratively, for every
number of speakers from 2 to `max_speakers`, by two linkages: average (cosine distance) and Ward.
In each cut, clusters too small to be a voice (an odd utterance) join the nearest that is one. A
cut is a candidate only where the other linkage makes one that puts at least `min_agreement` of
the utterances alike, and the candidate kept is the one with the best silhouette, if that reaches
`min_silhouette`. When no split holds up, nothing is revised: one voice as far as the clustering
can tell is not evidence enough to fold voices the online pass told apart. Nor is a coarser cut:
a cluster that folds speakers the session holds apart is clustered again by the same test, and
split where its lines split along them (close voices cut best into their groups), a guest matched
online to one of them becoming a part of its own.

Each line's embedding is that of its own audio (`Piece.embedding`), not of the stretch the online
pass matched it with: when two people share one learned voice their stretches merge, and a merged
stretch's voice is neither's.

Utterances too short to embed reliably (`min_seconds`) join the nearest cluster afterwards. Then
every line's cluster is decided again over the window in the order said (`sequence.py`): its own
voice against the pause before it and who spoke before. Each cluster is then matched to the
speaker that already holds most of its speech (a one-to-one assignment), a cluster holding no
one's speech becoming a new speaker, and every utterance whose label changes is reassigned, in
the store and the memory, in one transaction (`Memory.reassign`).

Nothing is revised before the window holds `min_utterances` long-enough utterances: with few,
one voice's lines can fall into two tight groups by chance (measured: a monologue's first eight
lines split four and four at a silhouette of 0.70, above most real splits).

Utterances a person reassigned by hand never move: a person's word outranks the clustering. Nor
do utterances of speakers a person named or enrolled move to a voice nobody vouched for. But a name or
an enrollment vouches for a voice, not for every line the online pass matched to it: a guest who
sounds like someone enrolled is matched to them online, since the match threshold cannot tell
the two apart (measured on the voice matrix with the household enrolled: the trio's guest went to
an enrolled voice). So where such a voice's utterances split into two clusters, the one nearest
the voice as enrolled or learned (its anchor) stays theirs, whatever the speech counts say, and
the other becomes a voice of its own, or goes to the named or enrolled voice whose anchor is
nearest it: the online pass matched some of one enrolled person's lines to another (voice matrix,
the household enrolled: us-m/gb-m 0.876 while lines never moved between them, 0.991 since).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..config import ReclusterOptions, SequenceOptions
from .sequence import decode

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VoiceSample:
    """One filed utterance as the re-clustering sees it."""

    utterance_id: int
    speaker_id: int
    embedding: np.ndarray  # unit length
    seconds: float
    start: float  # when it began (the sequence pass reads the pauses between lines from it)


@dataclass(frozen=True)
class Move:
    """Utterances that belong to another speaker: `speaker_id` None means a voice not known yet."""

    utterance_ids: tuple[int, ...]
    speaker_id: int | None
    centroid: np.ndarray  # unit mean voice of the whole cluster they join
    seconds: float  # speech in that cluster


@dataclass(frozen=True)
class Clustering:
    labels: np.ndarray  # cluster index per sample
    silhouette: float | None  # None for one cluster


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return (v / n).astype(np.float32) if n > 0 else v.astype(np.float32)


def silhouette(distances: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette of a labelling under a precomputed distance matrix (0 for a one-member cluster)."""
    clusters = np.unique(labels)
    scores = np.zeros(len(labels))
    for i in range(len(labels)):
        own = labels == labels[i]
        if own.sum() <= 1:
            continue
        a = distances[i, own].sum() / (own.sum() - 1)
        b = min(distances[i, labels == c].mean() for c in clusters if c != labels[i])
        scores[i] = (b - a) / max(a, b, 1e-9)
    return float(scores.mean())


def _voices(labels: np.ndarray, seconds: np.ndarray, options: ReclusterOptions) -> list[int]:
    """The labels (clusters, or speakers) with enough utterances and speech to be a voice."""
    return [
        int(c)
        for c in np.unique(labels)
        if (mine := labels == c).sum() >= options.min_cluster_utterances
        and float(seconds[mine].sum()) >= options.min_cluster_seconds
    ]


def _fold_outliers(
    labels: np.ndarray, embeddings: np.ndarray, seconds: np.ndarray, options: ReclusterOptions
) -> np.ndarray | None:
    """The labelling with each cluster too small to be a voice joined to the nearest that is one,
    renumbered 0..k-1; None when fewer than two clusters are voices.

    A voice rests on several utterances and enough speech: one odd utterance (a cough, a laugh, two
    voices at once) splits off first and is not a person. Skipping every cut that leaves one would
    also skip the split of two real voices beside it (measured on the voice matrix: two voices of one
    synthesis at two pitches, and a back-channel, were split only beside an odd utterance)."""
    voices = _voices(labels, seconds, options)
    if len(voices) < 2:
        return None
    centroids = np.stack([_unit(embeddings[labels == c].sum(axis=0)) for c in voices])
    nearest = np.argmax(embeddings @ centroids.T, axis=1)
    return np.array([voices.index(c) if c in voices else int(nearest[i]) for i, c in enumerate(labels)])


def _agreement(a: np.ndarray, b: np.ndarray) -> float:
    """The share of samples two labellings put together, under the best one-to-one matching of their labels."""
    from scipy.optimize import linear_sum_assignment

    counts = np.zeros((int(a.max()) + 1, int(b.max()) + 1))
    np.add.at(counts, (a, b), 1)
    rows, cols = linear_sum_assignment(-counts)
    return float(counts[rows, cols].sum() / len(a))


def cluster_voices(embeddings: np.ndarray, seconds: np.ndarray, options: ReclusterOptions) -> Clustering:
    """The best clustering of unit embeddings that two linkages agree on, by silhouette; one cluster
    when none reaches `min_silhouette` or there are too few to tell.

    Average linkage keeps one voice whole but cannot separate two close voices (it cuts off odd
    utterances first); Ward linkage separates them but also cuts one voice in two, at a silhouette
    as high as a real pair's (7 of the voice matrix's 26 single voices at 0.21-0.31, against
    0.24-0.38 for real pairs). A split both find, cut for cut, is a property of the voices rather
    than of one linkage's bias: offline it kept all 26 single voices whole, and the matrix found
    the voices of 12 of 14 sets (BENCHMARKS.md)."""
    from scipy.cluster.hierarchy import fcluster, linkage

    n = len(embeddings)
    one = Clustering(np.zeros(n, dtype=int), None)
    if n < max(3, options.min_utterances):
        return one
    distances = np.clip(1.0 - embeddings @ embeddings.T, 0.0, 2.0)
    np.fill_diagonal(distances, 0.0)
    trees = (
        linkage(embeddings, method="average", metric="cosine"),
        linkage(embeddings.astype(np.float64), method="ward"),
    )
    cuts: list[list[np.ndarray]] = [[], []]
    for tree, found in zip(trees, cuts, strict=True):
        for k in range(2, min(options.max_speakers, n - 1) + 1):
            labels = _fold_outliers(fcluster(tree, k, criterion="maxclust") - 1, embeddings, seconds, options)
            if labels is not None and not any(np.array_equal(labels, f) for f in found):
                found.append(labels)
    best: Clustering | None = None
    for mine, theirs in ((cuts[0], cuts[1]), (cuts[1], cuts[0])):
        for labels in mine:
            if not any(
                other.max() == labels.max() and _agreement(labels, other) >= options.min_agreement for other in theirs
            ):
                continue
            score = silhouette(distances, labels)
            if best is None or score > (best.silhouette or -1.0):
                best = Clustering(labels, score)
    if best is None or (best.silhouette or 0.0) < options.min_silhouette:
        return one
    log.debug(
        "re-clustering: %d voices in %d utterances (silhouette %.3f)", int(best.labels.max()) + 1, n, best.silhouette
    )
    return best


def _nests(inner: np.ndarray, speakers: np.ndarray, held: list[int], options: ReclusterOptions) -> bool:
    """Whether a split runs along the speakers: it parts at least two of the `held` speakers, and
    either puts each speaker's lines together (groups of whole speakers) or each of its parts is
    one speaker's lines (a speaker's lines in two parts: a guest matched to a voice online), all
    but `1 - min_agreement` of the lines."""
    homes = {int(np.bincount(inner[speakers == sp]).argmax()) for sp in held}
    if len(homes) < 2:
        return False
    codes = np.unique(speakers, return_inverse=True)[1]
    whole = sum(int(np.bincount(inner[codes == sp]).max()) for sp in range(int(codes.max()) + 1))
    pure = sum(int(np.bincount(codes[inner == part]).max()) for part in range(int(inner.max()) + 1))
    return max(whole, pure) >= options.min_agreement * len(speakers)


def _keep_told_apart(
    labels: np.ndarray, embeddings: np.ndarray, seconds: np.ndarray, speakers: np.ndarray, options: ReclusterOptions
) -> np.ndarray:
    """`labels` with each cluster that folds voices the session already told apart split again
    where its own lines split along them by the same test (`cluster_voices`, `_nests`), and so on
    inside each part.

    The best silhouette favours the coarsest structure: four voices that are two close pairs cut
    best into the two pairs, so a window that found four voices once folds them back the next
    time (measured on the voice matrix's quartet: four voices at 49 utterances, two at 55).
    Splitting every cluster again by the same test found the four, but also cut one voice in two
    by its speaking rate; here only a fold of voices the session holds apart is looked into, and
    only a split along them is kept. A part that is one speaker's lines beside another's of that
    speaker is how a guest matched online to an enrolled voice shows (the matrix's quartet with
    the household enrolled: the guest's lines went to an enrolled voice, 0.724, found since)."""
    out = labels.copy()
    fresh = int(labels.max()) + 1
    todo = [np.flatnonzero(labels == c) for c in range(int(labels.max()) + 1)]
    while todo:
        members = todo.pop()
        held = _voices(speakers[members], seconds[members], options)
        if len(held) < 2:
            continue
        inner = cluster_voices(embeddings[members], seconds[members], options)
        if inner.silhouette is None or not _nests(inner.labels, speakers[members], held, options):
            continue
        for sub in range(int(inner.labels.max()) + 1):
            part = members[inner.labels == sub]
            if sub > 0:
                out[part] = fresh
                fresh += 1
            todo.append(part)
    return out


def _decode_in_order(
    samples: Sequence[VoiceSample],
    seconds: np.ndarray,
    centroids: np.ndarray,
    labels: np.ndarray,
    options: SequenceOptions,
) -> np.ndarray:
    """`labels` revised over the window's lines in the order said (`sequence.decode`)."""
    order = np.argsort([s.start for s in samples], kind="stable")
    starts = np.array([samples[i].start for i in order])
    ends = starts + seconds[order]
    gaps = np.concatenate([[0.0], starts[1:] - ends[:-1]])
    embeddings = np.stack([samples[i].embedding for i in order]).astype(np.float32)
    decoded = decode(embeddings, seconds[order], gaps, centroids, labels[order], options)
    out = labels.copy()
    out[order] = decoded
    return out


def _match(
    labels: np.ndarray, speakers: Sequence[int], seconds: np.ndarray, k: int, home: Mapping[int, int]
) -> dict[int, int | None]:
    """Cluster -> the speaker holding most of its speech, one-to-one; None for a cluster nobody holds.
    The speakers in `home` already have their cluster (speaker -> cluster) and take no other."""
    from scipy.optimize import linear_sum_assignment

    known = sorted(set(speakers) - set(home))
    free = [c for c in range(k) if c not in home.values()]
    held = np.zeros((k, len(known)))
    for label, sp, s in zip(labels, speakers, seconds, strict=True):
        if sp in known:
            held[label, known.index(sp)] += s
    held = held[free]
    rows, cols = linear_sum_assignment(-held)
    out: dict[int, int | None] = dict.fromkeys(range(k))
    out.update({c: sp for sp, c in home.items()})
    for r, c in zip(rows, cols, strict=True):
        if held[r, c] > 0:
            out[free[int(r)]] = known[c]
    return out


def plan_moves(
    samples: Sequence[VoiceSample],
    options: ReclusterOptions,
    fixed: set[int],
    pinned: frozenset[int] = frozenset(),
    anchors: Mapping[int, np.ndarray] | None = None,
) -> list[Move]:
    """The reassignments re-clustering `samples` calls for. The utterances in `pinned` (a person put
    them where they are) stay put; those of speakers in `fixed` (named or enrolled) move only to a
    new voice or to another fixed speaker anchored there, and only when the speaker's voice in
    `anchors` (unit centroid) is nearer another cluster: without an anchor they stay put."""
    if not samples:
        return []
    long = [i for i, s in enumerate(samples) if s.seconds >= options.min_seconds]
    if len(long) < options.min_utterances:
        return []
    embeddings = np.stack([samples[i].embedding for i in long]).astype(np.float32)
    long_seconds = np.array([samples[i].seconds for i in long])
    clustering = cluster_voices(embeddings, long_seconds, options)
    if clustering.silhouette is None:
        # No split holds up: the window is one voice as far as clustering can tell, which is
        # not evidence enough to fold voices the online pass told apart (a voice heard in a few
        # short turns beside a long monologue is one such case). Nothing is revised.
        return []
    found = _keep_told_apart(
        clustering.labels, embeddings, long_seconds, np.array([samples[i].speaker_id for i in long]), options
    )
    k = int(found.max()) + 1
    seconds_all = np.array([max(s.seconds, 1e-3) for s in samples])
    labels = np.full(len(samples), -1)
    labels[long] = found
    weighted = embeddings * seconds_all[long][:, None]
    centroids = np.stack([_unit(weighted[found == c].sum(axis=0)) for c in range(k)])
    for i, s in enumerate(samples):
        if labels[i] < 0:
            labels[i] = int(np.argmax(centroids @ s.embedding))
    if options.sequence.enabled:
        labels = _decode_in_order(samples, seconds_all, centroids, labels, options.sequence)
    # A named or enrolled voice is where its anchor is, not where most of its speech fell; two in
    # one cluster cannot be told apart by the clustering, and the first keeps it. Its lines in
    # another cluster go to a new voice, or to the voice anchored there: between two voices a
    # person vouched for, the anchors say which cluster is whose, not the online match.
    home: dict[int, int] = {}
    for speaker_id, anchor in (anchors or {}).items():
        if speaker_id in fixed and any(s.speaker_id == speaker_id for s in samples):
            c = int(np.argmax(centroids @ _unit(np.asarray(anchor, dtype=np.float32))))
            if c not in home.values():
                home[speaker_id] = c
    owner = _match(labels, [s.speaker_id for s in samples], seconds_all, k, home)
    every = np.stack([s.embedding for s in samples]) * seconds_all[:, None]
    moves: list[Move] = []
    for c in range(k):
        target = owner[c]
        ids = tuple(
            s.utterance_id
            for i, s in enumerate(samples)
            if labels[i] == c
            and s.speaker_id != target
            and s.utterance_id not in pinned
            and (
                s.speaker_id not in fixed
                or (s.speaker_id in home and home[s.speaker_id] != c and (target is None or home.get(target) == c))
            )
        )
        if not ids:
            continue
        members = labels == c
        centroid = _unit(every[members].sum(axis=0))
        moves.append(Move(ids, target, centroid, float(seconds_all[members].sum())))
    return moves
