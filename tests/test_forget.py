"""Forget: what goes, what is re-filed, and that the words are gone from every file afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.errors import InputError
from assistant.memory.forget import ForgetFilter
from assistant.records import Utterance
from assistant.transcripts import read_conversations

from .conftest import check_invariants, open_memory

SAMPLE = Path(__file__).resolve().parents[1] / "assistant" / "data" / "sample_conversation.jsonl"
PHRASE = "purple xylophone quartet"


def _conversation() -> list[Utterance]:
    utterances = list(read_conversations(SAMPLE)[0].utterances)
    t = utterances[5].time
    # Zed's words sit in the middle of a block with other people's, so an event rests partly on them.
    utterances.insert(6, Utterance("Zed", f"My band, the {PHRASE.title()}, plays the client dinner.", t + 5))
    utterances.insert(7, Utterance("Zed", f"Book the {PHRASE} for eight o'clock then.", t + 8))
    return utterances


@pytest.fixture
def memory(tmp_path):
    mem = open_memory(tmp_path / "data")
    mem.add_many(_conversation())
    yield mem
    mem.close()


def _scan(directory: Path, phrase: str) -> list[str]:
    """Every file under `directory` that holds the phrase in any form an index might keep."""
    forms = set()
    for variant in (phrase, phrase.lower(), phrase.title(), phrase.upper()):
        forms |= {variant.encode("utf-8"), variant.encode("utf-16-le"), variant.encode("utf-16-be")}
        forms |= {w.encode("utf-8") for w in variant.split() if len(w) > 6}  # the rare words alone
    hits = []
    for path in directory.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits += [f"{path.name}: {f!r}" for f in forms if f in data]
    return hits


def test_forgetting_a_speaker_leaves_no_trace_of_their_words(memory, tmp_path):
    data_dir = tmp_path / "data"
    assert _scan(data_dir, PHRASE)  # the scan finds the words while they are there
    plan = memory.forget_plan(ForgetFilter(speaker="Zed"))
    assert len(plan.utterances) == 2 and plan.speakers and plan.refiled_events
    assert any(PHRASE in e.lower() for e in plan.examples)
    report = memory.forget(ForgetFilter(speaker="Zed"))
    memory.engine.distill_pending()  # what the touched events still rest on is filed again
    assert report.utterances == 2 and report.speakers == 1
    assert "Zed" not in {s.name for s in memory.speakers()}
    assert not _scan(data_dir, PHRASE)
    assert not _scan(data_dir, "Zed:")
    # Everyone else's memory still answers.
    found = memory.search("Who is looking after Priya's dog?")
    assert any("Biscuit" in r.evidence.text for r in found.lines)
    assert memory.stats().utterances == 22
    check_invariants(memory)
    audit = memory.store.db.all("SELECT detail FROM audit WHERE action = 'forget'")
    assert len(audit) == 1 and json.loads(audit[0][0])["by"] == ["speaker"]


def test_forgetting_words_rewrites_what_mentioned_them(memory, tmp_path):
    report = memory.forget(ForgetFilter(text="lisbon"))
    memory.engine.distill_pending()
    assert report.utterances == 1
    for node in memory.store.nodes():
        assert "lisbon" not in node.text.lower()
    assert not _scan(tmp_path / "data", "Lisbon")
    audit = json.loads(memory.store.db.all("SELECT detail FROM audit WHERE action = 'forget'")[0][0])
    assert audit["text_chars"] == 6 and "lisbon" not in json.dumps(audit).lower()
    check_invariants(memory)


def test_a_time_range_and_a_dry_run(memory):
    start = _conversation()[0].time
    f = ForgetFilter(since=start, until=start + 60)
    plan = memory.forget_plan(f)
    assert len(plan.utterances) == 3 and memory.stats().utterances == 24  # the dry run changed nothing
    memory.forget(f, plan)
    assert memory.stats().utterances == 21


def test_forgetting_everything_leaves_a_small_empty_store(memory, tmp_path):
    memory.forget(ForgetFilter(everything=True))
    s = memory.stats()
    assert (s.utterances, s.scenes, s.events, s.amus, s.tokens, s.buffered, s.pending_blocks) == (0, 0, 0, 0, 0, 0, 0)
    assert memory.speakers() == []
    files = {p.name: p.stat().st_size for p in (tmp_path / "data").iterdir() if p.is_file()}
    assert sum(files.values()) < 400_000, files
    assert files.get("memory.db-wal", 0) == 0
    assert not _scan(tmp_path / "data", "Biscuit")


@pytest.mark.parametrize(
    "f, message",
    [
        (ForgetFilter(), "say what to forget"),
        (ForgetFilter(text="  "), "empty"),
        (ForgetFilter(everything=True, speaker="Sam"), "no other filter"),
        (ForgetFilter(speaker="Nobody"), "no speaker"),
        (ForgetFilter(since=10.0, until=5.0), "before until"),
    ],
)
def test_filters_that_cannot_be_used(memory, f, message):
    with pytest.raises(InputError, match=message):
        memory.forget_plan(f)


def test_a_filter_that_matches_nothing_changes_nothing(memory):
    plan = memory.forget_plan(ForgetFilter(text="no such words anywhere"))
    assert plan.empty
    before = memory.stats()
    memory.forget(ForgetFilter(text="no such words anywhere"), plan)
    assert memory.stats().utterances == before.utterances and memory.stats().tokens == before.tokens


def test_retention_drops_old_speech_but_keeps_the_tree(tmp_path):
    mem = open_memory(tmp_path / "data", retention_days=0)
    mem.add_many(_conversation())
    tree_before = [n.text for n in mem.store.nodes()]
    buffered = {u.id for u in mem.engine.buffer.visible}
    expired = mem.expire()
    assert expired > 0
    left = {r[0] for r in mem.store.db.all("SELECT id FROM utterances")}
    # Only what the buffers still need stays; the tree keeps every word.
    assert left <= buffered | {u.id for b in mem.store.pending_blocks() for u in b.utterances}
    assert [n.text for n in mem.store.nodes()] == tree_before
    assert json.loads(mem.store.db.all("SELECT detail FROM audit WHERE action = 'expire'")[0][0])["days"] == 0
    mem.close()


def test_a_block_distilled_while_its_speech_is_forgotten_is_not_filed(tmp_path):
    mem = open_memory(tmp_path / "data")
    for i, u in enumerate(_conversation()[:9]):
        mem.add(u.speaker, u.text, time=u.time + i * 0.001, distill=False)
    mem.engine.flush()
    job = mem.engine.oldest_pending()
    assert job is not None
    block, vectors = job
    distilled = mem.engine.distiller.distill(block, vectors)  # as the daemon's distiller does, off the writer
    zed = [u for u in block.utterances if u.speaker == "Zed"] or [block.utterances[0]]
    mem.forget(ForgetFilter(text=zed[0].text[:30]))
    # The result was computed from speech that is now forgotten: it must not be mounted.
    assert mem.engine.file_distillation(distilled) is None
    mem.engine.distill_pending()
    for node in mem.store.nodes():
        assert zed[0].text[:30].lower() not in node.text.lower()
    check_invariants(mem)
    mem.close()
