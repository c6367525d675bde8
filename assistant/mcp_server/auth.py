"""The bearer token the HTTP transport requires: the daemon's own (`daemon.tcp.token`).

One secret guards both ways into the memory from TCP, so a user who set up the daemon's TCP
listener has nothing new to configure, and one without a token gets no unguarded port. The check
is the SDK's (`TokenVerifier`), so a request without the token is refused with 401 before MCP
reads it.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from ..config import Settings
from ..errors import ConfigError

# What the daemon's config check asks of the token too.
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class DaemonToken:
    """A `TokenVerifier` that accepts exactly the daemon's token."""

    token: str
    port: int

    @classmethod
    def of(cls, settings: Settings, port: int) -> DaemonToken:
        token = settings.daemon.tcp.token
        if not token or len(token) < MIN_TOKEN_CHARS:
            raise ConfigError(
                f"assistant mcp --http needs a bearer token: set daemon.tcp.token ({MIN_TOKEN_CHARS} characters "
                "or more) in your config; clients send it as 'Authorization: Bearer <token>'"
            )
        return cls(token, port)

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            return None
        return AccessToken(token=token, client_id="assistant", scopes=[])

    @property
    def settings(self) -> AuthSettings:
        # The SDK's bearer check comes with OAuth's settings. No authorization server is involved
        # (the user copies the token from their config), so the issuer is this server itself and
        # no resource URL is set: nothing advertises an OAuth flow there is not.
        return AuthSettings(issuer_url=f"http://127.0.0.1:{self.port}", resource_server_url=None)
