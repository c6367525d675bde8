"""An async client of the daemon's API for the TUI: one httpx.AsyncClient over the Unix socket.

The sync `assistant.daemon.client.DaemonClient` would block Textual's event loop; this one is
awaited inside workers. Errors come out as two kinds the screens can show: the daemon is gone
(`DaemonGone`) or it refused the request (`DaemonRefused`, with its own message).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from ..daemon.client import recall_body
from ..errors import AssistantError


class DaemonGone(AssistantError):
    """No daemon answers on the socket, or it went away mid-request."""


class DaemonRefused(AssistantError):
    """The daemon answered with an error (a 4xx and its `{"error": ...}` message)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


# What a dropped connection looks like to httpx: before, during, or in the middle of a stream.
GONE = (httpx.TransportError, httpx.StreamError, httpx.RemoteProtocolError)


class AsyncDaemonClient:
    def __init__(self, socket: Path, *, timeout: float = 30.0) -> None:
        self.socket = socket
        self._http = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=str(socket)),
            base_url="http://assistant",
            # Answers and the live transcript stream for as long as they take.
            timeout=httpx.Timeout(timeout, read=None),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        try:
            response = await self._http.request(method, url, json=body)
        except GONE as exc:
            raise DaemonGone(f"the daemon did not answer ({exc.__class__.__name__})") from None
        _raise_for(response)
        return response.json()

    async def _lines(
        self, url: str, body: dict[str, Any] | None = None, method: str = "POST"
    ) -> AsyncIterator[dict[str, Any]]:
        try:
            async with self._http.stream(method, url, json=body) as response:
                if response.status_code >= 400:
                    await response.aread()
                    _raise_for(response)
                async for line in response.aiter_lines():
                    if line.strip():
                        yield json.loads(line)
        except GONE as exc:
            raise DaemonGone(f"the daemon went away ({exc.__class__.__name__})") from None

    # --- the API --------------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        return await self._call("GET", "/status")

    def ask(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """{"type": "token"}... then {"type": "answer", ..., "filter"} or {"type": "error"}.

        `since`/`until` (seconds since the epoch) and `speaker` (a name or id) limit what it recalls.
        """
        return self._lines("/ask", {"question": question, **recall_body(since, until, speaker)})

    async def search(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> dict[str, Any]:
        """The recalled lines, the paths and the `filter` applied (its bounds read from the question too)."""
        return await self._call("POST", "/search", {"question": question, **recall_body(since, until, speaker)})

    def utterances(self, recent: int = 0) -> AsyncIterator[dict[str, Any]]:
        """The live transcript, after the newest `recent` utterances already stored."""
        return self._lines(f"/utterances/stream?recent={int(recent)}", method="GET")

    async def pause(self) -> dict[str, Any]:
        return await self._call("POST", "/pause")

    async def resume(self) -> dict[str, Any]:
        return await self._call("POST", "/resume")

    async def ptt_start(self) -> dict[str, Any]:
        return await self._call("POST", "/push-to-talk/start")

    async def ptt_state(self) -> dict[str, Any]:
        """{"recording", "seconds", "level_dbfs"}: what the recording indicator shows."""
        return await self._call("GET", "/push-to-talk")

    async def ptt_cancel(self) -> dict[str, Any]:
        return await self._call("POST", "/push-to-talk/cancel")

    def ptt_stop(
        self, *, since: float | None = None, until: float | None = None, speaker: str | int | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """{"type": "question", "text"}, then the answer's lines as for `ask`, limited the same way."""
        limits = recall_body(since, until, speaker)
        return self._lines("/push-to-talk/stop", limits or None)

    async def speakers(self) -> list[dict[str, Any]]:
        return await self._call("GET", "/speakers")

    async def name_speaker(self, key: str, name: str) -> dict[str, Any]:
        return await self._call("POST", f"/speakers/{quote(key, safe='')}/name", {"name": name})

    async def merge_speakers(self, keep: str, other: str) -> dict[str, Any]:
        return await self._call("POST", "/speakers/merge", {"keep": keep, "other": other})

    async def merge_suggestions(self) -> list[dict[str, Any]]:
        """Pairs of speakers whose voices sound alike: {"keep", "other", "cosine"}."""
        return await self._call("GET", "/speakers/suggestions")

    async def speaker_lines(self, key: str, limit: int) -> list[dict[str, Any]]:
        """A speaker's last `limit` utterances, oldest first."""
        return await self._call("GET", f"/speakers/{quote(key, safe='')}/utterances?limit={int(limit)}")

    async def reassign(self, to: str, utterance_ids: list[int], *, new_speaker: bool = False) -> dict[str, Any]:
        """These utterances were said by `to` (a speaker's id, or a new speaker's name)."""
        body = {"to": to, "utterance_ids": utterance_ids, "new_speaker": new_speaker}
        return await self._call("POST", "/utterances/reassign", body)

    async def memory(self) -> list[dict[str, Any]]:
        return await self._call("GET", "/memory")

    async def delete_node(self, node_id: int) -> dict[str, Any]:
        return await self._call("DELETE", f"/memory/nodes/{node_id}")

    async def forget(self, body: dict[str, Any], *, dry_run: bool) -> dict[str, Any]:
        return await self._call("POST", "/forget", {**body, "dry_run": dry_run})

    async def export(self, fmt: str, selection: dict[str, Any]) -> AsyncIterator[str]:
        """The export's text in pieces, as the daemon streams it."""
        try:
            async with self._http.stream("POST", "/export", json={"format": fmt, **selection}) as response:
                if response.status_code >= 400:
                    await response.aread()
                    _raise_for(response)
                async for chunk in response.aiter_text():
                    yield chunk
        except GONE as exc:
            raise DaemonGone(f"the daemon went away ({exc.__class__.__name__})") from None

    async def export_text(self, fmt: str, selection: dict[str, Any]) -> str:
        return "".join([chunk async for chunk in self.export(fmt, selection)])


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        message = response.json().get("error") or response.text
    except ValueError:
        message = response.text
    raise DaemonRefused(str(message), response.status_code)
