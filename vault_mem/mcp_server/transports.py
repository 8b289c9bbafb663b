"""Running the server over stdio or streamable HTTP.

HTTP binds to 127.0.0.1 by default. Any other bind needs a bearer token and the host
names to accept; requests without the right token get a 401. Once the vault has (or has had) agent
keys (served/keys.py, docs/sharing.md), a request needs the token or one of those keys,
even on loopback; a key makes the request act as its agent. Host and Origin headers are
checked by the SDK's DNS-rebinding protection; web pages of other origins reach ``/mcp`` only
when named with ``--allow-origin`` (cors.py). Neither the token nor a key is ever logged.

Every HTTP limit (docs/safety.md, "Limits") is a constant below: the connections a process
holds, the time and bytes a request's headers may take, the legacy sessions of one caller.
``check_http_options`` says what is wrong with a host, port, token or host list before anything
is announced; ``serve`` (cli/serve.py) runs the transports in a thread so that Ctrl-C stops
them at once (a blocked stdin read or an open event stream would otherwise hold the exit).
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import ipaddress
import json
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from vault_mem.errors import InvalidInput
from vault_mem.mcp_server.app import CALLER, REACH, Calls
from vault_mem.mcp_server.cors import Cors, own_origins
from vault_mem.mcp_server.throttled import Throttled
from vault_mem.mcp_server.workers import Seat
from vault_mem.served.agents import Agent
from vault_mem.served.keys import KeyRing
from vault_mem.settings import Settings

log = logging.getLogger("vault_mem.mcp_server")

# Client connections one server process holds at once; a newcomer beyond it first ends the
# connection that has waited longest without a request, else it is refused (503).
# Of the process's file descriptors (RLIMIT_NOFILE), at most 1/FD_SHARE go to client connections:
# the rest stay for the index, the notes and the hops between workers, so accept never runs out.
# The listen backlog, also how many connections asyncio accepts in one go before any is checked:
# at most 1/BACKLOG_SHARE of the connection bound, so that a burst never takes the descriptors kept.
# Legacy (stateful) sessions of one caller (the owner or anonymous, each agent) in one process: at
# the bound a new one ends that caller's least recently used idle session, else it is refused.

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
    """ASGI middleware: who an HTTP request is, and what it reaches (docs/vaults.md).
    ``Authorization: Bearer X`` with X the shared token: the owner of every vault (no limits); X
    an agent key: that agent, in each vault whose key ring (served/keys.py) holds X, with that
    vault's limits. A credential that is neither is refused, always. No credential: the owner of
    each vault that is open (not closed: it has never had agent keys), unless there is a token;
    a request that reaches no vault gets a 401 saying what is needed. The agent goes in the
    request's scope under ``CALLER`` and, when several vaults are served, what it reaches under
    ``REACH`` (vault -> the agent there, None for the owner), for the tool handlers. ``keys``:
    the key ring of the one vault, or of each served vault by name."""

    def __init__(self, app: ASGIApp, token: str | None, keys: KeyRing | Mapping[str, KeyRing] | None = None) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode() if token else None
        self.keys = keys if isinstance(keys, KeyRing) or keys is None else None  # one vault served
        self.rings = dict(keys) if isinstance(keys, Mapping) and len(keys) > 1 else None  # several
        if isinstance(keys, Mapping) and len(keys) == 1:
            self.keys = next(iter(keys.values()))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization")
            if self.rings is not None:
                reach = self._reach(self.rings, given)
                if not reach:
                    await _unauthorized(send, presented=given is not None)
                    return
                scope[REACH] = reach
                scope[CALLER] = next((agent for agent in reach.values() if agent is not None), None)
            else:
                allowed, agent = self._caller(given)
                if not allowed:
                    await _unauthorized(send, presented=given is not None)
                    return
                scope[CALLER] = agent
        await self.app(scope, receive, send)

    def _caller(self, given: bytes | None) -> tuple[bool, Agent | None]:
        """(allowed, the agent or None for the owner) for the request's Authorization header."""
        if given is None:
            closed = self._expected is not None or (self.keys is not None and self.keys.closed())
            return not closed, None
        if self._expected is not None and hmac.compare_digest(given, self._expected):
            return True, None
        if self.keys is not None and given[:7].lower() == b"bearer ":
            agent = self.keys.agent_for(given[7:].strip().decode("latin-1"))
            if agent is not None:
                return True, agent
        return False, None

    def _reach(self, rings: dict[str, KeyRing], given: bytes | None) -> dict[str, Agent | None]:
        """What the request reaches with several vaults served (empty: nothing, a 401)."""
        if given is None:
            if self._expected is not None:
                return {}
            return {name: None for name, ring in rings.items() if not ring.closed()}
        if self._expected is not None and hmac.compare_digest(given, self._expected):
            return dict.fromkeys(rings)
        if given[:7].lower() != b"bearer ":
            return {}
        key = given[7:].strip().decode("latin-1")
        return {name: agent for name, ring in rings.items() if (agent := ring.agent_for(key)) is not None}


async def _unauthorized(send: Send, presented: bool) -> None:
    """A 401 that says what is needed (the MCP Inspector shows the body), never what was sent."""
    message = ("the bearer token or agent key sent is not one this server accepts" if presented else
               "this server needs a bearer token or an agent key") + \
        ": send 'Authorization: Bearer TOKEN' with the server's --token or an agent key (docs/sharing.md)"
    body = json.dumps({"error": "unauthorized", "message": message}).encode()
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"www-authenticate", b"Bearer"), (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def connection_bound(config: Settings) -> int:
    """``max_connections``, or less where the file descriptor limit is low (1/``fd_share`` of it)."""
    if sys.platform == "win32":  # no per-process descriptor limit of this kind
        return config.max_connections
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return config.max_connections
    return max(1, min(config.max_connections, soft // config.fd_share))


def _refusal(status: bytes, text: str) -> bytes:
    body = text.encode()
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def bounded_protocol(bound: int, config: Settings) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the limits above: at most ``bound`` connections (the one
    waiting longest without a request gives way to a newcomer), HEADER_TIMEOUT and MAX_HEADER_BYTES
    for each request's head. uvicorn arms its keep-alive timer only after a response, so without
    this a connection that never finishes its first request would stay open for ever."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    waiting: dict[Any, None] = {}  # connections between requests, longest waiting first
    refused = Throttled(log, "HTTP connections refused: %d at once is the bound (MAX_CONNECTIONS, "
                             "docs/safety.md)", bound, every=config.log_every)
    full = _refusal(b"503 Service Unavailable", f"too many connections: this server holds at most {bound} "
                                                "at once; try again shortly\n")
    slow = _refusal(b"408 Request Timeout", f"the request's headers took over {config.header_timeout:g} s\n")
    large = _refusal(b"431 Request Header Fields Too Large", f"the request's line and headers are over "
                                                            f"{config.max_header_bytes} bytes\n")

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        _head_timer: asyncio.TimerHandle | None = None
        _head_bytes = 0
        _in_head = False

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            if len(self.connections) >= bound:
                if not waiting:
                    refused.note("every connection is in a request")
                    self.transport = transport  # type: ignore[assignment]  # for connection_lost, which still comes
                    transport.write(full)  # type: ignore[attr-defined]
                    transport.close()
                    return
                oldest = next(iter(waiting))
                waiting.pop(oldest)
                oldest.transport.close()
                refused.note("ended the connection that waited longest without a request")
            super().connection_made(transport)  # type: ignore[arg-type]
            self._start_head()

        def _start_head(self) -> None:
            self._in_head, self._head_bytes = True, 0
            waiting[self] = None
            self._head_timer = self.loop.call_later(config.header_timeout, self._head_too_slow)

        def _end_head(self) -> None:
            self._in_head = False
            waiting.pop(self, None)
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_too_slow(self) -> None:
            self._head_timer = None
            if self._in_head and not self.transport.is_closing():
                self.transport.write(slow)
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            if self._in_head:
                self._head_bytes += len(data)
            super().data_received(data)
            if self._in_head and self._head_bytes > config.max_header_bytes and not self.transport.is_closing():
                self.transport.write(large)
                self.transport.close()

        def on_headers_complete(self) -> None:
            self._end_head()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and not self.pipeline and self.cycle.response_complete:
                self._start_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._end_head()
            super().connection_lost(exc)

    return BoundedHttpToolsProtocol


class SessionBound:
    """ASGI middleware under BearerAuth: at most MAX_SESSIONS_PER_CALLER legacy sessions per caller
    (``CALLER`` of the scope: None for the owner or an anonymous loopback client, else the agent).

    A request that may open a session (no ``Mcp-Session-Id``, a handshake protocol version) is
    counted against its caller until answered; at the bound, the caller's least recently used
    session with no request in flight is ended first, so that sessions a client left behind
    never lock that caller out; when all are in use, the request gets 503 saying so. The
    sessions open are the SDK manager's own (a session it ended on its idle timeout or a DELETE
    is gone from it)."""

    def __init__(self, app: ASGIApp, manager: Any, bound: int, log_every: float) -> None:
        from vault_mem.mcp_server.affinity import HANDSHAKES

        self.handshakes = HANDSHAKES
        self.app = app
        self.manager = manager
        self.bound = bound
        self._sessions: dict[str, dict[str, None]] = {}  # caller -> its session ids, least recently used first
        self._owners: dict[str, str] = {}  # session id -> the caller that opened it
        self._busy: dict[str, int] = {}  # session id -> requests in flight
        self._opening: dict[str, int] = {}  # caller -> session-opening requests in flight
        self._refused = Throttled(log, "legacy sessions refused: a caller had %d, all in use "
                                       "(MAX_SESSIONS_PER_CALLER, docs/safety.md)", bound, every=log_every)
        self._foreign = Throttled(log, "requests refused: a session id used with another caller's credential",
                                  every=log_every)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        version = headers.get(b"mcp-protocol-version")
        if version is not None and version not in self.handshakes:  # stateless: no session to count
            await self.app(scope, receive, send)
            return
        agent = scope.get(CALLER)
        who = "" if agent is None else f"agent:{agent.name}"
        session = headers.get(b"mcp-session-id")
        if session is not None:
            await self._in_session(who, session.decode("latin-1"), scope, receive, send)
        elif scope.get("method") == "POST":
            await self._opening_session(who, agent, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _in_session(self, who: str, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        owner = self._owners.get(session)
        if owner is not None and owner != who:
            # A session is its opener's: another key (or the owner's token) that learned its id is
            # answered as the SDK answers an unknown session, so it cannot tell the id is in use.
            self._foreign.note("a session of another caller")
            await _json_refusal(send, 404, "Session not found")
            return
        mine = self._sessions.get(who)
        if mine is not None and session in mine:
            mine.pop(session)
            mine[session] = None  # now the most recently used
        self._busy[session] = self._busy.get(session, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self._busy.pop(session) - 1
            if left:
                self._busy[session] = left

    async def _opening_session(self, who: str, agent: Any, scope: Scope, receive: Receive, send: Send) -> None:
        mine = self._live(who)
        if len(mine) + self._opening.get(who, 0) >= self.bound:
            idle = next((sid for sid in mine if not self._busy.get(sid)), None)
            if idle is None:
                self._refused.note("all in use")
                name = "the owner" if agent is None else f"agent {agent.name!r}"
                await _json_refusal(send, 503, f"too many sessions: {name} already has {self.bound} legacy "
                                               "sessions open on this server, each with a request in flight "
                                               "(the bound per key, docs/safety.md); end one (HTTP DELETE) "
                                               "or use the stateless protocol")
                return
            mine.pop(idle)
            await self._end(idle)
        self._opening[who] = self._opening.get(who, 0) + 1
        opened: list[str] = []

        async def watch(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened.extend(v.decode("latin-1") for k, v in message.get("headers") or []
                              if k.lower() == b"mcp-session-id")
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self._opening[who] -= 1
            for sid in opened:
                self._sessions.setdefault(who, {})[sid] = None
                self._owners[sid] = who

    def _live(self, who: str) -> dict[str, None]:
        """The caller's sessions that the SDK still holds (it forgets one it ended itself)."""
        held = self._open_sessions()
        mine = {sid: None for sid in self._sessions.get(who, {}) if sid in held}
        self._sessions[who] = mine
        if len(self._owners) > len(held):  # forget the openers of sessions the SDK ended itself
            self._owners = {sid: opener for sid, opener in self._owners.items() if sid in held}
        return mine

    def _open_sessions(self) -> dict[str, Any]:
        # The SDK offers no public view of its sessions; tests/test_sessions.py pins this name.
        held: dict[str, Any] = self.manager._server_instances
        return held

    async def _end(self, session: str) -> None:
        transport = self._open_sessions().get(session)
        if transport is not None:
            await transport.terminate()  # the SDK's session task then ends and forgets it


async def _json_refusal(send: Send, status: int, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


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
             allowed_hosts: list[str], keys: KeyRing | Mapping[str, KeyRing] | None = None,
             origins: tuple[str, ...] = (), *, config: Settings) -> ASGIApp:
    """The streamable HTTP app at ``/mcp``, with token and key checks, Host/Origin checks, and
    the web pages of ``origins`` (``--allow-origin``, normalised by cors.allowed_origins) let in."""
    _check_exposure(host, token, allowed_hosts)
    hosts = ["127.0.0.1", "localhost", "[::1]", *allowed_hosts]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[h for name in hosts for h in (name, f"{name}:{port}", f"{name}:*")],
        allowed_origins=[*(f"{scheme}://{name}{suffix}" for name in hosts for scheme in ("http", "https")
                           for suffix in ("", f":{port}", ":*")), *origins],
    )
    # One JSON body per answer, not an SSE stream: no tool sends the client anything mid-call, and
    # the stream (a task, a channel and event framing per request) was a large share of a call.
    app: ASGIApp = server.streamable_http_app(streamable_http_path="/mcp", transport_security=security, host=host,
                                              json_response=True, max_sessions=config.max_sessions,
                                              session_idle_timeout=config.session_idle)
    # Outermost: a preflight carries no credential, and must never reach the SDK (cors.py).
    return Cors(BearerAuth(SessionBound(app, server.session_manager, config.max_sessions_per_caller,
                                          config.log_every), token, keys), list(origins),
                own_origins(hosts, port))


def run_http(server: Server[Any], host: str, port: int, token: str | None, allowed_hosts: list[str],
             keys: KeyRing | Mapping[str, KeyRing] | None = None, seat: Seat | None = None, calls: Calls | None = None,
             origins: tuple[str, ...] = (), *, config: Settings) -> None:
    """Serve until stopped; ``seat``: as one of ``serve --workers N`` (mcp_server/workers.py), on
    the sockets the parent handed over, keeping legacy sessions on their worker; ``origins``: the
    web pages that may call ``/mcp`` (``--allow-origin``)."""
    import httptools  # noqa: F401  # the HTTP/1.1 parser uvicorn is given below (docs/dependencies.md)
    import uvicorn

    app = http_app(server, host, port, token, allowed_hosts, keys, origins, config=config)
    if calls is not None:  # the page for people at / (vault_mem/ui/, docs/ui.md)
        from vault_mem.ui.web import Page, with_page

        # The same key rings the MCP endpoint checks: a key removed is gone from both at once.
        rings = dict(keys) if isinstance(keys, Mapping) else {calls.vault.name: keys or KeyRing(calls.vault.root)}
        page = Page(calls.served, rings, token, allowed_hosts, port)
        app = with_page(app, page)
        if seat is None or seat.leads:
            base = f"http://{'[' + host + ']' if ':' in host and not host.startswith('[') else host}:{port}"
            log.warning("the page for people: %s (a one-time login link)", page.login_link(base))
    sockets = None
    if seat is not None:
        from vault_mem.mcp_server.affinity import Affinity
        from vault_mem.mcp_server.workers import worker_sockets

        app = Affinity(app, seat.index, seat.ports, connect_wait=config.affinity_connect_wait)
        sockets, writes = worker_sockets(seat)
        if writes is not None and calls is not None:
            from vault_mem.mcp_server.delegate import WriteServer, write_threads

            WriteServer(writes, seat.secret, calls.text, write_threads(seat.count, config.delegate_connections),
                        config=config).start()
    bound = connection_bound(config)
    # Not uvicorn.run: outside the main thread uvicorn installs no signal handlers, and a failed
    # bind raises here instead of exiting the process.
    chosen = uvicorn.Config(app, host=host.strip("[]"), port=port, log_level="warning", access_log=False,
                            log_config=None, http=bounded_protocol(bound, config),
                            timeout_keep_alive=config.keep_alive,
                            backlog=max(1, min(config.backlog, bound // config.backlog_share)))
    web = _quiet_server_class(config.log_every)(chosen)
    web.run(sockets=sockets)
    if not web.started:
        raise OSError(f"the HTTP server could not listen on {host}:{port}")


def _quiet_server_class(log_every: float) -> type[Any]:
    import uvicorn

    class QuietServer(uvicorn.Server):
        """uvicorn's server whose event loop logs a failed accept (no file descriptor left) through
        ``Throttled``: asyncio logs one with its traceback for each connection of the backlog, each
        time it retries, which filled gigabytes of stderr under a flood."""

        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            loop = asyncio.get_running_loop()
            accepts = Throttled(log, "the HTTP server could not accept connections", every=log_every)

            def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
                exc = context.get("exception")
                if "out of system resource" in str(context.get("message", "")) and isinstance(exc, OSError):
                    accepts.note(exc.strerror or str(exc))
                else:
                    loop.default_exception_handler(context)

            loop.set_exception_handler(handle)
            await super().serve(sockets)

    return QuietServer
