"""The store on real SQLite with sqlite-vec and usearch (random unit vectors stand in for text: this is storage)."""

import numpy as np
import pytest

from assistant.errors import StoreError
from assistant.memory.forget import expire
from assistant.records import Level, Utterance
from assistant.store.db import IntegrityError
from assistant.store.migrations import SCHEMA_VERSION
from assistant.store.store import Store

DIM = 16


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "m.db", embedder="test", dim=DIM)
    yield s
    s.close()


def _tree(store: Store) -> tuple[int, int, int, Utterance]:
    u = store.add_utterance(Utterance("Ana", "We fly to Lisbon in May.", 100.0), unit(1))
    scene = store.add_node(Level.SCENE, None, "Travel", 1, unit(2), created=100.0)
    event = store.add_node(Level.EVENT, scene, "Ana plans a trip", 4, unit(3), created=100.0, sources=[u.id])
    amu = store.add_node(Level.AMU, event, "Ana flies to Lisbon", 5, unit(4), created=100.0, sources=[u.id])
    return scene, event, amu, u


def test_pragmas_and_schema_version(store):
    db = store.db
    assert db.scalar("PRAGMA journal_mode") == "wal"
    assert db.scalar("PRAGMA foreign_keys") == 1
    assert db.scalar("PRAGMA synchronous") == 2  # FULL: a commit that returns is on disk
    assert db.scalar("PRAGMA user_version") == SCHEMA_VERSION
    assert db.scalar("SELECT count(*) FROM migrations") == SCHEMA_VERSION


def test_reopen_is_idempotent_and_future_schema_refused(tmp_path):
    Store(tmp_path / "m.db", embedder="test", dim=DIM).close()
    s = Store(tmp_path / "m.db", embedder="test", dim=DIM)
    s.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    s.close()
    with pytest.raises(StoreError, match="newer than this assistant understands"):
        Store(tmp_path / "m.db", embedder="test", dim=DIM)


def test_embedder_change_is_refused(tmp_path):
    Store(tmp_path / "m.db", embedder="test", dim=DIM).close()
    with pytest.raises(StoreError, match="built with the embedder 'test'"):
        Store(tmp_path / "m.db", embedder="other", dim=DIM * 2)


def test_not_a_database(tmp_path):
    p = tmp_path / "m.db"
    p.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        Store(p, embedder="test", dim=DIM)


def test_duplicate_utterance_is_a_no_op(store):
    u = Utterance("Ana", "hello", 5.0)
    assert store.add_utterance(u, unit(1)) is not None
    assert store.add_utterance(u, unit(1)) is None
    assert store.utterance_count() == 1


def test_deleting_a_node_takes_its_subtree_vectors_and_index_entries(store):
    scene, event, amu, _ = _tree(store)
    removed = store.delete_node(event)
    assert set(removed) == {event, amu}
    assert store.db.scalar("SELECT count(*) FROM node_vectors") == 1
    assert store.db.scalar("SELECT count(*) FROM node_sources") == 0
    assert event not in store.index[Level.EVENT] and amu not in store.index[Level.AMU]
    assert store.delete_childless() == [scene]
    assert store.node_count() == 0 and len(store.index[Level.SCENE]) == 0


def test_provenance_cannot_dangle(store):
    _scene, _event, amu, u = _tree(store)
    with pytest.raises(IntegrityError):
        store.add_sources(amu, [9999])
    # Removing an utterance removes the provenance rows that pointed at it.
    store.db.execute("DELETE FROM stsb")
    store.db.execute("DELETE FROM utterances WHERE id = ?", (u.id,))
    assert store.db.scalar("SELECT count(*) FROM node_sources") == 0
    assert store.db.scalar("SELECT count(*) FROM utterance_vectors") == 0


def test_tree_shape_is_enforced(store):
    with pytest.raises(IntegrityError):
        store.add_node(Level.EVENT, None, "orphan event", 2, unit(9), created=1.0)
    with pytest.raises(IntegrityError):
        store.add_node(Level.AMU, 12345, "no such parent", 2, unit(9), created=1.0)


def test_rollback_leaves_rows_and_index_as_they_were(store):
    _tree(store)
    before = (store.node_count(), sorted(store.index[Level.AMU].keys()))
    with pytest.raises(RuntimeError):
        with store.atomic():
            parent = store.nodes(Level.EVENT)[0].id
            store.add_node(Level.AMU, parent, "doomed", 2, unit(7), created=1.0)
            raise RuntimeError("crash mid-write")
    assert (store.node_count(), sorted(store.index[Level.AMU].keys())) == before


def test_usearch_agrees_with_sqlite_vec_after_restart(tmp_path):
    s = Store(tmp_path / "m.db", embedder="test", dim=DIM)
    _tree(s)
    s.close()
    s = Store(tmp_path / "m.db", embedder="test", dim=DIM)
    rows = s.db.all("SELECT n.id, n.level, v.embedding FROM nodes n JOIN node_vectors v ON v.node_id = n.id")
    assert len(rows) == s.node_count() == 3
    for nid, level, blob in rows:
        got = s.index[Level(level)].get([nid])[0]
        assert np.allclose(got, np.frombuffer(blob, dtype=np.float32))
        assert s.index[Level(level)].search(got, 1)[0][0] == nid
    s.close()


def test_sqlite_vec_knn_over_utterances(store):
    for i in range(20):
        store.add_utterance(Utterance("Ana", f"line {i}", float(i)), unit(100 + i))
    hits = store.search_utterances(unit(105), 3)
    assert hits[0][0].text == "line 5" and hits[0][1] == pytest.approx(1.0, abs=1e-5)


def test_nested_atomic_rolls_back_inner_only(store):
    with store.atomic():
        store.add_utterance(Utterance("Ana", "kept", 1.0), unit(1))
        with pytest.raises(ValueError):
            with store.atomic():
                store.add_utterance(Utterance("Ana", "dropped", 2.0), unit(2))
                raise ValueError
    assert [u.text for u in store.utterances([1, 2])] == ["kept"]


def test_a_rolled_back_vector_change_leaves_the_archived_vector(store):
    # Held lines' vectors are read from the in-process index: after a rollback it must be
    # rebuilt from the table, not from itself.
    *_, u = _tree(store)
    with pytest.raises(RuntimeError):
        with store.atomic():
            store.set_utterance_vector(u.id, unit(9))
            raise RuntimeError("crash mid-write")
    assert np.allclose(store.utterance_vectors([u.id])[u.id], unit(1))


def test_an_expired_line_has_no_vector_left(store):
    old = store.add_utterance(Utterance("Ana", "The boiler was serviced.", 100.0), unit(1))
    assert old.id in store.utterance_vectors([old.id])
    assert expire(store, days=1.0, now=100.0 + 3 * 86_400) == 1
    assert store.utterance_vectors([old.id]) == {}
