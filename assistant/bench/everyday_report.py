"""The everyday set's results as JSON and as a Markdown table: each question, the reply, right or wrong and why."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from .everyday import EverydayRun, Result


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def _row(r: Result) -> dict[str, Any]:
    q = r.question
    return {
        "id": q.id,
        "conv": q.conv,
        "kind": q.kind,
        "expect": q.expect,
        "asked_at": _when(q.asked_at),
        "question": q.question,
        "reply": r.reply,
        "right": r.right,
        "why": r.why,
        "knows": r.knows,
        "recalled": r.recalled,
        "seconds": round(r.seconds, 2),
        "context": list(r.context),
    }


def everyday_json(run: EverydayRun) -> dict[str, Any]:
    right = sum(r.right for r in run.results)
    kinds: dict[str, list[int]] = {}
    for r in run.results:
        tally = kinds.setdefault(r.question.kind, [0, 0])
        tally[0] += r.right
        tally[1] += 1
    return {
        "answer_llm": run.answer_llm,
        "distill_llm": run.distill_llm,
        "distill_mode": run.distill_mode,
        "right": right,
        "questions": len(run.results),
        "by_kind": {k: {"right": v[0], "questions": v[1]} for k, v in sorted(kinds.items())},
        "seconds": round(run.seconds, 1),
        "results": [_row(r) for r in run.results],
    }


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def everyday_markdown(report: dict[str, Any]) -> str:
    rows = report["results"]
    out = [
        f"### Everyday set: {report['right']}/{report['questions']} right",
        "",
        f"Answered by {report['answer_llm']}; distilled ({report['distill_mode']}) by {report['distill_llm']}; "
        f"{report['seconds']:.0f} s in all.",
        "",
        "| kind | right |",
        "|---|---|",
    ]
    out += [f"| {k} | {v['right']}/{v['questions']} |" for k, v in report["by_kind"].items()]
    out += ["", "| id | question | reply | right | why | line read |", "|---|---|---|---|---|---|"]
    for row in rows:
        mark = "right" if row["right"] else "WRONG"
        read = {True: "yes", False: "NO", None: "-"}[row["recalled"]]
        cells = [row["id"], _cell(row["question"]), _cell(row["reply"]), mark, _cell(row["why"]), read]
        out.append("| " + " | ".join(cells) + " |")
    wrong = Counter(row["kind"] for row in rows if not row["right"])
    if wrong:
        out += ["", "Wrong by kind: " + ", ".join(f"{k} {n}" for k, n in wrong.most_common())]
    return "\n".join(out) + "\n"
