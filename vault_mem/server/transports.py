"""Running the server over stdio or streamable HTTP.

HTTP binds to 127.0.0.1 by default. Any other bind needs a bearer token and the host
names to accept; requests without the right token get a bare 401. Host and Origin
headers are checked by the SDK's DNS-rebinding protection. The token is never logged.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from vault_mem.errors import InvalidInput

log = logging.getLogger("vault_mem.server")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def run_stdio(server: Server[Any]) -> None:
    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: 401 with no body unless ``Authorization: Bearer <token>`` matches."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"www-authenticate", b"Bearer"), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


def http_app(server: Server[Any], host: str, port: int, token: str | None,
             allowed_hosts: list[str]) -> ASGIApp:
    """The streamable HTTP app at ``/mcp``, with token check and Host/Origin checks."""
    if not is_loopback(host) and not token:
        raise InvalidInput("--token", f"binding to {host} (not loopback) needs a bearer token: pass --token "
                           "or set VAULT_MEM_TOKEN")
    if not is_loopback(host) and not allowed_hosts:
        raise InvalidInput("--allowed-host", f"binding to {host} needs the host names clients use: pass "
                           "--allowed-host NAME (repeatable)")
    hosts = ["127.0.0.1", "localhost", "[::1]", *allowed_hosts]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[h for name in hosts for h in (name, f"{name}:{port}", f"{name}:*")],
        allowed_origins=[f"{scheme}://{name}{suffix}" for name in hosts for scheme in ("http", "https")
                         for suffix in ("", f":{port}", ":*")],
    )
    app: ASGIApp = server.streamable_http_app(streamable_http_path="/mcp", transport_security=security, host=host)
    return BearerAuth(app, token) if token else app


def run_http(server: Server[Any], host: str, port: int, token: str | None, allowed_hosts: list[str]) -> None:
    import uvicorn

    app = http_app(server, host, port, token, allowed_hosts)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
