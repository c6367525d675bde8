"""The table of `assistant bench daemon`: the two passes side by side, and how the asks fared."""

from __future__ import annotations

from typing import Any


def daemon_markdown(report: dict[str, Any]) -> str:
    meta, idle, loaded, cmp = report["meta"], report["passes"]["idle"], report["passes"]["load"], report["comparison"]
    load, slow = loaded["load"], loaded["slow_subscriber"]

    def lat(x: dict[str, Any]) -> str:
        return f"{x['p50']:.2f} s (p95 {x['p95']:.2f}, max {x['max']:.2f}; n={x['n']})"

    lines = [
        f"# Daemon under load ({meta['date']})",
        "",
        f"Machine: {meta['machine']}. LLM {meta['llm']}, speech to text {meta['stt']}, extractive distillation.",
        f"Recording: {meta['turns']} turns, {meta['audio_seconds']:.0f} s, two espeak-ng voices, played in real time.",
        f"Load: {load['clients']} clients x {load['questions_per_client']} question(s), all at once from "
        f"{load['started_at']:.1f} s into the recording, for {load['seconds']:.0f} s; a slow live-transcript "
        f"reader ({slow['interval_seconds']:.0f} s per line).",
        "",
        "| | no load | load |",
        "|---|---|---|",
        f"| end of speech to acknowledged, all turns | {lat(idle['ingest']['delay'])} "
        f"| {lat(loaded['ingest']['delay'])} |",
        f"| same, the {cmp['turns_compared']} turns that ended under load | {cmp['delay_p50_idle']:.2f} s "
        f"(p95 {cmp['delay_p95_idle']:.2f}) | {cmp['delay_p50_load']:.2f} s (p95 {cmp['delay_p95_load']:.2f}) |",
        f"| turns never acknowledged | {cmp['missed_turns_idle']} | {cmp['missed_turns_load']} |",
        f"| /status lag, max | {idle['status']['lag_max']:.2f} s | {loaded['status']['lag_max']:.2f} s |",
        f"| queued segments, max | {idle['status']['queued_max']} | {loaded['status']['queued_max']} |",
        f"| /status response time | {idle['status']['status_ms']['p50']:.0f} ms (p95 "
        f"{idle['status']['status_ms']['p95']:.0f}) | {loaded['status']['status_ms']['p50']:.0f} ms (p95 "
        f"{loaded['status']['status_ms']['p95']:.0f}) |",
        f"| daemon RSS at the end (peak) | {idle['daemon']['rss_mib']:.0f} MiB ({idle['daemon']['peak_rss_mib']:.0f})"
        f" | {loaded['daemon']['rss_mib']:.0f} MiB ({loaded['daemon']['peak_rss_mib']:.0f}) |",
        "",
        f"Asks: {load['answered']} of {load['asked']} answered ({load['error_count']} errors), "
        f"{load['answered_by_llm']} by the LLM (the rest found nothing relevant), {load['knows']} with an answer.",
        "",
        "| ask latency | first token | final answer |",
        "|---|---|---|",
        f"| all | {lat(load['first_token'])} | {lat(load['answer'])} |",
        f"| answered by the LLM | {lat(load['first_token_llm'])} | {lat(load['answer_llm'])} |",
        "",
        f"Slow subscriber: {slow['lines']} of {slow['expected']} lines, {slow['skipped']} skipped "
        f"({'every line' if slow['all_lines'] else 'told what it lost' if slow['complete'] else 'INCOMPLETE'}).",
        f"Stalled: {'YES' if cmp['stalled'] else 'no'} "
        f"(median extra delay under load {cmp['delay_increase_p50']:.2f} s).",
    ]
    return "\n".join(lines) + "\n"
