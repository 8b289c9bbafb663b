"""Session affinity for ``serve --http --workers N``: a legacy session stays on its worker.

Requests of the 2026-07-28 protocol are stateless: whichever worker accepts the connection
answers. A session of the older protocol (``initialize``, then ``Mcp-Session-Id`` on every
request) lives in the memory of the worker that opened it; the SDK's session manager answers
404 for an id it does not hold, and offers no shared session store (its ``EventStore``
replays events of one process's streams, it does not move a session).

So each worker tags the session ids it hands out with its number (``w1-`` + the SDK's id) and
strips the tag from the requests it gets. New sessions are dealt out in turn: each worker
passes its k-th ``initialize`` to worker (own + k) mod N, so that clients starting together do
not all open their sessions on the worker that happened to accept first. A request whose tag names another worker (its
connection was accepted by this one) is passed, as it came, to that worker's private loopback
port and the answer streamed back: one proxy hop, only for those requests. The owner checks
the token, keys, Host and Origin as for any request. Each answer says which worker gave it
(``Vault-Mem-Worker``) and, after a hop, which one passed it on (``Vault-Mem-Passed-By``), so
that tests and benchmarks can see where requests went.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import httpx2

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
logging.getLogger("httpx2").setLevel(logging.WARNING)  # not a line per passed request

SESSION = b"mcp-session-id"
VERSION = b"mcp-protocol-version"
# The versions the SDK still opens sessions for (mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS,
# compared in tests/integration/test_workers.py); a request naming any other version is stateless.
HANDSHAKES = {b"2024-11-05", b"2025-03-26", b"2025-06-18", b"2025-11-25"}
WORKER = b"vault-mem-worker"
PASSED = b"vault-mem-passed-by"  # on an answer that took the hop: the worker that passed it on
# Hop-by-hop headers (RFC 9110 7.6.1) and the framing the hop redoes itself.
HOP = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"transfer-encoding",
       b"upgrade", b"content-length"}


async def read_body(receive: Receive) -> bytes | None:
    """A request's whole body (None: the client left first)."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if not message.get("more_body"):
            return bytes(body)


def tag(worker: int) -> bytes:
    return f"w{worker}-".encode()


class Affinity:
    """ASGI middleware of worker ``me``: ``ports[i]`` is worker i's private loopback port."""

    def __init__(self, app: ASGIApp, me: int, ports: list[int], *, connect_wait: float) -> None:
        self.app = app
        self.connect_wait = connect_wait  # affinity_connect_wait
        self.me = me
        self.ports = ports
        self._mine = tag(me)
        self._client: httpx2.AsyncClient | None = None
        self._turn = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = list(scope.get("headers") or [])
        named = dict(headers)
        if scope["method"] == "POST" and SESSION not in named and named.get(VERSION, b"2025-06-18") in HANDSHAKES:
            # A new legacy session: its worker is taken in turn, not left to whichever accepted the
            # connection (32 clients starting at once would otherwise all open on one).
            self._turn += 1
            owner = self._dealt(self._turn)
            if owner != self.me:
                await self._forward(self.ports[owner], scope, receive, send)
                return
        for i, (name, value) in enumerate(headers):
            if name == SESSION and value[:1] == b"w" and b"-" in value:
                owner, _, rest = value[1:].partition(b"-")
                if owner.isdigit() and int(owner) != self.me and int(owner) < len(self.ports):
                    await self._forward(self.ports[int(owner)], scope, receive, send)
                    return
                if owner.isdigit() and int(owner) == self.me:
                    headers[i] = (name, rest)
                    scope = dict(scope, headers=headers)
                break

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = [(k, self._mine + v if k.lower() == SESSION else v) for k, v in message.get("headers") or []]
                message = dict(message, headers=[*out, (WORKER, str(self.me).encode())])
            await send(message)

        await self.app(scope, receive, tagged)

    def _dealt(self, turn: int) -> int:
        """The worker the ``turn``-th new session goes to: in turn among those that take client
        connections (all but worker 1, the writer, when there are several: mcp_server/delegate.py)."""
        serving = list(range(1, len(self.ports))) or [0]
        return serving[(self.me + turn) % len(serving)]

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:  # created in the server's event loop, kept for its life
            self._client = httpx2.AsyncClient(timeout=httpx2.Timeout(None, connect=self.connect_wait),
                                              limits=httpx2.Limits(max_connections=None,
                                                                   max_keepalive_connections=64))
        return self._client

    async def _forward(self, port: int, scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        if body is None:
            return
        path = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string") or b""
        url = f"http://127.0.0.1:{port}{path.decode('latin-1')}" + (f"?{query.decode('latin-1')}" if query else "")
        headers = [(k, v) for k, v in scope.get("headers") or [] if k.lower() not in HOP]
        client = self._http()
        request = client.build_request(scope["method"], url, headers=headers, content=body)
        try:
            response = await client.send(request, stream=True)
        except httpx2.HTTPError:
            await send({"type": "http.response.start", "status": 502, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        try:
            out = [(k.lower(), v) for k, v in response.headers.raw if k.lower() not in HOP]
            out.append((PASSED, str(self.me).encode()))
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            async with anyio.create_task_group() as tg:

                async def until_gone() -> None:  # the client left (an event stream closed): stop the hop
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    tg.cancel_scope.cancel()

                tg.start_soon(until_gone)
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
                tg.cancel_scope.cancel()
        finally:
            await response.aclose()
