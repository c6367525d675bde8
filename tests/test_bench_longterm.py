"""`bench longterm`: LoCoMo conversations woven into the synthetic stream, and the bounded `rag` beside it."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

from assistant.bench.locomo import plan_probes
from assistant.bench.longterm import held, run_longterm, weave, weave_all
from assistant.bench.longterm_report import longterm_json, longterm_markdown
from assistant.bench.synthetic import SyntheticStream
from assistant.bench.systems.prostream import ProStreamArchiveSystem, ProStreamSystem
from assistant.bench.systems.rag_budget import RagBudgetSystem
from assistant.config import Settings, load_settings
from assistant.records import Utterance
from assistant.transcripts import Conversation, read_conversations

from .conftest import overrides
from .test_bench_locomo import _environment, _no_llm
from .test_cli import run

FIXTURE = Path(__file__).parent / "fixtures" / "locomo-mini.json"


def _words(line: str) -> int:
    return len(line.split())


def _mini() -> Conversation:
    return next(c for c in read_conversations(FIXTURE) if c.name == "mini-1")


def test_the_long_stream_weaving_keeps_every_locomo_questions_evidence_in_the_stream_with_its_times():
    conv = _mini()
    budget = 60
    woven = weave(conv, stream_tokens=10 * budget, count=_words, seed=3)
    stream = woven.conversation
    # Every LoCoMo turn is there once, as it was: speaker, words and time.
    at = {ref: i for i, ref in enumerate(stream.refs) if ref is not None}
    assert len(at) == sum(ref is not None for ref in stream.refs)
    original = {ref: u for u, ref in zip(conv.utterances, conv.refs, strict=True)}
    assert set(at) == set(original)
    for ref, u in original.items():
        assert stream.utterances[at[ref]] == u
    # Each question's evidence is in the stream, and the harness asks after it.
    assert stream.questions == conv.questions
    for probe in plan_probes(stream):
        ids = {e for e in conv.questions[probe.number].evidence}
        assert {stream.refs[i] for i in probe.evidence} == ids
        assert probe.at >= max(probe.evidence)
    # The stream is 10x the budget, most of it other talk.
    assert sum(_words(u.line) for u in stream.utterances) >= 10 * budget
    assert woven.synthetic_tokens > woven.locomo_tokens
    # One room, one conversation at a time: the lines are in time order, and the other talk
    # comes between LoCoMo's sessions, spread over their weeks, by other people.
    times = [u.time for u in stream.utterances]
    assert all(a <= b for a, b in pairwise(times))
    synthetic = [i for i, ref in enumerate(stream.refs) if ref is None]
    assert min(synthetic) < at["D2:1"] < max(synthetic)
    assert {stream.utterances[i].speaker for i in synthetic}.isdisjoint({u.speaker for u in conv.utterances})
    # A fact's position is the line that last stated its value.
    assert woven.facts and all(f.found_in(stream.utterances[f.stated_at].text) for f in woven.facts)
    assert any(f.stale for f in woven.facts)


def test_a_synthetic_speaker_named_like_a_locomo_speaker_is_renamed_everywhere():
    taken = SyntheticStream(0).speakers[:2]
    conv = Conversation(
        "clash",
        (Utterance(taken[0], "We should plan the garden.", 1.7e9), Utterance(taken[1], "Yes, in spring.", 1.7e9 + 30)),
        ("D1:1", "D1:2"),
    )
    woven = weave(conv, stream_tokens=2_000, count=_words, seed=0)
    assert set(woven.renamed) == set(taken)
    others = [u for u, ref in zip(woven.conversation.utterances, woven.conversation.refs, strict=True) if ref is None]
    for name in taken:
        assert all(u.speaker != name and name not in u.text.split() for u in others)
        assert all(name not in f.question for f in woven.facts)
    assert any(u.speaker in woven.renamed.values() for u in others)


def test_a_fact_is_held_only_when_its_latest_value_is_in_the_context():
    fact = next(f for f in weave(_mini(), stream_tokens=600, count=_words, seed=3).facts if f.stale)
    assert held(fact, f"notes: {fact.answer}; before that {fact.stale[0]}") == "latest"
    assert held(fact, f"notes: {fact.stale[-1]}") == "stale"
    assert held(fact, "notes: nothing on it") == "neither"


def _settings(tmp_path: Path, budget: int) -> Settings:
    over = overrides(tmp_path / "data", memory={"distill": {"mode": "extractive"}, "budget": {"token_budget": budget}})
    return load_settings(user_file=tmp_path / "no-user-config.yaml", overrides=over)


def test_rag_budget_searches_only_the_most_recent_lines_that_fit_the_budget(tmp_path):
    settings = _settings(tmp_path, 40)
    system = RagBudgetSystem(_environment(settings, tmp_path / "rag-budget"))
    count = system.answerer.tokenizer.count
    lines = [Utterance("Ana", f"Line {i}: the parcel for flat {i} came today.", 1.7e9 + 60 * i) for i in range(12)]
    for i, u in enumerate(lines):
        system.add(i, u)
    kept = sorted(system.remembered())
    assert kept[-1] == 11 and kept == list(range(kept[0], 12))
    assert sum(count(lines[i].line) for i in kept) <= 40 < sum(count(lines[i].line) for i in range(kept[0] - 1, 12))
    assert system.memory_tokens() == sum(count(lines[i].line) for i in kept)
    # The oldest line is gone: a question about it finds only what is kept.
    context = system.context("What came for flat 0?")
    assert context.positions and context.positions <= set(kept) and "flat 0 " not in context.text


def test_only_the_archive_system_falls_back_to_the_archive(tmp_path):
    """`prostream`'s figures are the bounded memory's alone, whatever the settings say; the archive
    fallback is measured as `prostream-archive`."""
    over = overrides(
        tmp_path / "data",
        memory={
            "distill": {"mode": "extractive"},
            "budget": {"token_budget": 40},
            "answer": {"archive_fallback": True},
        },
    )
    settings = load_settings(user_file=tmp_path / "no-user-config.yaml", overrides=over)
    said = [Utterance("Ana", "The spare key for the shed is under the blue flowerpot.", 1.7e9)]
    said += [Utterance("Bo", f"Line {i}: the parcel for flat {i} came today.", 1.7e9 + 3600 * i) for i in range(1, 13)]
    reached = {}
    for cls in (ProStreamSystem, ProStreamArchiveSystem):
        system = cls(_environment(settings, tmp_path / cls.name))
        for i, u in enumerate(said):
            system.add(i, u)
        system.end_of_stream()
        assert 0 not in system.remembered()
        reached[cls.name] = 0 in system.context("Where is the spare key for the shed?").positions
    assert reached == {"prostream": False, "prostream-archive": True}


def test_a_recall_only_long_run_asks_the_questions_and_the_facts(tmp_path, monkeypatch):
    _no_llm(monkeypatch)
    settings = _settings(tmp_path, 32_768)
    streams = weave_all(settings, [_mini()], stream_tokens=1_500, seed=3)
    assert streams[0].tokens >= 1_500
    run = run_longterm(settings, FIXTURE, streams, token_budget=150, stream_tokens=1_500, seed=3, recall_only=True)
    # The memory with the archive to fall back on is a system of its own, beside the bounded one.
    assert run.locomo.systems == ("prostream", "prostream-archive", "rag", "rag-budget")
    assert len(run.locomo.results) == 4 * 2 * len(_mini().questions)
    facts = streams[0].facts
    assert len(run.facts) == 4 * len(facts)
    report = longterm_json(run)
    json.dumps(report)
    meta = report["meta"]
    assert meta["token_budget"] == 150 and meta["streams"][0]["tokens"] >= 1_500
    # The unbounded store holds every line; the bounded one and the memory stayed near the budget.
    rag, bounded = report["systems"]["rag"], report["systems"]["rag-budget"]
    assert rag["memory_tokens"] >= 1_400 and bounded["memory_tokens"] <= 150
    assert rag["facts"]["all"]["n"] == len(facts) and rag["facts"]["all"]["latest"] > 0
    quarters = rag["facts"]["updated_by_quarter"]
    assert len(quarters) == 4 and sum(q["n"] for q in quarters) == rag["facts"]["updated"]["n"] > 0
    assert "**Synthetic facts at the end of the stream**" in longterm_markdown(report)


def test_the_command_says_its_defaults_are_scaled_down_for_a_cpu(tmp_path):
    out = run(["bench", "longterm", "--help"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "--stream-tokens" in out.stdout and "4096" in out.stdout and "10x the budget" in out.stdout
