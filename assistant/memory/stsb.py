"""The short-term sensing buffer (STSB): semantic drift segmentation of the utterance stream.

Seed 000 §5.1 and Algorithm 1 lines 9-12. Two readings of the paper are made explicit here:

* On drift the block is cut *before* the drifting utterance, so it opens the next block
  (Algorithm 1 appends x_t first, which would file a new topic's first line under the old one).
  A drift cut waits until the buffer holds `min_block` utterances; a full buffer is cut after
  the utterance that filled it.
* A silence longer than `max_gap_seconds` between two utterances ends the block before the
  later one, whatever its size: a new session is a new block, never the tail of the last one.
* W_STSB is a leading *context* window: the last W utterances already flushed stay visible,
  as short-term memory for answers and as lead-in when the next block is distilled. They are
  never distilled twice and do not count toward capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import STSBOptions
from ..records import Utterance


@dataclass(frozen=True)
class Cut:
    """A block leaving the buffer, with the context that preceded it."""

    utterances: tuple[Utterance, ...]
    context: tuple[Utterance, ...]


class SensingBuffer:
    def __init__(
        self,
        options: STSBOptions,
        buffer: list[Utterance] | None = None,
        context: list[Utterance] | None = None,
        prev_vector: np.ndarray | None = None,
    ) -> None:
        self.options = options
        self.buffer: list[Utterance] = list(buffer or [])
        self.context: list[Utterance] = list(context or [])
        self.prev_vector = prev_vector

    def push(self, utterance: Utterance, vector: np.ndarray) -> list[Cut]:
        """Add one utterance; return the blocks this closes (zero, one, or two)."""
        cuts: list[Cut] = []
        gap = self.options.max_gap_seconds
        if gap and self.buffer and utterance.time - self.buffer[-1].time > gap:
            cuts.append(self._cut())
        elif self.prev_vector is not None and self.buffer and len(self.buffer) >= self.options.min_block:
            psi = float(np.dot(vector, self.prev_vector))
            if psi < self.options.drift_threshold:
                cuts.append(self._cut())
        self.buffer.append(utterance)
        self.prev_vector = vector
        if len(self.buffer) >= self.options.capacity:
            cuts.append(self._cut())
        return cuts

    def flush(self) -> Cut | None:
        """Cut whatever is buffered (end of a stream, or a long silence)."""
        return self._cut() if self.buffer else None

    def _cut(self) -> Cut:
        cut = Cut(tuple(self.buffer), tuple(self.context))
        window = self.options.leading_window
        self.context = (self.context + self.buffer)[-window:] if window else []
        self.buffer = []
        return cut

    @property
    def visible(self) -> list[Utterance]:
        """What answers see as short-term memory: the leading window, then the open buffer."""
        return self.context + self.buffer
