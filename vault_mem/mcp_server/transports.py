"""Running the server over stdio or streamable HTTP.

HTTP binds to 127.0.0.1 by default. Any other bind needs a bearer token and the host
names to accept; requests without the right token get a bare 401. Once the vault has agent
keys (served/keys.py, docs/sharing.md), a request needs the token or one of those keys,
even on loopback; a key makes the request act as its agent. Host and Origin headers are
checked by the SDK's DNS-rebinding protection. Neither the token nor a key is ever logged.

``check_http_options`` says what is wrong with a host, port, token or host list before anything
is announced; ``serve`` (cli/serve.py) runs the transports in a thread so that Ctrl-C stops
them at once (a blocked stdin read or an open event stream would otherwise hold the exit).
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from vault_mem.errors import InvalidInput
from vault_mem.mcp_server.app import CALLER, Calls
from vault_mem.mcp_server.workers import Seat
from vault_mem.served.keys import KeyRing

log = logging.getLogger("vault_mem.mcp_server")

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
    """ASGI middleware: who an HTTP request is. ``Authorization: Bearer X`` with X the shared
    token: the vault's owner (no limits); X an agent key of this vault: that agent, put in the
    request's scope under ``CALLER`` for the tool handlers. Anything else gets a 401 with no
    body, unless there is neither a token nor an agent key (a loopback server as it always was)."""

    def __init__(self, app: ASGIApp, token: str | None, keys: KeyRing | None = None) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode() if token else None
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            if self._expected is not None and hmac.compare_digest(given, self._expected):
                scope[CALLER] = None
            else:
                agent = None
                keyed = self.keys is not None and self.keys.any()
                if keyed and given[:7].lower() == b"bearer ":
                    assert self.keys is not None
                    agent = self.keys.agent_for(given[7:].strip().decode("latin-1"))
                if agent is None and (keyed or self._expected is not None):
                    await send({"type": "http.response.start", "status": 401,
                                "headers": [(b"www-authenticate", b"Bearer"), (b"content-length", b"0")]})
                    await send({"type": "http.response.body", "body": b""})
                    return
                scope[CALLER] = agent
        await self.app(scope, receive, send)


def check_http_options(host: str, port: int, token: str | None, allowed_hosts: list[str]) -> None:
    """InvalidInput naming the option when the HTTP server could not start as asked: a port out
    of range or taken, a host that is not an address of this machine, a non-loopback bind
    without a token or without the host names clients use."""
    if not 1 <= port <= 65535:
        raise InvalidInput("--port", f"{port} is out of range: a port is 1..65535")
    address = _resolved(host, port)
    _check_exposure(host, token, allowed_hosts)
    for name in allowed_hosts:
        if not name or any(c in name for c in "/ \t@"):
            raise InvalidInput("--allowed-host", f"{name!r} is not a host name: give a name or address "
                               "such as memory.example.org or 192.168.1.20")
    _check_bindable(host, port, address)


def _resolved(host: str, port: int) -> tuple[Any, ...]:
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidInput("--host", f"{host!r} is not a known host or address ({exc}): give an address "
                           "such as 127.0.0.1, 0.0.0.0 or ::1") from None
    return tuple(infos[0])


def _check_bindable(host: str, port: int, resolved: tuple[Any, ...]) -> None:
    family, kind, proto, _, address = resolved
    with socket.socket(family, kind, proto) as probe:
        # As uvicorn binds: a port left in TIME_WAIT by a previous run is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE or getattr(exc, "winerror", None) == 10048:
                raise InvalidInput("--port", f"port {port} on {host} is already in use (another vault-mem "
                                   "serve?): stop that server or pass another --port") from None
            if exc.errno == errno.EADDRNOTAVAIL:
                raise InvalidInput("--host", f"{host} is not an address of this machine: give one of its "
                                   "addresses, 127.0.0.1 or 0.0.0.0") from None
            if exc.errno == errno.EACCES:
                raise InvalidInput("--port", f"port {port} needs special rights on this machine: pass a "
                                   "port above 1023") from None
            raise InvalidInput("--host", f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _check_exposure(host: str, token: str | None, allowed_hosts: list[str]) -> None:
    """A non-loopback bind needs a bearer token and the host names clients use (docs/safety.md)."""
    if not is_loopback(host) and not token:
        raise InvalidInput("--token", f"binding to {host} (not loopback) needs a bearer token: pass --token "
                           "or set VAULT_MEM_TOKEN")
    if not is_loopback(host) and not allowed_hosts:
        raise InvalidInput("--allowed-host", f"binding to {host} needs the host names clients use: pass "
                           "--allowed-host NAME (repeatable)")


def http_app(server: Server[Any], host: str, port: int, token: str | None,
             allowed_hosts: list[str], keys: KeyRing | None = None) -> ASGIApp:
    """The streamable HTTP app at ``/mcp``, with token and key checks and Host/Origin checks."""
    _check_exposure(host, token, allowed_hosts)
    hosts = ["127.0.0.1", "localhost", "[::1]", *allowed_hosts]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[h for name in hosts for h in (name, f"{name}:{port}", f"{name}:*")],
        allowed_origins=[f"{scheme}://{name}{suffix}" for name in hosts for scheme in ("http", "https")
                         for suffix in ("", f":{port}", ":*")],
    )
    # One JSON body per answer, not an SSE stream: no tool sends the client anything mid-call, and
    # the stream (a task, a channel and event framing per request) was a third of an HTTP call.
    app: ASGIApp = server.streamable_http_app(streamable_http_path="/mcp", transport_security=security, host=host,
                                              json_response=True)
    return BearerAuth(app, token, keys)


def run_http(server: Server[Any], host: str, port: int, token: str | None, allowed_hosts: list[str],
             keys: KeyRing | None = None, seat: Seat | None = None, calls: Calls | None = None) -> None:
    """Serve until stopped; ``seat``: as one of ``serve --workers N`` (mcp_server/workers.py), on
    the sockets the parent handed over, keeping legacy sessions on their worker."""
    import httptools  # noqa: F401  # the HTTP/1.1 parser uvicorn is given below (docs/dependencies.md)
    import uvicorn

    app = http_app(server, host, port, token, allowed_hosts, keys)
    if calls is not None:  # the page for people at / (vault_mem/ui/, docs/ui.md)
        from vault_mem.ui.web import Page, with_page

        page = Page(calls.vault, keys or KeyRing(calls.vault.root), token, allowed_hosts, port)
        app = with_page(app, page)
        if seat is None or seat.leads:
            base = f"http://{'[' + host + ']' if ':' in host and not host.startswith('[') else host}:{port}"
            log.warning("the page for people: %s (a one-time login link)", page.login_link(base))
    sockets = None
    if seat is not None:
        from vault_mem.mcp_server.affinity import Affinity
        from vault_mem.mcp_server.workers import worker_sockets

        app = Affinity(app, seat.index, seat.ports)
        sockets, writes = worker_sockets(seat)
        if writes is not None and calls is not None:
            from vault_mem.mcp_server.delegate import WriteServer, take_writes_quickly

            take_writes_quickly()
            WriteServer(writes, seat.secret, calls.text).start()
    # Not uvicorn.run: outside the main thread uvicorn installs no signal handlers, and a failed
    # bind raises here instead of exiting the process.
    config = uvicorn.Config(app, host=host.strip("[]"), port=port, log_level="warning", access_log=False,
                            log_config=None, http="httptools")
    web = uvicorn.Server(config)
    web.run(sockets=sockets)
    if not web.started:
        raise OSError(f"the HTTP server could not listen on {host}:{port}")
