"""The push-to-talk indicator: a blinking REC, the time recorded, and a level meter; under the chat
for a spoken question, and in the enrollment dialog for a voice being recorded."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import Static

from ..daemon.client import AsyncDaemonClient
from ..errors import AssistantError
from ..records import RecordingState

# The meter spans this range: speech close to a laptop microphone peaks near -20 dBFS, a
# whisper across the desk sits near -50, and below -60 there is nothing worth showing.
METER_FLOOR_DBFS = -60.0
METER_CELLS = 12
# While a question is recorded the indicator redraws and asks the daemon for its level this often.
TICK_SECONDS = 0.25
QUESTION_KEYS = "ctrl+t stops and asks · Escape cancels"


def level_meter(level_dbfs: float | None) -> Text:
    """Cells lit in proportion to the level: green for speech, yellow when loud, red near clipping."""
    if level_dbfs is None:
        return Text("▯" * METER_CELLS + "  waiting for sound", style="dim")
    fraction = (min(0.0, level_dbfs) - METER_FLOOR_DBFS) / -METER_FLOOR_DBFS
    lit = max(0, min(METER_CELLS, round(fraction * METER_CELLS)))
    meter = Text()
    for cell in range(METER_CELLS):
        if cell >= lit:
            meter.append("▯", style="dim")
        else:
            db = METER_FLOOR_DBFS * (1 - (cell + 1) / METER_CELLS)
            meter.append("▮", style="red" if db > -6 else "yellow" if db > -18 else "green")
    meter.append(f" {level_dbfs:4.0f} dB", style="dim")
    return meter


def recording_line(
    elapsed: float, blink_on: bool, state: RecordingState | None, limit_seconds: float, keys: str = QUESTION_KEYS
) -> Text:
    """What the indicator says while something is recorded; `state` is the daemon's last word, `keys`
    the keys that stop and cancel it."""
    whole = int(elapsed)
    line = Text.assemble((f"{'●' if blink_on else '○'} REC {whole // 60}:{whole % 60:02d}", "bold red"), "  ")
    line.append_text(level_meter(state.level_dbfs if state else None))
    if state and state.seconds >= limit_seconds:
        line.append(f"  {limit_seconds:.0f} s limit reached", style="bold yellow")
    line.append(f"  {keys}")
    # One line: on a narrow terminal the key hints give way, never the time or the meter.
    line.no_wrap, line.overflow = True, "ellipsis"
    return line


class RecordingIndicator(Static):
    """One line while something is recorded (above the question box, or in the enrollment dialog);
    hidden otherwise.

    Its owner says when recording starts and stops; the indicator keeps its own clock and asks
    the daemon how loud the room is for the meter, and how long the recording is, posting
    `LimitReached` once the daemon has recorded as long as it allows (`limit`).
    """

    class LimitReached(Message):
        """The daemon has recorded as long as the recording may last."""

    def __init__(
        self, client: AsyncDaemonClient, *, limit_seconds: float, keys: str = QUESTION_KEYS, **kwargs: Any
    ) -> None:
        super().__init__("", **kwargs)
        self.client = client
        self.limit_seconds = limit_seconds
        self.keys = keys
        self.since: float | None = None  # time.monotonic() when recording started; None when not recording
        # The daemon's last word on the recording (its level and length), polled with each tick.
        self.state: RecordingState | None = None

    def on_mount(self) -> None:
        self.set_interval(TICK_SECONDS, self.tick)

    def start(self) -> None:
        self.since = time.monotonic()
        self.tick()

    def stop(self) -> None:
        self.since = None
        self.tick()

    @property
    def limit(self) -> float:
        """The daemon's limit once it has said it (its config rules), this client's until then."""
        return self.state.limit_seconds if self.state and self.state.limit_seconds else self.limit_seconds

    def tick(self) -> None:
        if self.since is None:
            self.state = None
            self.display = False
            return
        now = time.monotonic()
        self.update(recording_line(now - self.since, int(now * 2) % 2 == 0, self.state, self.limit, self.keys))
        self.display = True
        self.poll_level()

    @work(exclusive=True, group="ptt-level")
    async def poll_level(self) -> None:
        """The level and length the daemon recorded so far, for the next tick's meter."""
        try:
            state = await self.client.recording()
        except AssistantError:
            return  # the status poll reports a lost daemon; the meter just stops moving
        if self.since is not None and state.recording:
            reached = self.state is not None and self.state.seconds >= self.limit
            self.state = state
            if state.seconds >= self.limit and not reached:
                self.post_message(self.LimitReached())
