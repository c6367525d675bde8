"""Correcting who said what: renaming and merging speakers relabels the past and the memory built on it.

The archive, the sensing buffer and the pending buffer point at speakers by id, so a rename
reaches them at once. What carries the name as text is rewritten in the same transaction: the
tree's nodes (an event summary "Speaker 2 booked the flights" becomes "Alice booked the
flights", with its token cost and vector recomputed, then the budget restored) and the
utterance vectors, which embed "speaker: text".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..embed import TextEncoder
from ..errors import InputError
from ..llm import Tokenizer
from ..records import Level, MergeSuggestion, Node, Speaker, Utterance
from ..store.store import Store

# The largest id SQLite can hold; a larger number names nobody.
MAX_ID = 2**63 - 1
MAX_NAME_CHARS = 100


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
    if len(clean) > MAX_NAME_CHARS:
        raise InputError(f"a speaker's name is at most {MAX_NAME_CHARS} characters; got {len(clean)}")
    return clean


def replace_name(text: str, old: str, new: str) -> str:
    """`old` as a whole name only: renaming "Al" leaves "Alice" alone, "Speaker 1" leaves "Speaker 12"."""
    return re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", lambda _m: new, text)


def relabel_nodes(store: Store, embedder: TextEncoder, tokenizer: Tokenizer, old: str, new: str) -> int:
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


# The label the chain gives a voice nobody has named yet ("Speaker 3").
_AUTOMATIC = re.compile(r"Speaker \d+")


def is_automatic_name(name: str) -> bool:
    """Whether a speaker still has the chain's label rather than a name a person gave it."""
    return _AUTOMATIC.fullmatch(name) is not None


def left_empty(sp: Speaker) -> bool:
    """A speaker the chain labelled, nobody named or enrolled, who holds no utterance: noise to remove."""
    return sp.utterances == 0 and not sp.enrolled and is_automatic_name(sp.name)


def relabel_moved_lines(
    store: Store, embedder: TextEncoder, tokenizer: Tokenizer, moved: Sequence[Utterance], new: str
) -> int:
    """Rewrite, in the nodes that rest on `moved` utterances, who said them; return how many nodes changed.

    Call before the utterances move (their `speaker` is the old name). A node quoting a moved
    line ("Speaker 1: I booked the flights") gets the new name on that line; a node whose every
    line from the old speaker moved (a summary saying "Speaker 1 booked ...") gets the new name
    throughout. A node that also rests on lines the old speaker keeps is left as it is elsewhere.
    """
    moving = {u.id: u for u in moved if u.id is not None}
    node_ids = {nid for nids in store.node_ids_of(moving).values() for nid in nids}
    if not node_ids:
        return 0
    sources = store.sources(node_ids)
    changed: list[tuple[Node, str]] = []
    for node in store.nodes_by_id(sorted(node_ids)):
        text = node.text
        for ev in sources.get(node.id, []):
            u = moving.get(ev.utterance_id)
            if u is None:
                continue
            quoted = f"{u.speaker}: {u.text[:24]}"
            text = text.replace(quoted, f"{new}: {u.text[:24]}")
        old_names = {moving[ev.utterance_id].speaker for ev in sources.get(node.id, []) if ev.utterance_id in moving}
        for old in old_names:
            kept = [ev for ev in sources.get(node.id, []) if ev.speaker == old and ev.utterance_id not in moving]
            if not kept:
                text = replace_name(text, old, new)
        if text != node.text:
            changed.append((node, text))
    if changed:
        vectors = embedder.encode([text for _, text in changed])
        for (node, text), vector in zip(changed, vectors, strict=True):
            store.set_node_text(node.id, text, max(1, tokenizer.count(text)))
            store.set_node_vector(node.id, Level(node.level), vector)
    return len(changed)


def reembed_lines(store: Store, embedder: TextEncoder, utterances: Sequence[Utterance]) -> None:
    """New vectors for utterances whose "speaker: text" line changed."""
    for start in range(0, len(utterances), 256):
        batch = [u for u in utterances[start : start + 256] if u.id is not None]
        for u, vector in zip(batch, embedder.encode([u.line for u in batch]), strict=True):
            assert u.id is not None
            store.set_utterance_vector(u.id, vector)


def reembed_utterances(store: Store, embedder: TextEncoder, speaker_id: int) -> None:
    reembed_lines(store, embedder, store.speaker_utterances(speaker_id))


def merge_suggestions(known: Sequence[Speaker], min_cosine: float) -> list[MergeSuggestion]:
    """Pairs of speakers with learned or enrolled voices at least `min_cosine` alike, most alike first.

    A suggestion only: two people can sound alike to the voice encoder (BENCHMARKS.md, "Voice
    matrix"), so nothing is merged until a person says so."""
    voiced = [sp for sp in known if sp.voice is not None and np.any(sp.voice)]
    out = []
    for i, a in enumerate(voiced):
        for b in voiced[i + 1 :]:
            assert a.voice is not None and b.voice is not None
            cosine = float(np.dot(a.voice, b.voice) / (np.linalg.norm(a.voice) * np.linalg.norm(b.voice)))
            if cosine >= min_cosine:
                keep, other = (a, b) if a.speech_seconds >= b.speech_seconds else (b, a)
                out.append(MergeSuggestion(keep, other, cosine))
    return sorted(out, key=lambda m: -m.cosine)


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
