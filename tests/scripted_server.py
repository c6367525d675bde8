"""A small HTTP server that answers the way a test scripts it: failures a real LLM server gives only
by accident (503 while loading, 429 when busy, a reply that breaks off) on demand.

It is a real server on a real socket, spoken to over HTTP by the code under test; only what it
answers is chosen. What each request carried is kept, to check headers and count tries.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Status:
    """Answer with this status and a JSON error body."""

    code: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Stream:
    """Stream these pieces as chat-completion chunks; with `cut`, drop the connection after that many."""

    pieces: tuple[str, ...]
    cut: int | None = None


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


class ScriptedServer:
    def __init__(self, script: list[Status | Stream]) -> None:
        self.script = list(script)
        self.seen: list[Seen] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.seen.append(Seen("GET", self.path, dict(self.headers), None))
                self._json(200, {"object": "list", "data": [{"id": "scripted-model", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"null")
                outer.seen.append(Seen("POST", self.path, dict(self.headers), body))
                step = outer.script.pop(0) if outer.script else Stream(("ok",))
                if isinstance(step, Status):
                    self._json(step.code, {"error": {"message": step.message}}, step.headers)
                else:
                    self._stream(step)

            def _json(self, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, step: Stream) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for i, piece in enumerate(step.pieces):
                    if step.cut is not None and i >= step.cut:
                        # Gone without the closing chunk: what a killed server looks like to a client.
                        self.close_connection = True
                        self.wfile.flush()
                        self.connection.shutdown(2)
                        return
                    chunk = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                    self._chunk(f"data: {json.dumps(chunk)}\n\n")
                last = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self._chunk(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n")
                self._chunk("")

            def _chunk(self, text: str) -> None:
                data = text.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def posts(self) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST"]


@contextmanager
def scripted(*script: Status | Stream) -> Iterator[ScriptedServer]:
    server = ScriptedServer(list(script))
    thread = threading.Thread(target=server.http.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.http.shutdown()
        server.http.server_close()
