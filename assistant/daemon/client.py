"""Talk to a running daemon over its Unix socket (the CLI's commands, the TUI, the tests)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from typing import Any
from urllib.parse import quote

import httpx

from ..config import Settings
from ..errors import InputError
from ..zones import format_time
from .instance import DaemonError, running_pid, socket_path

HOW_TO_START = (
    "start it with `systemctl --user start assistant` (after `assistant service install`), "
    "or run `assistant daemon` in a terminal"
)


# The years a datetime holds, a day in from either end so that showing a bound in any time zone
# stays inside them: a bound outside could be neither compared as a date nor shown.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC).timestamp()
LATEST = datetime(9999, 12, 30, tzinfo=UTC).timestamp()
TIME_FORMS = (
    "an ISO-8601 date (2026-11-16) or date and time (2026-11-16T09:00 or 2026-11-16 09:00, "
    "optionally with an offset such as Z or +01:00), or seconds since the epoch"
)


class NotRunning(DaemonError):
    pass


def parse_when(value: object, zone: tzinfo = UTC) -> float:
    """A time limiting what a question or search recalls, as seconds since the epoch.

    One rule for every client (the CLI's --since/--until, the TUI's filter row, the API's
    `since`/`until`): a number is seconds since the epoch; a string is that number written out,
    or an ISO-8601 date or date and time, read in `zone` unless it names its own offset. Recall
    passes the configured zone (`time_zone`), the one answers show times in, so "2026-11-16"
    is the user's own day. A ValueError says what was wrong; the caller says where.
    """
    shown = _shown(value)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{shown} is not a time; give {TIME_FORMS}")
    if isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                when = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"{shown} is not a time; give {TIME_FORMS}") from None
            seconds = (when if when.tzinfo is not None else when.replace(tzinfo=zone)).timestamp()
    else:
        try:
            seconds = float(value)
        except OverflowError:  # an integer with hundreds of digits
            seconds = math.inf
    if not EARLIEST <= seconds <= LATEST:  # NaN fails this too
        raise ValueError(f"{shown} is outside the years 1 to 9999")
    return seconds


def _shown(value: object) -> str:
    # An error echoes what it refused, but a pasted page (or a 400-digit number) only in part.
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_window(
    since: float | None,
    until: float | None,
    names: tuple[str, str] = ("since", "until"),
    zone: tzinfo | None = None,
) -> None:
    """Refuse an empty window before anything is sent or loaded, naming the bounds as the user gave them."""
    if since is not None and until is not None and since >= until:
        raise InputError(
            f"{names[0]} ({format_time(since, zone)}) must be before {names[1]} ({format_time(until, zone)})"
        )


def describe_filter(f: dict[str, Any] | None, zone: tzinfo | None = None) -> str | None:
    """A response's `filter` in words: "limited to Sam, from 2026-11-16 00:00 WET, before ... (read
    from the question: since)"; None when nothing limited the recall. Times in `zone` (None = the
    system's)."""
    if not f or (f.get("since") is None and f.get("until") is None and f.get("speaker") is None):
        return None
    parts = [str(f["speaker"])] if f.get("speaker") else []
    if f.get("since") is not None:
        parts.append(f"from {format_time(f['since'], zone)}")
    if f.get("until") is not None:
        parts.append(f"before {format_time(f['until'], zone)}")
    inferred = list(f.get("inferred") or ())
    return "limited to " + ", ".join(parts) + (f" (read from the question: {', '.join(inferred)})" if inferred else "")


def recall_body(
    since: float | None = None, until: float | None = None, speaker: str | int | None = None
) -> dict[str, Any]:
    """The limits of a question or a search as the API takes them: only those that are set."""
    return {k: v for k, v in (("since", since), ("until", until), ("speaker", speaker)) if v is not None}


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

    def ask(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """NDJSON events: {"type": "token", "text"}... then {"type": "answer", ...} (or "error").

        `since`/`until` (seconds since the epoch) and `speaker` (a name or id) limit what it recalls.
        """
        return self._stream("/ask", {"question": question, **recall_body(since, until, speaker)})

    def search(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> dict[str, Any]:
        """What an answer would see (POST /search): the recalled lines, the paths, the filter applied."""
        return self._call("POST", "/search", {"question": question, **recall_body(since, until, speaker)})

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

    def merge_suggestions(self) -> list[dict[str, Any]]:
        return self._call("GET", "/speakers/suggestions")

    def merge_speakers(self, keep: str, other: str) -> dict[str, Any]:
        return self._call("POST", "/speakers/merge", {"keep": keep, "other": other})

    def reassign(
        self, to: str, utterance_ids: list[int], *, new_speaker: bool = False, **window: Any
    ) -> dict[str, Any]:
        """Utterances (by id, or `since`/`until`/`speaker`) said by `to` (a new speaker's name with `new_speaker`)."""
        body = {"to": to, "utterance_ids": utterance_ids, **{k: v for k, v in window.items() if v is not None}}
        if new_speaker:
            body["new_speaker"] = True
        return self._call("POST", "/utterances/reassign", body)

    def speaker_lines(self, key: str, limit: int = 20) -> list[dict[str, Any]]:
        """A speaker's last `limit` utterances, oldest first."""
        return self._call("GET", f"/speakers/{quote(key, safe='')}/utterances?limit={int(limit)}")

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
