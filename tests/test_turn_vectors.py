"""Recall's turn arm (`retrieval.turn_k`): each held line embedded after the turns before it, so a
reply is found by what it answers. Real SQLite and the packaged embedder: what the arm finds that
the others do not, that its vectors follow forget, a memory filed before them, and pruning."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from assistant.memory.forget import ForgetFilter
from assistant.records import Utterance

from .conftest import open_memory

# Tuesday 3 March 2026, 18:00 UTC.
T0 = datetime(2026, 3, 3, 18, tzinfo=UTC).timestamp()

# The play is named two turns before its time, which names neither the play nor a start.
PLAY = [
    ("Mia", "One more thing before I forget: the school play."),
    ("Tom", "Right, what time should we be there?"),
    ("Mia", "Half past six, and the doors open at six."),
    ("Tom", "My brother repaired the shed roof at the weekend."),
    ("Mia", "The bins go out on Wednesday night this week."),
    ("Tom", "We are out of oat milk again."),
    ("Mia", "The library books are due back on Friday."),
]
ANSWER = PLAY[2][1]
QUESTION = "When does the school play start?"


def _heard(tmp_path, name: str, **retrieval: object):
    mem = open_memory(
        tmp_path / name,
        retrieval={"lexical_k": 1, "dense_k": 1, "tree": False, "reply_lines": 0, **retrieval},
        answer={"neighbours": 0},
    )
    mem.add_many([Utterance(s, t, T0 + 60 * i) for i, (s, t) in enumerate(PLAY)])
    return mem


def test_a_reply_is_found_by_the_turns_it_answers(tmp_path):
    """ "Half past six" shares no word with the question and is far from it in meaning; read after
    the two turns before it, it is the play's start. Only the turn arm ranks it."""
    found = {}
    for turn_k in (0, 2):
        mem = _heard(tmp_path, f"data-{turn_k}", turn_k=turn_k)
        try:
            lines = mem.search(QUESTION).lines
            found[turn_k] = {r.evidence.text: r.found_by for r in lines}
        finally:
            mem.close()
    assert ANSWER not in found[0]
    assert "turn" in found[2][ANSWER]


def test_with_the_arm_off_no_turn_vectors_are_filed(tmp_path):
    mem = _heard(tmp_path, "data", turn_k=0)
    try:
        assert mem.store.db.scalar("SELECT count(*) FROM turn_vectors") == 0
    finally:
        mem.close()


def _turn_vector(mem, text: str) -> np.ndarray:
    uid = mem.store.db.scalar("SELECT id FROM utterances WHERE text = ?", (text,))
    return mem.store.turn_vectors([uid])[uid]


def _embedded(mem, text: str) -> np.ndarray:
    return mem.engine.embedder.encode([text])[0]


def test_a_line_is_embedded_after_the_turns_before_it(tmp_path):
    mem = _heard(tmp_path, "data", turn_k=2, turn_before=2)
    try:
        read = " ".join(t for _, t in PLAY[:3])
        assert float(_turn_vector(mem, ANSWER) @ _embedded(mem, read)) > 0.999
        # The first line has no turn before it: it is read alone.
        assert float(_turn_vector(mem, PLAY[0][1]) @ _embedded(mem, PLAY[0][1])) > 0.999
    finally:
        mem.close()


def test_forgetting_a_line_takes_its_words_out_of_the_next_lines_vector(tmp_path):
    """The answer's turn vector embeds Tom's question; once that is forgotten the answer is read
    after the turns now before it, and nothing of the forgotten words stays in a vector."""
    mem = _heard(tmp_path, "data", turn_k=2, turn_before=2)
    try:
        mem.forget(ForgetFilter(text="what time should we be there"))
        assert mem.store.db.scalar("SELECT count(*) FROM utterances WHERE text = ?", (PLAY[1][1],)) == 0
        now_read = " ".join((PLAY[0][1], ANSWER))
        assert float(_turn_vector(mem, ANSWER) @ _embedded(mem, now_read)) > 0.999
        # The line after the answer read Tom's question too (two turns before it).
        after = " ".join((PLAY[0][1], ANSWER, PLAY[3][1]))
        assert float(_turn_vector(mem, PLAY[3][1]) @ _embedded(mem, after)) > 0.999
        assert mem.store.held_without_turn_vector() == []
    finally:
        mem.close()


def test_a_memory_filed_before_turn_vectors_gets_them_when_it_opens(tmp_path):
    mem = _heard(tmp_path, "data", turn_k=2)
    mem.store.db.execute("DELETE FROM turn_vectors")
    mem.close()
    mem = open_memory(tmp_path / "data", retrieval={"turn_k": 2, "tree": False})
    try:
        assert mem.store.held_without_turn_vector() == []
        assert len(mem.store.turn_index) == mem.store.held_count()
        assert ANSWER in {r.evidence.text for r in mem.search(QUESTION).lines}
    finally:
        mem.close()


def test_a_line_filed_late_is_read_into_the_turns_after_it(tmp_path):
    """A transcript that arrives after lines said later than it is a turn before them now."""
    mem = open_memory(tmp_path / "data", retrieval={"turn_k": 2, "turn_before": 1})
    try:
        mem.add_many([Utterance("Mia", PLAY[0][1], T0), Utterance("Mia", ANSWER, T0 + 120)])
        mem.add_many([Utterance("Tom", PLAY[1][1], T0 + 60)])
        read = " ".join((PLAY[1][1], ANSWER))
        assert float(_turn_vector(mem, ANSWER) @ _embedded(mem, read)) > 0.999
    finally:
        mem.close()


def test_lines_let_go_lose_their_turn_vectors_when_the_index_is_compacted(tmp_path):
    mem = _heard(tmp_path, "data", turn_k=2)
    try:
        store = mem.store
        held = store.held_ids()
        # Let every line but the last go, as the budget does, then compact.
        gone = held[:-1]
        store.db.execute(f"DELETE FROM held_lines WHERE utterance_id IN ({','.join('?' * len(gone))})", gone)
        for _ in range(1100):  # the index compacts once what it holds outnumbers the held lines
            store.line_index.add(10_000_000 + _, np.ones(store.dim, dtype=np.float32) / np.sqrt(store.dim))
        assert store.compact_line_index()
        left = [r[0] for r in store.db.all("SELECT utterance_id FROM turn_vectors")]
        assert left == held[-1:]
        assert len(store.turn_index) == 1
    finally:
        mem.close()


def test_an_imported_line_between_two_is_read_into_the_turn_after_it(tmp_path):
    """Tom's question, imported from another memory, falls between two lines already here."""
    here = open_memory(tmp_path / "here", retrieval={"turn_k": 2, "turn_before": 2})
    there = open_memory(tmp_path / "there", retrieval={"turn_k": 2, "turn_before": 2})
    try:
        here.add_many([Utterance("Mia", PLAY[0][1], T0), Utterance("Mia", ANSWER, T0 + 120)])
        there.add_many([Utterance("Tom", PLAY[1][1], T0 + 60)])
        there.export("json", tmp_path / "tom.json")
        here.import_file(tmp_path / "tom.json")
        read = " ".join(t for _, t in PLAY[:3])
        assert float(_turn_vector(here, ANSWER) @ _embedded(here, read)) > 0.999
        assert here.store.held_without_turn_vector() == []
    finally:
        here.close()
        there.close()
