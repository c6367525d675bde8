"""ASGI middleware in front of the app: the request body size limit, and the bearer token over TCP.

Both answer a refusal themselves, as the `{"error": ...}` JSON every client here reads, before
FastAPI sees the request.
"""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimit:
    """413 for a body over the limit, whether it declares its length or streams in chunks."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _reject(send, 413, f"the request body is over the limit of {self.limit:,} bytes")
            return
        if declared is not None:
            await self.app(scope, receive, send)
            return
        # No declared length (chunked): read it here, up to the limit, then hand it on whole.
        # The limit is small, so holding the body costs nothing, and the app never sees a cut one.
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                await _reject(send, 413, f"the request body is over the limit of {self.limit:,} bytes")
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class TcpToken:
    """Requests that arrive over TCP need the bearer token; the Unix socket is guarded by its mode."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server") or (None, None)
        if scope["type"] == "http" and server[1] is not None:
            auth = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
            expected = f"Bearer {self.token}" if self.token else None
            if expected is None or not hmac.compare_digest(auth, expected):
                await _reject(send, 401, "a bearer token is required over TCP (daemon.tcp.token)")
                return
        await self.app(scope, receive, send)


async def _reject(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
