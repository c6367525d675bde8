"""The answer's context: the best evidence first, shown the way a person would read it.

Lines are chosen by relevance (most relevant first, until the token cap is reached) and then
shown in time order under one date line per day:

    14 August 2023:
    Caroline: I went to a LGBTQ support group yesterday (13 August 2023) and it was so powerful.
    Melanie: That's great! ...

A small answering model copies what it sees: there are no clock times, unit counts, numbers or
empty sections for it to copy, relative dates carry the date they mean, and a summary appears
only where it adds words the quoted lines do not have. What is left out when the cap binds is
always the least relevant line, never the best evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from ..llm import Tokenizer
from ..records import Evidence
from ..sentences import sentences
from .dates import annotate, day_heading
from .words import stems, words


@dataclass(frozen=True)
class Context:
    text: str
    # The lines shown, in time order.
    sources: tuple[Evidence, ...]
    tokens: int


@dataclass(frozen=True)
class Candidate:
    """A line offered to the context, with the summary (if any) of the event it belongs to.

    `shown` is the part of the line the context quotes (the whole line unless it was trimmed).
    """

    evidence: Evidence
    summary: str | None = None
    shown: str | None = None

    @property
    def text(self) -> str:
        return self.shown if self.shown is not None else self.evidence.text


# About what a quoted line costs beyond its words: the speaker's name, a colon, a line break.
_SPEAKER_TOKENS = 4

# Scores sentences by closeness in meaning to the question (higher is closer).
Closeness = Callable[[list[str]], Sequence[float]]


def trimmed(c: Candidate, terms: set[str], closeness: Closeness | None = None) -> Candidate:
    """The line cut to the sentences that share a stemmed word with the question, with "…" where
    sentences were left out.

    When no sentence shares one, the line is cut to the one sentence `closeness` puts nearest the
    question (a list question's words are seldom the answer's: "activities" against "I'm off to go
    swimming with the kids"); without `closeness`, it stays whole. A photo's caption is a sentence
    like any other: on the LoCoMo development split, keeping every caption whole left more evidence
    out than captions carry (at the end of the stream, at 400 tokens, 0.764 of the gold lines were
    quoted without that rule, 0.741 with it).
    """
    segments = sentences(c.evidence.text)
    if len(segments) < 2:
        return c
    keep = [bool(stems(seg) & terms) for seg in segments]
    if not any(keep):
        if closeness is None:
            return c
        scores = list(closeness(segments))
        keep[max(range(len(segments)), key=lambda i: scores[i])] = True
    if all(keep):
        return c
    parts: list[str] = []
    for k, seg in zip(keep, segments, strict=True):
        if k:
            parts.append(seg)
        elif not parts or parts[-1] != "…":
            parts.append("…")
    return Candidate(c.evidence, c.summary, " ".join(parts))


def _day(t: float, zone: tzinfo) -> str:
    return datetime.fromtimestamp(t, tz=zone).date().isoformat()


def render(lines: Sequence[Candidate], zone: tzinfo) -> str:
    """Lines in time order, one date line per day; a summary is shown once, above its first line.
    The times a line refers to are written after them as calendar dates (`dates.annotate`)."""
    out: list[str] = []
    day = None
    shown: set[str] = set()
    for c in sorted(lines, key=lambda c: (c.evidence.time, c.evidence.utterance_id)):
        ev = c.evidence
        d = _day(ev.time, zone)
        if d != day:
            if out:
                out.append("")
            out.append(f"{day_heading(ev.time, zone)}:")
            day = d
        if c.summary and c.summary not in shown:
            shown.add(c.summary)
            out.append(f"({c.summary})")
        out.append(f"{ev.speaker}: {annotate(c.text, ev.time, zone)}")
    return "\n".join(out)


def adds_words(summary: str, lines: Sequence[Evidence]) -> bool:
    """Whether a summary says anything its lines do not (a line chosen as its own summary does not)."""
    said = {w for ev in lines for w in words(f"{ev.speaker} {ev.text}")}
    return any(w not in said for w in words(summary) if len(w) > 2)


def build_context(
    candidates: Sequence[Candidate],
    tokenizer: Tokenizer,
    max_tokens: int,
    zone: tzinfo,
    *,
    terms: Sequence[str] = (),
    whole: int = 2,
    trim_above: int = 0,
    closeness: Closeness | None = None,
) -> Context:
    """The most relevant candidates (given best first) that fit in `max_tokens`, rendered in time order.

    Past the first `whole` candidates, a line longer than `trim_above` tokens is cut to the
    sentences that share a (stemmed) word with the question's content words `terms`, or else to
    its sentence nearest the question by `closeness` (`trimmed`; 0: never cut): LoCoMo's evidence
    lines average about 50 tokens, mostly greetings and asides, and a cut line leaves room for
    another line.
    """
    wanted = stems(" ".join(terms)) if trim_above else set()
    chosen: list[Candidate] = []
    seen: set[int] = set()
    days: set[str] = set()
    summaries: set[str] = set()
    used = 0
    # Tokens are counted per piece (a line, a date line, a summary) as pieces are added, and the
    # whole is counted once at the end: counting the whole render for every candidate made
    # building the context four times slower than recalling it.
    said: set[str] = set()
    offered: list[tuple[Candidate, int]] = []  # those the estimate left out, with their estimated cost

    def weigh(sentences: list[str]) -> list[float]:
        # Only sentences that fit in the room left are weighed: each costs an embedding (about 6 ms
        # on two cores), and a line whose sentences cannot fit is left out whichever one is chosen.
        room = max_tokens - used
        fits = [i for i, s in enumerate(sentences) if tokenizer.count(s) + _SPEAKER_TOKENS <= room]
        scores = [-2.0] * len(sentences)
        if fits and closeness is not None:
            for i, score in zip(fits, closeness([sentences[i] for i in fits]), strict=True):
                scores[i] = score
        return scores

    for rank, c in enumerate(candidates):
        # The same words said twice (a repeated line) are quoted once.
        key = " ".join(words(c.evidence.text))
        if c.evidence.utterance_id in seen or key in said:
            continue
        if trim_above and rank >= whole and tokenizer.count(c.evidence.text) > trim_above:
            c = trimmed(c, wanted, weigh if closeness is not None else None)
        ev = c.evidence
        cost = tokenizer.count(f"{ev.speaker}: {annotate(c.text, ev.time, zone)}") + 1
        day = _day(ev.time, zone)
        if day not in days:
            cost += tokenizer.count(f"{day_heading(ev.time, zone)}:") + 2
        extra = tokenizer.count(f"({c.summary})") + 1 if c.summary and c.summary not in summaries else 0
        if used + cost + extra > max_tokens:
            if not extra or used + cost > max_tokens:
                offered.append((Candidate(ev, None, c.shown), cost))
                continue
            c, extra = Candidate(ev, None, c.shown), 0
        chosen.append(c)
        seen.add(ev.utterance_id)
        said.add(key)
        days.add(day)
        if c.summary:
            summaries.add(c.summary)
        used += cost + extra
    text = render(chosen, zone)
    while chosen and tokenizer.count(text) > max_tokens:
        chosen.pop()  # the least relevant of those chosen
        text = render(chosen, zone)
    # Pieces counted apart cost a little more than counted together; fill what that left over,
    # still in order of relevance, counting exactly.
    room = max_tokens - tokenizer.count(text)
    for c, cost in offered:
        if room <= 0:
            break
        if cost > room + 8 or c.evidence.utterance_id in seen:
            continue
        trial = render([*chosen, c], zone)
        if tokenizer.count(trial) <= max_tokens:
            chosen.append(c)
            seen.add(c.evidence.utterance_id)
            text = trial
            room = max_tokens - tokenizer.count(text)
    ordered = sorted((c.evidence for c in chosen), key=lambda e: (e.time, e.utterance_id))
    return Context(text, tuple(ordered), tokenizer.count(text))
