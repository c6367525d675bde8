"""The scale benchmark: the synthetic stream, and a small run on the real memory (SQLite, embedder, spaCy)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from assistant.bench.scale import (
    WHERE_LATEST,
    _settings_for,
    check_kept_lines,
    kept_argument,
    reopen_kept,
    run_scale,
)
from assistant.bench.scale_report import scale_json, scale_markdown
from assistant.bench.scale_result import ScalePoint, ScaleResult
from assistant.bench.synthetic import SyntheticStream, synthetic_utterances
from assistant.config import Settings, load_settings
from assistant.errors import InputError
from assistant.records import Utterance

from .conftest import overrides


def settings(tmp_path: Path, **memory: Any) -> Settings:
    # The data directory here is a decoy: run_scale must put its database where it is told.
    return load_settings(
        user_file=tmp_path / "no-user-config.yaml", overrides=overrides(tmp_path / "unused", memory=memory)
    )


# --- the stream -------------------------------------------------------------------------------


def test_stream_is_deterministic_for_a_seed_and_a_prefix_of_longer_runs():
    first = list(synthetic_utterances(600, seed=7))
    assert len(first) == 600 and all(isinstance(u, Utterance) for u in first)
    assert list(synthetic_utterances(600, seed=7)) == first
    assert list(synthetic_utterances(600, seed=8)) != first
    # The first n utterances do not depend on how many are drawn, nor on probes drawn between them.
    stream = SyntheticStream(7)
    head = list(stream.take(250))
    stream.probes(20, recent=100)
    assert head + list(stream.take(350)) == first
    assert stream.produced == 600
    assert list(SyntheticStream(7).take(0)) == []


def test_stream_reads_like_many_people_talking_over_weeks():
    stream = SyntheticStream(0)
    us = list(stream.take(3000))
    speakers = Counter(u.speaker for u in us)
    assert len(speakers) >= 25
    assert max(speakers.values()) < 0.12 * len(us)  # no one voice dominates
    times = [u.time for u in us]
    assert all(b > a for a, b in pairwise(times))
    gaps = [b - a for a, b in pairwise(times)]
    # Turns follow each other within a minute or so; sessions are hours or days apart.
    assert sorted(gaps)[len(gaps) // 2] < 60
    sessions = sum(g > 1500 for g in gaps)
    assert 40 <= sessions <= 600 and sessions == stream.sessions - 1
    assert times[-1] - times[0] > 30 * 86400
    # Varied wording with numbers and dates in it, not one sentence repeated.
    texts = [u.text for u in us]
    assert len(set(texts)) > 0.6 * len(texts)
    assert sum(bool(re.search(r"\d", t)) for t in texts) > 0.25 * len(texts)
    assert len({w for t in texts for w in t.split()}) > 1200


def test_topics_recur_across_sessions_and_their_facts_drift():
    stream = SyntheticStream(0)
    us = list(stream.take(3000))
    facts = stream.facts()
    assert len(facts) >= 100
    # Recurrence: many topics come up again in separate sessions, a few in dozens.
    recurring = stream.topic_sessions()
    assert sum(n >= 3 for n in recurring.values()) >= 20 and max(recurring.values()) >= 10
    assert {f.topic for f in facts} <= set(recurring)
    # Drift: many facts changed value at least once, and the old values are kept as stale.
    drifted = [f for f in facts if f.stale]
    assert len(drifted) > 0.3 * len(facts)
    for f in facts:
        assert f.answer not in f.stale
        # The utterance a fact is stamped with really states its latest value.
        assert f.found_in(us[f.stated_at].text), (f, us[f.stated_at])
        assert us[f.stated_at].time == pytest.approx(f.time, abs=0.06)


def test_probes_prefer_recent_facts_and_say_whether_a_context_is_current_or_stale():
    stream = SyntheticStream(3)
    list(stream.take(2000))
    probes = stream.probes(15, recent=300)
    assert len(probes) == 15 and len({p.question for p in probes}) == 15
    assert all(p.stated_at >= 2000 - 300 for p in probes)
    assert all(p.question.endswith("?") and p.answer for p in probes)
    assert stream.probes(15, recent=300) == probes  # the same position gives the same probes
    drifted = next(p for p in stream.facts() if p.stale)
    old = drifted.stale[-1]
    assert drifted.found_in(f"We said {drifted.answer}.") and not drifted.stale_in(f"We said {drifted.answer}.")
    assert drifted.stale_in(f"We said {old}.") and not drifted.found_in(f"We said {old}.")
    # Whole phrases only: "1 April" is not found inside "21 April".
    assert not drifted.found_in(f"x{drifted.answer}y")


def test_the_stream_says_which_fact_each_line_states():
    """What a supersession link is checked against: the line that last stated a fact is recorded
    as stating it, with its value in its words, and a line that asks states none."""
    stream = SyntheticStream(5)
    lines = list(stream.take(1500))
    for fact in stream.facts():
        assert stream.fact_stated_by(fact.stated_at) == (fact.topic, fact.slot)
        assert fact.found_in(lines[fact.stated_at].text)
    stating = [i for i in range(len(lines)) if stream.fact_stated_by(i) is not None]
    assert 0.1 * len(lines) < len(stating) < 0.6 * len(lines)
    assert all(stream.fact_stated_by(i) is None for i, u in enumerate(lines) if u.text.endswith("?"))


# --- a small run ------------------------------------------------------------------------------


def test_a_small_run_measures_every_size_within_budget(tmp_path):
    calls: list[tuple[int, int]] = []
    data = tmp_path / "scale"
    # A budget small enough to bind within 150 utterances, so the bound is exercised, not just stated.
    result = run_scale(
        settings(tmp_path, budget={"token_budget": 1024}),
        [150, 50],
        queries=6,
        seed=1,
        data_dir=data,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert isinstance(result, ScaleResult) and result.distill_mode == "extractive"
    assert (data / "memory.db").exists()
    assert calls[-1] == (150, 150) and len(calls) == 150
    small, large = result.points
    assert (small.utterances, large.utterances) == (50, 150)
    for p in result.points:
        assert p.window == 50 and p.queries == 6
        assert 0 < p.ingest_ms_median <= p.ingest_ms_p95 and p.ingest_ms_mean > 0
        assert 0 < p.retrieval_ms_median <= p.retrieval_ms_p95
        assert 0.0 <= p.hit_rate <= 1.0 and 0.0 <= p.stale_rate <= 1.0 and p.hit_rate + p.stale_rate <= 1.0
        assert 0 < p.memory_tokens <= p.token_budget == 1024
        assert p.scenes > 0 and p.events > 0 and p.amus > 0 and p.nodes == p.scenes + p.events + p.amus
        assert p.archived_utterances == p.utterances
        assert p.blocks_mounted > 0 and p.llm_calls == 0
        assert p.database_bytes > 0 and p.peak_rss_mb > 0
        # Every probe's latest line is found somewhere: in the context exactly when the value is.
        where = dict(p.latest_line)
        assert sum(where.values()) == p.queries and {k.split("+")[0] for k in where} <= set(WHERE_LATEST)
        assert where.get("context", 0) == round(p.hit_rate * p.queries)
    assert large.memory_tokens > 0.5 * 1024  # the budget was reached, and held
    assert large.peak_rss_mb >= small.peak_rss_mb and large.elapsed_s > small.elapsed_s
    ratios = result.ratios
    assert set(ratios) == {"ingest_ms_median", "ingest_ms_p95", "ingest_ms_mean", "retrieval_ms_median",
                           "retrieval_ms_p95"}  # fmt: skip
    assert all(v is not None and v > 0 for v in ratios.values())
    assert ratios["ingest_ms_median"] == pytest.approx(large.ingest_ms_median / small.ingest_ms_median)

    md = scale_markdown(result)
    assert "extractive" in md and "| 50 |" in md and "| 150 |" in md and "Largest / smallest, 150 / 50" in md
    assert f"{result.machine.cpus} CPU cores" in md and "all-minilm-l6-v2" in md
    payload = json.loads(json.dumps(scale_json(result)))
    assert payload["distill_mode"] == "extractive" and [p["utterances"] for p in payload["points"]] == [50, 150]
    assert payload["ratios"]["retrieval_ms_p95"] == pytest.approx(ratios["retrieval_ms_p95"])

    # The verdicts: flat when the judged ratios stay within 1.5x, read again from the first full size.
    def at(size: int, tokens: int, ms: float) -> ScalePoint:
        return replace(small, utterances=size, token_budget=2048, memory_tokens=tokens, ingest_ms_median=ms,
                       ingest_ms_mean=ms, retrieval_ms_median=ms)  # fmt: skip

    grew = replace(result, points=(at(100, 500, 10.0), at(1000, 2040, 30.0), at(10000, 2048, 33.0)))
    assert grew.flat is False and grew.full_from is grew.points[1] and grew.flat_when_full is True
    assert grew.ratios["ingest_ms_mean"] == pytest.approx(3.3) and grew.full_ratios is not None
    assert "Once the memory is full" in scale_markdown(grew) and "**not flat**" in scale_markdown(grew)
    never_full = replace(result, points=(at(100, 500, 10.0), at(1000, 900, 11.0)))
    assert never_full.flat is True and never_full.full_from is None and never_full.flat_when_full is None

    # Utterances 51-100 lie before the 150 point's timed window: they were embedded ahead.
    assert result.embedded_ahead and "embedded ahead in batches" in md and payload["embedded_ahead"] is True

    # A used data directory would measure something else: refused before anything loads.
    with pytest.raises(InputError, match="already exists"):
        run_scale(settings(tmp_path), [10], data_dir=data)

    # The kept memory opens again where the run left it, its stream moved on to the next line.
    memory, stream = reopen_kept(data, 150, seed=1, settings=settings(tmp_path, budget={"token_budget": 1024}))
    with memory:
        assert memory.stats().utterances == 150 and memory.store.total_tokens() == large.memory_tokens
        assert next(iter(stream.take(1))) == list(SyntheticStream(1, speakers=36).take(151))[-1]

    # Its lines are the stream's by number, which the scripts that read a kept memory check first:
    # read against another seed's stream, or a stream cut shorter, they are not.
    memory, _ = reopen_kept(data, 150, seed=1, settings=settings(tmp_path, budget={"token_budget": 1024}))
    said = [u.text for u in SyntheticStream(1, speakers=36).take(150)]
    other = [u.text for u in SyntheticStream(2, speakers=36).take(150)]
    with memory:
        assert check_kept_lines(memory, said, [150, 1, 1], "kept") == {1: said[0], 150: said[149]}
        with pytest.raises(InputError, match="kept: line 1 is not the stream's utterance 0"):
            check_kept_lines(memory, other, [1], "kept")
        with pytest.raises(InputError, match="line 150 is not"):
            check_kept_lines(memory, said[:149], [1, 150], "kept")


def test_embedding_ahead_builds_the_memory_that_inline_embedding_builds(tmp_path):
    def run(ahead: bool) -> ScaleResult:
        # Utterances 41-140 lie between the timed windows (20 each), under a budget that binds.
        return run_scale(settings(tmp_path / str(ahead), budget={"token_budget": 1024}), [40, 160], queries=4,
                         seed=2, embed_ahead=ahead, window=20)  # fmt: skip

    inline, ahead = run(False), run(True)
    assert not inline.embedded_ahead and ahead.embedded_ahead
    for a, b in zip(inline.points, ahead.points, strict=True):
        assert (a.memory_tokens, a.scenes, a.events, a.amus, a.archived_utterances, a.hit_rate, a.stale_rate) == (
            b.memory_tokens, b.scenes, b.events, b.amus, b.archived_utterances, b.hit_rate, b.stale_rate)  # fmt: skip


@pytest.mark.parametrize(
    ("sizes", "kwargs", "message"),
    [
        ([], {}, "at least one"),
        ([100, 0], {}, "positive"),
        ([100], {"distill_mode": "abstractive"}, "llm, extractive"),
        ([100], {"queries": 0}, "probe question"),
    ],
)
def test_bad_arguments_are_refused_with_a_message(tmp_path, sizes, kwargs, message):
    with pytest.raises(InputError, match=message):
        run_scale(settings(tmp_path), sizes, **kwargs)


@pytest.mark.slow
def test_llm_distillation_mode_runs_and_says_so(tmp_path):
    result = run_scale(settings(tmp_path), [8], distill_mode="llm", queries=2)
    (point,) = result.points
    assert result.distill_mode == "llm" and point.blocks_mounted >= 1
    assert point.llm_calls >= 2 * point.blocks_mounted  # an event phrase and a scene per block
    assert all(v is None for v in result.ratios.values()) and result.flat is None
    md = scale_markdown(result)
    assert "**llm (event phrase and scene written by" in md and "Largest / smallest" not in md


def test_the_probes_read_the_bounded_memory_alone(tmp_path):
    """What `bench scale` measures is what the memory keeps: its probes never fall back to the
    archive, which holds every line of the stream, whatever the settings say."""
    over = overrides(tmp_path / "data", memory={"answer": {"archive_fallback": True}})
    settings = load_settings(user_file=tmp_path / "no-user-config.yaml", overrides=over)
    assert settings.memory.answer.archive_fallback
    assert not _settings_for(settings, "extractive", tmp_path / "run").memory.answer.archive_fallback


def test_a_probe_the_answer_declines_unasked_is_counted_as_declined_not_cut(tmp_path):
    """A probe whose latest line recall found, but whose answer was declined without asking the
    model (no context at all), was lost at the decline: counting it as cut would send a reader to
    the context's token limit for a loss the abstention made."""
    # A relevance threshold of 1.0 declines every probe but one a line answers in all its content
    # words, so most probes lose their context while recall runs as before.
    asked = run_scale(settings(tmp_path / "asked", budget={"token_budget": 1024}), [120], queries=6, seed=3)
    declined = run_scale(
        settings(tmp_path / "declined", budget={"token_budget": 1024}, answer={"min_relevance": 1.0}),
        [120], queries=6, seed=3,
    )  # fmt: skip
    (a,), (d,) = asked.points, declined.points
    where_asked, where_declined = dict(a.latest_line), dict(d.latest_line)
    assert "declined" not in where_asked and where_asked.get("context", 0) > 0
    # The same memory, the same probes: what the asked run held in its context, the declining run
    # lost at the decline (or, for an exact match, still held).
    assert where_declined.get("declined", 0) > 0
    assert where_declined.get("declined", 0) + where_declined.get("context", 0) >= where_asked.get("context", 0)
    assert where_declined.get("cut", 0) <= where_asked.get("cut", 0)


def test_a_kept_memory_is_named_by_directory_size_and_seed():
    assert kept_argument("runs/d100k:100000") == (Path("runs/d100k"), 100000, 0)
    assert kept_argument("d3:10000:3") == (Path("d3"), 10000, 3)
