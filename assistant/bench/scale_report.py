"""The table and JSON of `assistant bench scale`."""

from __future__ import annotations

import dataclasses
from typing import Any

from .scale import EMBED_AHEAD
from .scale_result import FLAT_RATIO, FULL_SHARE, JUDGED_KEYS, ScalePoint, ScaleResult


def scale_json(result: ScaleResult) -> dict[str, Any]:
    points = []
    for p in result.points:
        row = dataclasses.asdict(p)
        row["nodes"] = p.nodes
        points.append(row)
    return {
        "benchmark": "scale",
        "distill_mode": result.distill_mode,
        "seed": result.seed,
        "speakers": result.speakers,
        "queries": result.queries,
        "models": dict(result.models),
        "machine": dataclasses.asdict(result.machine),
        "wall_s": result.wall_s,
        "embedded_ahead": result.embedded_ahead,
        "points": points,
        "ratios": result.ratios,
        "full_from": result.full_from.utterances if result.full_from is not None else None,
        "full_ratios": result.full_ratios,
        "flat_ratio": FLAT_RATIO,
        "judged": list(JUDGED_KEYS),
        "flat": result.flat,
        "flat_when_full": result.flat_when_full,
    }


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def _ratio(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def _duration(seconds: float) -> str:
    minutes, s = divmod(round(seconds), 60)
    hours, m = divmod(minutes, 60)
    return f"{hours}h{m:02d}m{s:02d}s" if hours else f"{m}m{s:02d}s"


def _ratio_line(title: str, small: ScalePoint, large: ScalePoint, r: dict[str, float | None], flat: bool | None) -> str:
    verdict = {True: "flat", False: "not flat", None: "undecided"}[flat]
    return (
        f"{title}, {large.utterances:,} / {small.utterances:,} utterances: ingest per utterance median "
        f"{_ratio(r['ingest_ms_median'])}, p95 {_ratio(r['ingest_ms_p95'])}, mean {_ratio(r['ingest_ms_mean'])}; "
        f"retrieval median {_ratio(r['retrieval_ms_median'])}, p95 {_ratio(r['retrieval_ms_p95'])}. "
        f"Verdict: **{verdict}** (medians and mean each at most {FLAT_RATIO}x)."
    )


def scale_markdown(result: ScaleResult) -> str:
    models = dict(result.models)
    if result.distill_mode == "llm":
        mode = f"llm (event phrase and scene written by {models['distill_llm']})"
    else:
        mode = (
            "extractive (no LLM: the event is the block's most central line, the scene its main noun; "
            f"the tokenizer of {models['llm']} still measures every node)"
        )
    m = result.machine
    window = result.points[0].window if result.points else 0
    llm_column = result.distill_mode == "llm"
    lines = [
        "## Scale: per-step cost against the length of the stream",
        "",
        f"Distillation: **{mode}**.",
        f"Models: LLM {models['llm']}, embedder {models['embedder']}, entities {models['entities']}.",
        f"Machine: {m.describe()}; run on {m.date}, wall time {_duration(result.wall_s)}.",
        f"Stream: synthetic (`assistant/bench/synthetic.py`), seed {result.seed}, {result.speakers} speakers, "
        "fed one utterance per `Memory.add` (its own transaction)"
        + (
            f"; between the timed windows, utterances were embedded ahead in batches of up to {EMBED_AHEAD:,} "
            "(the timed windows embed inline, as the daemon does)."
            if result.embedded_ahead
            else "."
        ),
        "",
        "| utterances | ingest ms/utt median (p95) | mean | blocks"
        + (" | LLM calls" if llm_column else "")
        + " | retrieval ms median (p95) | hit (stale) | memory tokens / T_max | scenes / events / units | database"
        " | RSS (peak) |",
        "|---:|---:|---:|---:" + ("|---:" if llm_column else "") + "|---:|---:|---:|---:|---:|---:|",
    ]
    for p in result.points:
        rss = f"{p.rss_mb:,.0f}" if p.rss_mb is not None else "?"
        lines.append(
            f"| {p.utterances:,} | {p.ingest_ms_median:.1f} ({p.ingest_ms_p95:.1f}) | {p.ingest_ms_mean:.1f} "
            f"| {p.blocks_mounted:,}"
            + (f" | {p.llm_calls:,}" if llm_column else "")
            + f" | {p.retrieval_ms_median:.1f} ({p.retrieval_ms_p95:.1f}) | {p.hit_rate:.2f} ({p.stale_rate:.2f}) "
            f"| {p.memory_tokens:,} / {p.token_budget:,} | {p.scenes:,} / {p.events:,} / {p.amus:,} "
            f"| {_mb(p.database_bytes)} | {rss} ({p.peak_rss_mb:,.0f}) MB |"
        )
    lines.append("")
    if any(p.latest_line for p in result.points):
        lines.append(
            "Where the line that last stated each probe's value was (`+stale`: the context held only an older value):"
        )
        lines.append("")
        for p in result.points:
            where = ", ".join(f"{key} {n}" for key, n in p.latest_line)
            lines.append(f"- {p.utterances:,}: {where}")
        lines.append("")
    if len(result.points) >= 2:
        large = result.points[-1]
        lines.append(_ratio_line("Largest / smallest", result.points[0], large, result.ratios, result.flat))
        start, full = result.full_from, result.full_ratios
        if start is not None and full is not None and start is not result.points[0]:
            lines.append("")
            lines.append(
                _ratio_line(
                    f"Once the memory is full ({FULL_SHARE:.0%} of T_max or more)",
                    start,
                    large,
                    full,
                    result.flat_when_full,
                )
            )
        lines.append("")
    lines.append(
        f"Ingest times are per utterance over the last {window:,} utterances before each size: the median is a "
        "step that only embeds, archives and buffers, the p95 one that also distils, mounts and budgets a block, "
        f"the mean the amortised cost. Retrieval is `Memory.search` for {result.queries} probe questions per size "
        "about facts the stream stated recently (without counting the use); hit means the context handed to the "
        "LLM holds the latest stated value, stale that it holds only a superseded one. Blocks counts those "
        "mounted within the window. Where the latest line was: in the context (context), recalled but cut from "
        "it (cut), recalled but declined unasked, with no context (declined), held by the memory but not recalled "
        "(not_recalled), or let go by the budget (pruned). "
        "The database includes the raw utterance archive with its vectors, which "
        "grows with the stream by design; the tree is bounded by T_max. Peak RSS is the process's high-water "
        "mark so far."
    )
    return "\n".join(lines) + "\n"
