"""Export and import: lossless round trips, merges without duplicates, and files that are refused."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.errors import InputError
from assistant.memory.archive import Selection
from assistant.transcripts import read_conversations

from .conftest import MODELS_DIR, check_invariants, open_memory

SAMPLE = Path(__file__).resolve().parents[1] / "assistant" / "data" / "sample_conversation.jsonl"


@pytest.fixture
def filled(tmp_path):
    mem = open_memory(tmp_path / "data")
    mem.add_many(read_conversations(SAMPLE)[0].utterances)
    # Leave speech in the sensing buffer and use some nodes, so those survive the trip too.
    mem.add("Sam", "One more thing: the taxi to the airport is booked for six.", time=1_763_400_000)
    mem.search("Who is looking after the dog?", use=True)
    yield mem
    mem.close()


def _comparable(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_export_wipe_import_export_gives_the_same_json(filled, tmp_path):
    first = tmp_path / "first.json"
    filled.export("json", first)
    assert oct(first.stat().st_mode & 0o777) == "0o600"
    doc = _comparable(first)
    assert doc["complete"] and doc["schema"] == 1 and len(doc["utterances"]) == 23
    assert any(n["frequency"] > 0 for n in doc["nodes"]) and doc["sensing_buffer"]["buffer"]
    before = filled.search("When is the Lisbon trip?")

    fresh = open_memory(tmp_path / "fresh")
    report = fresh.import_file(first)
    assert report.mode == "restore" and report.utterances == 23 and report.duplicates == 0
    second = tmp_path / "second.json"
    fresh.export("json", second)
    assert _comparable(second) == doc
    # Answers rest on the same evidence after the trip.
    after = fresh.search("When is the Lisbon trip?")
    assert [p.event.text for p in after.paths] == [p.event.text for p in before.paths]
    assert [r.evidence.text for r in after.lines] == [r.evidence.text for r in before.lines]
    assert "lexical" in after.lines[0].found_by  # the lexical index was rebuilt by the import
    assert [u.text for u in fresh.engine.buffer.buffer] == [u.text for u in filled.engine.buffer.buffer]
    check_invariants(fresh)
    fresh.close()


def test_importing_twice_merges_without_duplicates(filled, tmp_path):
    out = tmp_path / "all.json"
    filled.export("json", out)
    report = filled.import_file(out)
    assert report.mode == "merge" and report.utterances == 0 and report.duplicates == 23
    assert filled.stats().utterances == 23
    other = open_memory(tmp_path / "other")
    other.add("Maya", "The garden party is on Sunday at noon.", time=1_763_500_000)
    other.flush()
    merged = other.import_file(out)
    assert merged.mode == "merge" and merged.utterances == 23
    assert other.stats().utterances == 24
    assert {s.name for s in other.speakers()} >= {"Maya", "Sam", "Priya", "Alex"}
    check_invariants(other)
    other.close()


def test_markdown_and_jsonl_and_a_selection(filled, tmp_path):
    md = tmp_path / "memory.md"
    filled.export("markdown", md)
    text = md.read_text(encoding="utf-8")
    assert "## What the memory keeps" in text and "### 2026-11-16" in text and "**Priya**" in text
    lines = tmp_path / "transcript.jsonl"
    filled.export("jsonl", lines, Selection(speaker="Priya"))
    rows = [json.loads(line) for line in lines.read_text().splitlines()]
    assert rows and {r["speaker"] for r in rows} == {"Priya"}
    partial = tmp_path / "priya.json"
    filled.export("json", partial, Selection(speaker="Priya"))
    doc = _comparable(partial)
    assert not doc["complete"] and doc["selection"] == {"speaker": "Priya"}
    assert {s["name"] for s in doc["speakers"]} == {"Priya"}
    with pytest.raises(InputError, match="no speaker"):
        filled.export("json", partial, Selection(speaker="Nobody"))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda b: b[: len(b) // 2], "not valid JSON"),
        (lambda b: bytes(random.Random(1).randrange(256) for _ in range(4096)), "not a memory export|not valid JSON"),
        (lambda b: b.replace(b"Lisbon", b"Lisbom", 1), "checksum does not match"),
        (lambda b: b.replace(b'"schema": 1', b'"schema": 99', 1), "newer version"),
        (lambda b: b"[]", "not a memory export"),
    ],
    ids=["truncated", "random-bytes", "tampered", "newer-schema", "not-an-export"],
)
def test_bad_files_are_refused_and_change_nothing(filled, tmp_path, damage, message):
    good = tmp_path / "good.json"
    filled.export("json", good)
    bad = tmp_path / "bad.json"
    bad.write_bytes(damage(good.read_bytes()))
    target = open_memory(tmp_path / "target")
    target.add("Maya", "The garden party is on Sunday at noon.", time=1_763_500_000)
    with pytest.raises(InputError, match=message):
        target.import_file(bad)
    assert target.stats().utterances == 1 and [s.name for s in target.speakers()] == ["Maya"]
    target.close()


def test_an_unwritable_target_is_a_clear_error(filled, tmp_path):
    # A directory no one may create files in, root included (CI runs as root, who may write in a
    # chmod 0500 one): the kernel refuses new files in /proc.
    with pytest.raises(InputError, match=r"^/proc/out\.json: cannot write the export: "):
        filled.export("json", Path("/proc/out.json"))
    if os.getuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(InputError, match="cannot write the export: Permission denied"):
            filled.export("json", locked / "out.json")
        assert list(locked.iterdir()) == []
    with pytest.raises(InputError, match="is not a directory"):
        filled.export("json", tmp_path / "missing" / "out.json")


def test_a_disk_that_fills_during_export_leaves_no_file(filled, tmp_path):
    # A file-size limit makes the kernel refuse writes past it (EFBIG), as a full disk would.
    script = (
        "import resource, signal, sys\n"
        "from tests.conftest import open_memory\n"
        "from pathlib import Path\n"
        "mem = open_memory(Path(sys.argv[1]))\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from assistant.errors import InputError\n"
        "try:\n"
        "    mem.export('json', Path(sys.argv[2]))\n"
        "except InputError as exc:\n"
        "    print(exc); sys.exit(4)\n"
    )
    out = tmp_path / "export.json"
    filled.close()
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "data"), str(out)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        # The child finds the installed models where this process does.
        env={**os.environ, "XDG_DATA_HOME": str(Path(MODELS_DIR).parents[1])},
        timeout=300,
    )
    assert done.returncode == 4, done.stderr
    assert "cannot write the export" in done.stdout
    assert not out.exists() and not list(tmp_path.glob(".export.json.*"))
