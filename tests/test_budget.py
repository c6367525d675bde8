"""The hard token budget is an invariant: it holds after every ingest step, whatever the stream."""

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.config import BudgetOptions, UtilityOptions
from assistant.memory.budget import enforce_budget, utility
from assistant.records import Level
from assistant.transcripts import read_conversations

from .conftest import check_invariants, open_memory
from .requirements import need_locomo

SPEAKERS = ["Ana", "Bo", "Chen", "Dara"]
WORDS = (
    "I we you went to the market bought apples Lisbon trip in May budget approved twelve thousand euros "
    "my sister adopted a beagle called Biscuit painted sunset lake yesterday project Atlas beta release "
    "bug export fixed piano lesson Wednesday design review Thursday morning allergic peanuts curry spicy"
).split()

sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=25).map(lambda ws: " ".join(ws).capitalize() + ".")
stream = st.lists(
    st.tuples(st.sampled_from(SPEAKERS), sentence, st.floats(min_value=0, max_value=3 * 86400)),
    min_size=1,
    max_size=30,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(utterances=stream, budget=st.integers(min_value=1, max_value=250), merge=st.floats(min_value=0.5, max_value=1.0))
def test_budget_holds_after_every_step(utterances, budget, merge):
    with tempfile.TemporaryDirectory() as tmp:
        mem = open_memory(Path(tmp), budget={"token_budget": budget, "merge_threshold": merge})
        try:
            clock = 0.0
            for speaker, text, dt in utterances:
                clock += dt
                mem.add(speaker, text, clock)
                check_invariants(mem)
                if clock > 86400:
                    mem.search(text, use=True)
            mem.flush()
            check_invariants(mem)
        finally:
            mem.close()


def test_utility_follows_equation_1():
    opts = UtilityOptions(alpha=0.6, beta=0.4, tau_seconds=100.0)
    assert utility(0, 50.0, 50.0, opts) == pytest.approx(0.4)
    assert utility(3, 0.0, 100.0, opts) == pytest.approx(0.6 * 1.3862944 + 0.4 * 0.3678794, rel=1e-6)
    # More use and more recent use are both worth more.
    assert utility(5, 0.0, 10.0, opts) > utility(1, 0.0, 10.0, opts)
    assert utility(1, 9.0, 10.0, opts) > utility(1, 0.0, 10.0, opts)


def test_locomo_conv26_streams_within_a_small_budget(tmp_path):
    conv = next(c for c in read_conversations(need_locomo()) if c.name == "conv-26")
    assert len(conv.utterances) == 419
    mem = open_memory(tmp_path, budget=400)
    try:
        for i, u in enumerate(conv.utterances):
            mem.add(u.speaker, u.text, u.time)
            assert mem.store.total_tokens() <= 400
            if i % 50 == 0:
                check_invariants(mem)
        mem.flush()
        check_invariants(mem)
        stats = mem.stats()
        assert stats.utterances == 419
        # The budget was binding: far more was distilled than it can hold.
        assert stats.tokens > 300 and stats.events >= 3
    finally:
        mem.close()


def test_merging_a_restated_fact_keeps_its_latest_value(tmp_path):
    """Over budget, near-identical units merge; when they hold one fact at two moments, the merged
    unit says the later value even though the older one, used more, is the one kept."""
    mem = open_memory(tmp_path)
    try:
        store, embed = mem.store, mem.engine.embedder.encode
        old_text, new_text = (
            "Priya said the trip budget is 12,000 euros.",
            "Priya said the trip budget is 14,000 euros.",
        )
        vectors = embed([old_text, new_text, "A long talk about gardens."])
        with store.atomic():
            scene = store.add_node(Level.SCENE, None, "trip", 1, vectors[0], created=0.0)
            event = store.add_node(Level.EVENT, scene, "budget talk", 2, vectors[0], created=0.0)
            old = store.add_node(
                Level.AMU, event, old_text, 12, vectors[0], created=0.0, start_time=100.0, end_time=100.0
            )
            new = store.add_node(
                Level.AMU, event, new_text, 12, vectors[1], created=0.0, start_time=900.0, end_time=900.0
            )
            other = store.add_node(Level.AMU, event, "A long talk about gardens.", 7, vectors[2], created=0.0)
            store.db.execute("UPDATE nodes SET frequency = 5 WHERE id = ?", (old,))
            report = enforce_budget(
                store, BudgetOptions(token_budget=30, merge_threshold=0.9), mem.settings.memory.utility, 1000.0
            )
        assert report.merged == 1 and report.pruned == 0
        kept = store.node(old)
        assert kept is not None and store.node(new) is None and store.node(other) is not None
        assert kept.text == new_text and kept.frequency == 5 and (kept.start_time, kept.end_time) == (100.0, 900.0)
        assert store.total_tokens() == 1 + 2 + 12 + 7
    finally:
        mem.close()
