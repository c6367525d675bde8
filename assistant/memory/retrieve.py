"""Top-down hierarchical retrieval (seed 000 §5.4, §6.1).

Scenes are ranked by cosine to the question; within the top scenes, events; under the top
events, atomic units scored S(o) = cos(q, o) * u_o, kept when cos >= the minimum similarity.
Events and units found directly in their indexes join the candidates too, so a fact filed
under a scene or event whose label does not resemble the question is not lost to the
top-down cut (on LoCoMo conv-26 this raised the evidence recall of the answer's context from
0.26 to 0.39). Every node on a returned path counts as used (f and dt of Eq. 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import RetrievalOptions, UtilityOptions
from ..records import Level, Node, RetrievedPath
from ..store.store import Store
from .budget import utility


@dataclass(frozen=True)
class _Scored:
    node: Node
    cos: float


def _rank(store: Store, level: Level, nodes: list[Node], query: np.ndarray) -> list[_Scored]:
    if not nodes:
        return []
    sims = store.index[level].get([n.id for n in nodes]) @ query
    scored = [_Scored(n, float(s)) for n, s in zip(nodes, sims, strict=False)]
    scored.sort(key=lambda s: s.cos, reverse=True)
    return scored


def retrieve(
    store: Store, query: np.ndarray, options: RetrievalOptions, util: UtilityOptions, now: float
) -> list[RetrievedPath]:
    # Every scene is compared, but in the index: reading every scene's row for each question was
    # the part of recall that grew most with the memory (2.8 -> 4.8 ms from 1,000 to 100,000
    # utterances, BENCHMARKS.md "Scale"). Exact, so the ranking is the one the rows gave.
    top_scenes = store.index[Level.SCENE].search(query, options.top_scenes, exact=True)
    if not top_scenes:
        return []
    events: dict[int, _Scored] = {}
    for scene_id, _ in top_scenes:
        for ev in _rank(store, Level.EVENT, store.children(scene_id), query)[: options.top_events]:
            events[ev.node.id] = ev
    # Events that match the question directly, whatever their scene: an LLM's scene labels are
    # coarse ("Social Chat"), so the scene cut alone drops events the question is about.
    for nid, sim in store.index[Level.EVENT].search(query, options.top_events):
        if nid not in events:
            node = store.node(nid)
            if node is not None:
                events[nid] = _Scored(node, sim)

    # Candidate units: those under the chosen events, plus direct hits in the unit index.
    amu_nodes: dict[int, Node] = {}
    for ev in events.values():
        for child in store.children(ev.node.id):
            amu_nodes[child.id] = child
    for nid, sim in store.index[Level.AMU].search(query, max(options.top_amus * 4, 8)):
        if sim >= options.min_similarity and nid not in amu_nodes:
            node = store.node(nid)
            if node is not None:
                amu_nodes[nid] = node
    amu_scores: list[tuple[float, float, Node]] = []
    for s in _rank(store, Level.AMU, list(amu_nodes.values()), query):
        if s.cos >= options.min_similarity:
            amu_scores.append((s.cos * utility(s.node.frequency, s.node.last_access, now, util), s.cos, s.node))
    amu_scores.sort(key=lambda t: t[0], reverse=True)
    chosen_amus = amu_scores[: options.top_amus]

    # An event's score is its own cosine or that of its best chosen unit, whichever is higher.
    by_event: dict[int, list[tuple[float, Node]]] = {}
    for _, cos, amu in chosen_amus:
        assert amu.parent_id is not None
        by_event.setdefault(amu.parent_id, []).append((cos, amu))
        if amu.parent_id not in events:
            parent = store.node(amu.parent_id)
            if parent is not None:
                events[parent.id] = _Scored(parent, float(store.index[Level.EVENT].get([parent.id])[0] @ query))
    ranked = sorted(
        events.values(),
        key=lambda ev: max([ev.cos] + [c for c, _ in by_event.get(ev.node.id, [])]),
        reverse=True,
    )[: options.max_events]

    paths = []
    for ev in ranked:
        scene = store.node(ev.node.parent_id or -1)
        if scene is None:
            continue
        amus = tuple(a for _, a in by_event.get(ev.node.id, []))
        score = max([ev.cos] + [c for c, _ in by_event.get(ev.node.id, [])])
        paths.append(RetrievedPath(scene=scene, event=ev.node, amus=amus, score=score))
    return paths
