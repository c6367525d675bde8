"""Correcting who said what: renaming and merging speakers relabels the past and the memory built on it.

The archive, the sensing buffer and the pending buffer point at speakers by id, so a rename
reaches them at once. What carries the name as text is rewritten in the same transaction: the
tree's nodes (an event summary "Speaker 2 booked the flights" becomes "Alice booked the
flights", with its token cost and vector recomputed, then the budget restored) and the
utterance vectors, which embed "speaker: text".
"""

from __future__ import annotations

import re

import numpy as np

from ..embed import Embedder
from ..errors import InputError
from ..llm import Tokenizer
from ..store.store import Store
from .records import Level, Speaker

# The largest id SQLite can hold; a larger number names nobody.
MAX_ID = 2**63 - 1


def find(store: Store, key: str | int) -> Speaker:
    """A speaker by id or exact name; a clear error listing the known ones otherwise."""
    if isinstance(key, str) and key.strip().isdigit():
        try:
            key = int(key)  # ValueError for "²" (a digit, not a decimal) and for thousands of digits
        except ValueError:
            raise InputError(f"no speaker {key!r}") from None
    if isinstance(key, int) and not 0 < key <= MAX_ID:
        raise InputError(f"no speaker {key!r}")  # past SQLite's integer range: it would overflow
    found = store.find_speaker(key)
    if found is None:
        known = ", ".join(f"{s.id} {s.name!r}" for s in store.speakers()) or "none yet"
        raise InputError(f"no speaker {key!r} (known: {known})")
    return found


def check_name(name: str) -> str:
    clean = " ".join((name or "").split())
    if not clean:
        raise InputError("a speaker's name cannot be empty")
    if len(clean) > 100:
        raise InputError(f"a speaker's name is at most 100 characters; got {len(clean)}")
    return clean


def replace_name(text: str, old: str, new: str) -> str:
    """`old` as a whole name only: renaming "Al" leaves "Alice" alone, "Speaker 1" leaves "Speaker 12"."""
    return re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", lambda _m: new, text)


def relabel_nodes(store: Store, embedder: Embedder, tokenizer: Tokenizer, old: str, new: str) -> int:
    """Rewrite `old` as `new` in every node's text; return how many nodes changed."""
    rewritten = [(n, replace_name(n.text, old, new)) for n in store.nodes()]
    changed = [(n, text) for n, text in rewritten if text != n.text]
    if not changed:
        return 0
    vectors = embedder.encode([text for _, text in changed])
    for (node, text), vector in zip(changed, vectors, strict=True):
        store.set_node_text(node.id, text, max(1, tokenizer.count(text)))
        store.set_node_vector(node.id, Level(node.level), vector)
    return len(changed)


def reembed_utterances(store: Store, embedder: Embedder, speaker_id: int) -> None:
    utterances = store.speaker_utterances(speaker_id)
    for start in range(0, len(utterances), 256):
        batch = utterances[start : start + 256]
        for u, vector in zip(batch, embedder.encode([u.line for u in batch]), strict=True):
            if u.id is not None:
                store.set_utterance_vector(u.id, vector)


def merged_voice(a: Speaker, b: Speaker) -> tuple[np.ndarray | None, float]:
    """The two centroids weighted by the speech behind each, renormalised."""
    seconds = a.speech_seconds + b.speech_seconds
    voices = [(v, s) for v, s in ((a.voice, a.speech_seconds), (b.voice, b.speech_seconds)) if v is not None]
    if not voices:
        return None, seconds
    total = sum(max(s, 1e-6) for _, s in voices)
    mean = sum(v * (max(s, 1e-6) / total) for v, s in voices)
    norm = float(np.linalg.norm(mean))
    return (mean / norm if norm > 0 else mean).astype(np.float32), seconds
