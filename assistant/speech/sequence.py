"""Attribution over the sequence: who spoke each line, decided for the window's lines together.

Re-clustering judges each line by its own voice: the cluster whose mean voice is nearest. A short
line's voice is a poor witness (a second of speech gives a noisy embedding), and between two
close voices one line's own voice can point either way. The conversation's order is a second
witness. Lines close together are usually one person going on; a long pause is where another
takes over; and who takes over depends on who spoke (two people alternate).

Here each line's label is the best path of a hidden Markov model over the window, in the order
said (Viterbi):

- a line's evidence for a voice is `concentration` x its cosine to that voice's centroid, scaled
  by how long the line is up to `full_seconds` (a short line's voice counts for less);
- the chance that the speaker changes before a line depends on the gap since the line before,
  and who takes over on who spoke before. Both are counted in the window's own labels (the
  re-clustering's), so the prior fits this room and this conversation rather than a constant
  (VAD pieces of one turn, back-channels and crosstalk differ from room to room).

A line whose own voice is clear keeps it: the transition prior is worth a few cosine points at
most, so it decides only between voices its own audio cannot tell apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..config import SequenceOptions


def _gap_bins(gaps: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    return np.searchsorted(np.asarray(edges, dtype=float), gaps, side="right")


def transition_logs(
    labels: np.ndarray, gaps: np.ndarray, k: int, edges: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Per gap bin, log P(the speaker changes); per (before, after) pair, log P(after | before, a change).

    Counted over consecutive lines of `labels` (gaps[i] is the pause before line i; gaps[0] is
    not used), with one added to every count so that an unseen case is unlikely, not impossible."""
    bins = _gap_bins(gaps, edges)
    changes = np.ones(len(edges) + 1)
    pairs = np.full(len(edges) + 1, 2.0)
    who = np.ones((k, k))
    np.fill_diagonal(who, 0.0)
    for i in range(1, len(labels)):
        b = bins[i]
        pairs[b] += 1
        if labels[i] != labels[i - 1]:
            changes[b] += 1
            who[labels[i - 1], labels[i]] += 1
    with np.errstate(divide="ignore"):
        next_logs = np.log(who / who.sum(axis=1, keepdims=True))
    return np.log(changes / pairs), next_logs


def decode(
    embeddings: np.ndarray,
    seconds: np.ndarray,
    gaps: np.ndarray,
    centroids: np.ndarray,
    labels: np.ndarray,
    options: SequenceOptions,
) -> np.ndarray:
    """The most likely speaker of each line (row of `embeddings`, unit, in the order said), given the
    voices' unit `centroids` and the labels the transition prior is counted in (`labels`)."""
    n, k = len(embeddings), len(centroids)
    if n == 0 or k < 2:
        return labels.copy()
    weight = np.minimum(1.0, np.asarray(seconds, dtype=float) / options.full_seconds)
    evidence = options.concentration * weight[:, None] * (embeddings @ centroids.T)
    change_logs, next_logs = transition_logs(labels, gaps, k, options.gap_edges)
    bins = _gap_bins(gaps, options.gap_edges)
    stay_logs = np.log1p(-np.exp(change_logs))
    score = evidence[0] - np.log(k)
    back = np.zeros((n, k), dtype=int)
    for i in range(1, n):
        step = next_logs + change_logs[bins[i]]  # [before, after]
        np.fill_diagonal(step, stay_logs[bins[i]])
        total = score[:, None] + step
        back[i] = np.argmax(total, axis=0)
        score = total[back[i], np.arange(k)] + evidence[i]
    path = np.zeros(n, dtype=int)
    path[-1] = int(np.argmax(score))
    for i in range(n - 1, 0, -1):
        path[i - 1] = back[i, path[i]]
    return path
