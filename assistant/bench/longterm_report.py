"""A long-stream run in JSON and Markdown: `bench locomo`'s report of the woven streams, with the stream and the facts.

JSON layout (`format: assistant-bench-longterm/1`): `bench locomo`'s (`locomo_report.py`), its meta
extended with token_budget, stream_tokens (asked for), seed and streams [{name, utterances,
tokens, locomo_tokens, synthetic_tokens, locomo_sessions, synthetic_sessions, stretch, renamed,
facts}], each system with `facts` {updated: {n, latest, stale, neither}, all: {same}} (shares of
the synthetic facts whose context at the end held the latest value, only a superseded one, or
neither; `updated` counts only facts whose value changed at least once), with updated_by_quarter
[the same for the facts last stated in each quarter of their stream, oldest first], and `facts`:
one object per (system, fact).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .locomo_report import locomo_json, locomo_markdown
from .longterm import HELD, FactResult, LongtermRun

# Facts are also counted by the quarter of their stream in which their value was last stated: what a
# bounded memory keeps depends most on how long ago a fact was said.
QUARTERS = 4


def _held(rows: list[FactResult]) -> dict[str, Any]:
    n = len(rows)
    return {"n": n, **{k: (sum(r.held == k for r in rows) / n if n else None) for k in HELD}}


def longterm_json(run: LongtermRun) -> dict[str, Any]:
    report = locomo_json(run.locomo)
    report["format"] = "assistant-bench-longterm/1"
    meta = report["meta"]
    meta.update(
        token_budget=run.token_budget,
        stream_tokens=run.stream_tokens,
        seed=run.seed,
        seconds=run.seconds,
        streams=[
            {
                "name": w.conversation.name,
                "utterances": len(w.conversation.utterances),
                "tokens": w.tokens,
                "locomo_tokens": w.locomo_tokens,
                "synthetic_tokens": w.synthetic_tokens,
                "locomo_sessions": w.locomo_sessions,
                "synthetic_sessions": w.synthetic_sessions,
                "stretch": w.stretch,
                "renamed": w.renamed,
                "facts": len(w.facts),
            }
            for w in run.streams
        ],
    )
    length = {w.conversation.name: len(w.conversation.utterances) for w in run.streams}

    def quarter(f: FactResult) -> int:
        return min(QUARTERS - 1, QUARTERS * f.stated_at // length[f.conversation])

    for name, system in report["systems"].items():
        rows = [f for f in run.facts if f.system == name]
        updated = [f for f in rows if f.updated]
        system["facts"] = {
            "updated": _held(updated),
            "all": _held(rows),
            "updated_by_quarter": [_held([f for f in updated if quarter(f) == q]) for q in range(QUARTERS)],
        }
    report["facts"] = [{**asdict(f), "updated": f.updated} for f in run.facts]
    return report


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def longterm_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    streams = "; ".join(
        f"{s['name']}: {s['utterances']:,} lines, {s['tokens']:,} tokens ({s['locomo_tokens']:,} LoCoMo in "
        f"{s['locomo_sessions']} sessions, {s['synthetic_tokens']:,} synthetic in {s['synthetic_sessions']} sessions, "
        f"pauses stretched x{s['stretch']:.1f}), {s['facts']} facts"
        for s in meta["streams"]
    )
    budget = meta["token_budget"]
    shortest = min((s["tokens"] for s in meta["streams"]), default=0)
    lines = [
        f"**Long stream**: memory budget {budget:,} tokens; each stream at least {meta['stream_tokens']:,} tokens "
        f"asked, the shortest {shortest:,} ({shortest / budget:.1f}x the budget); synthetic seed {meta['seed']}. "
        f"{streams}.",
        "",
        "**Synthetic facts at the end of the stream** (share of contexts holding the latest stated value, "
        "only a superseded one, or neither; facts whose value changed / every fact stated):",
        "",
        "| system | updated: latest | stale only | neither | n | all: latest | stale only | neither | n |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in report["systems"].items():
        u, a = s["facts"]["updated"], s["facts"]["all"]
        lines.append(
            f"| {name} | {_f(u['latest'])} | {_f(u['stale'])} | {_f(u['neither'])} | {u['n']} | "
            f"{_f(a['latest'])} | {_f(a['stale'])} | {_f(a['neither'])} | {a['n']} |"
        )
    lines += [
        "",
        "**Facts whose value changed, by when it was last stated** (quarters of the stream, oldest first; "
        "latest / stale only):",
        "",
        "| system | " + " | ".join(f"Q{q + 1}" for q in range(QUARTERS)) + " |",
        "|---|" + "---|" * QUARTERS,
    ]
    for name, s in report["systems"].items():
        cells = [f"{_f(h['latest'])} / {_f(h['stale'])} (n={h['n']})" for h in s["facts"]["updated_by_quarter"]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines) + "\n" + locomo_markdown(report)
