"""The memory's records as the API sends them: `Speaker`, `TreeNode`, `Retrieval`... to wire models."""

from __future__ import annotations

from typing import Any

from ..memory.api import TreeNode
from ..records import Evidence, RecallFilter, Retrieval, Speaker
from .wire import FilterOut, LineOut, NodeOut, PathOut, SearchOut, SpeakerOut


def speaker_out(sp: Speaker) -> SpeakerOut:
    return SpeakerOut(
        id=sp.id,
        name=sp.name,
        utterances=sp.utterances,
        speech_seconds=round(sp.speech_seconds, 1),
        enrolled=sp.enrolled,
    )


def node_out(t: TreeNode) -> NodeOut:
    n = t.node
    return NodeOut(
        id=n.id,
        level=n.level.value,
        text=n.text,
        tokens=n.tokens,
        utility=round(t.utility, 4),
        frequency=n.frequency,
        start_time=n.start_time,
        end_time=n.end_time,
        children=[node_out(c) for c in t.children],
    )


def evidence_out(e: Evidence) -> dict[str, Any]:
    return {"utterance_id": e.utterance_id, "speaker": e.speaker, "time": e.time, "text": e.text}


def recall_filter(f: RecallFilter) -> FilterOut:
    return FilterOut(since=f.since, until=f.until, speaker=f.speaker, inferred=list(f.inferred))


def search_out(found: Retrieval) -> SearchOut:
    """A retrieval as /search answers it (the CLI's `search` prints the same without a daemon)."""
    return SearchOut(
        question=found.question,
        relevance=round(found.relevance, 4),
        filter=recall_filter(found.filter),
        lines=[
            LineOut(**evidence_out(line.evidence), score=round(line.score, 4), found_by=list(line.found_by))
            for line in found.lines
        ],
        paths=[
            PathOut(
                score=round(p.score, 4),
                scene=p.scene.text,
                event=node_out(TreeNode(p.event, 0.0, ())),
                units=[node_out(TreeNode(a, 0.0, ())) for a in p.amus],
                sources=[evidence_out(e) for e in p.sources],
            )
            for p in found.paths
        ],
        short_term=[
            {"utterance_id": u.id, "speaker": u.speaker, "time": u.time, "text": u.text} for u in found.short_term
        ],
    )
