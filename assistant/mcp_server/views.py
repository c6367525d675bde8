"""What the tools and resources give back: the records of `assistant.records`, as the model reads them.

Each view is a pydantic model, so a tool publishes its output schema and answers with structured
content (and the same as JSON text for clients that read only text). Times are ISO-8601 in the
configured zone with their offset: what people read, and what `since`/`until` take back as is.
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from pydantic import BaseModel, Field

from ..records import (
    Answer,
    Commitment,
    Digest,
    DigestItem,
    Evidence,
    ForgetOutcome,
    MemoryNode,
    SearchLine,
    SearchResult,
    Speaker,
    Utterance,
)


def iso_time(t: float, zone: tzinfo) -> str:
    """Seconds since the epoch in `zone`, to the second: 2026-11-16T09:02:00+00:00."""
    return datetime.fromtimestamp(t, tz=zone).isoformat(timespec="seconds")


class Line(BaseModel):
    """One utterance: who said what, when."""

    utterance_id: int
    speaker: str
    time: str = Field(description="When it was said: ISO-8601 in the memory's time zone")
    text: str

    @classmethod
    def of(cls, said: Utterance | Evidence, zone: tzinfo) -> Line:
        uid = said.utterance_id if isinstance(said, Evidence) else said.id or 0
        return cls(utterance_id=uid, speaker=said.speaker, time=iso_time(said.time, zone), text=said.text)


class AnswerView(BaseModel):
    answer: str
    knows: bool = Field(description="false when nothing in the memory answers the question")
    citations: list[Line] = Field(description="The utterances the answer rests on")
    limited_to: str | None = Field(
        description="The speaker and time window the recall was limited to (given, or read from the question)"
    )
    from_archive: bool = Field(
        default=False,
        description="true when the answer rests on archived lines the bounded memory no longer holds "
        "(the memory held nothing as relevant); a later line may have changed them",
    )

    @classmethod
    def of(cls, answer: Answer, zone: tzinfo) -> AnswerView:
        return cls(
            answer=answer.text.strip(),
            knows=answer.knows,
            citations=[Line.of(e, zone) for e in answer.evidence],
            limited_to=answer.filter.describe(zone),
            from_archive=answer.from_archive,
        )


class RecalledLine(Line):
    score: float
    found_by: list[str] = Field(
        description="Which retrieval arms found it: lexical, dense, lexical_own and dense_own (the lines about the "
        "person the question is about), tree, buffer, neighbour; archive when the memory held nothing as relevant "
        "and the line comes from the archive"
    )
    earlier: list[Line] = Field(
        default_factory=list,
        description="Older lines this one supersedes (the same fact with an older value), oldest first",
    )

    @classmethod
    def recalled(cls, line: SearchLine, zone: tzinfo) -> RecalledLine:
        return cls(
            **Line.of(line.evidence, zone).model_dump(),
            score=line.score,
            found_by=list(line.found_by),
            earlier=[Line.of(e, zone) for e in line.history],
        )


class SearchView(BaseModel):
    query: str
    limited_to: str | None
    lines: list[RecalledLine] = Field(description="What an answer would see, most relevant first")
    replies: list[Line] = Field(
        default_factory=list,
        description="The turn just after each best match when someone else said it, which an answer sees too "
        "(only the speaker's own, when limited to one)",
    )
    from_archive: bool = Field(
        default=False, description="true when the lines come from the archive: the memory held nothing as relevant"
    )

    @classmethod
    def of(cls, found: SearchResult, zone: tzinfo) -> SearchView:
        return cls(
            query=found.question,
            limited_to=found.filter.describe(zone),
            lines=[RecalledLine.recalled(line, zone) for line in found.lines],
            replies=[Line.of(e, zone) for e in found.replies],
            from_archive=found.from_archive,
        )


class TranscriptView(BaseModel):
    lines: list[Line] = Field(description="Oldest first")

    @classmethod
    def of(cls, said: list[Utterance], zone: tzinfo) -> TranscriptView:
        return cls(lines=[Line.of(u, zone) for u in said])


class SpeakerView(BaseModel):
    id: int
    name: str
    utterances: int
    speech_seconds: float
    enrolled: bool = Field(description="Taught from a recording of that person alone")
    enrolled_seconds: float = Field(description="Seconds of recording the voice was enrolled from")
    match_cosine: float | None = Field(
        description="How surely their recent lines matched their voice: the median cosine of their last "
        "`match_lines` lines heard with a voice (1 = the same voice); null when none"
    )
    match_lines: int = Field(description="How many recent lines `match_cosine` is the median of")

    @classmethod
    def of(cls, speaker: Speaker) -> SpeakerView:
        return cls(
            id=speaker.id,
            name=speaker.name,
            utterances=speaker.utterances,
            speech_seconds=round(speaker.speech_seconds, 1),
            enrolled=speaker.enrolled,
            enrolled_seconds=round(speaker.enrolled_seconds, 1),
            match_cosine=speaker.match_cosine,
            match_lines=speaker.match_utterances,
        )


class SpeakersView(BaseModel):
    speakers: list[SpeakerView]


class ForgetView(BaseModel):
    forgotten: bool = Field(description="true when this call forgot; false for a dry run, which changes nothing")
    utterances: int
    memory_nodes: int
    refiled_events: int = Field(description="Events re-filed from what is left of them")
    voices: int = Field(description="Speakers whose voice goes with their last utterance")
    examples: list[str]
    database_bytes: int | None = Field(description="The database's size after a real forget")
    note: str

    @classmethod
    def of(cls, outcome: ForgetOutcome, *, forgotten: bool, note: str) -> ForgetView:
        return cls(
            forgotten=forgotten,
            utterances=outcome.utterances,
            memory_nodes=outcome.nodes,
            refiled_events=outcome.refiled_events,
            voices=outcome.speakers,
            examples=list(outcome.examples),
            database_bytes=outcome.database_bytes,
            note=note,
        )


class TreeNode(BaseModel):
    id: int
    level: str = Field(description="scene > event > amu (an atomic unit of memory)")
    text: str
    tokens: int
    utility: float
    start: str | None
    end: str | None
    children: list[TreeNode]

    @classmethod
    def of(cls, node: MemoryNode, zone: tzinfo) -> TreeNode:
        return cls(
            id=node.id,
            level=node.level.value,
            text=node.text,
            tokens=node.tokens,
            utility=node.utility,
            start=None if node.start_time is None else iso_time(node.start_time, zone),
            end=None if node.end_time is None else iso_time(node.end_time, zone),
            children=[cls.of(child, zone) for child in node.children],
        )


class TreeView(BaseModel):
    scenes: list[TreeNode]

    @classmethod
    def of(cls, scenes: list[MemoryNode], zone: tzinfo) -> TreeView:
        return cls(scenes=[TreeNode.of(s, zone) for s in scenes])


class TopicView(BaseModel):
    """Something the day was about: an event of the memory, under its scene."""

    about: str
    scene: str
    node_id: int
    lines: list[Line] = Field(description="That day's utterances it rests on, oldest first")

    @classmethod
    def of(cls, item: DigestItem, zone: tzinfo) -> TopicView:
        lines = [Line.of(e, zone) for e in item.evidence]
        return cls(about=item.text, scene=item.scene, node_id=item.node_id, lines=lines)


class CommitmentView(BaseModel):
    """Someone said they would do something."""

    who: str = Field(description="Who said it (the speaker of the first line)")
    what: str
    due: str | None = Field(description="The deadline in the words said (by Thursday), if any")
    due_date: str | None = Field(description="The day that deadline names, YYYY-MM-DD, when it names one")
    lines: list[Line] = Field(description="The line that made it, and the request it accepted, if any")

    @classmethod
    def of(cls, c: Commitment, zone: tzinfo) -> CommitmentView:
        lines = [Line.of(e, zone) for e in c.evidence]
        return cls(who=c.who, what=c.what, due=c.due, due_date=c.due_date, lines=lines)


class DigestView(BaseModel):
    day: str = Field(description="YYYY-MM-DD, midnight to midnight in the memory's time zone")
    speakers: list[str] = Field(description="Who spoke that day, most lines first")
    utterances: int
    topics: list[TopicView]
    commitments: list[CommitmentView]
    unfiled: int = Field(description="That day's lines not filed in the memory yet: their topics come later")

    @classmethod
    def of(cls, digest: Digest, zone: tzinfo) -> DigestView:
        return cls(
            day=digest.day,
            speakers=list(digest.speakers),
            utterances=digest.utterances,
            topics=[TopicView.of(t, zone) for t in digest.topics],
            commitments=[CommitmentView.of(c, zone) for c in digest.commitments],
            unfiled=digest.unfiled,
        )
