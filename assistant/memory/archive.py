"""Export and import: the user's whole memory as one file they own, and back.

JSON (`assistant-memory` format) is complete and lossless: speakers with their voices, the
utterance archive, the tree with utilities and provenance, the sensing and pending buffers, the
clock, and the settings that shaped it. Vectors are not in it; they follow from the text and
are recomputed on import. A sha256 over the canonical content makes a truncated or edited file
fail loudly instead of importing half a memory. Markdown is for reading (the tree, then the
transcript by day and speaker); JSON Lines is the transcript alone.

Import restores a file into an empty store with its ids, so export → wipe → import → export
gives the same file; into a store that has content it merges without duplicates (utterances are
matched by speaker, time and words; nodes by level, words and parent). Either way it is one
transaction: a refused or failing import changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time as _time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, InputError
from ..records import ImportReport, Level, Selection, Utterance
from ..store import archive_rows
from ..store.archive_rows import NodeRow, SpeakerRow, UtteranceRow
from ..store.store import Store, utterance_digest
from ..zones import local_zone

FORMAT = "assistant-memory"
SCHEMA = 1


# --- reading the store ---------------------------------------------------------------------------


def _voice(blob: bytes | None) -> str | None:
    return None if blob is None else base64.b64encode(blob).decode("ascii")


def build_document(
    store: Store,
    settings: dict[str, Any],
    selection: Selection | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The export as a JSON-ready dict (with its checksum)."""
    selection = selection or Selection()
    db = store.db
    utterances = [
        {"id": r.id, "speaker_id": r.speaker_id, "text": r.text, "time": r.time, "created": r.created}
        for r in archive_rows.utterances(db, selection.since, selection.until, selection.speaker)
    ]
    if progress:
        progress(len(utterances))
    kept = {u["id"] for u in utterances}
    speaker_ids = {u["speaker_id"] for u in utterances}
    speakers = [
        {
            "id": r.id,
            "name": r.name,
            "created": r.created,
            "voice": _voice(r.voice),
            "speech_seconds": r.speech_seconds,
            "enrolled": r.enrolled,
            "enrolled_seconds": r.enrolled_seconds,
        }
        for r in archive_rows.speakers(db)
        if selection.everything or r.id in speaker_ids
    ]
    sources: dict[int, list[int]] = {}
    for node_id, uid in store.source_links():
        sources.setdefault(node_id, []).append(uid)
    nodes = [
        {
            "id": r.id,
            "level": r.level,
            "parent_id": r.parent_id,
            "text": r.text,
            "tokens": r.tokens,
            "frequency": r.frequency,
            "last_access": r.last_access,
            "created": r.created,
            "start_time": r.start_time,
            "end_time": r.end_time,
            "relation": r.relation,
            "sources": [u for u in sources.get(r.id, []) if u in kept],
        }
        for r in archive_rows.nodes(db)
    ]
    if not selection.everything:
        # A partial export keeps the branches that rest on the chosen speech, with their ancestors.
        wanted = {n["id"] for n in nodes if n["sources"]}
        parent = {n["id"]: n["parent_id"] for n in nodes}
        for nid in list(wanted):
            while parent.get(nid) is not None:
                nid = parent[nid]
                wanted.add(nid)
        nodes = [n for n in nodes if n["id"] in wanted]
    if progress:
        progress(len(nodes))
    stsb = archive_rows.sensing_buffer(db)
    pending = [
        {
            "id": block.id,
            "created": block.created,
            "utterances": [u for u, c in block.members if not c and u in kept],
            "context": [u for u, c in block.members if c and u in kept],
        }
        for block in archive_rows.pending(db)
    ]
    doc: dict[str, Any] = {
        "format": FORMAT,
        "schema": SCHEMA,
        "complete": selection.everything,
        "selection": selection.describe(),
        "settings": settings,
        "clock": store.clock,
        "speakers": speakers,
        "utterances": utterances,
        "nodes": nodes,
        "sensing_buffer": {
            "buffer": [u for u, c in stsb if not c and u in kept],
            "context": [u for u, c in stsb if c and u in kept],
        },
        "pending": [p for p in pending if p["utterances"]],
    }
    doc["sha256"] = checksum(doc)
    return doc


def checksum(doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# --- export formats -------------------------------------------------------------------------------


def json_chunks(doc: dict[str, Any]) -> Iterator[str]:
    # One record per line inside the arrays: readable, diffable, and written in pieces.
    yield "{\n"
    keys = list(doc)
    for i, key in enumerate(keys):
        value = doc[key]
        end = ",\n" if i < len(keys) - 1 else "\n"
        if isinstance(value, list) and value:
            yield f"{json.dumps(key)}: [\n"
            for j, item in enumerate(value):
                yield json.dumps(item, ensure_ascii=False) + (",\n" if j < len(value) - 1 else "\n")
            yield "]" + end
        else:
            yield f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}{end}"
    yield "}\n"


def jsonl_chunks(doc: dict[str, Any]) -> Iterator[str]:
    names = {s["id"]: s["name"] for s in doc["speakers"]}
    for u in doc["utterances"]:
        record = {
            "speaker": names.get(u["speaker_id"], str(u["speaker_id"])),
            "text": u["text"],
            "time": _iso(u["time"]),
        }
        yield json.dumps(record, ensure_ascii=False) + "\n"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _export_zone(doc: dict[str, Any]) -> tzinfo:
    """The zone a markdown export shows times in: the one its settings name, else the system's."""
    try:
        return local_zone(doc.get("settings", {}).get("time_zone"))
    except ConfigError:  # written on a machine that knew a zone this one does not
        return local_zone(None)


def markdown_chunks(doc: dict[str, Any], zone: tzinfo | None = None) -> Iterator[str]:
    """A readable export; local times (`zone`, else the export's own, else the system's) with the zone named."""
    zone = zone or _export_zone(doc)

    def local(t: float) -> datetime:
        return datetime.fromtimestamp(t, zone)

    yield "# Memory export\n\n"
    if doc["selection"]:
        yield "Selection: " + ", ".join(f"{k} {v}" for k, v in doc["selection"].items()) + "\n\n"
    yield "## What the memory keeps\n\n"
    children: dict[int | None, list[dict[str, Any]]] = {}
    for n in doc["nodes"]:
        children.setdefault(n["parent_id"], []).append(n)

    def tree(parent: int | None, depth: int) -> Iterator[str]:
        for n in children.get(parent, []):
            when = f" ({local(n['start_time']):%Y-%m-%d})" if n["start_time"] and n["level"] == "event" else ""
            yield f"{'  ' * depth}- {'**' if depth == 0 else ''}{n['text']}{'**' if depth == 0 else ''}{when}\n"
            yield from tree(n["id"], depth + 1)

    yield from tree(None, 0)
    yield "\n## Transcript\n"
    names = {s["id"]: s["name"] for s in doc["speakers"]}
    day = None
    for u in sorted(doc["utterances"], key=lambda u: (u["time"], u["id"])):
        stamp = local(u["time"])
        if f"{stamp:%Y-%m-%d}" != day:
            day = f"{stamp:%Y-%m-%d}"
            yield f"\n### {day}\n\n"
        yield f"- {stamp:%H:%M:%S %Z} **{names.get(u['speaker_id'], u['speaker_id'])}**: {u['text']}\n"


FORMATS: dict[str, Callable[[dict[str, Any]], Iterator[str]]] = {
    "json": json_chunks,
    "jsonl": jsonl_chunks,
    "markdown": markdown_chunks,
}


# --- reading files -------------------------------------------------------------------------------


def read_document(path: Path) -> dict[str, Any]:
    """Parse and check an export; every refusal says what is wrong with the file."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError:  # a path no file can have (a NUL byte, from the API)
        raise InputError(f"{str(path)!r}: not a file name") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a memory export (not UTF-8 text at byte {exc.start})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (the file looks cut short)" if exc.pos >= len(text.rstrip()) - 1 else ""
        raise InputError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}{hint}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f'{path}: not a memory export (no "format": "{FORMAT}")')
    schema = doc.get("schema")
    if not isinstance(schema, int):
        raise InputError(f"{path}: the export has no schema version")
    if schema > SCHEMA:
        raise InputError(
            f"{path}: written by a newer version of the assistant (export schema {schema}; this one reads up to "
            f"{SCHEMA}); upgrade to import it"
        )
    if doc.get("sha256") != checksum(doc):
        raise InputError(f"{path}: the export's checksum does not match its content: it was altered or damaged")
    _check_shape(path, doc)
    return doc


_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "speakers": {"id": (int,), "name": (str,), "created": (int, float), "speech_seconds": (int, float)},
    "utterances": {"id": (int,), "speaker_id": (int,), "text": (str,), "time": (int, float), "created": (int, float)},
    "nodes": {
        "id": (int,),
        "level": (str,),
        "text": (str,),
        "tokens": (int,),
        "frequency": (int,),
        "last_access": (int, float),
        "created": (int, float),
        "sources": (list,),
    },
}


def _check_shape(path: Path, doc: dict[str, Any]) -> None:
    for section, fields in _FIELDS.items():
        items = doc.get(section)
        if not isinstance(items, list):
            raise InputError(f"{path}: {section}: expected a list")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError(f"{path}: {section}[{i}]: expected an object")
            for key, types in fields.items():
                if not isinstance(item.get(key), types) or isinstance(item.get(key), bool):
                    raise InputError(f"{path}: {section}[{i}].{key}: missing or of the wrong type")
    for i, s in enumerate(doc["speakers"]):
        # Optional: exports written before it was kept have none.
        seconds = s.get("enrolled_seconds", 0.0)
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not seconds >= 0:
            raise InputError(f"{path}: speakers[{i}].enrolled_seconds: not a number of seconds")
    speakers = {s["id"] for s in doc["speakers"]}
    utterances = {u["id"] for u in doc["utterances"]}
    nodes = {n["id"]: n for n in doc["nodes"]}
    for i, u in enumerate(doc["utterances"]):
        if u["speaker_id"] not in speakers:
            raise InputError(f"{path}: utterances[{i}].speaker_id: no speaker {u['speaker_id']} in the file")
        if not u["text"].strip():
            raise InputError(f"{path}: utterances[{i}].text: empty")
    for i, n in enumerate(doc["nodes"]):
        if n["level"] not in {lvl.value for lvl in Level}:
            raise InputError(f"{path}: nodes[{i}].level: {n['level']!r} is not scene, event or amu")
        if (n["level"] == "scene") != (n.get("parent_id") is None) or (
            n.get("parent_id") is not None and n["parent_id"] not in nodes
        ):
            raise InputError(f"{path}: nodes[{i}].parent_id: does not fit the scene > event > unit tree")
        if any(s not in utterances for s in n["sources"]):
            raise InputError(f"{path}: nodes[{i}].sources: names an utterance that is not in the file")
    for key in ("buffer", "context"):
        if any(u not in utterances for u in doc.get("sensing_buffer", {}).get(key, [])):
            raise InputError(f"{path}: sensing_buffer.{key}: names an utterance that is not in the file")
    for i, p in enumerate(doc.get("pending", [])):
        if any(u not in utterances for u in p.get("utterances", []) + p.get("context", [])):
            raise InputError(f"{path}: pending[{i}]: names an utterance that is not in the file")


# --- restoring -----------------------------------------------------------------------------------


def _enrolled_seconds(speaker: dict[str, Any]) -> float:
    return float(speaker.get("enrolled_seconds", 0.0))


def store_is_empty(store: Store) -> bool:
    return archive_rows.is_empty(store.db)


def import_document(
    store: Store,
    doc: dict[str, Any],
    *,
    embed: Callable[[list[str]], np.ndarray],
    count_tokens: Callable[[str], int],
) -> ImportReport:
    """Restore (empty store, ids kept) or merge (ids mapped, duplicates skipped); one transaction.

    Vectors are computed before the transaction opens, so the write itself is quick.
    """
    started = _time.perf_counter()
    names = {s["id"]: s["name"] for s in doc["speakers"]}
    utterances = doc["utterances"]
    u_vectors = embed([f"{names[u['speaker_id']]}: {u['text']}" for u in utterances]) if utterances else None
    nodes = doc["nodes"]
    n_vectors = embed([n["text"] for n in nodes]) if nodes else None
    restore = store_is_empty(store)
    db = store.db
    speaker_map: dict[int, int] = {}
    utterance_map: dict[int, int] = {}
    node_map: dict[int, int] = {}
    duplicates = 0
    with store.atomic():
        for s in doc["speakers"]:
            voice = base64.b64decode(s["voice"]) if s.get("voice") else None
            existing = archive_rows.speaker_named(db, s["name"])
            if existing is not None:
                existing_id, has_voice = existing
                speaker_map[s["id"]] = existing_id
                if not has_voice and voice is not None:
                    archive_rows.give_voice(
                        db, existing_id, voice, s["speech_seconds"], bool(s.get("enrolled")), _enrolled_seconds(s)
                    )
                continue
            speaker_map[s["id"]] = archive_rows.insert_speaker(
                db,
                SpeakerRow(
                    s["id"] if restore else None,
                    s["name"],
                    s["created"],
                    voice,
                    s["speech_seconds"],
                    bool(s.get("enrolled")),
                    _enrolled_seconds(s),
                ),
            )
        for i, u in enumerate(utterances):
            speaker = names[u["speaker_id"]]
            digest = utterance_digest(Utterance(speaker, u["text"], u["time"]))
            found = archive_rows.utterance_with_digest(db, digest)
            if found is not None:
                utterance_map[u["id"]] = found
                duplicates += 1
                continue
            assert u_vectors is not None
            utterance_map[u["id"]] = archive_rows.insert_utterance(
                db,
                UtteranceRow(
                    u["id"] if restore else None,
                    speaker_map[u["speaker_id"]],
                    u["text"],
                    u["time"],
                    u["created"],
                ),
                digest,
                u_vectors[i],
            )
        added_nodes = 0
        for i, n in enumerate(nodes):  # parents come before children: ids grow down the tree
            parent = node_map.get(n["parent_id"]) if n["parent_id"] is not None else None
            if not restore:
                same = archive_rows.same_node(db, n["level"], n["text"], parent)
                if same is not None:
                    node_map[n["id"]] = same
                    store.add_sources(same, [utterance_map[s] for s in n["sources"]])
                    continue
            assert n_vectors is not None
            new_id = archive_rows.insert_node(
                db,
                NodeRow(
                    n["id"] if restore else None,
                    n["level"],
                    parent,
                    n["text"],
                    # Counted in this assistant's tokenizer: the budget is measured in it.
                    max(1, count_tokens(n["text"])),
                    n["frequency"],
                    n["last_access"],
                    n["created"],
                    n.get("start_time"),
                    n.get("end_time"),
                    n.get("relation"),
                ),
                n_vectors[i],
            )
            node_map[n["id"]] = new_id
            store.add_sources(new_id, [utterance_map[s] for s in n["sources"]])
            added_nodes += 1
        buffer = doc.get("sensing_buffer", {})
        if restore:
            by_id = {u.id: u for u in store.utterances(utterance_map.values())}
            store.set_stsb(
                [by_id[utterance_map[u]] for u in buffer.get("buffer", [])],
                [by_id[utterance_map[u]] for u in buffer.get("context", [])],
            )
            for p in doc.get("pending", []):
                members = [(u, 1) for u in p["context"]] + [(u, 0) for u in p["utterances"]]
                archive_rows.insert_pending(db, p["id"], p["created"], [(utterance_map[u], c) for u, c in members])
        else:
            # Speech the file had not yet filed is filed here: it becomes pending, to be distilled.
            fresh = [u for u in buffer.get("buffer", []) if u in utterance_map] + [
                u for p in doc.get("pending", []) for u in p["utterances"]
            ]
            rows = store.utterances(utterance_map[u] for u in fresh)
            if rows:
                store.add_pending(rows, [])
        store.advance_clock(float(doc.get("clock") or 0))
        store.audit(
            "import",
            {
                "mode": "restore" if restore else "merge",
                "utterances": len(utterances) - duplicates,
                "nodes": added_nodes,
            },
        )
    store.reload_index()
    return ImportReport(
        "restore" if restore else "merge",
        len(speaker_map),
        len(utterances) - duplicates,
        duplicates,
        added_nodes,
        _time.perf_counter() - started,
    )
