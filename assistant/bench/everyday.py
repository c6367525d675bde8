"""`assistant bench everyday`: a few days of ordinary talk, and the questions a user would ask about them.

Each conversation goes into a fresh memory, built with the caller's settings in a temporary data
directory, through the public `Memory` API: its lines, with their speakers and times, up to the
moment a question is asked (`add_many`, which files and distills them), then the question with
`now` set to that moment. The reply is scored by what it must and must not say
(`everyday_scoring`). The set lives in tests/fixtures/everyday/ (its questions.yaml says how
it is written).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from ..config import Settings
from ..errors import InputError
from ..memory.api import Memory
from ..records import Answer, Utterance
from .everyday_scoring import Alternative, parse_alternative, score
from .locomo import answer_llm_name, bench_settings

KINDS = ("when_happens", "when_said", "changed_fact", "unanswerable", "unknown_fact", "polite", "non_ascii", "number")
EXPECTS = ("answer", "decline")


@dataclass(frozen=True)
class Line:
    speaker: str
    time: float
    text: str


@dataclass(frozen=True)
class Conversation:
    name: str
    time_zone: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Question:
    id: str
    conv: str
    asked_at: float
    question: str
    kind: str
    expect: str
    must: list[list[Alternative]]
    must_not: list[Alternative]
    # The lines that hold the answer (or, for an unanswerable one, the near miss), each as a piece
    # of its text: with them a wrong reply tells whether recall missed the line or the model
    # misread it.
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class EverydaySet:
    conversations: dict[str, Conversation]
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Result:
    question: Question
    reply: str
    right: bool
    why: str
    # The memory's own reading of its reply (`Answer.knows`), beside the scorer's.
    knows: bool
    seconds: float
    # What the model read: "speaker: text" of each line quoted in its context.
    context: tuple[str, ...]
    # Whether one of its evidence lines was among them; None when the question names none.
    recalled: bool | None = None


def default_set() -> Path:
    """The set this project ships with its tests (a source checkout; a wheel carries no tests)."""
    return Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "everyday"


def _when(raw: object, where: str) -> float:
    """An ISO 8601 time with its offset, as seconds since the epoch; a time without one is refused."""
    try:
        moment = raw if isinstance(raw, datetime) else datetime.fromisoformat(str(raw))
    except ValueError:
        raise InputError(f"{where}: {raw!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise InputError(f"{where}: {raw!r} names no offset; the day it falls on would depend on this machine")
    return moment.timestamp()


def _read_lines(path: Path) -> tuple[Line, ...]:
    lines: list[Line] = []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read it: {exc.strerror}") from None
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(raw)
            line = Line(str(row["speaker"]), _when(row["time"], where), str(row["text"]))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputError(f"{where}: not a line with speaker, time and text ({exc})") from None
        if lines and line.time < lines[-1].time:
            raise InputError(f"{where}: earlier than the line before it")
        lines.append(line)
    return tuple(lines)


def _question(raw: dict[str, Any], number: int, conversations: dict[str, Conversation]) -> Question:
    where = f"question {raw.get('id', number)}"
    try:
        q = Question(
            id=str(raw["id"]),
            conv=str(raw["conv"]),
            asked_at=_when(raw["asked_at"], where),
            question=str(raw["question"]),
            kind=str(raw["kind"]),
            expect=str(raw["expect"]),
            must=[[parse_alternative(a, where) for a in item] for item in raw.get("must") or []],
            must_not=[parse_alternative(a, where) for a in raw.get("must_not") or []],
            evidence=tuple(str(e) for e in raw.get("evidence") or []),
        )
    except (KeyError, TypeError) as exc:
        raise InputError(f"{where}: missing or malformed field ({exc})") from None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if q.conv not in conversations:
        raise InputError(f"{where}: no conversation {q.conv!r}")
    if q.kind not in KINDS:
        raise InputError(f"{where}: kind {q.kind!r} is not one of {', '.join(KINDS)}")
    if q.expect not in EXPECTS:
        raise InputError(f"{where}: expect {q.expect!r} is not one of {', '.join(EXPECTS)}")
    if q.expect == "answer" and not q.must:
        raise InputError(f"{where}: an answer with nothing it must say cannot be wrong")
    for piece in q.evidence:
        holders = [line for line in conversations[q.conv].lines if piece in line.text]
        if len(holders) != 1:
            raise InputError(f"{where}: evidence {piece!r} is in {len(holders)} lines of {q.conv}, not one")
    return q


def load_set(directory: Path) -> EverydaySet:
    """The conversations and questions of `directory`/questions.yaml, checked."""
    path = directory / "questions.yaml"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read it: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not YAML: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("conversations"), dict):
        raise InputError(f"{path}: needs `conversations` and `questions`")
    conversations = {
        str(name): Conversation(str(name), str(spec["time_zone"]), _read_lines(directory / str(spec["file"])))
        for name, spec in doc["conversations"].items()
    }
    questions = tuple(_question(raw, i, conversations) for i, raw in enumerate(doc.get("questions") or [], start=1))
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise InputError(f"{path}: question ids repeat")
    return EverydaySet(conversations, questions)


def _ask(memory: Memory, q: Question) -> tuple[Answer, float]:
    started = time.perf_counter()
    # use=False: a question leaves no mark on what it recalled, so each is answered as if asked
    # alone, whatever the order of the set.
    answer = memory.ask(q.question, now=q.asked_at, use=False)
    return answer, time.perf_counter() - started


def run_conversation(
    settings: Settings,
    conv: Conversation,
    questions: Sequence[Question],
    progress: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Feed `conv` into a fresh memory up to each question's moment, ask it, score the reply."""
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix=f"everyday-{conv.name}-") as tmp:
        own = replace(settings, time_zone=conv.time_zone, paths=replace(settings.paths, data_dir=tmp))
        with Memory(own) as memory:
            fed = 0
            for q in sorted(questions, key=lambda q: q.asked_at):
                said = [line for line in conv.lines[fed:] if line.time <= q.asked_at]
                if said:
                    memory.add_many(Utterance(line.speaker, line.text, line.time) for line in said)
                    fed += len(said)
                answer, seconds = _ask(memory, q)
                verdict = score(answer.text, q.must, q.must_not, q.expect)
                right, why = verdict.right, verdict.why
                if right and q.expect == "answer" and not answer.knows:
                    # The words are right, but the memory took them for a decline: it cites no
                    # evidence, and a client that trusts `knows` shows "not mentioned".
                    right, why = False, "the memory took its own answer for a decline"
                read = tuple(f"{e.speaker}: {e.text}" for e in answer.context)
                recalled = any(piece in line for piece in q.evidence for line in read) if q.evidence else None
                result = Result(q, answer.text, right, why, answer.knows, seconds, read, recalled)
                results.append(result)
                if progress:
                    progress(result)
    return results


@dataclass(frozen=True)
class EverydayRun:
    answer_llm: str
    distill_llm: str
    distill_mode: str
    results: list[Result]
    seconds: float


def run_everyday(
    settings: Settings,
    directory: Path,
    *,
    answer_llm: str | None = None,
    progress: Callable[[Result], None] | None = None,
) -> EverydayRun:
    """Every question of the set at `directory`, answered by `answer_llm` (default: models.llm)."""
    chosen = load_set(directory)
    settings = bench_settings(settings, answer_llm)
    started = time.perf_counter()
    results: list[Result] = []
    for name, conv in chosen.conversations.items():
        questions = [q for q in chosen.questions if q.conv == name]
        if questions:
            results += run_conversation(settings, conv, questions, progress)
    order = {q.id: i for i, q in enumerate(chosen.questions)}
    results.sort(key=lambda r: order[r.question.id])
    return EverydayRun(
        answer_llm_name(settings),
        settings.models.distill_llm or settings.models.llm,
        settings.memory.distill.mode,
        results,
        time.perf_counter() - started,
    )
