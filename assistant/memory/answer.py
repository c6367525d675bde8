"""Evidence-grounded answers (seed 000 §5.4, Appendix B.2 prompt, extended with citations).

The context is K = {STSB, pending buffer, retrieved paths}. Unlike the paper's prompt, every
line carries its speaker and date, each path quotes the utterances it rests on as numbered
sources, and the model is told to cite them and to say it does not know when the memory
holds no evidence. The answer's evidence is what it cited, or, if it cited nothing but
answered, the sources of its best path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from ..llm import Tokenizer
from .dates import annotate
from .records import Evidence, Retrieval, Utterance

SYSTEM = (
    "You are a helpful assistant that provides direct, concise answers. Always answer directly without starting "
    "with phrases like 'Based on...' or 'According to...'. Provide key points only."
)

INSTRUCTIONS = (
    "Please carefully think about the following question and provide a direct, concise answer with key points "
    "only, using only the memory below.\n"
    'Do NOT start your answer with phrases like "Based on..." or "According to...". Instead, directly state the '
    "answer.\n"
    "Each line carries the date it was said; relative dates are resolved in parentheses.\n"
    "Answer in words first, then cite the numbered lines you used, like: They met in May 2023 [2].\n"
    "If the memory does not contain the answer, reply exactly: I don't know. Never guess."
)

DONT_KNOW = "I don't know."
_DONT_KNOW_RE = re.compile(
    r"\b(i don'?t know|not (mentioned|stated|specified|available)|no information|"
    r"does not (say|mention|contain)|cannot be determined|unknown)\b",
    re.I,
)
_CITE_RE = re.compile(r"\[(\d{1,3})\]")


def when(t: float) -> str:
    d = datetime.fromtimestamp(t, tz=UTC)
    return f"{d.day} {d.strftime('%B %Y')}, {d.strftime('%H:%M')}"


def says_unknown(text: str) -> bool:
    return bool(_DONT_KNOW_RE.search(text))


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    sources: dict[int, Evidence]
    context_tokens: int


def as_evidence(u: Utterance) -> Evidence:
    return Evidence(utterance_id=u.id or 0, speaker=u.speaker, time=u.time, text=u.text)


def frame(context: str, question: str) -> list[dict[str, str]]:
    """The messages around a context: the same frame for the memory and every benchmark baseline.

    The context comes before the question so that questions asked of one context share a
    prompt prefix, which llama.cpp evaluates once.
    """
    user = (
        f"{INSTRUCTIONS}\n{context}\nQuestion: {question}\n"
        "(If the memory above does not contain the answer, reply exactly: I don't know.)\n"
        "Answer (provide key points directly, no introductory phrases):"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def cite_line(number: int, ev: Evidence) -> str:
    return f"[{number}] [{when(ev.time)}] {ev.speaker}: {annotate(ev.text, ev.time)}"


def build_prompt(question: str, retrieval: Retrieval, tokenizer: Tokenizer, max_context_tokens: int) -> Prompt:
    """Assemble the context, dropping the least relevant material first when it does not fit.

    Every quoted utterance gets a number, wherever it sits, so any of them can be cited.
    """
    numbered: list[Evidence] = []

    def cite(ev: Evidence) -> str:
        numbered.append(ev)
        return cite_line(len(numbered), ev)

    path_texts: list[str] = []
    for path in retrieval.paths:
        span = when(path.event.start_time) if path.event.start_time is not None else ""
        start = path.event.start_time or 0.0
        event = annotate(path.event.text, start)
        lines = [f"**{path.scene.text} > {event}** ({span}; {len(path.amus)} amu(s)):"]
        lines += [f"- {annotate(a.text, a.start_time or start)}" for a in path.amus]
        lines += [f"  {cite(ev)}" for ev in path.sources]
        path_texts.append("\n".join(lines))
    # A line already quoted under a path is not repeated in the buffers: tokens are the scarce thing.
    quoted = {ev.utterance_id for ev in numbered}
    pending = [cite(as_evidence(u)) for b in retrieval.pending for u in b.utterances if u.id not in quoted]
    short_term = [cite(as_evidence(u)) for u in retrieval.short_term if u.id not in quoted]

    def render(paths: list[str], short: list[str], pend: list[str]) -> str:
        parts = [
            "## Short-term Memory:\n" + ("\n".join(short) or "(empty)"),
            "## Pending Memory Buffer:\n" + ("\n".join(pend) or "(empty)"),
            "## Long-term Memory:\n" + ("\n".join(paths) or "(nothing relevant)"),
        ]
        return "\n".join(parts)

    # Trim in order of least value: oldest short-term lines, oldest pending, then weakest paths.
    context = render(path_texts, short_term, pending)
    while tokenizer.count(context) > max_context_tokens and (short_term or pending or path_texts):
        if len(short_term) > 2:
            short_term = short_term[1:]
        elif len(pending) > 2:
            pending = pending[1:]
        elif path_texts:
            path_texts = path_texts[:-1]
        elif pending:
            pending = pending[1:]
        else:
            short_term = short_term[1:]
        context = render(path_texts, short_term, pending)
    # What was trimmed away cannot be cited.
    sources = {n: ev for n, ev in enumerate(numbered, start=1) if f"[{n}] " in context}
    return Prompt(
        messages=frame(context, question),
        sources=sources,
        context_tokens=tokenizer.count(context),
    )


def _content_words(text: str) -> set[str]:
    from spacy.lang.en.stop_words import STOP_WORDS  # spaCy takes seconds to import; only answers need it

    return {w for w in re.findall(r"[a-z0-9][a-z0-9'-]*", text.lower()) if w not in STOP_WORDS and len(w) > 1}


def cited_evidence(text: str, prompt: Prompt) -> tuple[Evidence, ...]:
    """The sources the answer rests on: those it cited that share words with it, else the closest in wording.

    Small models cite loosely, so a citation is kept only when the cited words support the answer.
    """
    words = _content_words(strip_citations(text))
    overlap = {n: len(words & _content_words(ev.text)) for n, ev in prompt.sources.items()}
    cited = [int(n) for n in dict.fromkeys(_CITE_RE.findall(text)) if int(n) in prompt.sources]
    supported = [n for n in cited if overlap[n] > 0]
    if supported:
        return tuple(prompt.sources[n] for n in supported)
    best = max(overlap.values(), default=0)
    if best == 0:
        return ()
    return tuple(prompt.sources[n] for n, o in overlap.items() if o == best)[:2]


def strip_citations(text: str) -> str:
    return re.sub(r"\s*\[\d{1,3}\](?:\s*\[\d{1,3}\])*", "", text).strip()
