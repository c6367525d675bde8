"""A day's digest as a Markdown note for note-taking apps (Obsidian, Logseq, ...): one file a day.

`DIR/YYYY-MM-DD.md` opens with YAML front matter (the date, the zone, who spoke, and how many
lines, topics and commitments), then the topics under their scenes and the commitments as a
task list, each with the lines it rests on quoted. The file is replaced whole (written beside
it, then renamed), so an app watching the folder never reads half a note, and it is private to
its owner, as the memory is.
"""

from __future__ import annotations

import json
from datetime import date, datetime, tzinfo
from pathlib import Path

from ..atomic import atomic_text
from ..errors import InputError
from ..exports import PRIVATE
from ..records import Commitment, Digest, DigestItem, Evidence

# Quoted under a topic; the rest are counted. A topic of a long meeting rests on dozens of lines.
QUOTED_PER_TOPIC = 3


def note_path(directory: Path, digest: Digest) -> Path:
    return directory / f"{digest.day}.md"


def write_note(digest: Digest, directory: Path, zone: tzinfo) -> Path:
    """Write (or replace) the day's note in `directory`, made if missing; returns its path."""
    path = note_path(directory, digest)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with atomic_text(path, permissions=PRIVATE) as fh:
            fh.write(render(digest, zone))
    except OSError as exc:
        raise InputError(f"{path}: cannot write the note: {exc.strerror or exc}") from None
    return path


def render(digest: Digest, zone: tzinfo) -> str:
    """The note's text; times shown in `zone`."""
    # JSON strings and lists are YAML too, and quote whatever a name holds (a colon, a quote).
    front = [
        "---",
        f"date: {digest.day}",
        f"time_zone: {json.dumps(digest.zone)}",
        f"speakers: {json.dumps(list(digest.speakers), ensure_ascii=False)}",
        f"utterances: {digest.utterances}",
        f"topics: {len(digest.topics)}",
        f"commitments: {len(digest.commitments)}",
        "---",
        "",
        f"# {date.fromisoformat(digest.day).strftime('%A %-d %B %Y')}",
        "",
    ]
    body = ["## Topics", ""]
    if not digest.topics:
        body.append("Nothing filed in the memory for this day." if not digest.utterances else "None filed yet.")
    scenes: dict[str, list[DigestItem]] = {}
    for item in digest.topics:
        scenes.setdefault(item.scene or "Conversation", []).append(item)
    for scene, items in scenes.items():
        body += [f"### {_one_line(scene)}", ""]
        for item in items:
            body.append(f"- {_one_line(item.text)}")
            body += [f"  - {_quote(e, zone)}" for e in item.evidence[:QUOTED_PER_TOPIC]]
            if len(item.evidence) > QUOTED_PER_TOPIC:
                body.append(f"  - and {len(item.evidence) - QUOTED_PER_TOPIC} more lines")
        body.append("")
    if body[-1]:
        body.append("")
    body += ["## Commitments", ""]
    if not digest.commitments:
        body.append("None.")
    for c in digest.commitments:
        body.append(f"- [ ] {commitment_line(c, emphasis='**')}")
        body += [f"  - {_quote(e, zone)}" for e in c.evidence]
    if digest.unfiled:
        body += ["", f"_{digest.unfiled} lines of this day were not in the memory tree yet when this was written._"]
    return "\n".join(front + body).rstrip("\n") + "\n"


def commitment_line(c: Commitment, *, emphasis: str = "") -> str:
    """ "Sam will send the slides, by Thursday (2026-11-19)", the name between `emphasis` marks."""
    due = f", {c.due}" if c.due else ""
    if c.due_date:
        due += f" ({c.due_date})"
    return f"{emphasis}{_one_line(c.who)}{emphasis} will {_one_line(c.what)}{due}"


def _quote(e: Evidence, zone: tzinfo) -> str:
    said = datetime.fromtimestamp(e.time, zone).strftime("%H:%M")
    return f"{_one_line(e.speaker)}, {said}: \u201c{_one_line(e.text)}\u201d"


def _one_line(text: str) -> str:
    return " ".join(text.split())
