"""The typed records every stage hands on, from sound to answers.

Data flows one way: the audio stage's `AudioBlock`s and `SpeechSegment`s; transcription's
`Transcript`s of `Word`s; diarization's `Piece`s, attributed to a `Voiceprint`; the memory's
`Utterance`s (said by a `Speaker`), `Block`s out of the sensing buffer, `Triplet`s and `Node`s out
of distillation, `RetrievedPath`s and `RecalledLine`s out of retrieval, and an `Answer` with its
`Evidence`, and a day's `Digest`. Each is a small frozen dataclass, never a dict. Every time is seconds since the
epoch (UTC), so records from different segments can be compared and stored without knowing which
segment they came from.

This module imports nothing of the package but `zones`, so any stage, the store and the clients
can share it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import tzinfo
from enum import StrEnum

import numpy as np

from .errors import InputError
from .wire import LOCAL
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
    `embedding` is the unit voice embedding of the piece's own audio (its words' span), which the
    session's re-clustering reads again later; the speaker was matched on the whole stretch of one
    voice the piece lies in.
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
    # Enrolled from a recording of the person alone: the centroid is theirs for certain, and
    # unattended matches do not move it (a guest who sounds alike would drag it along).
    enrolled: bool = False

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

    @classmethod
    def of(cls, u: Utterance) -> Evidence:
        """The evidence an archived utterance gives (an unsaved one has id 0)."""
        return cls(utterance_id=u.id or 0, speaker=u.speaker, time=u.time, text=u.text)

    def utterance(self) -> Utterance:
        """The archived utterance this evidence quotes."""
        return Utterance(self.speaker, self.text, self.time, self.utterance_id)

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

    def describe(self, zone: tzinfo | None = None) -> str | None:
        """The filter in words: "limited to Sam, from 2026-11-16 00:00 WET, before ... (read from
        the question: since)"; None when nothing limited the recall. Times in `zone` (None = the
        system's)."""
        if self.empty:
            return None
        parts = [self.speaker] if self.speaker else []
        if self.since is not None:
            parts.append(f"from {format_time(self.since, zone)}")
        if self.until is not None:
            parts.append(f"before {format_time(self.until, zone)}")
        read = f" (read from the question: {', '.join(self.inferred)})" if self.inferred else ""
        return "limited to " + ", ".join(parts) + read

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
    # Which retrieval arms found it: "lexical", "dense", "lexical_own", "dense_own" (the lines about
    # the person a question is about), "tree", "buffer", "neighbour".
    found_by: tuple[str, ...] = ()
    # Held lines this one supersedes (memory/supersede.py: the same fact with an older value),
    # oldest first: recall ranks them here, behind their successor, rather than as lines of their own.
    history: tuple[Evidence, ...] = ()


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
    # The window (given, or read from the question) and the speaker (given) the recall was limited to.
    filter: RecallFilter = field(default_factory=RecallFilter)
    # The question's content words, as searched.
    terms: tuple[str, ...] = ()
    # Whether some recalled line shares a content word with the question.
    matched_words: bool = False
    # The known speakers the question names.
    names: tuple[str, ...] = ()
    # The reply to each best match (memory/recall.py), offered to the context after the lines.
    replies: tuple[Evidence, ...] = ()
    # The one speaker the question is about, whose own lines recall ranked first (not a filter).
    about: str | None = None
    # The held lines about them by what they say or the talk around them, not by who said them:
    # those that speak of them and the turns after that go on about them (memory/recall.py).
    of_them: frozenset[int] = frozenset()
    # Whether `lines` come from the archive, not the bounded memory: the memory held nothing as
    # relevant (`answer.archive_fallback`, `answer.archive_margin`).
    from_archive: bool = False

    @property
    def empty(self) -> bool:
        return not (self.lines or self.paths or self.short_term or self.pending)


# How every client labels an answer or a search that rests on the archive, not the memory.
FROM_ARCHIVE = "from the archive: the memory kept nothing as close to this, and a later line may have changed it"


@dataclass(frozen=True)
class Answer:
    text: str
    evidence: tuple[Evidence, ...]
    knows: bool
    context_tokens: int = 0
    retrieval_ms: float = 0.0
    answer_ms: float = 0.0
    retrieval: Retrieval | None = field(default=None, repr=False, metadata=LOCAL)
    # Every utterance quoted in the context the model read, cited or not (the benchmark's
    # evidence recall is measured on these).
    context: tuple[Evidence, ...] = field(default=(), repr=False, metadata=LOCAL)
    # What the recall was limited to, the bounds read from the question included. Kept apart
    # from `retrieval`, which stays on this machine: a client of the daemon gets only this.
    filter: RecallFilter = field(default_factory=RecallFilter)
    # Whether the answer rests on archived lines the bounded memory no longer holds
    # (`Retrieval.from_archive`): every client says so beside the answer.
    from_archive: bool = False


@dataclass(frozen=True)
class Speaker:
    """Someone the memory knows: named by the user, or labelled ("Speaker 3") when first heard.

    `voice` is the centroid of their `Voiceprint`, which the diarizer matches speech against.
    `enrolled_seconds` is how much recording of them alone was enrolled. `match_cosine` says how
    surely their recent speech matched their voice: the median cosine between the voice and each
    of their last `match_utterances` utterances heard with a voice (at most 20; None when there are
    none, or no voice); 1 is the same voice, and below `diarization.match_threshold` is no match.
    """

    id: int
    name: str
    utterances: int
    speech_seconds: float
    enrolled: bool = False
    # The centroid of the speaker's voice embeddings; None for speakers only known from text.
    voice: np.ndarray | None = field(default=None, repr=False, compare=False, metadata=LOCAL)
    enrolled_seconds: float = 0.0
    match_cosine: float | None = None
    match_utterances: int = 0


# --- what a user of the memory gets back (the `MemoryService` operations) -----------------------
#
# The daemon's API sends these as JSON, field for field, and its clients decode them into the
# same records, so the CLI, the TUI and the benchmarks read one shape with or without a daemon.


@dataclass(frozen=True)
class MemoryStats:
    tokens: int
    token_budget: int
    scenes: int
    events: int
    amus: int
    utterances: int
    pending_blocks: int
    buffered: int
    database_bytes: int

    @classmethod
    def empty(cls, token_budget: int) -> MemoryStats:
        """A memory with nothing in it yet (no database file either)."""
        zeros = {f.name: 0 for f in dataclasses.fields(cls)}
        return cls(**{**zeros, "token_budget": token_budget})


# The state of a memory no daemon holds (the CLI's, on the database directly).
NOT_RUNNING = "not running"


@dataclass(frozen=True)
class Status:
    """How the listener and the memory stand (`assistant status`, the TUI's status bar)."""

    state: str  # starting | listening | paused | quiet hours | source lost | source ended | source failed | stopping
    paused: bool
    # Nothing heard is waiting to be transcribed or filed (the pending blocks may still wait for the LLM).
    idle: bool
    source: str
    # Why the source delivers nothing now (a microphone unplugged and being reopened), else None.
    source_problem: str | None
    lag_seconds: float
    queued_segments: int
    spooled_segments: int
    queued_seconds: float
    acknowledged: int
    memory: MemoryStats
    speakers: tuple[Speaker, ...]
    models: dict[str, str]
    devices: dict[str, str]
    uptime_seconds: float
    push_to_talk: bool

    @property
    def settled(self) -> bool:
        """The source is done and everything it said is transcribed, filed and distilled."""
        m = self.memory
        return self.state == "source ended" and self.idle and m.pending_blocks == 0 and m.buffered == 0


@dataclass(frozen=True)
class MergeSuggestion:
    """Two speakers whose voices sound alike: perhaps one person the chain heard as two."""

    keep: Speaker  # the one with more speech
    other: Speaker
    cosine: float


@dataclass(frozen=True)
class NameSuggestion:
    """A name an unnamed voice gave itself ("I'm Sam"): offered to the user, never applied unasked."""

    speaker: Speaker
    name: str
    times: int  # how many of its lines introduce it by that name
    example: Evidence  # the first of them


@dataclass(frozen=True)
class Reassignment:
    """What a reassignment did: the speaker the utterances now belong to, which moved, and
    which automatically labelled speakers were left with nothing and removed."""

    speaker: Speaker
    moved: tuple[int, ...]
    removed_speakers: tuple[int, ...]


@dataclass(frozen=True)
class MemoryNode:
    """A node of the memory tree as the user browses it, with its utility now and its children."""

    id: int
    level: Level
    text: str
    tokens: int
    utility: float
    frequency: int
    start_time: float | None
    end_time: float | None
    children: tuple[MemoryNode, ...] = ()

    @classmethod
    def of(cls, node: Node, utility: float = 0.0, children: tuple[MemoryNode, ...] = ()) -> MemoryNode:
        return cls(
            node.id,
            node.level,
            node.text,
            node.tokens,
            round(utility, 4),
            node.frequency,
            node.start_time,
            node.end_time,
            children,
        )


@dataclass(frozen=True)
class SearchLine:
    """A recalled line as a search shows it: the utterance, its score, the arms that found it and
    the older lines it supersedes."""

    utterance_id: int
    speaker: str
    time: float
    text: str
    score: float
    found_by: tuple[str, ...] = ()
    # Held lines that stated an older value of what this line says, oldest first
    # (`RecalledLine.history`): what changed, for a person reading the search.
    history: tuple[Evidence, ...] = ()

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.utterance_id, self.speaker, self.time, self.text)


@dataclass(frozen=True)
class SearchPath:
    """A retrieved scene > event path as a search shows it."""

    score: float
    scene: str
    event: MemoryNode
    units: tuple[MemoryNode, ...]
    sources: tuple[Evidence, ...]


@dataclass(frozen=True)
class SearchResult:
    """What an answer would see, without asking the LLM: the recalled lines, the retrieved paths,
    the recent speech not yet in the tree, the replies to the best matches, and the filter applied."""

    question: str
    relevance: float
    filter: RecallFilter
    lines: tuple[SearchLine, ...]
    paths: tuple[SearchPath, ...]
    short_term: tuple[Evidence, ...]
    replies: tuple[Evidence, ...] = ()
    # The lines come from the archive, not the bounded memory (`Retrieval.from_archive`).
    from_archive: bool = False

    @classmethod
    def of(cls, found: Retrieval) -> SearchResult:
        return cls(
            question=found.question,
            relevance=round(found.relevance, 4),
            filter=found.filter,
            lines=tuple(
                SearchLine(
                    **dataclasses.asdict(line.evidence),
                    score=round(line.score, 4),
                    found_by=line.found_by,
                    history=line.history,
                )
                for line in found.lines
            ),
            paths=tuple(
                SearchPath(
                    score=round(p.score, 4),
                    scene=p.scene.text,
                    event=MemoryNode.of(p.event),
                    units=tuple(MemoryNode.of(a) for a in p.amus),
                    sources=p.sources,
                )
                for p in found.paths
            ),
            short_term=tuple(Evidence(u.id or 0, u.speaker, u.time, u.text) for u in found.short_term),
            replies=found.replies,
            from_archive=found.from_archive,
        )


@dataclass(frozen=True)
class Selection:
    """Which utterances an export covers; the default is everything."""

    since: float | None = None
    until: float | None = None
    speaker: str | None = None

    @property
    def everything(self) -> bool:
        return self.since is None and self.until is None and self.speaker is None

    def describe(self) -> dict[str, float | str]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


# An export of everything (the default selection).
WHOLE_MEMORY = Selection()


@dataclass(frozen=True)
class ImportReport:
    mode: str  # restore | merge
    speakers: int
    utterances: int
    duplicates: int
    nodes: int
    seconds: float


@dataclass(frozen=True)
class ForgetFilter:
    """What to forget: the utterances that match every criterion given (or everything)."""

    speaker: str | int | None = None
    since: float | None = None
    until: float | None = None
    text: str | None = None
    everything: bool = False

    def check(self) -> ForgetFilter:
        criteria = (self.speaker, self.since, self.until, self.text)
        if self.everything and any(c is not None for c in criteria):
            raise InputError("forget everything takes no other filter")
        if not self.everything and all(c is None for c in criteria):
            raise InputError("say what to forget: a speaker, a time range (since/until), words, or everything")
        if self.text is not None and not self.text.strip():
            raise InputError("the words to forget are empty")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise InputError("forget: since must be before until")
        return self


@dataclass(frozen=True)
class ForgetOutcome:
    """What a forget removes (a dry run: what it would remove), in counts and a few examples;
    `database_bytes` is the file's size after a real forget scrubbed it."""

    empty: bool
    utterances: int
    nodes: int
    refiled_events: int
    speakers: int
    examples: tuple[str, ...] = ()
    database_bytes: int | None = None


@dataclass(frozen=True)
class DigestItem:
    """Something a day was about: an event of the memory tree, under its scene, with the lines
    of that day it rests on (oldest first)."""

    text: str
    scene: str
    evidence: tuple[Evidence, ...]
    # The event's node: what `delete_node` takes, and what a memory view can show.
    node_id: int

    @property
    def start(self) -> float:
        return self.evidence[0].time

    @property
    def speakers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.speaker for e in self.evidence))


@dataclass(frozen=True)
class Commitment:
    """Someone said they would do something: "Sam will send the slides by Thursday".

    `who` is the speaker of the line that made it. `evidence` starts with that line; when it
    accepts a request ("Sure, will do."), the request follows it. `due` is the deadline in the
    words that were said ("by Thursday"), `due_date` the day it names (YYYY-MM-DD, in the
    digest's zone) when it names one.
    """

    who: str
    what: str
    due: str | None
    due_date: str | None
    evidence: tuple[Evidence, ...]

    @property
    def time(self) -> float:
        return self.evidence[0].time


@dataclass(frozen=True)
class Digest:
    """One day of the memory (local midnight to midnight in `zone`): what its conversations were
    about, and the commitments made, each citing the lines it rests on.

    `speakers` are those who spoke that day, most lines first. `topics` come from the memory
    tree, so the day's speech not filed into it yet (`unfiled` lines: the sensing buffer and the
    blocks waiting for distillation) is not among them until it is; commitments are read from
    every stored line of the day.
    """

    day: str  # YYYY-MM-DD
    zone: str
    since: float
    until: float
    utterances: int
    speakers: tuple[str, ...]
    topics: tuple[DigestItem, ...]
    commitments: tuple[Commitment, ...]
    unfiled: int = 0


# --- the live transcript, as the daemon streams it ----------------------------------------------


@dataclass(frozen=True)
class Connected:
    """The stream is open; `acknowledged` utterances were filed before it."""

    acknowledged: int


@dataclass(frozen=True)
class HeardLine:
    """An utterance filed in the database, as soon as it is."""

    utterance_id: int | None
    speaker_id: int
    speaker: str
    text: str
    time: float


@dataclass(frozen=True)
class Relabelled:
    """Utterances already filed (and shown) now belong to another speaker: the session's
    re-clustering or a user's correction moved them."""

    utterance_ids: tuple[int, ...]
    speaker_id: int
    speaker: str  # the name they now carry


@dataclass(frozen=True)
class Skipped:
    """A reader too slow for the stream lost this many of its oldest lines."""

    count: int


TranscriptEvent = Connected | HeardLine | Relabelled | Skipped


@dataclass(frozen=True)
class SpokenQuestion:
    """What push-to-talk heard: the question's words, before its answer streams."""

    text: str


@dataclass(frozen=True)
class RecordingState:
    """A push-to-talk recording as the recording indicator shows it; `purpose` is what it is for
    ("question" or "enrollment"), None when nothing is recorded; `limit_seconds` how long the daemon
    lets it run (its own config's, which a client's may differ from)."""

    recording: bool
    seconds: float
    level_dbfs: float | None
    purpose: str | None = None
    limit_seconds: float | None = None
