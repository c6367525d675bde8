"""One surface for the memory: the local database and the daemon's client answer alike.

The same memory is read through `LocalMemory` (the database opened here) and then, with a real
daemon started on it, through `DaemonClient`: both give back the same records, and refuse the
same wrong input with the same words. The clients' method lists are checked against the
`MemoryService` protocols, so an operation added to one and not the other fails here.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from assistant.bench.synth_speech import silence
from assistant.config import load_settings
from assistant.daemon.client import AsyncDaemonClient, DaemonClient, DaemonGone, DaemonRefused
from assistant.errors import InputError
from assistant.memory.service import LocalMemory
from assistant.records import (
    NOT_RUNNING,
    Answer,
    Evidence,
    ForgetFilter,
    ForgetOutcome,
    ImportReport,
    Level,
    MemoryNode,
    MergeSuggestion,
    NameSuggestion,
    Reassignment,
    RecallFilter,
    SearchResult,
    Selection,
    Speaker,
    Status,
    Utterance,
)
from assistant.service import AsyncMemoryService, MemoryService
from assistant.transcripts import read_conversations
from assistant.wire import from_json, on_wire, to_json

from .daemon_helpers import DaemonProcess, daemon_config, kill_leftovers, running

SAMPLE = Path(__file__).resolve().parents[1] / "assistant" / "data" / "sample_conversation.jsonl"
QUESTION = "Where is the hotel for the Lisbon trip?"


def _operations(protocol: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn) for name, fn in vars(protocol).items() if callable(fn) and not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("implementation", "protocol"),
    [(LocalMemory, MemoryService), (DaemonClient, MemoryService), (AsyncDaemonClient, AsyncMemoryService)],
)
def test_each_client_has_every_operation_of_its_protocol_with_its_parameters(implementation, protocol):
    for name, wanted in _operations(protocol).items():
        have = getattr(implementation, name, None)
        assert have is not None, f"{implementation.__name__} lacks {name}"
        got = inspect.signature(have)
        assert list(got.parameters) == list(wanted.parameters), f"{implementation.__name__}.{name}: {got} != {wanted}"
        assert inspect.iscoroutinefunction(have) == inspect.iscoroutinefunction(getattr(protocol, name)), name


def test_records_go_to_json_and_back_whole_and_a_wrong_field_is_named():
    node = MemoryNode(
        1, Level.SCENE, "Lisbon trip", 3, 0.5, 2, 1.0, 2.0, (MemoryNode(2, Level.EVENT, "fly", 2, 0.1, 1, 1.0, 2.0),)
    )
    assert from_json(MemoryNode, to_json(node)) == node
    answer = Answer(
        "May 14",
        (Evidence(4, "Priya", 5.0, "we fly"),),
        True,
        12,
        1.5,
        80.0,
        filter=RecallFilter(1.0, None, "Priya", ("since",)),
    )
    assert from_json(Answer, to_json(answer)) == answer
    # What stays in the process does not travel: a voice, an answer's whole retrieval.
    assert "voice" not in to_json(Speaker(1, "Sam", 3, 2.0)) and "retrieval" not in to_json(answer)
    with pytest.raises(ValueError, match=r"MemoryNode\.children\[0\]\.level: 'tree' is not a Level"):
        from_json(MemoryNode, {**to_json(node), "children": [{**to_json(node.children[0]), "level": "tree"}]})
    with pytest.raises(ValueError, match=r"Speaker\.utterances: '3' is not a int"):
        from_json(Speaker, {"id": 1, "name": "Sam", "utterances": "3", "speech_seconds": 2.0})


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The sample conversation filed on disk: what LocalMemory reads, then what a daemon on the
    same data directory (hearing only silence) serves."""
    root = tmp_path_factory.mktemp("service")
    d = daemon_config(root / "d")
    d.shared = True
    settings = load_settings(d.config)
    with LocalMemory(settings) as local:
        local.memory.add_many(read_conversations(SAMPLE)[0].utterances)
        local.memory.flush()
        local.memory.engine.distill_pending()
        seen = _read_all(local)
    quiet = silence(root / "quiet.wav", 1.0)
    with running(d, quiet, "the silence to be heard") as daemon:
        with DaemonClient(daemon.socket) as client:
            yield seen, _read_all(client), client, settings
    kill_leftovers()


def _read_all(memory: MemoryService) -> dict[str, object]:
    sam = next(sp for sp in memory.speakers() if sp.name == "Sam")
    times = [u.time for u in memory.transcript(limit=1000)]
    return {
        "speakers": memory.speakers(),
        "search": memory.search(QUESTION),
        "search by Priya": memory.search("the trip", speaker="Priya"),
        "transcript": memory.transcript(limit=1000),
        "transcript window": memory.transcript(since=times[2], until=times[6], speaker="Sam", limit=2),
        "lines": memory.speaker_lines(sam.id, 3),
        "tree": _without_utility(memory.tree()),
        "forget plan": memory.forget(ForgetFilter(speaker="Alex"), dry_run=True),
        "export": "".join(memory.export("jsonl", Selection(speaker="Priya"))),
    }


def _without_utility(nodes: list[MemoryNode]) -> list[tuple[int, str, str, list]]:
    # Utility decays with the clock between the two reads; everything else must agree.
    return [(n.id, n.level.value, n.text, _without_utility(list(n.children))) for n in nodes]


@pytest.mark.slow
def test_the_daemon_and_the_local_memory_give_the_same_records(both):
    local, remote, _client, _settings = both
    for what in local:
        assert remote[what] == local[what], what
    found = remote["search"]
    assert isinstance(found, SearchResult) and found.lines and all(isinstance(x.time, float) for x in found.lines)
    assert any("Alfama" in line.text for line in found.lines)
    window = remote["transcript window"]
    assert [u.speaker for u in window] == ["Sam"] * len(window) and 0 < len(window) <= 2
    assert all(isinstance(u, Utterance) and u.id for u in remote["transcript"])
    assert remote["forget plan"].utterances > 0 and not remote["forget plan"].empty
    assert remote["export"].count("\n") == sum(1 for u in remote["transcript"] if u.speaker == "Priya")


@pytest.mark.slow
def test_wrong_input_is_refused_alike_and_nothing_changes(both, tmp_path):
    _local, remote, client, settings = both
    refusals = []
    with LocalMemory(settings) as local:
        for memory in (client, local):
            with pytest.raises(InputError) as refused:
                memory.search("the trip", speaker="Nobody")
            refusals.append(str(refused.value))
    assert "Nobody" in refusals[1] and refusals[0] == f"the daemon refused: {refusals[1]}", refusals
    with pytest.raises(DaemonRefused) as refused:
        client.transcript(since=10.0, until=5.0)
    assert refused.value.status == 400 and "before" in refused.value.message
    with pytest.raises(InputError, match="say what to forget"):
        client.forget(ForgetFilter(), dry_run=False)
    assert client.speakers() == remote["speakers"]


def test_a_client_of_no_daemon_says_the_daemon_is_gone(tmp_path):
    with DaemonClient(tmp_path / "nothing.sock") as client, pytest.raises(DaemonGone, match="did not answer"):
        client.status()


def test_pausing_without_a_daemon_is_kept_for_its_next_start(tmp_path):
    d: DaemonProcess = daemon_config(tmp_path / "d")
    with LocalMemory(load_settings(d.config)) as local:
        assert local.pause().paused and (d.data_dir / "paused").exists()
        state = local.resume()
        assert state.state == NOT_RUNNING and not state.paused and not (d.data_dir / "paused").exists()


def test_status_without_a_daemon_reads_the_database_and_loads_no_model(tmp_path, monkeypatch):
    d: DaemonProcess = daemon_config(tmp_path / "d")
    settings = load_settings(d.config)
    with LocalMemory(settings) as local:
        empty = local.status()
        assert empty.memory.utterances == 0 and empty.speakers == () and not (d.data_dir / "memory.db").exists()
        local.memory.add_many(read_conversations(SAMPLE)[0].utterances[:6])
        filed = local.memory.stats(), tuple(local.memory.speakers())

    def no_model(*_args, **_kwargs):
        raise AssertionError("a status with no daemon loaded the embedder")

    monkeypatch.setattr("assistant.embed.load_embedder", no_model)
    with LocalMemory(settings) as local:
        state = local.pause()
    # The file's size moves as the write-ahead log is checkpointed on close; the rest must agree.
    assert state.paused and (dataclasses.replace(state.memory, database_bytes=0), state.speakers) == (
        dataclasses.replace(filed[0], database_bytes=0),
        filed[1],
    )
    assert state.memory.utterances == 6 and state.memory.database_bytes > 0 and len(state.speakers) == 3


@pytest.mark.slow
def test_an_answer_through_the_daemon_is_the_record_the_local_memory_gives(both):
    _local, _remote, client, settings = both
    items = list(client.ask(QUESTION, speaker="Alex"))
    answer = items[-1]
    assert isinstance(answer, Answer) and all(isinstance(piece, str) for piece in items[:-1])
    # The same question asked of the database here, by the same model with the same settings.
    with LocalMemory(settings) as local:
        here = list(local.ask(QUESTION, speaker="Alex"))[-1]
    assert isinstance(here, Answer)
    assert (answer.text, answer.evidence, answer.knows, answer.filter) == (
        here.text,
        here.evidence,
        here.knows,
        here.filter,
    )
    assert answer.filter == RecallFilter(speaker="Alex")
    # Limited to Alex, the answer rests on some of Alex's lines and on nobody else's.
    assert answer.knows and answer.evidence, answer
    assert all(isinstance(e, Evidence) and e.speaker == "Alex" for e in answer.evidence)


# Each JSON reply of the API, and the record its clients read it into.
REPLIES = {
    ("/status", "get"): Status,
    ("/pause", "post"): Status,
    ("/search", "post"): SearchResult,
    ("/transcript", "get"): Evidence,
    ("/speakers", "get"): Speaker,
    ("/speakers/suggestions", "get"): MergeSuggestion,
    ("/speakers/names", "get"): NameSuggestion,
    ("/speakers/{key}/utterances", "get"): Evidence,
    ("/speakers/{key}/name", "post"): Speaker,
    ("/speakers/merge", "post"): Speaker,
    ("/utterances/reassign", "post"): Reassignment,
    ("/memory", "get"): MemoryNode,
    ("/import", "post"): ImportReport,
    ("/forget", "post"): ForgetOutcome,
}


def test_the_openapi_description_is_made_from_the_records_the_clients_read():
    from assistant.daemon.api import create_app

    schema = create_app(None).openapi()  # type: ignore[arg-type]  # describing it runs no route
    defs = schema["components"]["schemas"]
    for (path, method), record in REPLIES.items():
        reply = schema["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]
        ref = (reply.get("items") or reply)["$ref"].rsplit("/", 1)[-1]
        assert ref == record.__name__, (path, ref)
        wire = [f.name for f in dataclasses.fields(record) if on_wire(f)]
        assert list(defs[ref]["properties"]) == wire, (path, record.__name__)
