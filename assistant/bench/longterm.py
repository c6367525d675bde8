"""`assistant bench longterm`: LoCoMo's conversations inside days of other talk, in a memory that holds hours.

A LoCoMo conversation alone leaves about 12,000 tokens in the memory, under the default budget, so
pruning and merging never act in `bench locomo`. Here each conversation's sessions are woven, in
time order by their session dates, between the sessions of the synthetic stream (`synthetic.py`):
other speakers, other topics, facts that drift, over the same weeks. The woven stream is made at
least `stream_tokens` long (10x the memory's budget unless told otherwise), so the budget binds
and most of what was said is gone from the bounded memory by the end.

The LoCoMo harness (`locomo.py`) then streams it into every system and asks each LoCoMo question
after the session that holds its evidence and again at the end, scored as there. At the end of
each stream the synthetic stream's facts are asked too, each system's context checked for the
latest stated value, only a superseded one, or neither (`synthetic.Probe`, as `bench scale` does).

The systems side by side are `prostream` at the budget, `prostream-archive` (the same memory,
falling back to the archive where it holds nothing as relevant: its own system, never folded into
`prostream`'s figures), `rag` over every line (unbounded) and
`rag-budget` (`rag` over the most recent lines that fit the same budget). On a CPU the defaults
are scaled down from the product's: `token_budget` 4,096 and a stream of 10x that (about 41,000
tokens, two thirds of it synthetic around a LoCoMo conversation of the development split).

How the weaving places things: LoCoMo's turns keep their speakers, texts and times exactly (the
harness finds each question's evidence by its `dia_id`). The synthetic stream starts at the first
LoCoMo session and is drawn until the woven stream is long enough; its sessions keep their own
pace inside (turns tens of seconds apart) while the pauses between them are stretched so the
whole spans the LoCoMo conversation's weeks, and a synthetic session that would overlap a LoCoMo
session is moved to after it: one room, one conversation at a time. A synthetic speaker who has
a LoCoMo speaker's name is renamed (in every line and fact) to a name neither stream uses.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import InputError
from ..llm import load_tokenizer
from ..memory.api import PreparedQuestion
from ..models import resolve
from ..records import Utterance
from ..transcripts import LOCOMO_TURN_SECONDS, Conversation
from . import synthetic
from .locomo import LocomoRun, bench_settings, count_steps, run_locomo
from .systems import LONGTERM_SYSTEMS, Context, System

# The memory's budget on a CPU: the product's 32,768 would need a stream of 330,000 tokens.
DEFAULT_BUDGET = 4_096
# The stream is at least this many times the budget unless told otherwise.
STREAM_FACTOR = 10
# A pause this long between two lines starts a new session (as in the synthetic stream), so
# woven sessions are kept at least this far apart.
SESSION_GAP = 1_800.0
HELD = ("latest", "stale", "neither")

_SESSION = re.compile(r"D(\d+):\d+")


@dataclass(frozen=True)
class Woven:
    """One LoCoMo conversation inside the synthetic stream."""

    # The woven stream, named and asked as the LoCoMo conversation: its refs hold LoCoMo's dia_ids
    # on LoCoMo's turns and None on the synthetic ones.
    conversation: Conversation
    # Every fact the synthetic part stated, its `stated_at` the woven stream's position of the
    # line that last stated it.
    facts: tuple[synthetic.Probe, ...]
    locomo_tokens: int
    synthetic_tokens: int
    locomo_sessions: int
    synthetic_sessions: int
    # How much the pauses between synthetic sessions were stretched to span the LoCoMo weeks.
    stretch: float
    renamed: dict[str, str]

    @property
    def tokens(self) -> int:
        return self.locomo_tokens + self.synthetic_tokens


def _locomo_sessions(conv: Conversation) -> list[list[tuple[Utterance, str | None]]]:
    """The conversation's sessions (by their dia_ids' session numbers), each in its turns' order, sorted by start."""
    groups: dict[int, list[tuple[Utterance, str | None]]] = {}
    current = 0
    for u, ref in zip(conv.utterances, conv.refs, strict=True):
        m = _SESSION.fullmatch(ref or "")
        # A turn without an id stays with the turn before it.
        current = int(m.group(1)) if m else current
        groups.setdefault(current, []).append((u, ref))
    return sorted(groups.values(), key=lambda g: g[0][0].time)


def _renamer(taken: set[str], speakers: Sequence[str]) -> tuple[dict[str, str], Callable[[str], str]]:
    """Synthetic speakers named like a LoCoMo speaker get names neither stream uses, in every text."""
    clash = [s for s in speakers if s in taken]
    spare = [n for n in synthetic.SPEAKER_NAMES if n not in taken and n not in speakers]
    if len(spare) < len(clash):
        raise InputError(f"the synthetic stream has no names left to rename {', '.join(clash)}")
    mapping = dict(zip(clash, spare, strict=False))
    if not mapping:
        return {}, lambda text: text
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in mapping) + r")\b")
    return mapping, lambda text: pattern.sub(lambda m: mapping[m.group(1)], text)


def _clear(start: float, duration: float, busy: Sequence[tuple[float, float]]) -> float:
    """The earliest start from `start` at which a session of `duration` keeps SESSION_GAP from every busy span."""
    for a, b in busy:  # sorted: moving past one span can only meet the later ones
        if start < b + SESSION_GAP and start + duration + SESSION_GAP > a:
            start = b + SESSION_GAP
    return start


Session = list[tuple[Utterance, str | None]]  # a session's lines, each with its LoCoMo dia_id or None


def _draw(
    stream: synthetic.SyntheticStream, need: int, count: Callable[[str], int], rename: Callable[[str], str]
) -> tuple[list[list[tuple[int, Utterance]]], int]:
    """The stream's first lines, by session, until they hold `need` tokens; with each its index in the stream.

    Drawing stops at the line that reaches the length, never a line past it, so the stream's facts
    are exactly what the drawn lines said.
    """
    drawn: list[list[tuple[int, Utterance]]] = []
    tokens = index = 0
    seen = stream.sessions
    while tokens < need:
        u = next(iter(stream))
        if stream.sessions != seen:  # this line began a session
            seen = stream.sessions
            drawn.append([])
        u = Utterance(rename(u.speaker), rename(u.text), u.time)
        drawn[-1].append((index, u))
        tokens += count(u.line)
        index += 1
    return drawn, tokens


def _place(
    drawn: list[list[tuple[int, Utterance]]], busy: Sequence[tuple[float, float]]
) -> tuple[list[Session], dict[int, tuple[int, int]], float]:
    """The drawn sessions over the busy spans' weeks: the pauses between them stretched, their insides
    kept, none overlapping a busy span. Also where each drawn line went (session, offset) and the stretch."""
    first, last = busy[0][0], busy[-1][1]
    origin = drawn[0][0][1].time if drawn else first
    natural = drawn[-1][0][1].time - origin if drawn else 0.0
    stretch = (last - first) / natural if natural > 0 else 1.0
    placed: list[Session] = []
    where: dict[int, tuple[int, int]] = {}
    cursor = first
    for session in drawn:
        start0 = session[0][1].time
        duration = session[-1][1].time - start0
        start = _clear(max(first + (start0 - origin) * stretch, cursor), duration, busy)
        for offset, (i, _) in enumerate(session):
            where[i] = (len(placed), offset)
        placed.append([(dataclasses.replace(u, time=start + (u.time - start0)), None) for _, u in session])
        cursor = start + duration + SESSION_GAP
    return placed, where, stretch


def weave(conv: Conversation, *, stream_tokens: int, count: Callable[[str], int], seed: int = 0) -> Woven:
    """`conv`'s sessions between synthetic ones until the stream holds `stream_tokens` (by `count` of each line)."""
    if not conv.utterances:
        raise InputError(f"{conv.name}: no turns to weave")
    sessions = _locomo_sessions(conv)
    busy = [(g[0][0].time, g[-1][0].time + LOCOMO_TURN_SECONDS) for g in sessions]
    locomo_tokens = sum(count(u.line) for u in conv.utterances)
    stream = synthetic.SyntheticStream(seed, start=busy[0][0])
    mapping, rename = _renamer({u.speaker for u in conv.utterances}, stream.speakers)
    drawn, synthetic_tokens = _draw(stream, stream_tokens - locomo_tokens, count, rename)
    placed, where, stretch = _place(drawn, busy)

    # Sessions never overlap, so ordering them by start puts every line in time order.
    everything = sessions + placed
    utterances: list[Utterance] = []
    refs: list[str | None] = []
    position: dict[int, int] = {}  # session (in `everything`) -> its first line's stream position
    for k in sorted(range(len(everything)), key=lambda k: (everything[k][0][0].time, k)):
        position[k] = len(utterances)
        for u, ref in everything[k]:
            utterances.append(u)
            refs.append(ref)

    facts = []
    for fact in stream.facts():
        session, offset = where[fact.stated_at]
        at = position[len(sessions) + session] + offset
        facts.append(
            dataclasses.replace(
                fact,
                question=rename(fact.question),
                answer=rename(fact.answer),
                stale=tuple(rename(s) for s in fact.stale),
                stated_at=at,
                time=utterances[at].time,
            )
        )
    woven = Conversation(conv.name, tuple(utterances), tuple(refs), conv.questions)
    return Woven(woven, tuple(facts), locomo_tokens, synthetic_tokens, len(sessions), len(placed), stretch, mapping)


@dataclass(frozen=True)
class FactResult:
    """What one system's context held for one synthetic fact at the end of a stream."""

    system: str
    conversation: str
    question: str
    answer: str
    stale: tuple[str, ...]
    stated_at: int  # the stream position of the line that last stated the answer
    held: str  # latest, stale (only a superseded value) or neither
    context_tokens: int
    retrieval_ms: float

    @property
    def updated(self) -> bool:
        """Whether the fact's value ever changed: only then can a context hold a stale one."""
        return bool(self.stale)


@dataclass(frozen=True)
class LongtermRun:
    locomo: LocomoRun
    token_budget: int
    stream_tokens: int  # asked for; each stream's own length is in `streams`
    seed: int
    streams: tuple[Woven, ...]
    facts: tuple[FactResult, ...]
    seconds: float


def context_text(context: Context) -> str:
    """Everything the answering model would read besides the frame: prostream's whole prompt."""
    prepared = context.prepared
    if isinstance(prepared, PreparedQuestion):
        prompt = prepared.prompt
        return "\n".join(m["content"] for m in prompt.messages) if prompt is not None else ""
    return context.text


def held(fact: synthetic.Probe, text: str) -> str:
    if fact.found_in(text):
        return "latest"
    return "stale" if fact.stale_in(text) else "neither"


def ask_facts(conversation: str, facts: Sequence[synthetic.Probe], systems: Mapping[str, System]) -> list[FactResult]:
    out = []
    for name, system in systems.items():
        for fact in facts:
            context = system.context(fact.question)
            out.append(
                FactResult(
                    name,
                    conversation,
                    fact.question,
                    fact.answer,
                    fact.stale,
                    fact.stated_at,
                    held(fact, context_text(context)),
                    context.tokens,
                    context.retrieval_ms,
                )
            )
    return out


def longterm_settings(settings: Settings, token_budget: int) -> Settings:
    memory = settings.memory
    budget = dataclasses.replace(memory.budget, token_budget=token_budget)
    return dataclasses.replace(settings, memory=dataclasses.replace(memory, budget=budget))


def weave_all(
    settings: Settings,
    conversations: Sequence[Conversation],
    *,
    stream_tokens: int,
    seed: int,
    answer_llm: str | None = None,
) -> list[Woven]:
    """Every conversation woven, its lines counted in the tokenizer the memory counts its budget in."""
    tokenizer = load_tokenizer(resolve(bench_settings(settings, answer_llm), "llm").source)
    return [weave(c, stream_tokens=stream_tokens, count=tokenizer.count, seed=seed) for c in conversations]


def longterm_steps(streams: Sequence[Woven], limit: int | None, categories: Sequence[int], delay: int) -> int:
    """Progress units: the LoCoMo harness's, and one per fact asked of every system."""
    return count_steps([w.conversation for w in streams], limit, categories, delay) + sum(len(w.facts) for w in streams)


def run_longterm(
    settings: Settings,
    data: Path,
    streams: Sequence[Woven],
    *,
    token_budget: int,
    stream_tokens: int,
    seed: int,
    systems: Sequence[str] = LONGTERM_SYSTEMS,
    limit: int | None = None,
    categories: Sequence[int] = (),
    delay: int = 0,
    answer_llm: str | None = None,
    work_dir: Path | None = None,
    progress: Callable[[int, str], None] | None = None,
    recall_only: bool = False,
) -> LongtermRun:
    """Stream each woven conversation (`weave_all`) through every system at `token_budget`, asking
    LoCoMo's questions as `bench locomo` does and the synthetic facts at the end."""
    started = time.perf_counter()
    settings = longterm_settings(settings, token_budget)
    facts_of = {w.conversation.name: w.facts for w in streams}
    found: list[FactResult] = []

    def at_end(conv: Conversation, open_systems: Mapping[str, System]) -> None:
        facts = facts_of[conv.name]
        found.extend(ask_facts(conv.name, facts, open_systems))
        if progress:
            progress(len(facts), f"{conv.name}: fact probes")

    run = run_locomo(
        settings,
        data,
        [w.conversation for w in streams],
        systems=systems,
        limit=limit,
        categories=categories,
        delay=delay,
        answer_llm=answer_llm,
        work_dir=work_dir,
        progress=progress,
        recall_only=recall_only,
        at_end=at_end,
    )
    return LongtermRun(
        run, token_budget, stream_tokens, seed, tuple(streams), tuple(found), time.perf_counter() - started
    )
