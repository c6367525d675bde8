"""The memory end to end on text, with the real packaged embedder, tokenizer and spaCy extractor."""

from pathlib import Path

import pytest

from assistant.errors import InputError
from assistant.memory.answer import DONT_KNOW
from assistant.records import Level, Utterance
from assistant.transcripts import read_conversations

from .conftest import check_invariants, open_memory

SAMPLE = Path(__file__).resolve().parents[1] / "assistant" / "data" / "sample_conversation.jsonl"


def sample() -> tuple[Utterance, ...]:
    return read_conversations(SAMPLE)[0].utterances


def test_ingest_builds_a_scene_event_unit_tree_with_provenance(memory):
    report = memory.add_many(sample())
    assert report.utterances == 22 and report.duplicates == 0
    check_invariants(memory)
    stats = memory.stats()
    assert stats.scenes >= 1 and stats.events >= 4 and stats.amus >= stats.events
    assert stats.buffered == 0 and stats.pending_blocks == 0
    tree = memory.tree()
    assert all(t.node.level is Level.SCENE for t in tree)
    assert all(e.node.level is Level.EVENT and e.children for t in tree for e in t.children)
    # Re-ingesting the same conversation adds nothing.
    again = memory.add_many(sample())
    assert again.utterances == 0 and again.duplicates == 22


def test_search_finds_the_evidence_for_a_question(memory):
    memory.add_many(sample())
    retrieval = memory.search("When do we fly to Lisbon?")
    best = [r.evidence.text for r in retrieval.lines[:3]]
    assert any("14th of May" in t for t in best), best


def test_asking_counts_as_use_of_the_retrieved_nodes(memory):
    memory.add_many(sample())
    before = {n.id: n.frequency for n in memory.store.nodes()}
    retrieval = memory.search("Who looks after Biscuit the beagle?", use=True)
    # The nodes resting on the best lines, and the nodes just above them, are used; nothing else is.
    top = retrieval.lines[: memory.settings.memory.retrieval.max_events]
    resting = {nid for ids in memory.store.node_ids_of(r.evidence.utterance_id for r in top).values() for nid in ids}
    used = resting | {n.parent_id for n in memory.store.nodes_by_id(resting) if n.parent_id is not None}
    after = {n.id: n.frequency for n in memory.store.nodes()}
    assert used and all(after[i] == before[i] + 1 for i in used)
    assert all(after[i] == before[i] for i in after if i not in used)
    # Searching without use leaves no mark.
    memory.search("Who looks after Biscuit the beagle?")
    assert {n.id: n.frequency for n in memory.store.nodes()} == after


def test_restart_restores_sensing_buffer_and_pending_blocks(tmp_path):
    mem = open_memory(tmp_path)
    for u in sample()[:8]:
        mem.add(u.speaker, u.text, u.time, distill=False)
    buffered = [u.id for u in mem.engine.buffer.buffer]
    context = [u.id for u in mem.engine.buffer.context]
    pending = [b.id for b in mem.store.pending_blocks()]
    assert buffered and pending
    mem.close()
    mem = open_memory(tmp_path)
    assert [u.id for u in mem.engine.buffer.buffer] == buffered
    assert [u.id for u in mem.engine.buffer.context] == context
    assert [b.id for b in mem.store.pending_blocks()] == pending
    mem.add_many(sample()[8:])
    check_invariants(mem)
    assert mem.stats().utterances == 22 and mem.stats().pending_blocks == 0
    mem.close()


def test_reading_a_memory_loads_the_embedder_only_to_encode(tmp_path, monkeypatch):
    with open_memory(tmp_path) as mem:
        mem.add_many(sample()[:6])
        said = [(sp.name, sp.utterances) for sp in mem.speakers()]

    def no_model(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the embedder was loaded")

    monkeypatch.setattr("assistant.embed.load_embedder", no_model)
    with open_memory(tmp_path) as mem:
        assert [(sp.name, sp.utterances) for sp in mem.speakers()] == said
        assert mem.stats().utterances == 6 and mem.tree()
        assert len(mem.utterances_between(since=0)) == 6
        with pytest.raises(AssertionError, match="the embedder was loaded"):
            mem.search("What is Priya allergic to?")


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_utterances_are_refused_and_change_nothing(memory, text):
    memory.add("Ana", "Something to keep.", 1.0)
    with pytest.raises(InputError, match="empty utterance"):
        memory.add("Ana", text, 2.0)
    assert memory.stats().utterances == 1


def test_invalid_unicode_is_refused(memory):
    with pytest.raises(InputError, match="not valid Unicode"):
        memory.add("Ana", "broken \udc80 text", 1.0)
    assert memory.stats().utterances == 0


def test_a_100k_character_utterance_is_split_and_kept_within_budget(tmp_path):
    mem = open_memory(tmp_path, budget=300)
    long_text = " ".join(f"Sentence number {i} is about the harbour in Lisbon." for i in range(2000))[:100_000]
    mem.add("Ana", long_text, 10.0)
    mem.flush()
    limit = mem.settings.memory.ingest.max_utterance_chars
    stored = mem.store.utterances(range(1, 1000))
    assert len(stored) >= 100_000 // limit and all(len(u.text) <= limit for u in stored)
    assert sum(len(u.text) for u in stored) >= 99_000
    check_invariants(mem)
    mem.close()


def test_a_whole_ingest_lands_or_nothing_does(memory):
    stream = [*list(sample()[:10]), Utterance("Ana", "   ", 99.0), *list(sample()[10:])]
    with pytest.raises(InputError):
        memory.add_many(stream)
    stats = memory.stats()
    assert (stats.utterances, stats.scenes + stats.events + stats.amus, stats.pending_blocks) == (0, 0, 0)
    assert memory.engine.buffer.buffer == [] and memory.engine.buffer.context == []
    check_invariants(memory)
    memory.add_many(sample())
    check_invariants(memory)


def test_questions_that_cannot_be_asked(memory):
    with pytest.raises(InputError, match="the question is empty"):
        memory.ask("  ")
    with pytest.raises(InputError, match="the limit is 2,000"):
        memory.ask(" ".join(["word"] * 10_000))


@pytest.mark.slow  # loads the LLM, to read its usage counter
def test_an_empty_memory_does_not_know_without_asking_the_llm(memory):
    llm = memory.llm
    asked = llm.usage.calls
    answer = memory.ask("What did Sam say about the trip?")
    assert not answer.knows and answer.text == DONT_KNOW and answer.evidence == ()
    assert llm.usage.calls == asked


def test_delete_removes_a_subtree_and_cascades(memory):
    memory.add_many(sample())
    scene = memory.tree()[0]
    event = scene.children[0]
    memory.delete(event.node.id)
    assert memory.store.node(event.node.id) is None
    assert all(memory.store.node(c.node.id) is None for c in event.children)
    check_invariants(memory)
    with pytest.raises(InputError, match="no memory node"):
        memory.delete(987654)


def _units(mem) -> dict[int, str]:
    return {n.id: n.text for n in mem.store.nodes(Level.AMU)}


def test_a_restated_fact_takes_the_newer_words(memory):
    memory.add("Sam", "The Lisbon trip moves to May.", time=1000)
    memory.add("Priya", "Great, I will book the hotel.", time=1010)
    memory.flush()
    (unit,) = [i for i, t in _units(memory).items() if "hotel" in t]
    assert "book" in _units(memory)[unit]
    memory.add("Sam", "Update: the Lisbon trip moves to June.", time=90_000)
    memory.add("Priya", "Fine, I will change the hotel.", time=90_010)
    memory.flush()
    # The same unit (its provenance kept, both statements) now says what was said last.
    texts = _units(memory)
    assert "change" in texts[unit] and not any("book" in t for t in texts.values())
    assert set(memory.store.sources([unit])[unit]) and len(memory.store.sources([unit])[unit]) == 2
    node = memory.store.node(unit)
    assert node is not None and node.end_time == 90_010
    found = memory.search("What will Priya do about the hotel?")
    assert any("change the hotel" in a.text for p in found.paths for a in p.amus)
    check_invariants(memory)


def test_an_older_statement_filed_late_does_not_replace_a_newer_one(memory):
    memory.add("Priya", "Fine, I will change the hotel.", time=90_010)
    memory.flush()
    (unit,) = [i for i, t in _units(memory).items() if "hotel" in t]
    memory.add("Priya", "Great, I will book the hotel.", time=1010)
    memory.flush()
    assert "change the hotel" in _units(memory)[unit]
    assert len(memory.store.sources([unit])[unit]) == 2
