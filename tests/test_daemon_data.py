"""The user's data through the running daemon: export, import, forget while it listens, quiet hours."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta

import pytest

from .daemon_helpers import PART_ONE, Transcript, daemon_config, kill_leftovers, make_recording, settled
from .test_daemon import _stored


@pytest.fixture(autouse=True)
def _no_daemon_left_behind():
    yield
    kill_leftovers()


@pytest.fixture(scope="module")
def conversation(tmp_path_factory):
    return make_recording(tmp_path_factory.mktemp("audio"), PART_ONE)


@pytest.mark.slow
def test_forgetting_a_voice_while_listening_loses_nothing_else(tmp_path, conversation):
    d = daemon_config(tmp_path / "d")
    d.start(conversation)
    transcript = Transcript(d)
    transcript.wait(3)  # Sam, Priya, Sam: the first voice has said two things
    speakers = {e["speaker_id"] for e in transcript.events}
    first = transcript.events[0]["speaker_id"]
    # Heard before the forget was asked for, so the forget must take every one of them.
    before = list(transcript.events)
    with d.client() as c:
        dry = c.post("/forget", json={"speaker": str(first)}).json()
        assert dry["utterances"] >= 1 and dry["examples"]
        done = c.post("/forget", json={"speaker": str(first), "dry_run": False}).json()
        assert done["utterances"] == dry["utterances"] and done["database_bytes"] > 0
    d.wait_for(settled, "the rest of the recording")
    transcript.close()
    stored = _stored(d.data_dir)
    others = [e for e in transcript.events if e["speaker_id"] != first]
    assert others, speakers
    # Every utterance of the other voice, heard before, during and after the forget, is there.
    for e in others:
        assert stored.get(e["utterance_id"]) == e["text"]
    # Everything the forgotten voice said before the forget is gone (an id may be reused by
    # what was heard later, so compare the words too).
    forgotten = [e for e in before if e["speaker_id"] == first]
    assert len(forgotten) >= 2, before
    assert [e for e in forgotten if stored.get(e["utterance_id"]) == e["text"]] == [], forgotten
    assert d.stop() == 0


@pytest.mark.slow
def test_export_and_import_through_the_daemon(tmp_path, conversation):
    d = daemon_config(tmp_path / "d")
    d.start(conversation)
    d.wait_for(settled, "the recording")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "assistant", "--config", str(d.config), *args],
            capture_output=True,
            text=True,
            env=d.env(),
            timeout=300,
        )

    out = tmp_path / "memory.json"
    done = cli("export", str(out))
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == "assistant-memory" and len(doc["utterances"]) == d.status()["memory"]["utterances"]
    md = tmp_path / "memory.md"
    assert cli("export", "--format", "markdown", str(md)).returncode == 0
    assert "## Transcript" in md.read_text()
    again = cli("import", str(out))
    assert again.returncode == 0, again.stderr
    assert f"{len(doc['utterances'])} known" in again.stdout  # a merge: nothing twice
    refused = cli("import", str(tmp_path / "nope.json"))
    assert refused.returncode == 4 and "cannot read" in refused.stderr
    assert d.stop() == 0


@pytest.mark.slow
def test_quiet_hours_hear_nothing(tmp_path, conversation):
    now = datetime.now()
    span = f"{(now - timedelta(minutes=5)):%H:%M}-{(now + timedelta(minutes=30)):%H:%M}"
    d = daemon_config(tmp_path / "d", extra=f'  quiet_hours: ["{span}"]\n')
    d.start(conversation)
    assert d.status()["state"] == "quiet hours"
    d.wait_for(lambda s: s["state"] == "source ended", "the recording to end", timeout=120)
    assert d.status()["memory"]["utterances"] == 0
    assert d.stop() == 0
