"""The one client of the daemon's API: `DaemonClient` (blocking) and `AsyncDaemonClient` (awaited).

Both implement `MemoryService` (assistant/service.py) over the daemon's Unix socket, and hand
back the records of `assistant.records`, read from the API's JSON by `assistant.wire`, so the
CLI, the TUI, the benchmarks and the tests hold the same records with or without a daemon.
Each operation is written once, as a `Call` (method, path, body and how to read the reply);
the two clients only differ in how they send it.

Errors: `DaemonGone` when no daemon answers or it went away mid-request; `DaemonRefused` when
it answered with an error (its message, and the HTTP status); `AnswerFailed`, a refusal, when it
failed while answering, after the answer had begun.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlencode

import httpx

from ..config import Settings
from ..errors import InputError
from ..records import (
    WHOLE_MEMORY,
    Answer,
    Connected,
    Digest,
    Evidence,
    ForgetFilter,
    ForgetOutcome,
    HeardLine,
    ImportReport,
    MemoryNode,
    MergeSuggestion,
    NameSuggestion,
    Reassignment,
    RecordingState,
    Relabelled,
    SearchResult,
    Selection,
    Skipped,
    Speaker,
    SpokenQuestion,
    Status,
    TranscriptEvent,
    Utterance,
)
from ..wire import from_json
from .instance import DaemonError, running_pid, socket_path

T = TypeVar("T")

HOW_TO_START = (
    "start it with `systemctl --user start assistant` (after `assistant service install`), "
    "or run `assistant daemon` in a terminal"
)

# What a dropped connection looks like to httpx: before, during, or in the middle of a stream.
GONE = (httpx.TransportError, httpx.StreamError, httpx.RemoteProtocolError)


class DaemonGone(DaemonError):
    """No daemon answers on the socket, or it went away mid-request."""


class DaemonRefused(InputError):
    """The daemon answered with an error: `message` is its own words, `status` the HTTP status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(f"the daemon refused: {message}")
        self.message = message
        self.status = status


class AnswerFailed(DaemonRefused):
    """The daemon failed while answering, after the answer had begun (its error line)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 409)


# --- the operations, each once -------------------------------------------------------------------


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: where it goes, what it carries, and how its reply (or each streamed line) is read."""

    method: str
    path: str
    body: dict[str, Any] | None
    read: Callable[[Any], T]
    stream: bool = False


def _limits(since: float | None, until: float | None, speaker: str | int | None) -> dict[str, Any]:
    # Only the limits that are set: the API reads a missing one as "no limit".
    return {k: v for k, v in (("since", since), ("until", until), ("speaker", speaker)) if v is not None}


def _key(key: str | int) -> str:
    return quote(str(key), safe="")


def _many(kind: type[T]) -> Callable[[Any], list[T]]:
    return lambda data: [from_json(kind, item) for item in data]


def _one(kind: type[T]) -> Callable[[Any], T]:
    return lambda data: from_json(kind, data)


def _utterances(data: Any) -> list[Utterance]:
    # The API sends a line as evidence is cited (`utterance_id`, speaker, time, text).
    return [e.utterance() for e in _many(Evidence)(data)]


def answer_line(line: dict[str, Any]) -> str | Answer:
    """A line of an answer's stream: a piece of its text, or the finished answer; an error line raises."""
    kind = line.get("type")
    if kind == "token":
        return str(line["text"])
    if kind == "answer":
        return from_json(Answer, line)
    raise AnswerFailed(str(line.get("error", line)))


def spoken_line(line: dict[str, Any]) -> SpokenQuestion | str | Answer:
    """A line of push-to-talk's stream: what was heard first, then the answer's lines."""
    if line.get("type") == "question":
        return SpokenQuestion(str(line["text"]))
    return answer_line(line)


TRANSCRIPT_EVENTS: dict[str, type[Any]] = {
    "hello": Connected,
    "utterance": HeardLine,
    "relabel": Relabelled,
    "skipped": Skipped,
}


def transcript_line(line: dict[str, Any]) -> TranscriptEvent | None:
    """A line of the live transcript as its record; None for a kind this client does not know."""
    kind = TRANSCRIPT_EVENTS.get(str(line.get("type")))
    return from_json(kind, line) if kind is not None else None


class Calls:
    """The API's operations as `Call`s; nothing here sends anything."""

    status = staticmethod(lambda: Call("GET", "/status", None, _one(Status)))
    pause = staticmethod(lambda: Call("POST", "/pause", None, _one(Status)))
    resume = staticmethod(lambda: Call("POST", "/resume", None, _one(Status)))

    @staticmethod
    def ask(question: str, since: float | None, until: float | None, speaker: str | int | None) -> Call[str | Answer]:
        return Call("POST", "/ask", {"question": question, **_limits(since, until, speaker)}, answer_line, True)

    @staticmethod
    def search(
        question: str, since: float | None, until: float | None, speaker: str | int | None
    ) -> Call[SearchResult]:
        return Call("POST", "/search", {"question": question, **_limits(since, until, speaker)}, _one(SearchResult))

    @staticmethod
    def transcript(
        since: float | None, until: float | None, speaker: str | int | None, limit: int
    ) -> Call[list[Utterance]]:
        query = urlencode({**_limits(since, until, speaker), "limit": int(limit)})
        return Call("GET", f"/transcript?{query}", None, _utterances)

    @staticmethod
    def utterances(recent: int) -> Call[TranscriptEvent | None]:
        return Call("GET", f"/utterances/stream?recent={int(recent)}", None, transcript_line, True)

    speakers = staticmethod(lambda: Call("GET", "/speakers", None, _many(Speaker)))
    merge_suggestions = staticmethod(lambda: Call("GET", "/speakers/suggestions", None, _many(MergeSuggestion)))
    name_suggestions = staticmethod(lambda: Call("GET", "/speakers/names", None, _many(NameSuggestion)))

    @staticmethod
    def speaker_lines(key: str | int, limit: int) -> Call[list[Utterance]]:
        return Call("GET", f"/speakers/{_key(key)}/utterances?limit={int(limit)}", None, _utterances)

    @staticmethod
    def name_speaker(key: str | int, name: str) -> Call[Speaker]:
        return Call("POST", f"/speakers/{_key(key)}/name", {"name": name}, _one(Speaker))

    @staticmethod
    def merge_speakers(keep: str | int, other: str | int) -> Call[Speaker]:
        return Call("POST", "/speakers/merge", {"keep": str(keep), "other": str(other)}, _one(Speaker))

    @staticmethod
    def reassign(
        to: str | int,
        utterance_ids: list[int] | tuple[int, ...],
        new_speaker: bool,
        since: float | None,
        until: float | None,
        speaker: str | int | None,
    ) -> Call[Reassignment]:
        body = {"to": str(to), "utterance_ids": list(utterance_ids), **_limits(since, until, speaker)}
        if new_speaker:
            body["new_speaker"] = True
        return Call("POST", "/utterances/reassign", body, _one(Reassignment))

    tree = staticmethod(lambda: Call("GET", "/memory", None, _many(MemoryNode)))

    @staticmethod
    def delete_node(node_id: int) -> Call[list[int]]:
        return Call("DELETE", f"/memory/nodes/{int(node_id)}", None, lambda data: [int(i) for i in data["removed"]])

    @staticmethod
    def export(fmt: str, selection: Selection) -> Call[str]:
        return Call("POST", "/export", {"format": fmt, **selection.describe()}, str, True)

    @staticmethod
    def import_file(path: Path) -> Call[ImportReport]:
        # The daemon runs elsewhere in the file system: it gets the path whole.
        return Call("POST", "/import", {"path": str(Path(path).resolve())}, _one(ImportReport))

    @staticmethod
    def forget(what: ForgetFilter, dry_run: bool) -> Call[ForgetOutcome]:
        body: dict[str, Any] = {
            k: (str(v) if k == "speaker" else v)
            for k, v in (("speaker", what.speaker), ("since", what.since), ("until", what.until), ("text", what.text))
            if v is not None
        }
        if what.everything:
            body["everything"] = True
        return Call("POST", "/forget", {**body, "dry_run": dry_run}, _one(ForgetOutcome))

    @staticmethod
    def digest(day: str | None) -> Call[Digest]:
        query = f"?{urlencode({'day': day})}" if day is not None else ""
        return Call("GET", f"/digest{query}", None, _one(Digest))

    @staticmethod
    def enroll(name: str, path: Path) -> Call[Speaker]:
        # The daemon reads the file itself (a recording is far larger than a request body may be).
        return Call("POST", "/speakers/enroll", {"name": name, "path": str(Path(path).resolve())}, _one(Speaker))

    @staticmethod
    def start_enrollment(name: str) -> Call[dict[str, str]]:
        return Call("POST", "/speakers/enroll/start", {"name": name}, dict)

    finish_enrollment = staticmethod(lambda: Call("POST", "/speakers/enroll/stop", None, _one(Speaker)))
    cancel_enrollment = staticmethod(lambda: Call("POST", "/speakers/enroll/cancel", None, dict))

    recording = staticmethod(lambda: Call("GET", "/push-to-talk", None, _one(RecordingState)))
    start_recording = staticmethod(lambda: Call("POST", "/push-to-talk/start", None, dict))
    cancel_recording = staticmethod(lambda: Call("POST", "/push-to-talk/cancel", None, dict))

    @staticmethod
    def stop_recording(
        since: float | None, until: float | None, speaker: str | int | None
    ) -> Call[SpokenQuestion | str | Answer]:
        return Call("POST", "/push-to-talk/stop", _limits(since, until, speaker) or None, spoken_line, True)


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        message = response.json().get("error") or response.text
    except (ValueError, AttributeError):
        message = response.text
    raise DaemonRefused(str(message), response.status_code)


def _options(timeout: float, read_timeout: float | None) -> dict[str, Any]:
    # By default answers and the live transcript stream for as long as they take: no read timeout.
    return {"base_url": "http://assistant", "timeout": httpx.Timeout(timeout, read=read_timeout)}


# --- blocking ------------------------------------------------------------------------------------


class DaemonClient:
    """`MemoryService` over the daemon's socket, for the CLI, the benchmarks and the tests."""

    def __init__(self, socket: Path, *, timeout: float = 30.0, read_timeout: float | None = None) -> None:
        self.socket = Path(socket)
        self._http = httpx.Client(transport=httpx.HTTPTransport(uds=str(socket)), **_options(timeout, read_timeout))

    @classmethod
    def connect(cls, settings: Settings) -> DaemonClient | None:
        """A client when a daemon answers for this data directory, else None."""
        if running_pid(settings) is None or not socket_path(settings).exists():
            return None
        client = cls(socket_path(settings))
        try:
            client.status()
        except DaemonGone:
            client.close()
            return None
        return client

    @classmethod
    def require(cls, settings: Settings) -> DaemonClient:
        client = cls.connect(settings)
        if client is None:
            raise DaemonGone(f"no daemon is running; {HOW_TO_START}")
        return client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: Call[T]) -> T:
        try:
            response = self._http.request(call.method, call.path, json=call.body)
        except GONE as exc:
            raise DaemonGone(f"the daemon at {self.socket} did not answer ({exc}); {HOW_TO_START}") from None
        _raise_for(response)
        return call.read(response.json())

    def _stream(self, call: Call[T]) -> Iterator[T]:
        try:
            with self._http.stream(call.method, call.path, json=call.body) as response:
                if response.status_code >= 400:
                    response.read()
                    _raise_for(response)
                if call.read is str:
                    for chunk in response.iter_text():
                        yield call.read(chunk)
                    return
                for line in response.iter_lines():
                    if line.strip():
                        yield call.read(json.loads(line))
        except GONE as exc:
            raise DaemonGone(f"the daemon at {self.socket} went away ({exc})") from None

    def _opened(self, call: Call[T]) -> Iterator[T]:
        # The request goes out now, so a refusal (a bad question or filter) is raised by the call
        # itself, as by the local memory; the lines are read as the caller iterates.
        lines = self._stream(call)
        first = next(lines, _END)
        return _chain(first, lines)

    # MemoryService
    def status(self) -> Status:
        return self._send(Calls.status())

    def pause(self) -> Status:
        return self._send(Calls.pause())

    def resume(self) -> Status:
        return self._send(Calls.resume())

    def ask(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> Iterator[str | Answer]:
        return self._opened(Calls.ask(question, since, until, speaker))

    def search(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> SearchResult:
        return self._send(Calls.search(question, since, until, speaker))

    def transcript(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        limit: int = 200,
    ) -> list[Utterance]:
        return self._send(Calls.transcript(since, until, speaker, limit))

    def speakers(self) -> list[Speaker]:
        return self._send(Calls.speakers())

    def merge_suggestions(self) -> list[MergeSuggestion]:
        return self._send(Calls.merge_suggestions())

    def name_suggestions(self) -> list[NameSuggestion]:
        return self._send(Calls.name_suggestions())

    def speaker_lines(self, key: str | int, limit: int = 20) -> list[Utterance]:
        return self._send(Calls.speaker_lines(key, limit))

    def name_speaker(self, key: str | int, name: str) -> Speaker:
        return self._send(Calls.name_speaker(key, name))

    def merge_speakers(self, keep: str | int, other: str | int) -> Speaker:
        return self._send(Calls.merge_speakers(keep, other))

    def reassign(
        self,
        to: str | int,
        utterance_ids: list[int] | tuple[int, ...] = (),
        *,
        new_speaker: bool = False,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> Reassignment:
        return self._send(Calls.reassign(to, utterance_ids, new_speaker, since, until, speaker))

    def tree(self) -> list[MemoryNode]:
        return self._send(Calls.tree())

    def delete_node(self, node_id: int) -> list[int]:
        return self._send(Calls.delete_node(node_id))

    def export(self, fmt: str, selection: Selection = WHOLE_MEMORY) -> Iterator[str]:
        return self._opened(Calls.export(fmt, selection))

    def import_file(self, path: Path) -> ImportReport:
        return self._send(Calls.import_file(path))

    def forget(self, what: ForgetFilter, *, dry_run: bool = True) -> ForgetOutcome:
        return self._send(Calls.forget(what.check(), dry_run))

    def digest(self, day: str | None = None) -> Digest:
        return self._send(Calls.digest(day))

    # The daemon's own: the live transcript, and enrolling a voice into the diarizer it runs.
    def utterances(self, recent: int = 0) -> Iterator[TranscriptEvent]:
        """The live transcript, after the newest `recent` utterances already stored."""
        return (event for event in self._stream(Calls.utterances(recent)) if event is not None)

    def enroll(self, name: str, path: Path) -> Speaker:
        """Enroll `name`'s voice from the recording at `path` (that person alone); recognised at once."""
        return self._send(Calls.enroll(name, path))


_END: Any = object()


def _chain(first: T, rest: Iterator[T]) -> Iterator[T]:
    if first is _END:
        return
    yield first
    yield from rest


# --- awaited -------------------------------------------------------------------------------------


class AsyncDaemonClient:
    """`AsyncMemoryService` over the daemon's socket, for the TUI: the blocking client would stall
    Textual's event loop. Push-to-talk is here too: only the TUI records questions."""

    def __init__(self, socket: Path, *, timeout: float = 30.0, read_timeout: float | None = None) -> None:
        self.socket = Path(socket)
        self._http = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=str(socket)), **_options(timeout, read_timeout)
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: Call[T]) -> T:
        try:
            response = await self._http.request(call.method, call.path, json=call.body)
        except GONE as exc:
            raise DaemonGone(f"the daemon did not answer ({exc.__class__.__name__})") from None
        _raise_for(response)
        return call.read(response.json())

    async def _stream(self, call: Call[T]) -> AsyncIterator[T]:
        try:
            async with self._http.stream(call.method, call.path, json=call.body) as response:
                if response.status_code >= 400:
                    await response.aread()
                    _raise_for(response)
                if call.read is str:
                    async for chunk in response.aiter_text():
                        yield call.read(chunk)
                    return
                async for line in response.aiter_lines():
                    if line.strip():
                        yield call.read(json.loads(line))
        except GONE as exc:
            raise DaemonGone(f"the daemon went away ({exc.__class__.__name__})") from None

    # AsyncMemoryService
    async def status(self) -> Status:
        return await self._send(Calls.status())

    async def pause(self) -> Status:
        return await self._send(Calls.pause())

    async def resume(self) -> Status:
        return await self._send(Calls.resume())

    def ask(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> AsyncIterator[str | Answer]:
        return self._stream(Calls.ask(question, since, until, speaker))

    async def search(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> SearchResult:
        return await self._send(Calls.search(question, since, until, speaker))

    async def transcript(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        limit: int = 200,
    ) -> list[Utterance]:
        return await self._send(Calls.transcript(since, until, speaker, limit))

    async def speakers(self) -> list[Speaker]:
        return await self._send(Calls.speakers())

    async def merge_suggestions(self) -> list[MergeSuggestion]:
        return await self._send(Calls.merge_suggestions())

    async def name_suggestions(self) -> list[NameSuggestion]:
        return await self._send(Calls.name_suggestions())

    async def speaker_lines(self, key: str | int, limit: int = 20) -> list[Utterance]:
        return await self._send(Calls.speaker_lines(key, limit))

    async def name_speaker(self, key: str | int, name: str) -> Speaker:
        return await self._send(Calls.name_speaker(key, name))

    async def merge_speakers(self, keep: str | int, other: str | int) -> Speaker:
        return await self._send(Calls.merge_speakers(keep, other))

    async def reassign(
        self,
        to: str | int,
        utterance_ids: list[int] | tuple[int, ...] = (),
        *,
        new_speaker: bool = False,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> Reassignment:
        return await self._send(Calls.reassign(to, utterance_ids, new_speaker, since, until, speaker))

    async def tree(self) -> list[MemoryNode]:
        return await self._send(Calls.tree())

    async def delete_node(self, node_id: int) -> list[int]:
        return await self._send(Calls.delete_node(node_id))

    def export(self, fmt: str, selection: Selection = WHOLE_MEMORY) -> AsyncIterator[str]:
        return self._stream(Calls.export(fmt, selection))

    async def export_text(self, fmt: str, selection: Selection = WHOLE_MEMORY) -> str:
        return "".join([chunk async for chunk in self.export(fmt, selection)])

    async def import_file(self, path: Path) -> ImportReport:
        return await self._send(Calls.import_file(path))

    async def forget(self, what: ForgetFilter, *, dry_run: bool = True) -> ForgetOutcome:
        return await self._send(Calls.forget(what.check(), dry_run))

    async def digest(self, day: str | None = None) -> Digest:
        return await self._send(Calls.digest(day))

    # The daemon's own: the live transcript, push-to-talk and enrolling a voice from the microphone.
    async def utterances(self, recent: int = 0) -> AsyncIterator[TranscriptEvent]:
        """The live transcript, after the newest `recent` utterances already stored."""
        async for event in self._stream(Calls.utterances(recent)):
            if event is not None:
                yield event

    async def recording(self) -> RecordingState:
        """How long the question has been recorded, and how loud it is just now."""
        return await self._send(Calls.recording())

    async def start_recording(self) -> None:
        await self._send(Calls.start_recording())

    async def start_enrollment(self, name: str) -> None:
        """Record `name`'s voice from the daemon's microphone (the name is checked first)."""
        await self._send(Calls.start_enrollment(name))

    async def finish_enrollment(self) -> Speaker:
        """Stop recording the voice and enroll it; the speaker, with the seconds enrolled."""
        return await self._send(Calls.finish_enrollment())

    async def cancel_enrollment(self) -> None:
        await self._send(Calls.cancel_enrollment())

    async def cancel_recording(self) -> None:
        await self._send(Calls.cancel_recording())

    def stop_recording(
        self, *, since: float | None = None, until: float | None = None, speaker: str | int | None = None
    ) -> AsyncIterator[SpokenQuestion | str | Answer]:
        """What was heard, then the answer's lines as for `ask`, limited the same way."""
        return self._stream(Calls.stop_recording(since, until, speaker))
