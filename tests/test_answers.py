"""Distillation and answers with the real packaged LLMs (slow: it loads Qwen2.5-Coder-1.5B and 0.5B).

The 0.5B distils: what is checked of distillation holds whatever the model writes (the events'
size and form, the calls counted), and it distils in about half the time. The 1.5B answers, as
the product's default does."""

from pathlib import Path

import pytest

from .conftest import check_invariants, open_memory
from .test_memory import sample

pytestmark = pytest.mark.slow

SMALL = "qwen2.5-coder-0.5b-instruct"


@pytest.fixture(scope="module")
def llm_memory(tmp_path_factory):
    mem = open_memory(tmp_path_factory.mktemp("llm") / "data", mode="llm", distill_llm=SMALL)
    distiller = mem.engine.distiller.llm
    before = distiller.usage.calls  # the loaded LLM is shared by every test in the process
    mem.add_many(sample())
    mem.distill_calls = distiller.usage.calls - before
    yield mem
    mem.close()


def test_llm_distillation_writes_events_and_scenes(llm_memory):
    check_invariants(llm_memory)
    tree = llm_memory.tree()
    events = [e for s in tree for e in s.children]
    assert len(events) >= 4
    for scene in tree:
        assert 0 < len(scene.node.text) <= 80 and "\n" not in scene.node.text
    for event in events:
        assert 0 < event.node.tokens <= llm_memory.settings.memory.distill.max_event_tokens
        assert not event.node.text.lower().startswith(("event phrase", "summary"))
    # The LLM did the work: its calls are counted, and event phrases are not copies of a line.
    assert llm_memory.distill_calls >= 2 * len(events)
    lines = {u.line for u in sample()}
    assert sum(e.node.text in lines for e in events) < len(events)


def test_answer_is_grounded_in_cited_utterances(llm_memory):
    answer = llm_memory.ask("When do we fly out to Lisbon?")
    assert answer.knows, answer.text
    assert "14" in answer.text or "May" in answer.text, answer.text
    assert answer.evidence, "an answer must cite what it rests on"
    assert any("14th of May" in e.text and e.speaker == "Priya" for e in answer.evidence), answer.evidence
    assert answer.context_tokens <= llm_memory.settings.memory.answer.context_tokens


def test_streaming_yields_text_then_the_answer(llm_memory):
    items = list(llm_memory.ask_stream("What is the name of Priya's dog?"))
    *pieces, answer = items
    assert pieces and all(isinstance(p, str) for p in pieces)
    assert "Biscuit" in answer.text
    assert any("Biscuit" in e.text for e in answer.evidence)


def test_unrelated_question_gets_i_dont_know(llm_memory):
    answer = llm_memory.ask("What colour is the submarine that Dara bought in Tokyo?")
    assert not answer.knows, answer.text
    assert answer.evidence == ()


def test_budget_holds_with_llm_distillation(tmp_path: Path):
    # What is checked is the pruning, whatever the model writes.
    mem = open_memory(tmp_path, mode="llm", budget=60, distill_llm=SMALL)
    for u in sample():
        mem.add(u.speaker, u.text, u.time)
        assert mem.store.total_tokens() <= 60
    mem.flush()
    check_invariants(mem)
    mem.close()
