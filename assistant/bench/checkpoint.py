"""A LoCoMo run's answers, written down as they come, so a stopped run resumes where it stopped.

A full run over the development split takes hours of a two-core machine. Each answer is
appended to a JSON Lines file (the first line says which run it belongs to) and made durable
before the next is asked. A run given the same file again streams every conversation as before
(ingest is cheap and its timings are measured afresh) but takes the answers it finds there
instead of asking again, so only the questions still missing cost LLM time.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TextIO, TypeVar

from ..errors import InputError

# /2: `full` reads the model's trained context (it was a 4k window, now `recent-window`), and
# probes no longer count as uses unless the run says so; answers from /1 files measured otherwise.
FORMAT = "assistant-bench-locomo-checkpoint/2"
_EARLIER = ("assistant-bench-locomo-checkpoint/1",)
ProbeKey = tuple[str, str, int, str]  # system, conversation, question number, probe


class Answered(Protocol):
    """What the log needs of an answer record (the benchmark's `ProbeResult`, a dataclass)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    system: str
    conversation: str
    number: int
    probe: str


R = TypeVar("R", bound=Answered)


def key_of(result: Answered) -> ProbeKey:
    return (result.system, result.conversation, result.number, result.probe)


class ProbeLog(Generic[R]):
    """The answers of one run, keyed by (system, conversation, question number, probe).

    `record` is the dataclass each answer is (the benchmark hands in its `ProbeResult`).
    """

    def __init__(self, path: Path, run: dict[str, Any], record: type[R]) -> None:
        self.path = path
        self.run = run
        self.record = record
        self._found: dict[ProbeKey, R] = {}
        if path.exists() and path.stat().st_size > 0:
            self._read()
            self._file: TextIO = path.open("a", encoding="utf-8")
        else:
            try:
                self._file = path.open("w", encoding="utf-8")
            except OSError as exc:
                raise InputError(f"{path}: cannot write the checkpoint ({exc.strerror})") from None
            self._write({"format": FORMAT, "run": run})

    def __len__(self) -> int:
        return len(self._found)

    def get(self, key: ProbeKey) -> R | None:
        return self._found.get(key)

    def add(self, result: R) -> None:
        self._found[key_of(result)] = result
        self._write(dataclasses.asdict(result))

    def close(self) -> None:
        self._file.close()

    def _write(self, row: dict[str, Any]) -> None:
        self._file.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def _read(self) -> None:
        lines = self.path.read_text(encoding="utf-8").split("\n")
        # A run killed mid-write leaves at most its last line unfinished; that answer is asked again.
        complete = lines[:-1]
        try:
            header = json.loads(complete[0]) if complete else None
        except json.JSONDecodeError:
            header = None
        if isinstance(header, dict) and header.get("format") in _EARLIER:
            raise InputError(
                f"{self.path}:1: a checkpoint of an earlier version of this benchmark ({header['format']}), whose "
                "answers were measured differently; pass another --checkpoint file"
            )
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise InputError(f"{self.path}:1: not a LoCoMo bench checkpoint (expected format {FORMAT!r})")
        theirs = header.get("run", {})
        for name, value in self.run.items():
            if theirs.get(name) != value:
                raise InputError(
                    f"{self.path}:1: this checkpoint belongs to another run ({name} was {theirs.get(name)!r}, "
                    f"now {value!r}); pass the same options, or another --checkpoint file"
                )
        fields = {f.name for f in dataclasses.fields(self.record)}
        # A field added to the record later, with a default, is absent from rows written before it.
        required = {f.name for f in dataclasses.fields(self.record) if f.default is dataclasses.MISSING}
        for number, line in enumerate(complete[1:], start=2):
            try:
                row = json.loads(line)
                wrong = (set(row) - fields) | (required - set(row))
                if wrong:
                    raise ValueError(f"fields {sorted(wrong)} differ from an answer's")
                result = self.record(**row)
            except (json.JSONDecodeError, ValueError, TypeError) as exc:
                raise InputError(f"{self.path}:{number}: not an answer of this benchmark ({exc})") from None
            self._found[key_of(result)] = result
        if lines[-1]:
            # Cut the unfinished line away, so the next answer starts a line of its own.
            with self.path.open("r+", encoding="utf-8") as f:
                f.truncate(len("\n".join(complete).encode("utf-8")) + 1)
