"""Whether the daemon's language model can be reached, and when to try it again.

With `llm.backend: openai` the model is a server that may be down, starting, or moved. The daemon
never waits on it to hear: listening, transcribing and filing go on. What needs the model waits
instead: `llm` distillation leaves its blocks pending and tries again after a wait that doubles
with each failure, and /status says the model is unreachable, until a probe (or any request)
gets through. Questions are always tried (with the client's own retries): a user asking is the
best moment to find the server back.
"""

from __future__ import annotations

import logging
import time

from ..errors import AssistantError, LLMUnreachable
from ..llm import ChatModel

log = logging.getLogger(__name__)

# The wait after the first failure; it doubles with each further one up to the cap, which is
# also the longest a restarted server waits for its pending blocks to be distilled.
FIRST_WAIT_SECONDS = 2.0
MAX_WAIT_SECONDS = 30.0


class LLMHealth:
    """Probes the model in the background (from the distiller's thread) with backoff."""

    def __init__(self, llm: ChatModel, configured_name: str) -> None:
        self.llm = llm
        self._configured_name = configured_name
        self._wait = 0.0
        self._next_try = 0.0
        self._probed = False

    @property
    def problem(self) -> str | None:
        return self.llm.problem

    @property
    def model(self) -> str:
        """For /status: the served model and its server, or the models.llm entry loaded here."""
        return self.llm.name if self.llm.device == "served" else self._configured_name

    @property
    def device(self) -> str:
        """For /status: cpu or cuda (in this process), served, or why the server is unreachable."""
        problem = self.llm.problem
        return f"unreachable: {problem}" if problem else self.llm.device

    def check(self) -> None:
        """Probe the model when its state is unknown or bad and the wait since the last failure is over."""
        if self._probed and self.llm.problem is None:
            # Known good (perhaps again, after a question got through): the requests themselves
            # notice when it goes away.
            self.succeeded()
            return
        if time.monotonic() < self._next_try:
            return
        try:
            self.llm.probe()
        except LLMUnreachable as exc:
            self.failed(exc)
            return
        except AssistantError as exc:
            # Reachable, but it refused the probe (an unknown model, a wrong key): questions will
            # say so in the same words; distillation is not held back by a probe.
            log.warning("%s", exc)
        self._probed = True
        self.succeeded()

    def failed(self, exc: LLMUnreachable) -> None:
        """The model could not be reached: wait longer before the next try."""
        self._probed = True
        # Said once as a warning; each further failed try only at -v, so a server down all night
        # does not fill the journal.
        level = logging.INFO if self._wait else logging.WARNING
        self._wait = min(MAX_WAIT_SECONDS, self._wait * 2) if self._wait else FIRST_WAIT_SECONDS
        self._next_try = time.monotonic() + self._wait
        log.log(level, "%s; pending distillation waits (next try in %.0f s)", exc, self._wait)

    def succeeded(self) -> None:
        if self._wait:
            log.warning("the language model %s answers again; pending distillation resumes", self.model)
        self._wait = 0.0
        self._next_try = 0.0
