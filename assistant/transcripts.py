"""Read conversations from files: JSON Lines of {speaker, text, time}, or LoCoMo's JSON.

The whole file is read and checked before anything is stored, so a bad row stops the ingest
before it starts, with the file and line named.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import InputError
from .records import Utterance

# Turns inside one LoCoMo session carry no time of their own; space them this far apart so
# order survives and "now" advances within the session.
LOCOMO_TURN_SECONDS = 30.0


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    name: str
    utterances: tuple[Utterance, ...]
    # Parallel to `utterances`: the source's id for each turn (LoCoMo's dia_id), or None.
    refs: tuple[str | None, ...]
    questions: tuple[Question, ...] = field(default=())


def parse_time(value: Any, where: str) -> float:
    """Seconds since the epoch from a number or an ISO-8601 string (naive means UTC)."""
    if isinstance(value, bool):
        raise InputError(f"{where}: 'time' must be seconds since the epoch or an ISO-8601 string, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InputError(f"{where}: 'time' must be finite, got {value!r}")
        return float(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"{where}: 'time' {value!r} is not an ISO-8601 date and time") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return dt.timestamp()
    raise InputError(f"{where}: 'time' must be seconds since the epoch or an ISO-8601 string, got {value!r}")


def parse_locomo_time(value: str, where: str) -> float:
    """LoCoMo session stamps look like '1:56 pm on 8 May, 2023'."""
    try:
        dt = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        raise InputError(f"{where}: session date {value!r} is not like '1:56 pm on 8 May, 2023'") from None
    return dt.replace(tzinfo=UTC).timestamp()


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a conversation file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None


def read_jsonl(path: Path, raw: bytes | None = None) -> Conversation:
    raw = _read_bytes(path) if raw is None else raw
    utterances: list[Utterance] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        where = f"{path}:{number}"
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{where}: not valid UTF-8 (byte {exc.start + 1} of the line)") from None
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(row, dict):
            raise InputError(f"{where}: each line must be an object with speaker, text and time")
        unknown = set(row) - {"speaker", "text", "time"}
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; expected speaker, text, time")
        for key in ("speaker", "text", "time"):
            if key not in row:
                raise InputError(f"{where}: missing {key!r}")
        speaker, body = row["speaker"], row["text"]
        if not isinstance(speaker, str) or not speaker.strip():
            raise InputError(f"{where}: 'speaker' must be a non-empty string")
        if not isinstance(body, str):
            raise InputError(f"{where}: 'text' must be a string")
        if not body.strip():
            raise InputError(f"{where}: 'text' is empty; there is nothing to remember")
        try:
            body.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(f"{where}: 'text' holds an unpaired surrogate escape, not valid Unicode") from None
        utterances.append(Utterance(speaker.strip(), body, parse_time(row["time"], where)))
    if not utterances:
        raise InputError(f"{path}: no utterances in the file")
    return Conversation(path.stem, tuple(utterances), (None,) * len(utterances))


def _locomo_sample(sample: Any, where: str) -> Conversation:
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        raise InputError(f"{where}: a LoCoMo sample needs a 'conversation' object")
    conv = sample["conversation"]
    utterances: list[Utterance] = []
    refs: list[str | None] = []
    n = 1
    while f"session_{n}" in conv:
        stamp = conv.get(f"session_{n}_date_time")
        if not isinstance(stamp, str):
            raise InputError(f"{where}: session_{n} has no session_{n}_date_time")
        start = parse_locomo_time(stamp, f"{where} session_{n}_date_time")
        for i, turn in enumerate(conv[f"session_{n}"]):
            turn_where = f"{where} session_{n}[{i}]"
            if (
                not isinstance(turn, dict)
                or not isinstance(turn.get("speaker"), str)
                or not isinstance(turn.get("text"), str)
            ):
                raise InputError(f"{turn_where}: a turn needs 'speaker' and 'text' strings")
            text = turn["text"].strip()
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]".strip()
            if not text:
                continue
            utterances.append(Utterance(turn["speaker"], text, start + i * LOCOMO_TURN_SECONDS))
            refs.append(turn.get("dia_id"))
        n += 1
    if not utterances:
        raise InputError(f"{where}: no sessions with turns (expected session_1, session_2, ...)")
    questions = []
    for q in sample.get("qa", []) or []:
        answer = q.get("answer", q.get("adversarial_answer", ""))
        questions.append(
            Question(
                str(q.get("question", "")),
                str(answer),
                int(q.get("category", 0)),
                tuple(str(e) for e in q.get("evidence", []) or []),
            )
        )
    return Conversation(str(sample.get("sample_id", where)), tuple(utterances), tuple(refs), tuple(questions))


def read_locomo(path: Path, raw: bytes | None = None) -> list[Conversation]:
    raw = _read_bytes(path) if raw is None else raw
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    samples = data if isinstance(data, list) else [data]
    return [_locomo_sample(s, f"{path} sample {i}") for i, s in enumerate(samples)]


def read_conversations(path: str | Path) -> list[Conversation]:
    """Whatever the file holds: LoCoMo JSON (one sample or a list) or JSON Lines."""
    path = Path(path)
    raw = _read_bytes(path)
    head = raw.lstrip()[:1]
    if head == b"[":
        return read_locomo(path, raw)
    if head == b"{" and b'"conversation"' in raw:
        try:
            whole = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            whole = None  # several lines: JSON Lines
        if isinstance(whole, dict) and "conversation" in whole:
            return read_locomo(path, raw)
    return [read_jsonl(path, raw)]
