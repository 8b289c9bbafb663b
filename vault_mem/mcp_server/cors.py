"""Web pages of other origins at ``/mcp`` (docs/clients.md, "Browser-based hosts").

A browser-based MCP host (a page served from another origin, such as the MCP Apps reference host)
may call ``/mcp`` only when the server names its origin: ``serve --http --allow-origin ORIGIN``,
once per origin, none by default, each compared exactly. ``*`` and ``null`` are refused
(``allowed_origin``): either would let any page open in a browser on this machine read and
write the vault.

``Cors`` sits outside every other check, because a browser's preflight (``OPTIONS`` with
``Access-Control-Request-Method``) carries no credential. It answers every ``OPTIONS`` itself,
so that none reaches the SDK (which would open a session for it); a request from an origin
neither named nor the server's own is refused with 403 before anything else reads it; the
answers to a named origin carry the headers that let its page read them. Host and Origin checks
against DNS rebinding (the SDK's, transports.py) still run behind it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from vault_mem.errors import InvalidInput

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPTION = "--allow-origin"
METHODS = b"GET, POST, DELETE, OPTIONS"
# What a browser MCP client sends (the streamable HTTP transport), and what its page may read.
REQUEST_HEADERS = b"authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id"
EXPOSED_HEADERS = b"mcp-session-id, mcp-protocol-version, www-authenticate"
PREFLIGHT_MAX_AGE = b"600"  # seconds a browser may keep a preflight's answer
DEFAULT_PORTS = {"http": 80, "https": 443}


def allowed_origin(text: str) -> str:
    """``text`` as the origin a browser sends (``scheme://host[:port]``, lower case, no default
    port); InvalidInput naming ``--allow-origin`` when it is not one this server can name."""
    given = text.strip()
    shown = repr(given[:100])
    if given == "*":
        raise InvalidInput(OPTION, "'*' would let every web page opened in a browser on this machine call this "
                                   "server (with or without a token): name each origin, e.g. --allow-origin "
                                   "http://127.0.0.1:8080")
    if given.lower() == "null":
        raise InvalidInput(OPTION, "'null' is the origin of every sandboxed frame and local file at once: name the "
                                   "origin of the page that connects, e.g. --allow-origin http://127.0.0.1:8080")
    candidate = given[:-1] if given.endswith("/") and given.count("/") == 3 else given
    try:
        parts = urlsplit(candidate)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (parts is None or parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname
            or parts.path or parts.query or parts.fragment or "@" in parts.netloc or "*" in candidate):
        raise InvalidInput(OPTION, f"{shown} is not an origin: give scheme://host[:port] with http or https and "
                                   "nothing after it, exactly as the page's address starts (e.g. "
                                   "http://127.0.0.1:8080 or https://host.example)")
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != DEFAULT_PORTS[scheme] else "")


def allowed_origins(texts: list[str]) -> list[str]:
    """Every ``--allow-origin`` normalised (``allowed_origin``), each once, in the order given."""
    return list(dict.fromkeys(allowed_origin(text) for text in texts))


def own_origins(hosts: list[str], port: int) -> set[str]:
    """The origins of this server's own pages (the page at ``/``): same origin, never refused."""
    origins = set()
    for name in hosts:
        for scheme, default in DEFAULT_PORTS.items():
            origins.add(f"{scheme}://{name.lower()}:{port}")
            if port == default:
                origins.add(f"{scheme}://{name.lower()}")
    return origins


class Cors:
    """ASGI middleware in front of ``/mcp``: preflights answered, unnamed origins refused, named
    origins' answers readable by their pages (see the module's docstring)."""

    def __init__(self, app: ASGIApp, allowed: list[str], own: set[str]) -> None:
        self.app = app
        self.allowed = frozenset(allowed)
        self.own = frozenset(own)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        raw = headers.get(b"origin")
        origin = raw.decode("latin-1") if raw is not None else None
        named = origin is not None and origin.lower() in self.allowed
        if origin is not None and not named and origin.lower() not in self.own:
            await _refuse(send, origin)
            return
        if scope.get("method") == "OPTIONS":
            await _options(send, origin if named else None, headers)
            return
        if not named:
            await self.app(scope, receive, send)
            return
        assert origin is not None

        async def readable(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*_without_cors(message.get("headers") or []), *_cors(origin)]
            await send(message)

        await self.app(scope, receive, readable)


def _cors(origin: str) -> list[tuple[bytes, bytes]]:
    return [(b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", EXPOSED_HEADERS), (b"vary", b"Origin")]


def _without_cors(headers: Any) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in headers if not k.lower().startswith(b"access-control-") and k.lower() != b"vary"]


async def _options(send: Send, origin: str | None, headers: dict[bytes, bytes]) -> None:
    """204 with what may be sent: to a named origin its preflight's answer; to anyone else (no
    Origin, or the server's own page) only ``Allow``. Never a session."""
    answer = [(b"allow", METHODS), (b"content-length", b"0"), (b"vary", b"Origin")]
    if origin is not None:
        answer += [(b"access-control-allow-origin", origin.encode("latin-1")),
                   (b"access-control-allow-methods", METHODS),
                   (b"access-control-allow-headers", REQUEST_HEADERS),
                   (b"access-control-expose-headers", EXPOSED_HEADERS),
                   (b"access-control-max-age", PREFLIGHT_MAX_AGE)]
        if headers.get(b"access-control-request-private-network", b"").lower() == b"true":
            # Chromium asks before a page of another address space reaches this machine's loopback.
            answer.append((b"access-control-allow-private-network", b"true"))
    await send({"type": "http.response.start", "status": 204, "headers": answer})
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send, origin: str) -> None:
    message = (f"requests from the web page at {origin[:100]!r} are refused: this server serves only the origins "
               f"named with {OPTION} (docs/clients.md, 'Browser-based hosts')")
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}).encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"vary", b"Origin")]})
    await send({"type": "http.response.body", "body": body})
