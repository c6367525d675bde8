"""Fuzz the real daemon's API from its own OpenAPI description (schemathesis over the Unix socket).

The schema is fetched from the running daemon, not built in-process, and every generated request
goes over its socket, so what is fuzzed is what ships: the middleware (body limit, TCP token),
FastAPI's validation, the handlers and the daemon threads they call into.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from requests.adapters import HTTPAdapter
from schemathesis import GenerationMode
from schemathesis.checks import CheckFunction
from schemathesis.config._checks import NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool

from .daemon_helpers import PART_TWO, DaemonProcess, daemon_config, kill_leftovers, make_recording, settled

# Per operation and generation mode: about 50 x 2 x the operations that take input, i.e. around a
# thousand requests. Most are refused or answered in milliseconds (the whole run took seconds on
# two busy cores), so this stays well inside a couple of minutes.
MAX_EXAMPLES = 50
# A fuzzed question that happens to be relevant reaches the 0.5B LLM; on two contended cores an
# answer can take tens of seconds. Anything slower than this is a hang, and fails the run.
REQUEST_TIMEOUT = 120.0
BASE_URL = "http://assistant"
# Never ends while the daemon runs (the live transcript): it cannot be read whole like the rest.
LIVE_STREAM = ("GET", "/utterances/stream")
# Streams of typed lines that end in an answer or an error.
ANSWER_STREAMS = ("/ask", "/push-to-talk/stop")
# A body over daemon.max_body_bytes is refused with 413 before it is parsed: for an over-long
# question that is the rejection the negative cases look for. An explicit config also keeps a
# stray schemathesis.toml from changing what this test checks.
CONFIG = schemathesis.Config.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": [*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "413"]}}}
)


class _UnixConnection(HTTPConnection):
    """An HTTP connection whose transport is the daemon's Unix socket, whatever the URL's host."""

    def __init__(self, *args: Any, socket_path: str, **kwargs: Any) -> None:
        self.socket_path = socket_path
        super().__init__(*args, **kwargs)

    def _new_conn(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if isinstance(self.timeout, int | float):
            sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        return sock


class _UnixPool(HTTPConnectionPool):
    ConnectionCls = _UnixConnection


class UnixAdapter(HTTPAdapter):
    """Lets schemathesis's own `requests` transport (and every check that re-sends) use the socket."""

    def __init__(self, socket_path: Path) -> None:
        super().__init__()
        self._pool = _UnixPool("assistant", socket_path=str(socket_path), maxsize=4)

    def get_connection_with_tls_context(self, request: Any, verify: Any, proxies: Any = None, cert: Any = None) -> Any:
        return self._pool

    def close(self) -> None:
        self._pool.close()
        super().close()


def unix_session(socket_path: Path) -> requests.Session:
    session = requests.Session()
    session.mount(f"{BASE_URL}/", UnixAdapter(socket_path))
    return session


@dataclass
class Tally:
    cases: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    answered_by_llm: int = 0

    @property
    def total(self) -> int:
        return sum(self.cases.values())


@pytest.fixture(autouse=True)
def _no_daemon_left_behind():
    yield
    kill_leftovers()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory) -> DaemonProcess:
    root = tmp_path_factory.mktemp("fuzz")
    recording = make_recording(root / "audio", PART_TWO)
    d = daemon_config(root / "daemon")
    d.shared = True
    code = None
    try:
        d.start(recording)
        # Fuzz a memory with something in it (speakers to rename, nodes to delete), heard to the end,
        # so a fuzzed /pause cannot leave the recording half heard and the state differ between runs.
        d.wait_for(settled, "the recording to be heard and filed")
        yield d
    finally:
        # Shared, so kill_leftovers leaves it alone: it is ended here whatever happened.
        if d.process is not None:
            code = d.stop()
    assert code == 0, d.log.read_text()[-5000:]


def _checks_for(operation: Any, mode: GenerationMode) -> list[CheckFunction]:
    checks: list[CheckFunction] = [
        schemathesis.checks.not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
    ]
    if mode is GenerationMode.NEGATIVE:
        checks.append(negative_data_rejection)
    return checks


def _run_operation(operation: Any, mode: GenerationMode, session: requests.Session, tally: Tally) -> None:
    label = f"{operation.label} [{mode.value}]"
    tally.cases.setdefault(label, 0)
    checks = _checks_for(operation, mode)

    # Failures are collected, not raised: shrinking against a live daemon would replay requests for
    # minutes, and one report listing every distinct failure is more useful than the first.
    # Derandomized, so a failure in CI is the same failure on a laptop.
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        tally.cases[label] += 1
        try:
            response = case.call(base_url=BASE_URL, session=session, timeout=REQUEST_TIMEOUT)
        except requests.RequestException as exc:
            tally.failures.append(f"{label}: {type(exc).__name__}: {exc}\n{case.as_curl_command(base_url=BASE_URL)}")
            return
        tally.statuses[response.status_code] = tally.statuses.get(response.status_code, 0) + 1
        try:
            case.validate_response(response, checks=checks, transport_kwargs={"base_url": BASE_URL, "session": session})
        except FailureGroup as exc:  # every check that failed, with a curl line to replay it
            tally.failures.append(f"{label}: {exc}")
        problem = _ndjson_problem(operation.path, response, tally)
        if problem:
            tally.failures.append(f"{label}: {problem}\n{case.as_curl_command(base_url=BASE_URL)}")

    run()


def _ndjson_problem(path: str, response: Any, tally: Tally) -> str | None:
    """A stream's schema is only a media type, so its lines are checked here."""
    media = (response.headers.get("content-type") or [""])[0]  # lower-case names, lists of values
    if response.status_code != 200 or not media.startswith("application/x-ndjson"):
        return None
    try:
        lines = [json.loads(line) for line in response.content.splitlines() if line.strip()]
    except ValueError as exc:
        return f"a line of the stream is not JSON: {exc}"
    if path not in ANSWER_STREAMS:
        return None  # an export's jsonl: one object per utterance, possibly none
    if not lines or any(not isinstance(x, dict) or "type" not in x for x in lines):
        return f"the stream is empty or has a line without a type: {lines[:3]}"
    last = lines[-1]
    if last["type"] not in ("answer", "error"):
        return f"the stream ends with a {last['type']!r} line, not an answer or an error"
    if last["type"] == "answer" and last.get("context_tokens", 0) > 0:
        tally.answered_by_llm += 1
    return None


def _live_stream_answers(daemon: DaemonProcess) -> dict[str, Any]:
    """The live transcript, opened and left as a client would: its first line is the hello."""
    with daemon.client(timeout=30) as c, c.stream("GET", "/utterances/stream") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        hello = json.loads(next(response.iter_lines()))
    assert hello["type"] == "hello" and isinstance(hello["acknowledged"], int)
    return hello


@pytest.mark.slow
def test_inputs_the_fuzzer_found_are_refused_with_4xx(daemon: DaemonProcess) -> None:
    """Each of these was a 500 (an exception escaping a handler) until api.py was fixed."""
    with daemon.client() as c:
        # Past SQLite's 64-bit ids: binding the number raised OverflowError in the store.
        assert c.delete(f"/memory/nodes/{2**64}").status_code == 422
        assert c.delete("/memory/nodes/0").status_code == 422
        # isdigit() but not a number int() reads ("²"), or too large for an id: no such speaker.
        for key in ("%C2%B2", "%20%C2%B3", str(2**64), "9" * 5000):
            reply = c.post(f"/speakers/{key}/name", json={"name": "Fuzz"})
            assert reply.status_code == 400 and "no speaker" in reply.json()["error"], (key, reply.text)
        for keep, other in (("²", "1"), ("1", str(2**64))):
            reply = c.post("/speakers/merge", json={"keep": keep, "other": other})
            assert reply.status_code == 400 and "no speaker" in reply.json()["error"], reply.text
        # A body that is not UTF-8 is FastAPI's own 400; it now has the documented {"error": ...} shape.
        for url in ("/ask", "/search"):
            reply = c.post(url, content=b"\xff #", headers={"content-type": "application/json"})
            assert reply.status_code == 400 and isinstance(reply.json()["error"], str), reply.text
        # The same speaker check guards the export, whose own lookup (in daemon.py) would raise.
        reply = c.post("/export", json={"format": "jsonl", "speaker": "³"})
        assert reply.status_code == 400 and "no speaker" in reply.json()["error"], reply.text
        # Lax parsing read `true` as the time 1.0, and "yes" as true on a request that deletes.
        assert c.post("/export", json={"since": True}).status_code == 422
        assert c.post("/forget", json={"everything": "yes", "dry_run": False}).status_code == 422
        assert c.post("/forget", json={"since": 1.5}).status_code == 200  # numbers still are times
        unknown = c.get("/no/such/route")
        assert unknown.status_code == 404 and unknown.json() == {"error": "Not Found"}
        assert c.get("/status").status_code == 200


@pytest.mark.slow
def test_the_api_survives_fuzzing_from_its_own_description(daemon: DaemonProcess) -> None:
    with daemon.client() as c:
        raw = c.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(raw, config=CONFIG)
    session = unix_session(daemon.socket)
    tally = Tally()
    operations = [result.ok() for result in schema.get_all_operations()]
    seen = {(op.method.upper(), op.path) for op in operations}
    # The routes this test was written against are all described; routes added since are fuzzed too.
    assert {
        ("GET", "/status"),
        ("POST", "/ask"),
        ("GET", "/utterances/stream"),
        ("POST", "/pause"),
        ("POST", "/resume"),
        ("POST", "/push-to-talk/start"),
        ("POST", "/push-to-talk/cancel"),
        ("POST", "/push-to-talk/stop"),
        ("GET", "/speakers"),
        ("POST", "/speakers/{key}/name"),
        # Destructive (it folds one voice into another), and kept: a merge of fuzzed keys must still
        # be a 4xx or a real merge, never a 5xx. The daemon is this test's own.
        ("POST", "/speakers/merge"),
        ("GET", "/memory"),
        ("POST", "/search"),
        # Also destructive (small fuzzed ids hit real nodes), kept for the same reason.
        ("DELETE", "/memory/nodes/{node_id}"),
    } <= seen, seen
    started = time.monotonic()
    try:
        for operation in operations:
            if (operation.method.upper(), operation.path) == LIVE_STREAM:
                # It takes no parameters, so there is nothing to generate: one real open-read-close
                # instead of a request that would wait for the stream's end until the timeout.
                _live_stream_answers(daemon)
                tally.cases[f"{operation.label} [opened]"] = 1
                continue
            # An operation with no parameters and no body has nothing to make invalid.
            takes_input = any(True for _ in operation.iter_parameters()) or len(operation.body) > 0
            modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE] if takes_input else [GenerationMode.POSITIVE]
            for mode in modes:
                _run_operation(operation, mode, session, tally)
    finally:
        session.close()
    elapsed = time.monotonic() - started
    print(f"\nfuzzed {tally.total} cases over {len(operations)} operations in {elapsed:.0f} s")
    for label, n in sorted(tally.cases.items()):
        print(f"  {n:4d}  {label}")
    print("  statuses:", dict(sorted(tally.statuses.items())))
    print(f"  questions answered by the LLM: {tally.answered_by_llm}")
    if tally.failures:
        report = daemon.root / "fuzz-failures.txt"
        report.write_text("\n\n".join(tally.failures))
        print(f"  {len(tally.failures)} failing cases, all of them in {report}")
    assert not tally.failures, "\n\n".join(tally.failures[:10])
    assert not [code for code in tally.statuses if code >= 500]
    assert tally.total >= len(operations)

    # Still up, still answering, and nothing blew up inside it while being fuzzed.
    assert daemon.status()["state"] not in ("source failed", "stopping")
    assert "Traceback" not in daemon.log.read_text()
    _live_stream_answers(daemon)
