"""What transcription and diarization hand on: words, transcripts of a segment, attributed pieces, speakers.

Every time is seconds since the epoch, like `SpeechSegment.start`, so records from different
segments can be compared and stored without knowing which segment they came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


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
class Speaker:
    """A known voice: a unit-length centroid of its speech embeddings and how much speech built it.

    This is the whole of the diarizer's state per speaker, so it is what gets persisted and loaded.
    """

    id: str
    name: str | None
    centroid: np.ndarray  # float32, shape (the speaker model's dim,): 256 for Resemblyzer; L2-normalised
    seconds: float

    @property
    def label(self) -> str:
        return self.name or self.id
