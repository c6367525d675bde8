"""The typed records every stage hands on, from sound to answers.

Data flows one way: the audio stage's `AudioBlock`s and `SpeechSegment`s; transcription's
`Transcript`s of `Word`s; diarization's `Piece`s, attributed to a `Voiceprint`; the memory's
`Utterance`s (said by a `Speaker`), `Block`s out of the sensing buffer, `Triplet`s and `Node`s out
of distillation, `RetrievedPath`s and `RecalledLine`s out of retrieval, and an `Answer` with its
`Evidence`. Each is a small frozen dataclass, never a dict. Every time is seconds since the
epoch (UTC), so records from different segments can be compared and stored without knowing which
segment they came from.

This module imports nothing of the package but `zones`, so any stage, the store and the clients
can share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import tzinfo
from enum import StrEnum

import numpy as np

from .zones import format_time

# --- audio ---------------------------------------------------------------------------------

# Everything after the source runs at the rate webrtcvad, Whisper and the voice encoder share.
SAMPLE_RATE = 16_000


@dataclass(frozen=True)
class AudioBlock:
    """Consecutive samples from a source: int16, mono, SAMPLE_RATE.

    An empty block is a break: the audio stopped at `start` (a microphone was lost), so whatever
    was being said before it has ended.
    """

    samples: np.ndarray
    # Seconds since the epoch of the first sample (a file's blocks count from its start time).
    start: float

    @property
    def duration(self) -> float:
        return len(self.samples) / SAMPLE_RATE


@dataclass(frozen=True)
class SpeechSegment:
    """A stretch of audio the voice activity detector judged to be speech: float32 in [-1, 1]."""

    samples: np.ndarray
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


# --- speech ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Word:
    """One recognised word. `text` keeps Whisper's leading space and punctuation, so joining words gives the text."""

    text: str
    start: float
    end: float
    probability: float


def join_words(words: tuple[Word, ...] | list[Word]) -> str:
    return "".join(w.text for w in words).strip()


@dataclass(frozen=True)
class Transcript:
    """One Whisper segment of a speech segment, after the guards against invented text."""

    text: str
    start: float
    end: float
    words: tuple[Word, ...]
    avg_logprob: float
    no_speech_prob: float
    compression_ratio: float


@dataclass(frozen=True)
class Piece:
    """Words one speaker said without interruption: what becomes an utterance of the memory.

    `speaker` is the diarizer's id for the voice; `name` the name it was enrolled under, if any,
    at the time the piece was attributed. `similarity` is the cosine between the piece's voice
    and the speaker's centroid when it was matched (1.0 for the piece that created the speaker).
    `embedding` is the unit voice embedding of the stretch of speech it was attributed from
    (shared by the pieces of one stretch), which the session's re-clustering reads again later.
    """

    speaker: str
    name: str | None
    text: str
    start: float
    end: float
    words: tuple[Word, ...]
    similarity: float
    embedding: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        return self.name or self.speaker


@dataclass(frozen=True, eq=False)
class Voiceprint:
    """A voice the diarizer knows: a unit-length centroid of its speech embeddings and how much speech built it.

    This is the whole of the diarizer's state per voice. `id` is the diarizer's ("S3" for a voice
    first heard in this process) or a store `Speaker`'s id as a string; the store keeps the
    centroid as that speaker's `voice`.
    """

    id: str
    name: str | None
    centroid: np.ndarray  # float32, shape (the speaker model's dim,): 256 for Resemblyzer; L2-normalised
    seconds: float

    @property
    def label(self) -> str:
        return self.name or self.id


# --- memory ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Utterance:
    """One thing one speaker said: the unit the memory ingests.

    `time` is seconds since the epoch (UTC) when the speech started. `id` is set once the
    utterance is in the archive.
    """

    speaker: str
    text: str
    time: float
    id: int | None = None

    @property
    def line(self) -> str:
        """x_t = [s_t; text]: what the embedder and the LLM see."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Triplet:
    """(subject, relation, object) extracted from one utterance of a block."""

    subject: str
    relation: str
    object: str
    utterance_id: int | None = None

    @property
    def statement(self) -> str:
        return " ".join(p for p in (self.subject, self.relation, self.object) if p)


@dataclass(frozen=True)
class Block:
    """A semantic block cut from the sensing buffer, waiting to be distilled (the pending buffer)."""

    id: int
    utterances: tuple[Utterance, ...]
    context: tuple[Utterance, ...] = ()

    @property
    def start(self) -> float:
        return self.utterances[0].time

    @property
    def end(self) -> float:
        return self.utterances[-1].time

    @property
    def speakers(self) -> list[str]:
        return list(dict.fromkeys(u.speaker for u in self.utterances))


class Level(StrEnum):
    SCENE = "scene"
    EVENT = "event"
    AMU = "amu"


@dataclass(frozen=True)
class Node:
    """A node of the scene > event > atom tree as stored."""

    id: int
    level: Level
    parent_id: int | None
    text: str
    tokens: int
    frequency: int
    last_access: float
    created: float
    start_time: float | None = None
    end_time: float | None = None
    relation: str | None = None

    def superseded_by(self, text: str, relation: str | None, said_at: float | None) -> bool:
        """Whether a statement of this atom's fact, said at `said_at`, should replace its words:
        a later statement carries the current value ("the trip moves to June"), or the unit
        would keep answering with a superseded one.

        A bare mention ("Sam mentioned Lisbon") says less than any statement, so it never
        replaces one; neither do the same words, nor an older statement (a block distilled
        late, or the older of two merged units).
        """
        if relation == "mentioned" or said_at is None or " ".join(text.split()) == " ".join(self.text.split()):
            return False
        return self.end_time is None or said_at >= self.end_time


@dataclass(frozen=True)
class Evidence:
    """An utterance an answer rests on: who said what, when."""

    utterance_id: int
    speaker: str
    time: float
    text: str

    def cite(self, zone: tzinfo | None = None) -> str:
        """ "Sam, 2023-08-14 10:00 WEST: “...”", the time in `zone` (None = the system's)."""
        return f"{self.speaker}, {format_time(self.time, zone)}: \u201c{self.text}\u201d"


@dataclass(frozen=True)
class RetrievedPath:
    """One scene > event path with the atomic units chosen under it and the event's sources."""

    scene: Node
    event: Node
    amus: tuple[Node, ...]
    score: float
    sources: tuple[Evidence, ...] = ()


@dataclass(frozen=True)
class RecallFilter:
    """Limits what a question or a search may recall: a time window [since, until) and one speaker.

    A bound is given by the caller (`--since`, `--speaker`) or read from the question's own
    words ("what did Sam say last week?"); `inferred` names the bounds that came from the words.
    """

    since: float | None = None
    until: float | None = None
    speaker: str | None = None
    inferred: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.since is None and self.until is None and self.speaker is None

    def admits(self, speaker: str, time: float) -> bool:
        """Whether a line said by `speaker` at `time` falls inside the filter."""
        if self.speaker is not None and speaker.casefold() != self.speaker.casefold():
            return False
        if self.since is not None and time < self.since:
            return False
        return self.until is None or time < self.until

    def overlaps(self, start: float | None, end: float | None) -> bool:
        """Whether a span (a node's first to last source) can hold a line inside the window."""
        if self.since is not None and end is not None and end < self.since:
            return False
        return self.until is None or start is None or start < self.until


@dataclass(frozen=True)
class RecalledLine:
    """One utterance the memory recalls for a question, with how strongly and why."""

    evidence: Evidence
    score: float
    # Which retrieval arms found it: "lexical", "dense", "tree", "buffer", "neighbour".
    found_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Retrieval:
    """Everything the answer's context is built from."""

    question: str
    paths: tuple[RetrievedPath, ...]
    short_term: tuple[Utterance, ...]
    pending: tuple[Block, ...]
    # The best cosine between the question and anything above: how much the memory has to say.
    relevance: float = 0.0
    # The recalled lines, most relevant first: the pool the answer's context is cut from.
    lines: tuple[RecalledLine, ...] = ()
    # The window and speaker the recall was limited to (given, or read from the question).
    filter: RecallFilter = field(default_factory=RecallFilter)
    # The question's content words, as searched.
    terms: tuple[str, ...] = ()
    # Whether some recalled line shares a content word with the question.
    matched_words: bool = False

    @property
    def empty(self) -> bool:
        return not (self.lines or self.paths or self.short_term or self.pending)


@dataclass(frozen=True)
class Answer:
    text: str
    evidence: tuple[Evidence, ...]
    knows: bool
    context_tokens: int = 0
    retrieval_ms: float = 0.0
    answer_ms: float = 0.0
    retrieval: Retrieval | None = field(default=None, repr=False)
    # Every utterance quoted in the context the model read, cited or not (the benchmark's
    # evidence recall is measured on these).
    context: tuple[Evidence, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class Speaker:
    """Someone the memory knows: named by the user, or labelled ("Speaker 3") when first heard.

    `voice` is the centroid of their `Voiceprint`, which the diarizer matches speech against.
    """

    id: int
    name: str
    utterances: int
    speech_seconds: float
    enrolled: bool = False
    # The centroid of the speaker's voice embeddings; None for speakers only known from text.
    voice: np.ndarray | None = field(default=None, repr=False, compare=False)
