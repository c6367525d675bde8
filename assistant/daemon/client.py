"""Talk to a running daemon over its Unix socket (the CLI's commands, the TUI, the tests)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx

from ..config import Settings
from ..errors import InputError
from .instance import DaemonError, running_pid, socket_path

HOW_TO_START = (
    "start it with `systemctl --user start assistant` (after `assistant service install`), "
    "or run `assistant daemon` in a terminal"
)


class NotRunning(DaemonError):
    pass


class DaemonClient:
    def __init__(self, settings: Settings, *, timeout: float = 30.0) -> None:
        self.path = socket_path(settings)
        self._http = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.path)),
            base_url="http://assistant",
            # Answers and the live transcript stream for as long as they take.
            timeout=httpx.Timeout(timeout, read=None),
        )

    @classmethod
    def connect(cls, settings: Settings) -> DaemonClient | None:
        """A client when a daemon answers for this data directory, else None."""
        if running_pid(settings) is None or not socket_path(settings).exists():
            return None
        client = cls(settings)
        try:
            client.status()
        except (httpx.TransportError, NotRunning):
            client.close()
            return None
        return client

    @classmethod
    def require(cls, settings: Settings) -> DaemonClient:
        client = cls.connect(settings)
        if client is None:
            raise NotRunning(f"no daemon is running; {HOW_TO_START}")
        return client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- requests ----------------------------------------------------------------------------

    def _call(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        try:
            response = self._http.request(method, url, json=body)
        except httpx.TransportError as exc:
            raise NotRunning(f"the daemon at {self.path} did not answer ({exc}); {HOW_TO_START}") from None
        _raise_for(response)
        return response.json()

    def _stream(self, url: str, body: dict[str, Any] | None = None, method: str = "POST") -> Iterator[dict[str, Any]]:
        try:
            with self._http.stream(method, url, json=body) as response:
                if response.status_code >= 400:
                    response.read()
                    _raise_for(response)
                for line in response.iter_lines():
                    if line.strip():
                        yield json.loads(line)
        except httpx.TransportError as exc:
            raise NotRunning(f"the daemon at {self.path} went away ({exc})") from None

    def status(self) -> dict[str, Any]:
        return self._call("GET", "/status")

    def ask(self, question: str) -> Iterator[dict[str, Any]]:
        """NDJSON events: {"type": "token", "text"}... then {"type": "answer", ...} (or "error")."""
        return self._stream("/ask", {"question": question})

    def utterances(self) -> Iterator[dict[str, Any]]:
        return self._stream("/utterances/stream", method="GET")

    def pause(self) -> dict[str, Any]:
        return self._call("POST", "/pause")

    def resume(self) -> dict[str, Any]:
        return self._call("POST", "/resume")

    def speakers(self) -> list[dict[str, Any]]:
        return self._call("GET", "/speakers")

    def name_speaker(self, key: str, name: str) -> dict[str, Any]:
        return self._call("POST", f"/speakers/{quote(key, safe='')}/name", {"name": name})

    def merge_speakers(self, keep: str, other: str) -> dict[str, Any]:
        return self._call("POST", "/speakers/merge", {"keep": keep, "other": other})

    def memory(self) -> list[dict[str, Any]]:
        return self._call("GET", "/memory")

    def export(self, fmt: str, selection: dict[str, Any]) -> Iterator[str]:
        """The export's text, in pieces, as the daemon writes it."""
        try:
            with self._http.stream("POST", "/export", json={"format": fmt, **selection}) as response:
                if response.status_code >= 400:
                    response.read()
                    _raise_for(response)
                yield from response.iter_text()
        except httpx.TransportError as exc:
            raise NotRunning(f"the daemon at {self.path} went away ({exc})") from None

    def import_file(self, path: str) -> dict[str, Any]:
        return self._call("POST", "/import", {"path": path})

    def forget(self, body: dict[str, Any], *, dry_run: bool) -> dict[str, Any]:
        return self._call("POST", "/forget", {**body, "dry_run": dry_run})

    def delete_node(self, node_id: int) -> dict[str, Any]:
        return self._call("DELETE", f"/memory/nodes/{node_id}")


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        message = response.json().get("error") or response.text
    except ValueError:
        message = response.text
    raise InputError(f"the daemon refused: {message}")
