"""The live transcript pane follows relabelling: lines already shown change speaker in place."""

from __future__ import annotations

import asyncio
from datetime import UTC

from textual.app import App, ComposeResult

from assistant.records import HeardLine
from assistant.tui.transcript import TranscriptPane


class _Host(App[None]):
    def compose(self) -> ComposeResult:
        yield TranscriptPane(zone=UTC, id="t")


def test_relabelled_lines_change_speaker_and_others_stay() -> None:
    async def scenario() -> None:
        app = _Host()
        async with app.run_test(size=(100, 20)) as pilot:
            pane = app.query_one(TranscriptPane)
            for uid, (sid, name) in enumerate([(1, "Speaker 1")] * 3, start=10):
                pane.add(HeardLine(uid, sid, name, f"line {uid}", 0))
            pane.relabel([11, 99], 2, "Speaker 2")  # 99 was never shown: ignored
            await pilot.pause()
            assert [(line.utterance_id, pane.label(line)) for line in pane.lines_kept] == [
                (10, "Speaker 1"),
                (11, "Speaker 2"),
                (12, "Speaker 1"),
            ]
            shown = "\n".join(strip.text for strip in pane.lines)
            assert "Speaker 2: line 11" in shown and "Speaker 1: line 12" in shown
            # A later rename of the new speaker reaches the moved line too.
            pane.rename({2: "Alice"})
            assert pane.label(pane.lines_kept[1]) == "Alice"

    asyncio.run(scenario())
