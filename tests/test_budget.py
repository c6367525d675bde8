"""The hard token budget is an invariant: it holds after every ingest step, whatever the stream."""

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.config import UtilityOptions
from assistant.memory.budget import utility
from assistant.transcripts import read_conversations

from .conftest import LOCOMO, check_invariants, open_memory

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
    conv = next(c for c in read_conversations(LOCOMO) if c.name == "conv-26")
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
