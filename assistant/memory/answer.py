"""Evidence-grounded answers (seed 000 §5.4, Appendix B.2 prompt, extended with citations).

The context is K = {STSB, pending buffer, retrieved paths}. Unlike the paper's prompt, every
line carries its speaker and date, each path quotes the utterances it rests on as numbered
sources, and the model is told to cite them and to say it does not know when the memory
holds no evidence. The answer's evidence is what it cited, or, if it cited nothing but
answered, the sources of its best path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from ..llm import LLM, Tokenizer
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
    "Dates are given for each line; resolve words like 'yesterday' or 'last week' against them.\n"
    "After the answer, cite the numbered sources you used, like [2].\n"
    "If the memory does not contain the answer, reply exactly: I don't know."
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


def _line(u: Utterance) -> str:
    return f"[{when(u.time)}] {u.speaker}: {u.text}"


def build_prompt(question: str, retrieval: Retrieval, tokenizer: Tokenizer, max_context_tokens: int) -> Prompt:
    """Assemble the context, dropping the least relevant material first when it does not fit."""
    sources: dict[int, Evidence] = {}
    path_texts: list[str] = []
    for path in retrieval.paths:
        span = when(path.event.start_time) if path.event.start_time is not None else ""
        lines = [f"**{path.scene.text} > {path.event.text}** ({span}; {len(path.amus)} amu(s)):"]
        lines += [f"- {a.text}" for a in path.amus]
        for ev in path.sources:
            number = len(sources) + 1
            sources[number] = ev
            lines.append(f"  [{number}] [{when(ev.time)}] {ev.speaker}: {ev.text}")
        path_texts.append("\n".join(lines))
    short_term = [_line(u) for u in retrieval.short_term]
    pending = [_line(u) for b in retrieval.pending for u in b.utterances]

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
    # Sources of dropped paths must not be citable.
    kept = "\n".join(path_texts)
    sources = {n: ev for n, ev in sources.items() if f"[{n}]" in kept}
    user = (
        f"{INSTRUCTIONS}\n{context}\nQuestion: {question}\n"
        "Answer (provide key points directly, no introductory phrases):"
    )
    return Prompt(
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        sources=sources,
        context_tokens=tokenizer.count(context),
    )


def cited_evidence(text: str, prompt: Prompt, retrieval: Retrieval) -> tuple[Evidence, ...]:
    cited = [prompt.sources[int(n)] for n in dict.fromkeys(_CITE_RE.findall(text)) if int(n) in prompt.sources]
    if cited:
        return tuple(cited)
    if retrieval.paths and retrieval.paths[0].sources:
        return retrieval.paths[0].sources[:1]
    return ()


def strip_citations(text: str) -> str:
    return re.sub(r"\s*\[\d{1,3}\](?:\s*\[\d{1,3}\])*", "", text).strip()


def stream_answer(llm: LLM, prompt: Prompt, max_tokens: int) -> Iterator[str]:
    yield from llm.stream(prompt.messages, max_tokens=max_tokens)
