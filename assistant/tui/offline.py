"""The screen shown while no daemon answers: what is missing, and an offer to start one."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Static


def start_daemon(config: Path | None, log: Path) -> int:
    """`assistant daemon` in its own session, so it outlives this terminal; returns its pid."""
    args = [sys.executable, "-m", "assistant", *(["--config", str(config)] if config else []), "daemon"]
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return process.pid


class NoDaemonScreen(Screen[None]):
    BINDINGS = [  # noqa: RUF012 (Textual reads it as a class attribute)
        Binding(
            "s", "start", "Start the daemon", id="offline.start", tooltip="Run `assistant daemon` in the background"
        ),
        Binding("q", "app.quit", "Quit", id="offline.quit", tooltip="Leave; nothing is started"),
    ]

    def __init__(self, socket: Path, config: Path | None, log: Path) -> None:
        super().__init__()
        self.socket, self.config, self.log_file = socket, config, log

    def compose(self) -> ComposeResult:
        with Center(), Vertical(id="offline"):
            yield Static(Text("No daemon is running", style="bold"), id="offline-title")
            yield Static(
                Text(
                    f"Nothing answers on {self.socket}.\n\n"
                    "The assistant's daemon listens, remembers and answers; this window is only its client. "
                    "Start it here in the background (it keeps running after you quit), or run "
                    "`assistant daemon` or `systemctl --user start assistant` yourself: this screen "
                    "connects as soon as the daemon answers."
                ),
                id="offline-text",
            )
            yield Static("", id="offline-progress")
            with Horizontal(classes="buttons"):
                yield Button("Start the daemon", variant="primary", id="start")
                yield Button("Quit", id="quit")
        yield Footer()

    @on(Button.Pressed, "#quit")
    def quit(self) -> None:
        self.app.exit()

    @on(Button.Pressed, "#start")
    def action_start(self) -> None:
        self.query_one("#start", Button).disabled = True
        self.launch()

    @work(exclusive=True)
    async def launch(self) -> None:
        progress = self.query_one("#offline-progress", Static)
        try:
            pid = await asyncio.to_thread(start_daemon, self.config, self.log_file)
        except OSError as exc:
            progress.update(Text(f"✖ could not start it: {exc}", style="red"))
            self.query_one("#start", Button).disabled = False
            return
        progress.update(f"Started (pid {pid}); loading models, then it answers… (log: {self.log_file})")
