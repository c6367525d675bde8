"""`assistant bench tui`: how soon an answer starts in the TUI, and whether typing stays live meanwhile.

The app is driven by Textual's Pilot (headless) against the running daemon, as a user would: the
question goes in the box, Enter is pressed, and the clock stops when the first token is on the
answer widget. While the answer streams a key is pressed every 50 ms and timed until the input
shows it: the event loop's responsiveness under a streaming answer, Pilot's own overhead included.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .stats import percentile

QUESTIONS = (
    "When do we fly out?",
    "Who is looking after the dog?",
    "How much did finance approve for the trip?",
    "What will Sam send by Thursday?",
    "When do we come back from Lisbon?",
)
KEY_INTERVAL = 0.05
POLL = 0.002


async def _measure(config: Path | None, count: int, progress: Callable[[str], None]) -> dict[str, Any]:
    from ..tui.app import AssistantApp
    from ..tui.chat import AnswerView

    app = AssistantApp(config)
    first_token: list[float] = []
    complete: list[float] = []
    keys: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while not app.connected:
            if time.monotonic() > deadline:
                raise RuntimeError("the TUI did not connect to the daemon within 60 s")
            await pilot.pause(0.1)
        for i in range(count):
            question = QUESTIONS[i % len(QUESTIONS)]
            before = len(app.main.query(AnswerView))
            app.chat.input.value = question
            started = time.perf_counter()
            await pilot.press("enter")
            while len(app.main.query(AnswerView)) == before:
                await asyncio.sleep(POLL)
            answer = app.main.query(AnswerView).last()
            while answer.tokens == 0 and not answer.done:
                await asyncio.sleep(POLL)
            first_token.append(time.perf_counter() - started)
            while not answer.done:
                typed = app.chat.input.value
                pressed = time.perf_counter()
                await pilot.press("x")
                while app.chat.input.value == typed:
                    await asyncio.sleep(POLL)
                keys.append(time.perf_counter() - pressed)
                await asyncio.sleep(KEY_INTERVAL)
            complete.append(time.perf_counter() - started)
            app.chat.input.value = ""
            progress(f"{i + 1}/{count}: first token {first_token[-1] * 1000:.0f} ms, answer {complete[-1]:.2f} s")
    return {
        "questions": count,
        "first_token_ms": _summary(first_token),
        "answer_s": _summary(complete, scale=1),
        "keypress_ms": _summary(keys),
    }


def _summary(values: list[float], *, scale: float = 1000) -> dict[str, float]:
    if not values:
        return {"n": 0}
    scaled = [v * scale for v in values]
    return {
        "n": len(scaled),
        "median": round(statistics.median(scaled), 1),
        "p95": round(percentile(scaled, 0.95), 1),
        "max": round(max(scaled), 1),
    }


def run_tui_latency(config: Path | None, count: int, progress: Callable[[str], None]) -> dict[str, Any]:
    return asyncio.run(_measure(config, count, progress))


def tui_markdown(report: dict[str, Any], command: str) -> str:
    ft, ans, keys = report["first_token_ms"], report["answer_s"], report["keypress_ms"]
    return "\n".join(
        [
            f"`{command}`",
            "",
            "| measure | n | median | p95 | max |",
            "|---|---|---|---|---|",
            f"| Enter → first answer token in the chat (ms) | {ft['n']} | {ft['median']} | {ft['p95']} | {ft['max']} |",
            f"| Enter → whole answer with evidence (s) | {ans['n']} | {ans['median']} | {ans['p95']} | {ans['max']} |",
            f"| keypress → Input while streaming (ms) | {keys.get('n', 0)} | {keys.get('median', '-')} "
            f"| {keys.get('p95', '-')} | {keys.get('max', '-')} |",
            "",
        ]
    )
