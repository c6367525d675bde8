"""The session's re-clustering on the real chain, in a real daemon: the online pass puts two close
voices in one speaker, the re-clustering moves one voice's lines to a speaker of its own, and the
archive, the memory's speakers and the live transcript all end right, with nothing lost or doubled."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from assistant.bench.synth_conversation import Line, Pacing, Voice, build_recording, remove_parts
from assistant.bench.synth_speech import sox
from assistant.store.db import _sqlite_module

from .daemon_helpers import Transcript, daemon_config, settled
from .test_diarize import TEXTS

MORE = [
    "The conference ends on Thursday evening, so Friday morning would work for me.",
    "Then I will change the booking and tell the hotel we arrive a day later.",
    "Do not forget the rental car, we need it for the trip to the coast.",
    "I reserved a small car at the airport, it costs thirty euros a day.",
    "Perfect. Should we also book a table for dinner on Saturday?",
    "Yes, there is a fish restaurant by the harbour that everyone recommends.",
    "I will call them tomorrow and ask for a table for four at eight.",
    "Great, then the whole plan is settled and we only need the tickets.",
]
# The mixed pair of the voice matrix that the online pass hears as one voice.
CLOSE = {"A": Voice("en-us+m3", 40, 160), "B": Voice("en-gb+f2", 60, 170)}


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def voice_of(text: str, script: list[Line]) -> str:
    """The voice that said the script line sharing most words with this utterance."""
    return max(script, key=lambda line: len(words(line.text) & words(text))).speaker


def stored(data_dir: Path) -> dict[int, tuple[int, str]]:
    db = _sqlite_module().connect(f"file:{data_dir / 'memory.db'}?mode=ro", uri=True)
    try:
        return {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, speaker_id, text FROM utterances")}
    finally:
        db.close()


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> tuple[Path, list[Line]]:
    work = tmp_path_factory.mktemp("close-voices")
    script = [Line("AB"[i % 2], text) for i, text in enumerate(TEXTS + MORE)]
    rec = build_recording(script, work, name="close", pacing=Pacing(overlap=0.0, min_gap=0.8), seed=1, voices=CLOSE)
    remove_parts(work, "close")
    pcm = work / "close.raw"
    sox(rec.path, "-t", "raw", "-e", "signed", "-b", "16", "-r", "16000", "-c", "1", pcm)
    assert rec.duration > 60  # more than the first minute is at stake
    return pcm, script


@pytest.mark.slow  # a daemon loads the LLM as it starts
def test_reclustering_corrects_the_online_labels_everywhere(tmp_path, recording):
    pcm, script = recording
    d = daemon_config(tmp_path / "d", extra="")
    d.start(stdin=pcm)
    live = Transcript(d)
    try:
        d.wait_for(settled, "the recording to be heard", timeout=600)
        final = stored(d.data_dir)
        live.wait(len(final), timeout=60)
        with d.client() as c:
            speakers = {sp["id"]: sp for sp in c.get("/speakers").json()}
            suggestions = c.get("/speakers/suggestions")
            assert suggestions.status_code == 200, suggestions.text
            for m in suggestions.json():  # each a pair of known speakers, the one with more speech kept
                assert {m["keep"]["id"], m["other"]["id"]} <= set(speakers) and m["cosine"] >= 0.93
                assert m["keep"]["speech_seconds"] >= m["other"]["speech_seconds"]
            # A person corrects one line through the API: the store and the live transcript follow.
            uid, (speaker_id, _text) = min(final.items())
            other = next(sid for sid in speakers if sid != speaker_id)
            reply = c.post("/utterances/reassign", json={"to": str(other), "utterance_ids": [uid]})
            assert reply.status_code == 200, reply.text
            assert reply.json()["moved"] == [uid] and reply.json()["speaker"]["id"] == other
            bad = c.post("/utterances/reassign", json={"to": "Nobody", "utterance_ids": [uid]})
            assert bad.status_code == 400 and "no speaker 'Nobody'" in bad.json()["error"]
            none = c.post("/utterances/reassign", json={"to": str(other)})
            assert none.status_code == 400 and "no utterances match" in none.json()["error"]
        deadline = time.monotonic() + 30
        while not any(r["utterance_ids"] == [uid] for r in live.relabels) and time.monotonic() < deadline:
            time.sleep(0.1)
        corrected = live.relabels.pop()
        assert corrected["utterance_ids"] == [uid] and corrected["speaker_id"] == other
        assert stored(d.data_dir)[uid][0] == other
    finally:
        live.close()
        assert d.stop() == 0

    # The online pass had it wrong: utterances moved after they were first sent out.
    assert live.relabels, "no utterance was relabelled"
    moved = {uid for r in live.relabels for uid in r["utterance_ids"]}
    first_label = {e["utterance_id"]: e["speaker_id"] for e in live.events}
    assert moved and all(uid in first_label for uid in moved)

    # Nothing lost, nothing stored twice: the live transcript acknowledged exactly what is stored.
    assert sorted(first_label) == sorted(final)
    assert len({text for _, text in final.values()}) == len(final)

    # The store ends right: each voice's lines under one speaker of its own.
    by_voice: dict[str, list[int]] = {"A": [], "B": []}
    for speaker_id, text in final.values():
        by_voice[voice_of(text, script)].append(speaker_id)
    majority = {v: max(set(ids), key=ids.count) for v, ids in by_voice.items()}
    assert majority["A"] != majority["B"]
    right = sum(ids.count(majority[v]) for v, ids in by_voice.items())
    assert right / len(final) >= 0.9, by_voice
    # The memory's speakers: the two voices, each holding its lines; nobody left empty.
    assert {majority["A"], majority["B"]} <= set(speakers)
    assert all(sp["utterances"] > 0 for sp in speakers.values())

    # The live transcript ends right: its first labels, corrected by the relabel events, are the store's.
    label = dict(first_label)
    for r in live.relabels:
        for uid in r["utterance_ids"]:
            label[uid] = r["speaker_id"]
    assert label == {uid: speaker_id for uid, (speaker_id, _) in final.items()}
    assert "Traceback" not in d.log.read_text()
