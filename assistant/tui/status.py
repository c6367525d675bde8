"""The status bar: listening state, lag, the memory budget, models and devices, and the connection."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..records import Status


def budget_text(status: Status) -> str:
    used, total = status.memory.tokens, max(status.memory.token_budget, 1)
    return f"budget {used:,}/{total:,} tok ({100 * used / total:.0f}%)"


def state_label(status: Status) -> tuple[str, str]:
    """What the daemon is doing, and the style that says it at a glance."""
    state = status.state
    if status.paused:
        return "⏸ paused", "bold yellow"
    if state == "quiet hours":
        return "☾ quiet hours", "bold magenta"
    if state == "listening":
        return "● listening", "bold green"
    if state in ("source failed", "source lost"):
        return f"✖ {state}", "bold red"
    return f"○ {state}", "bold"


class StatusBar(Static):
    """One line at the bottom. Fed by the app's status poll; never calls the daemon itself."""

    DEFAULT_CSS = "StatusBar { height: 1; }"

    def show_status(self, status: Status) -> None:
        label, style = state_label(status)
        models = status.models
        device = ",".join(sorted(set(status.devices.values()))) or "?"
        line = Text.assemble(
            (label, style),
            f"  lag {status.lag_seconds:.1f} s  ",
            budget_text(status),
            f"  llm {models.get('llm', '?')} · stt {models.get('stt', '?')} · {device}",
            no_wrap=True,
            overflow="ellipsis",
        )
        self.update(line)
        self.remove_class("-offline")

    def show_offline(self, message: str) -> None:
        self.update(Text(f"✖ {message}", style="bold", no_wrap=True, overflow="ellipsis"))
        self.add_class("-offline")
