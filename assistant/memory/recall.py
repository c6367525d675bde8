"""Hybrid recall: the lines the memory holds that best answer a question.

The memory holds a bounded set of lines: those its scene > event > unit tree rests on
(provenance) and those its buffers hold. Three arms rank them, and their ranks are fused
(reciprocal rank fusion, which needs no calibration between BM25 scores and cosines):

* lexical: BM25 over the held lines (SQLite FTS5, porter-stemmed). Names, places and numbers a
  question repeats word for word are what it finds;
* dense: cosine between the question and each held line (an in-process index of their vectors);
* tree: the paper's top-down path (scenes, then events, then units; seed 000 §5.4), each line
  scored by the best node that rests on it. It reaches a line through any node it supports, so
  a fact filed under an event whose summary does not resemble the question is still found.

Utility (Eq. 1) does not rank: an old fact that matches the question well is not buried under a
recent one that was merely asked about before. It only breaks ties, and decides (in the budget)
what the memory keeps. Every arm sees only the lines inside the recall filter (a time window, given
or read from the question, and a speaker the caller gives). A question about one person ("what
did Sam say about the flat?") does not limit the recall to them: the lines about them get two
more arms (lexical and dense, over those lines alone), so they rank first, and any other line
that states the fact still competes. A line is about them when they said it or when it speaks
of them ("Sam's flat is sold"), not when it only addresses them ("Thanks, Sam!",
memory/mentions.py), and when it names no one and the talk just before it was about them
(`mentions.talked_of`). With the speaker's own lines alone, 2 of the 10 facts missed at 100,000
utterances of `bench scale` were lines like "Sofia picked pine boards for the basement", said by
someone else and outranked by Sofia's own lines that do not answer it (the damp in the basement).

A line that a held later line supersedes (the same fact with an older value, memory/supersede.py)
is not ranked on its own: its successor takes its place (or keeps its own, if higher) and the old
line rides along as the successor's `history`, so the current value comes first and the old one
is there to say what changed.

Beside the ranked lines, recall offers the reply to the best matches: the turn just after each
of the few lines the lexical and dense arms rank first (`reply_lines`), searched inside the
window but among anyone's lines, kept when another speaker said it and the filter admits it.
In a conversation the words of a question are often in the turn that asks it ("what are your
plans for the summer?") and the answer in the reply, which shares none of them ("researching
adoption agencies"). A reply that itself asks ("Nice. Where are we going?") comes with the turn
that answers it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..config import RetrievalOptions, UtilityOptions
from ..records import Evidence, RecalledLine, RecallFilter, RetrievedPath, Utterance
from ..store.store import Store
from .budget import utility
from .mentions import speaks_of, talked_of
from .question import QuestionReading, fts_query
from .retrieve import retrieve
from .supersede import is_statement


@dataclass(frozen=True)
class Recall:
    lines: tuple[RecalledLine, ...]
    paths: tuple[RetrievedPath, ...]
    # The best cosine between the question's topic and a recalled line: how much the memory has to say.
    relevance: float
    # Whether any line shares a content word with the question.
    lexical_match: bool
    # The turn just after each best lexical and dense match, where another speaker said it and it
    # is inside the filter (not among `lines`' ranks: a reply shares no words with the question).
    replies: tuple[Evidence, ...] = ()
    # The speaker whose own lines had arms of their own (`_about`).
    about: str | None = None
    # The held lines that speak of them, and the turns that go on about them (`_speaking_of`).
    of_them: frozenset[int] = frozenset()


@dataclass(frozen=True)
class _Fused:
    score: float
    found_by: tuple[str, ...]


def _fuse(arms: dict[str, list[tuple[int, float]]], k0: float) -> dict[int, _Fused]:
    fused: dict[int, float] = {}
    found: dict[int, list[str]] = {}
    for arm, ranked in arms.items():
        for rank, (uid, _) in enumerate(ranked):
            fused[uid] = fused.get(uid, 0.0) + 1.0 / (k0 + rank + 1)
            found.setdefault(uid, []).append(arm)
    return {uid: _Fused(score, tuple(found[uid])) for uid, score in fused.items()}


def _tree_arm(
    store: Store, vector: np.ndarray, window: RecallFilter, options: RetrievalOptions, util: UtilityOptions, now: float
) -> tuple[list[tuple[int, float]], list[RetrievedPath]]:
    paths = retrieve(store, vector, options, util, now)
    nodes = [(p.score, n.id) for p in paths for n in (p.event, *p.amus)]
    sources = store.sources(nid for _, nid in nodes)
    best: dict[int, float] = {}
    for score, nid in nodes:
        for ev in sources.get(nid, []):
            if window.admits(ev.speaker, ev.time) and score > best.get(ev.utterance_id, -2.0):
                best[ev.utterance_id] = score
    held = set(store.held_ids_among(best))
    ranked = sorted(((u, s) for u, s in best.items() if u in held), key=lambda t: -t[1])
    return ranked[: options.max_lines], paths


def _replies(
    store: Store,
    arms: dict[str, list[tuple[int, float]]],
    match: str | None,
    vector: np.ndarray,
    window: RecallFilter,
    n: int,
) -> tuple[Evidence, ...]:
    if n <= 0:
        return ()
    if window.speaker is None:
        hits = [uid for arm in ("lexical", "dense", "lexical_own", "dense_own") for uid, _ in arms.get(arm, [])[:n]]
    else:
        # The turn that asks about the named speaker is usually someone else's: search without them.
        anyone = RecallFilter(window.since, window.until)
        lexical = store.lexical_lines(match, n, anyone) if match is not None and "lexical" in arms else []
        dense = store.dense_lines(vector, n, anyone) if "dense" in arms else []
        hits = [uid for uid, _ in (*lexical, *dense)]
    said = {u.id: u.speaker for u in store.utterances(list(dict.fromkeys(hits)))}
    out: dict[int, Evidence] = {}

    def reply_to(uid: int, speaker: str | None) -> Utterance | None:
        reply = store.adjacent(uid, after=True)
        if (
            reply is not None
            and reply.id is not None
            and reply.speaker != speaker
            and window.admits(reply.speaker, reply.time)
            and store.held_ids_among([reply.id])
        ):
            return reply
        return None

    for uid in dict.fromkeys(hits):
        reply = reply_to(uid, said.get(uid))
        if reply is None or reply.id is None:
            continue
        out[reply.id] = Evidence.of(reply)
        # A reply that asks ("Nice. Where are we going?") is answered by the turn after it, which
        # shares no words with the question either.
        if not is_statement(reply.text):
            answer = reply_to(reply.id, reply.speaker)
            if answer is not None and answer.id is not None:
                out[answer.id] = Evidence.of(answer)
    return tuple(out.values())


_MAX_HOPS = 8  # successors followed from a recalled line (a value changed that many times)


def _latest_successors(store: Store, ids: list[int]) -> dict[int, int]:
    """For each line a held line supersedes, the latest held line down its chain of successors."""
    latest: dict[int, int] = {}
    # Line reached -> the recalled lines that reached it: several old values of one fact lead to
    # the same successor, and each of them must hand its place to it.
    frontier: dict[int, set[int]] = {uid: {uid} for uid in ids}
    for _ in range(_MAX_HOPS):
        found = store.held_successors(frontier)
        if not found:
            break
        reached: dict[int, set[int]] = {}
        for old, news in found.items():
            reached.setdefault(news[-1], set()).update(frontier[old])
        frontier = reached
        for line, starts in frontier.items():
            for start in starts:
                latest[start] = line
    return latest


def current_first(store: Store, lines: list[RecalledLine], window: RecallFilter) -> list[RecalledLine]:
    """`lines` (best first) with each superseded line's place taken by its latest held successor
    inside the window, the old line kept as that successor's history."""
    latest = _latest_successors(store, [r.evidence.utterance_id for r in lines])
    if not latest:
        return lines
    fetched = {u.id: u for u in store.utterances(set(latest.values())) if u.id is not None}
    merged: dict[int, RecalledLine] = {}
    for r in lines:
        successor = fetched.get(latest.get(r.evidence.utterance_id, -1))
        current = r.evidence
        if successor is not None and window.admits(successor.speaker, successor.time):
            current = Evidence.of(successor)
        history = (r.evidence,) if current is not r.evidence else ()
        kept = merged.get(current.utterance_id)
        if kept is None:
            merged[current.utterance_id] = RecalledLine(current, r.score, r.found_by, history)
            continue
        merged[current.utterance_id] = RecalledLine(
            current,
            max(kept.score, r.score),
            tuple(dict.fromkeys(kept.found_by + r.found_by)),
            tuple(sorted(kept.history + history, key=lambda e: (e.time, e.utterance_id))),
        )
    return sorted(merged.values(), key=lambda r: -r.score)


def _about(reading: QuestionReading, window: RecallFilter, options: RetrievalOptions) -> str | None:
    """The one speaker a question is about, where recall should prefer their lines: none when the
    caller already limited the recall to a speaker."""
    if not options.infer_speaker or window.speaker is not None:
        return None
    return reading.speaker


def _speaking_of(
    store: Store, name: str, window: RecallFilter, limit: int, turns: int, conversation_gap: float | None
) -> set[int]:
    """The held lines inside `window` about `name` by what they say or the talk around them: those
    that speak of them, not only to them (among the `limit` that name them best by BM25), and the
    turns after those that go on about them without naming anyone (`mentions.talked_of`: up to
    `turns` turns, in one conversation)."""
    query = fts_query((name,))
    named = [uid for uid, _ in store.lexical_lines(query, limit, window)] if query is not None else []
    lines = {u.id: u for u in store.utterances(named) if u.id is not None and speaks_of(u.text, name)}
    speaking = set(lines)
    if turns <= 0 or not speaking:
        return speaking
    # The turns between a line that names them and a turn after it are that turn's talk before
    # it, and the naming line ends `talked_of`'s walk back at the latest (it speaks of `name`):
    # so one read of the turns after each naming line gives every later turn its talk, where a
    # read of each later turn's own turns before cost a millisecond a question at 100,000 utterances.
    people = store.speaker_names()
    key = name.casefold()
    going_on: set[int] = set()
    for uid, later in store.turns_near(sorted(speaking), turns, after=True).items():
        talk = [lines[uid]]
        for u in later:
            if u.id is not None and u.id not in speaking and u.id not in going_on:
                about = talked_of(u, talk[::-1], people, turns, conversation_gap)
                if key in {p.casefold() for p in about}:
                    going_on.add(u.id)
            talk.append(u)
    going_on = set(store.held_ids_among(sorted(going_on), window))
    return speaking | going_on


def _best_of(a: list[tuple[int, float]], b: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    """Two rankings by one score merged: each line once, at its better score, the k best."""
    best: dict[int, float] = {}
    for uid, score in (*a, *b):
        best[uid] = max(score, best.get(uid, score))
    return sorted(best.items(), key=lambda t: -t[1])[:k]


def recall(
    store: Store,
    reading: QuestionReading,
    vector: np.ndarray,
    window: RecallFilter,
    options: RetrievalOptions,
    util: UtilityOptions,
    now: float,
    *,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    conversation_gap: float | None = None,
) -> Recall:
    """Rank the held lines inside `window` for a question read as `reading`, `vector` its topic's embedding."""
    arms: dict[str, list[tuple[int, float]]] = {}
    match = fts_query(reading.terms)
    if match is not None and options.lexical_k > 0:
        arms["lexical"] = store.lexical_lines(match, options.lexical_k, window)
    if options.dense_k > 0:
        arms["dense"] = store.dense_lines(vector, options.dense_k, window)
    about = _about(reading, window, options)
    of_them: set[int] = set()
    if about is not None:
        # The person a question is about: the lines they said, or that speak of them or go on
        # about them, get arms of their own, so what they said or was said of them ranks first,
        # while any other line that states the fact still competes.
        own = RecallFilter(window.since, window.until, about)
        of_them = _speaking_of(
            store,
            about,
            window,
            4 * max(options.lexical_k, options.dense_k) + 256,
            options.person_turns,
            conversation_gap,
        )
        if match is not None and options.lexical_k > 0:
            said = store.lexical_lines(match, options.lexical_k, own)
            told = [(uid, score) for uid, score in arms.get("lexical", []) if uid in of_them]
            arms["lexical_own"] = _best_of(said, told, options.lexical_k)
        if options.dense_k > 0:
            said = store.dense_lines(vector, options.dense_k, own)
            vectors = store.utterance_vectors(sorted(of_them))
            told = [(uid, float(v @ vector)) for uid, v in vectors.items()]
            arms["dense_own"] = _best_of(said, told, options.dense_k)
    paths: list[RetrievedPath] = []
    if options.tree:
        arms["tree"], paths = _tree_arm(store, vector, window, options, util, now)
    fused = _fuse(arms, options.fusion_k)
    ranked = sorted(fused.items(), key=lambda t: -t[1].score)[: options.max_lines]
    ids = [uid for uid, _ in ranked]
    evidence = {u.id: u for u in store.utterances(ids)}
    # Utility breaks ties: the more a line's nodes were used and the more recently, the earlier.
    nodes = store.node_ids_of(ids)
    node_rows = {n.id: n for n in store.nodes_by_id({nid for ns in nodes.values() for nid in ns})}

    def tie(uid: int) -> float:
        us = [utility(n.frequency, n.last_access, now, util) for nid in nodes.get(uid, []) if (n := node_rows.get(nid))]
        return max(us, default=0.0)

    vectors = store.utterance_vectors(ids)
    lines = []
    for uid, f in ranked:
        u = evidence.get(uid)
        if u is None or u.id is None:
            continue
        lines.append(
            RecalledLine(
                Evidence.of(u),
                f.score + 1e-6 * tie(uid),
                f.found_by,
            )
        )
    lines.sort(key=lambda r: -r.score)
    lines = current_first(store, lines, window)
    cosines = [float(vectors[r.evidence.utterance_id] @ vector) for r in lines if r.evidence.utterance_id in vectors]
    replies = _replies(store, arms, match, vector, window, options.reply_lines)
    # A reply is offered for what it says next to a match; one a held line supersedes would only
    # bring the old value back beside its successor.
    if replies:
        superseded = store.held_successors(r.utterance_id for r in replies)
        replies = tuple(r for r in replies if r.utterance_id not in superseded)
    return Recall(
        tuple(lines),
        tuple(paths),
        max(cosines, default=0.0),
        bool(arms.get("lexical")),
        replies,
        about,
        frozenset(of_them),
    )
