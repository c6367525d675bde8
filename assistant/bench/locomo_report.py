"""Aggregate a LoCoMo run into the JSON and Markdown that BENCHMARKS.md documents.

JSON layout (`format: assistant-bench-locomo/2`):
  meta:     data, systems, answer_llm, distill_llm, distill_mode, delay, limit, categories,
            answers ("llm", or "none" for a recall-only run: every answer field and score is null),
            probes_use (whether probes counted as uses), seconds, resumed (answers taken from a
            checkpoint), date, machine, conversations [{name, utterances, questions}]
  systems:  {name: {description, f1, bleu1, rouge_l, formation, evidence_recall, context_tokens,
            (over categories 1-4, at the evidence probe), f1_adversarial (category 5),
            date_accuracy, date_scorable, temporal, date_by_unit {unit: {n, date_accuracy}} (temporal
            questions scored by the date they mean, see `date_accuracy`: the share of those whose gold
            names one date, `date_scorable` of the `temporal` questions, answered with a time within it),
            at_end {same keys, at the end-of-stream probe}, by_category {probe: {category: {n, ...}}},
            retrieval_ms_p50/p95, answer_ms_p50/p95, ingest_ms_per_utterance (all ingest time, the
            end-of-stream flush included, over utterances), ingest_ms_p50/p95 (one add() each),
            memory_tokens, database_bytes (means over conversations at the end), llm_calls,
            llm_prompt_tokens, llm_completion_tokens (memory formation, summed), failures (answers
            below F1 0.5 by where the evidence was lost; recall-only: every question, with
            `retrieved` in place of `not_used`), management [{conversation, position, memory_tokens, database_bytes}]}}
  questions: one object per (system, probe, question) with the prediction and every metric.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict
from typing import Any

from .locomo import PROBES, LocomoRun, ProbeResult
from .locomo_metrics import TEMPORAL
from .stats import percentile

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ANSWERED = (1, 2, 3, 4)  # what most publications report; 5 is scored apart


def _mean(values: list[float | None]) -> float | None:
    """The mean of the values there are: a recall-only run has no scores, a question without evidence no recall."""
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _scores(rows: list[ProbeResult]) -> dict[str, Any]:
    """Mean quality over some probes; formation and recall only where the question names evidence."""
    return {
        "n": len(rows),
        "f1": _mean([r.f1 for r in rows]),
        "bleu1": _mean([r.bleu1 for r in rows]),
        "rouge_l": _mean([r.rouge_l for r in rows]),
        "formation": _mean([r.formation for r in rows]),
        "evidence_recall": _mean([r.evidence_recall for r in rows]),
    }


def _dates(rows: list[ProbeResult]) -> dict[str, Any]:
    """Date accuracy of the temporal questions whose gold answer names one date, overall and by its unit."""
    temporal = [r for r in rows if r.category == TEMPORAL]
    scorable = [r for r in temporal if r.date_unit is not None]
    units = sorted({r.date_unit for r in scorable if r.date_unit is not None})
    return {
        "date_accuracy": _mean([r.date_match for r in scorable]),
        "date_scorable": len(scorable),
        "temporal": len(temporal),
        "date_by_unit": {
            unit: {
                "n": sum(r.date_unit == unit for r in scorable),
                "date_accuracy": _mean([r.date_match for r in scorable if r.date_unit == unit]),
            }
            for unit in units
        },
    }


def _quality(results: list[ProbeResult]) -> dict[str, Any]:
    answered = [r for r in results if r.category in ANSWERED]
    return {
        **_scores(answered),
        **_dates(answered),
        "context_tokens": _mean([float(r.context_tokens) for r in answered]),
        "f1_adversarial": _mean([r.f1 for r in results if r.category == 5]),
    }


def _by_category(results: list[ProbeResult]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for cat in sorted({r.category for r in results}):
        rows = [r for r in results if r.category == cat]
        out[str(cat)] = {"name": CATEGORY_NAMES.get(cat, str(cat)), **_scores(rows)}
        if cat == TEMPORAL:
            out[str(cat)] |= _dates(rows)
    return out


def _failures(results: list[ProbeResult], recall_only: bool) -> dict[str, int]:
    """Why answers to categories 1-4 scored below 0.5: the stage where the evidence was lost.

    Without answers every question counts, and those with evidence in the context are `retrieved`.
    """
    last = "retrieved" if recall_only else "not_used"
    out = {"not_formed": 0, "not_retrieved": 0, last: 0, "no_evidence_ids": 0}
    for r in results:
        if r.category not in ANSWERED or (r.f1 is not None and r.f1 >= 0.5):
            continue
        if r.formation is None:
            out["no_evidence_ids"] += 1
        elif r.formation < 1.0 and not r.evidence_recall:
            out["not_formed"] += 1
        elif not r.evidence_recall:
            out["not_retrieved"] += 1
        else:
            out[last] += 1
    return out


# Thresholds the abstention curves are read at (`memory.answer.min_relevance`, `min_person_share`).
GATE_THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
PERSON_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)


def _curve(rows: list[ProbeResult], score: str, thresholds: tuple[float, ...]) -> list[dict[str, Any]]:
    """For each threshold, how many probes (both kinds) of answerable questions (categories 1-4)
    and of unanswerable ones (5) score under it by `score` (a ProbeResult field): what the gate on
    that score would decline there without asking the model. Empty for a system that records none."""
    scored = [(r.category, getattr(r, score)) for r in rows if r.relevance is not None]
    if not scored:
        return []
    answerable = [v for c, v in scored if c != 5]
    unanswerable = [v for c, v in scored if c == 5]
    return [
        {
            "threshold": t,
            "answerable_declined": sum(v < t for v in answerable if v is not None),
            "answerable": len(answerable),
            "unanswerable_declined": sum(v < t for v in unanswerable if v is not None),
            "unanswerable": len(unanswerable),
        }
        for t in thresholds
    ]


def summarize(run: LocomoRun) -> dict[str, Any]:
    systems: dict[str, Any] = {}
    for name in run.systems:
        rows = [r for r in run.results if r.system == name]
        at = {kind: [r for r in rows if r.probe == kind] for kind in PROBES}
        totals = [c.totals[name] for c in run.conversations]
        steps = [ms for t in totals for ms in t.ingest_ms]
        utterances = sum(t.utterances for t in totals)
        all_ingest = sum(steps) + sum(t.end_of_stream_ms for t in totals)
        evidence = _quality(at["evidence"])
        answered = [r.answer_ms for r in rows if r.answer_ms is not None]
        systems[name] = {
            "description": run.descriptions.get(name, ""),
            **{k: v for k, v in evidence.items() if k != "n"},
            "questions": evidence["n"],
            "at_end": _quality(at["end"]),
            "by_category": {kind: _by_category(at[kind]) for kind in PROBES},
            "retrieval_ms_p50": percentile([r.retrieval_ms for r in rows], 0.5),
            "retrieval_ms_p95": percentile([r.retrieval_ms for r in rows], 0.95),
            "answer_ms_p50": percentile(answered, 0.5) if answered else None,
            "answer_ms_p95": percentile(answered, 0.95) if answered else None,
            "ingest_ms_per_utterance": all_ingest / utterances if utterances else 0.0,
            "ingest_ms_p50": percentile(steps, 0.5),
            "ingest_ms_p95": percentile(steps, 0.95),
            "memory_tokens": _mean([float(t.memory_tokens) for t in totals]),
            "database_bytes": _mean([float(t.database_bytes) for t in totals]),
            "llm_calls": sum(t.formation.llm_calls for t in totals),
            "llm_prompt_tokens": sum(t.formation.prompt_tokens for t in totals),
            "llm_completion_tokens": sum(t.formation.completion_tokens for t in totals),
            "failures": {kind: _failures(at[kind], run.recall_only) for kind in PROBES},
            "abstention": _curve(rows, "relevance", GATE_THRESHOLDS),
            "person_abstention": _curve(rows, "person_share", PERSON_THRESHOLDS),
            "management": [
                {"conversation": c.name, **asdict(s)} for c in run.conversations for s in c.totals[name].samples
            ],
        }
    return systems


def locomo_json(run: LocomoRun) -> dict[str, Any]:
    host = run.machine
    return {
        "format": "assistant-bench-locomo/2",
        "meta": {
            "data": run.data,
            "systems": list(run.systems),
            "answer_llm": run.answer_llm,
            "distill_llm": run.distill_llm,
            "distill_mode": run.distill_mode,
            "delay": run.delay,
            "limit": run.limit,
            "categories": list(run.categories),
            "answers": "none" if run.recall_only else "llm",
            "probes_use": run.probes_use,
            "seconds": run.seconds,
            "resumed": run.resumed,
            "date": host.date,
            "machine": host.describe(),
            "conversations": [
                {"name": c.name, "utterances": c.utterances, "questions": c.questions} for c in run.conversations
            ],
        },
        "systems": summarize(run),
        "questions": [asdict(r) for r in run.results],
    }


def _f(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _date_cell(q: dict[str, Any]) -> str:
    # A report written before date accuracy existed has none.
    if "date_scorable" not in q:
        return "–"
    return f"{_f(q['date_accuracy'])} (n={q['date_scorable']} of {q['temporal']})"


def locomo_markdown(report: dict[str, Any]) -> str:
    meta, systems = report["meta"], report["systems"]
    convs = ", ".join(
        f"{c['name']} ({c['utterances']} turns, {c['questions']} questions)" for c in meta["conversations"]
    )
    formation = (
        f"`llm` distillation with `{meta['distill_llm']}`"
        if meta["distill_mode"] == "llm"
        else f"`{meta['distill_mode']}` (no LLM)"
    )
    recall_only = meta.get("answers") == "none"
    answering = (
        "**Recall only**: every context was built as for an answer and no LLM answered, so F1, BLEU-1, "
        "ROUGE-L and answer latency are absent"
        if recall_only
        else f"Answering LLM `{meta['answer_llm']}`"
    )
    probes = (
        "every probe counted as a use of what it retrieved (--probes-use)"
        if meta.get("probes_use")
        else "probes only observe (no use counted)"
    )
    lines = [
        f"Data: `{meta['data']}`: {convs}. {answering}; memory formation: {formation}. "
        f"Probe delay {meta['delay']} session(s); {probes}. "
        f"{meta['machine']}; {meta['date']}; {meta['seconds'] / 60:.1f} min"
        + (
            f" (resumed: {meta['resumed']} answers came from the checkpoint of the stopped run before it)."
            if meta.get("resumed")
            else "."
        ),
        "",
    ]
    for kind, title in (("evidence", "after the evidence"), ("end", "at the end of the stream")):
        if recall_only:
            lines += [
                f"**Retrieved {title}** (categories 1-4):",
                "",
                "| system | formation | evidence recall | context tokens |",
                "|---|---|---|---|",
            ]
        else:
            lines += [
                f"**Asked {title}** (categories 1-4; date accuracy = share of the temporal questions whose gold "
                "answer names one date (n of all temporal) answered with a time within that date, however "
                'worded; adversarial = share of category-5 questions answered "not in memory"):',
                "",
                "| system | F1 | date accuracy | BLEU-1 | ROUGE-L | formation | evidence recall | context tokens | "
                "adversarial |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
        for name, s in systems.items():
            q = s if kind == "evidence" else s["at_end"]
            retrieval = f"{_f(q['formation'])} | {_f(q['evidence_recall'])} | {_f(q['context_tokens'], 0)}"
            if recall_only:
                lines.append(f"| {name} | {retrieval} |")
            else:
                lines.append(
                    f"| {name} | {_f(q['f1'])} | {_date_cell(q)} | {_f(q['bleu1'])} | {_f(q['rouge_l'])} | "
                    f"{retrieval} | {_f(q['f1_adversarial'])} |"
                )
        lines.append("")
    cats = sorted({c for s in systems.values() for kind in PROBES for c in s["by_category"][kind]}, key=int)
    # Without answers, the category table shows what retrieval did instead.
    metric = "evidence_recall" if recall_only else "f1"
    lines += [
        f"**{'Evidence recall' if recall_only else 'F1'} by category** (after the evidence / at the end):",
        "",
        "| system | " + " | ".join(f"{CATEGORY_NAMES.get(int(c), c)} ({c})" for c in cats) + " |",
        "|---|" + "---|" * len(cats),
    ]
    for name, s in systems.items():
        cells = []
        for c in cats:
            ev = s["by_category"]["evidence"].get(c, {})
            end = s["by_category"]["end"].get(c, {})
            cells.append(f"{_f(ev.get(metric))} / {_f(end.get(metric))} (n={ev.get('n', 0)})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "**Cost** (latencies over every probe; ingest over every utterance; memory at the end, mean per conversation):",
        "",
        "| system | retrieval ms p50 / p95 | answer ms p50 / p95 | ingest ms/utt (p50 / p95 per step) | "
        "formation LLM calls / tokens | memory tokens | database bytes |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in systems.items():
        tokens = s["llm_prompt_tokens"] + s["llm_completion_tokens"]
        lines.append(
            f"| {name} | {s['retrieval_ms_p50']:.1f} / {s['retrieval_ms_p95']:.1f} | "
            f"{_f(s['answer_ms_p50'], 0)} / {_f(s['answer_ms_p95'], 0)} | "
            f"{s['ingest_ms_per_utterance']:.1f} ({s['ingest_ms_p50']:.1f} / {s['ingest_ms_p95']:.1f}) | "
            f"{s['llm_calls']:,} / {tokens:,} | {_f(s['memory_tokens'], 0)} | {_f(s['database_bytes'], 0)} |"
        )
    last = "retrieved" if recall_only else "not_used"
    lines += [
        "",
        (
            "**Where the evidence was lost** (every question of categories 1-4, after the evidence / at the end): "
            "not formed = the memory no longer held it; not retrieved = held but not in the context; "
            "retrieved = some of it in the context:"
            if recall_only
            else "**Where answers below F1 0.5 lost the evidence** (categories 1-4, after the evidence / at the end): "
            "not formed = the memory no longer held it; not retrieved = held but not in the context; "
            "not used = in the context, answer still wrong:"
        ),
        "",
        f"| system | not formed | not retrieved | {last.replace('_', ' ')} | no evidence ids |",
        "|---|---|---|---|---|",
    ]
    for name, s in systems.items():
        ev, end = s["failures"]["evidence"], s["failures"]["end"]
        keys = ("not_formed", "not_retrieved", last, "no_evidence_ids")
        lines.append(f"| {name} | " + " | ".join(f"{ev[k]} / {end[k]}" for k in keys) + " |")
    for name, s in systems.items():
        if not s.get("abstention"):
            continue
        lines += _curve_table(
            f"**{name}'s abstention curve** (both probes): the probes whose nearest recalled line is less "
            "relevant than each threshold, which `memory.answer.min_relevance` at that value declines unasked:",
            "threshold",
            s["abstention"],
        )
        lines += _curve_table(
            f"**{name}'s person curve** (both probes): the probes of questions about one person whose nearest "
            "line about them is under each share of the nearest line, which `memory.answer.min_person_share` "
            "at that value declines unasked:",
            "share",
            s["person_abstention"],
        )
    return "\n".join(lines) + "\n"


def _curve_table(heading: str, column: str, rows: list[dict[str, Any]]) -> list[str]:
    """A curve of `_curve` as a markdown table under its heading."""
    out = ["", heading, "", f"| {column} | answerable (1-4) declined | unanswerable (5) declined |", "|---|---|---|"]
    for row in rows:
        out.append(
            f"| {row['threshold']} | {row['answerable_declined']} of {row['answerable']} | "
            f"{row['unanswerable_declined']} of {row['unanswerable']} |"
        )
    return out
