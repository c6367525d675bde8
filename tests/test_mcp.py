"""`assistant mcp`, driven as a desktop client drives it: the SDK's own client starts the command
and speaks MCP over its stdin and stdout, in front of a real daemon that heard a conversation.

Without a daemon the server still starts, lists its tools, and each call says how to start one.
Over HTTP it asks for the daemon's bearer token.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult

from .daemon_helpers import PART_ONE, DaemonProcess, daemon_config, kill_leftovers, make_recording, running

T = TypeVar("T")

TOOLS = {"ask", "search", "transcript", "speakers", "digest", "forget"}
RESOURCES = {"memory://tree", "memory://transcript/recent"}
TOKEN = "a-token-of-more-than-sixteen-characters"


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    yield
    kill_leftovers()


@pytest.fixture(scope="module")
def heard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """A daemon that heard PART_ONE (two voices, six turns) and filed all of it."""
    root = tmp_path_factory.mktemp("mcp")
    # The product's default answerer: the tests check what an answer says and cites, and the 0.5B
    # says "not mentioned" to "Who is looking after Priya's dog?" with the answer in its context.
    d = daemon_config(root / "d", llm=None)
    d.shared = True
    with running(d, make_recording(root / "audio", PART_ONE)) as daemon:
        yield daemon


# --- the client -------------------------------------------------------------------------------------


def server(d: DaemonProcess, *args: str) -> StdioServerParameters:
    # The whole environment: the SDK passes on only HOME, PATH and a few more by default, and the
    # server must import this checkout (PYTHONPATH) and find this daemon's runtime directory.
    return StdioServerParameters(
        command=sys.executable, args=["-m", "assistant", "--config", str(d.config), "mcp", *args], env=d.env()
    )


def talk(d: DaemonProcess, scenario: Callable[[Client], Awaitable[T]], mode: str = "auto") -> T:
    """Start `assistant mcp` for `d`, run `scenario` with a connected client, and stop it."""

    async def run() -> T:
        async with Client(server(d), mode=mode, read_timeout_seconds=300) as client:
            return await scenario(client)

    return anyio.run(run)


def ok(result: CallToolResult) -> dict[str, Any]:
    """A tool's structured result; its text says the same, as JSON."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def refused(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


def seconds(iso: str) -> float:
    when = datetime.fromisoformat(iso)
    assert when.tzinfo is not None, iso  # every time a tool gives back names its offset
    return when.timestamp()


# --- in front of a daemon -----------------------------------------------------------------------------


@pytest.mark.slow
def test_ask_answers_with_citations_that_are_utterances_of_the_transcript(heard: DaemonProcess) -> None:
    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        answer = ok(await client.call_tool("ask", {"question": "Who is looking after Priya's dog?"}))
        return answer, ok(await client.call_tool("transcript", {}))

    answer, transcript = talk(heard, scenario)
    said = {line["utterance_id"]: line for line in transcript["lines"]}
    assert len(said) >= 5, transcript
    assert answer["answer"] and answer["citations"], answer
    for cited in answer["citations"]:
        assert said[cited["utterance_id"]] == cited  # the same speaker, time and words
        seconds(cited["time"])
    assert any("sister" in c["text"].lower() or "biscuit" in c["text"].lower() for c in answer["citations"])
    assert answer["limited_to"] is None


@pytest.mark.slow
def test_the_digest_of_the_day_cites_its_utterances_and_a_wrong_day_is_refused(heard: DaemonProcess) -> None:
    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any], str, str]:
        return (
            ok(await client.call_tool("digest", {"day": "today"})),
            ok(await client.call_tool("transcript", {})),
            refused(await client.call_tool("digest", {"day": "2026-02-30"})),
            refused(await client.call_tool("digest", {"day": 20261116})),
        )

    digest, transcript, impossible, number = talk(heard, scenario)
    said = {line["utterance_id"]: line for line in transcript["lines"]}
    assert digest["utterances"] == len(said) and set(digest["speakers"]) == {s["speaker"] for s in said.values()}
    assert digest["topics"] and all(t["lines"] for t in digest["topics"]), digest
    cited = [line for t in digest["topics"] for line in t["lines"]]
    cited += [line for c in digest["commitments"] for line in c["lines"]]
    assert all(said[line["utterance_id"]] == line for line in cited)
    assert all(c["who"] == c["lines"][0]["speaker"] for c in digest["commitments"]), digest["commitments"]
    assert "2026-02-30" in impossible and "not a day" in impossible
    assert "day" in number


@pytest.mark.slow
def test_search_and_transcript_keep_to_the_speaker_and_the_window(heard: DaemonProcess) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        everything = ok(await client.call_tool("transcript", {}))["lines"]
        voices = ok(await client.call_tool("speakers", {}))["speakers"]
        one = max(voices, key=lambda v: v["utterances"])
        # From the second line on, until (before) the fifth: one bound as ISO, one as epoch seconds.
        since, until = everything[1]["time"], seconds(everything[4]["time"])
        return {
            "everything": everything,
            "voices": voices,
            "one": one,
            "window": (since, until),
            "search": ok(await client.call_tool("search", {"query": "the Lisbon trip"})),
            "search by name": ok(
                await client.call_tool("search", {"query": "the Lisbon trip", "speaker": one["name"]})
            ),
            "search by id": ok(await client.call_tool("search", {"query": "the Lisbon trip", "speaker": one["id"]})),
            "search in window": ok(
                await client.call_tool("search", {"query": "the Lisbon trip", "since": since, "until": until})
            ),
            "transcript by name": ok(await client.call_tool("transcript", {"speaker": one["name"]})),
            "transcript in window": ok(await client.call_tool("transcript", {"since": since, "until": until})),
            "last two": ok(await client.call_tool("transcript", {"limit": 2})),
        }

    seen = talk(heard, scenario)
    everything, one = seen["everything"], seen["one"]
    assert len(seen["voices"]) >= 2 and sum(v["utterances"] for v in seen["voices"]) == len(everything)
    # Heard voices, none enrolled: each says how surely its recent lines matched it.
    assert one["enrolled_seconds"] == 0 and 0.5 < one["match_cosine"] <= 1.0
    assert one["match_lines"] == min(one["utterances"], 20)
    assert {line["speaker"] for line in seen["search"]["lines"]} - {one["name"]}, "the search alone finds both"
    for key in ("search by name", "search by id"):
        lines = seen[key]["lines"]
        assert lines and {line["speaker"] for line in lines} == {one["name"]}, seen[key]
        assert all(reply["speaker"] == one["name"] for reply in seen[key]["replies"]), seen[key]
        assert one["name"] in seen[key]["limited_to"]
    assert [line["speaker"] for line in seen["transcript by name"]["lines"]] == [one["name"]] * one["utterances"]

    since, until = seconds(seen["window"][0]), seen["window"][1]
    assert seen["transcript in window"]["lines"] == everything[1:4]
    window_lines = seen["search in window"]["lines"]
    assert window_lines and all(since <= seconds(line["time"]) < until for line in window_lines), window_lines
    window_replies = seen["search in window"]["replies"]
    assert all(since <= seconds(r["time"]) < until for r in window_replies), window_replies
    assert seen["search in window"]["limited_to"].startswith("limited to from")
    assert seen["last two"]["lines"] == everything[-2:]


@pytest.mark.slow
def test_malformed_arguments_are_tool_errors_and_the_server_keeps_answering(heard: DaemonProcess) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        errors = {
            "speaker of the wrong type": await client.call_tool("search", {"query": "trip", "speaker": ["Sam"]}),
            "speaker true": await client.call_tool("transcript", {"speaker": True}),
            "impossible date": await client.call_tool("search", {"query": "trip", "since": "2026-02-30"}),
            "not a time": await client.call_tool("ask", {"question": "trip?", "until": "next Tuesday"}),
            "since after until": await client.call_tool(
                "transcript", {"since": "2026-11-16T10:00", "until": "2026-11-16T09:00"}
            ),
            "no question": await client.call_tool("ask", {}),
            "confirm as a word": await client.call_tool("forget", {"text": "slides", "confirm": "yes"}),
            "nothing to forget": await client.call_tool("forget", {}),
            "unknown speaker": await client.call_tool("search", {"query": "trip", "speaker": "Zed"}),
            "limit of zero": await client.call_tool("transcript", {"limit": 0}),
            "unknown tool": await client.call_tool("digest_of_everything", {}),
        }
        try:
            await client.read_resource("memory://nothing/here")
            unknown_resource = None
        except MCPError as exc:
            unknown_resource = exc
        return {
            "errors": {k: refused(v) for k, v in errors.items()},
            "unknown resource": unknown_resource,
            "after": ok(await client.call_tool("speakers", {})),
            "transcript after": ok(await client.call_tool("transcript", {})),
        }

    seen = talk(heard, scenario)
    errors = seen["errors"]
    assert "speaker" in errors["speaker of the wrong type"] and "speaker" in errors["speaker true"]
    assert "since: '2026-02-30' is not a time" in errors["impossible date"]
    assert "until: 'next Tuesday' is not a time" in errors["not a time"]
    assert "must be before" in errors["since after until"]
    assert "question" in errors["no question"] and "Field required" in errors["no question"]
    assert "confirm" in errors["confirm as a word"]
    assert "say what to forget" in errors["nothing to forget"]
    assert "no speaker 'Zed'" in errors["unknown speaker"] and "known:" in errors["unknown speaker"]
    assert "limit" in errors["limit of zero"]
    assert "Unknown tool" in errors["unknown tool"]
    assert seen["unknown resource"] is not None and seen["unknown resource"].code == INVALID_PARAMS
    # Nothing was forgotten by the refused calls, and the server still answers.
    assert seen["after"]["speakers"]
    assert any("slides" in line["text"].lower() for line in seen["transcript after"]["lines"])


@pytest.mark.slow
def test_resources_are_the_memory_tree_and_the_recent_transcript(heard: DaemonProcess) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        listed = await client.list_resources()
        read = {str(r.uri): await client.read_resource(r.uri) for r in listed.resources}
        return {"read": read, "transcript": ok(await client.call_tool("transcript", {"limit": 50}))}

    seen = talk(heard, scenario)
    assert set(seen["read"]) == RESOURCES
    for result in seen["read"].values():
        assert len(result.contents) == 1 and result.contents[0].mime_type == "application/json"
    tree = json.loads(seen["read"]["memory://tree"].contents[0].text)
    assert tree["scenes"] and all(s["level"] == "scene" for s in tree["scenes"])
    events = [e for s in tree["scenes"] for e in s["children"]]
    assert events and all(e["level"] == "event" for e in events)
    assert all(seconds(e["start"]) <= seconds(e["end"]) for e in events), events
    recent = json.loads(seen["read"]["memory://transcript/recent"].contents[0].text)
    assert recent == seen["transcript"]


# Last of the module: it forgets a line of the shared daemon's memory (no other test reads it).
@pytest.mark.slow
def test_forget_is_a_dry_run_until_confirmed(heard: DaemonProcess) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        before = ok(await client.call_tool("transcript", {}))
        plan = ok(await client.call_tool("forget", {"text": "slides"}))
        between = ok(await client.call_tool("transcript", {}))
        unconfirmed = ok(await client.call_tool("forget", {"text": "slides", "confirm": False}))
        done = ok(await client.call_tool("forget", {"text": "slides", "confirm": True}))
        after = ok(await client.call_tool("transcript", {}))
        again = ok(await client.call_tool("forget", {"text": "slides"}))
        return {
            "before": before,
            "plan": plan,
            "between": between,
            "unconfirmed": unconfirmed,
            "done": done,
            "after": after,
            "again": again,
        }

    seen = talk(heard, scenario)
    plan, done = seen["plan"], seen["done"]
    assert plan["forgotten"] is False and plan["utterances"] >= 1 and plan["examples"], plan
    assert "confirm: true" in plan["note"]
    assert seen["between"] == seen["before"] and seen["unconfirmed"] == plan  # nothing changed
    assert done["forgotten"] is True and done["utterances"] == plan["utterances"], done
    assert done["database_bytes"] and "forgotten for good" in done["note"]
    gone = [line for line in seen["before"]["lines"] if "slides" in line["text"].lower()]
    assert seen["after"]["lines"] == [line for line in seen["before"]["lines"] if line not in gone]
    assert seen["again"]["utterances"] == 0 and "nothing matches" in seen["again"]["note"]


# --- without a daemon ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # legacy: the initialize handshake desktop clients use
def test_without_a_daemon_it_lists_its_tools_and_each_call_says_how_to_start_one(tmp_path: Path, mode: str) -> None:
    d = daemon_config(tmp_path / "d")

    async def scenario(client: Client) -> dict[str, Any]:
        try:
            await client.read_resource("memory://tree")
            resource_error = None
        except MCPError as exc:
            resource_error = exc
        return {
            "tools": {t.name: t for t in (await client.list_tools()).tools},
            "resources": {str(r.uri) for r in (await client.list_resources()).resources},
            "speakers": await client.call_tool("speakers", {}),
            "search": await client.call_tool("search", {"query": "the trip"}),
            "resource": resource_error,
        }

    seen = talk(d, scenario, mode)
    assert set(seen["tools"]) == TOOLS
    assert seen["resources"] == RESOURCES
    forget = seen["tools"]["forget"]
    assert forget.input_schema["properties"]["confirm"] == {"default": False, "title": "Confirm", "type": "boolean"}
    assert forget.annotations is not None and forget.annotations.destructive_hint
    assert all(seen["tools"][t].annotations.read_only_hint for t in TOOLS - {"forget"})
    for key in ("speakers", "search"):
        message = refused(seen[key])
        assert f"no daemon is running for {d.data_dir}" in message and "assistant daemon" in message, message
    assert seen["resource"] is not None and "no daemon is running" in seen["resource"].message


# --- over HTTP --------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_over_http_it_needs_the_daemons_token(tmp_path: Path) -> None:
    d = daemon_config(tmp_path / "d", extra=f"  tcp:\n    token: {TOKEN}\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with open(tmp_path / "mcp.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, *server(d, "--http", "--port", str(port)).args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=d.env(),
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp_path / "mcp.log").read_text()
            try:
                without = httpx.post(url, json={}, timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, (tmp_path / "mcp.log").read_text()
                time.sleep(0.2)
        wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer not-the-token-at-all"}, timeout=5)

        async def with_token() -> tuple[set[str], CallToolResult]:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                return {t.name for t in (await client.list_tools()).tools}, await client.call_tool("speakers", {})

        tools, speakers = anyio.run(with_token)
    finally:
        process.terminate()
        process.wait(30)
    assert without.status_code == 401 and wrong.status_code == 401
    assert tools == TOOLS
    assert "no daemon is running" in refused(speakers)


def test_http_without_a_token_in_the_config_is_refused_before_it_listens(tmp_path: Path) -> None:
    d = daemon_config(tmp_path / "d")
    for args, message in ((["--http"], "daemon.tcp.token"), (["--port", "9000"], "--port is for --http")):
        # A subprocess with a timeout: a server that started anyway would never return.
        out = subprocess.run(
            [sys.executable, *server(d, *args).args],
            env=d.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2 and message in out.stderr, out.stderr
