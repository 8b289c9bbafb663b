"""``serve --http --workers N``: every write tool call runs on worker 1 (docs/concurrency.md).

Two workers that both wrote were slower than one, with a tail of seconds
(docs/perf/writes-in-worker-one.md). Each process takes its turn on the
index's one write lock, every commit of one makes the other's call threads reopen their
searchers, and a process whose next commit is always ready keeps the lock from the other.
With every write in one process, its saves share commits (``VaultIndex.submit``) and never
wait for another process, while reads still run on every worker.

So a worker other than the first passes each write tool call (its name, arguments, the agent
it acts as and, when several vaults are served, what the request reaches: each vault's name and
the agent it acts as there) to worker 1, where ``WriteServer`` runs it as any call of its own, and answers with
what comes back (``Vault-Mem-Worker`` on the client's HTTP answer names the worker that took
the request, not worker 1). The calls travel over a loopback socket that the parent binds and
hands to worker 1 alone, as frames: four bytes of length (big-endian), then that much JSON. A
connection's first frame is the secret the parent gave its workers: worker 1 reads it within
``SECRET_WAIT`` seconds and no more bytes than the secret has, and closes a connection that
sends anything else, or nothing. It serves at most ``write_threads(N)`` connections at once
(one thread each) and closes any beyond that at once; a frame over ``MAX_FRAME`` ends its
connection unread. Each worker keeps up to ``CONNECTIONS`` connections open and sends
one call at a time on each. (HTTP through a client library and worker 1's web server cost
far more CPU a write than frames do.)
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import mcp.types as t
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

from vault_mem.errors import InternalError
from vault_mem.mcp_server.answers import answer_json, error_answer, text_result, to_result
from vault_mem.mcp_server.throttled import Throttled
from vault_mem.served.agents import Agent
from vault_mem.settings import Settings

log = logging.getLogger("vault_mem.mcp_server")
FRAME = struct.Struct(">I")
# A call's JSON: an HTTP body (at most the SDK's bound) re-encoded, each character at most 6 bytes.
MAX_FRAME = 6 * DEFAULT_MAX_REQUEST_BODY_SIZE + 2**16
# A call's answer as its text block: (name, arguments, caller), and ``reach`` (vault -> caller
# there) when the call carried one (served/vaults.py:Reach; several vaults served).
RunCall = Callable[..., str]


def agent_fields(agent: Agent | None) -> dict[str, Any] | None:
    if agent is None:
        return None
    return {"name": agent.name, "read": list(agent.read), "write": list(agent.write), "read_only": agent.read_only}


def agent_of(fields: dict[str, Any] | None) -> Agent | None:
    if fields is None:
        return None
    return Agent(str(fields["name"]), tuple(fields["read"]), tuple(fields["write"]), bool(fields["read_only"]))


def frame(data: bytes) -> bytes:
    return FRAME.pack(len(data)) + data


class _Connection:
    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.incoming = BufferedByteReceiveStream(stream)

    async def exchange(self, data: bytes) -> bytes:
        await self.stream.send(frame(data))
        (size,) = FRAME.unpack(await self.incoming.receive_exactly(FRAME.size))
        if size > MAX_FRAME:
            raise ValueError(f"an answer of {size} bytes")
        return await self.incoming.receive_exactly(size)


class Delegate:
    """A worker's way to worker 1: ``call`` runs a write tool there."""

    def __init__(self, port: int, secret: str, *, config: Settings) -> None:
        self.config = config
        self.port = port
        self.secret = secret.encode()
        self.connections = config.delegate_connections
        self._idle: list[_Connection] = []
        self._slots: anyio.Semaphore | None = None  # made in the server's event loop

    async def call(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None,
                   reach: Mapping[str, Agent | None] | None = None) -> t.CallToolResult:
        if self._slots is None:
            self._slots = anyio.Semaphore(self.connections)
        request: dict[str, Any] = {"name": name, "arguments": arguments, "caller": agent_fields(caller)}
        if reach is not None:
            request["reach"] = {vault: agent_fields(agent) for vault, agent in reach.items()}
        body = json.dumps(request).encode()
        async with self._slots:
            connection = self._idle.pop() if self._idle else None
            try:
                if connection is None:
                    connection = _Connection(await anyio.connect_tcp("127.0.0.1", self.port))
                    await connection.stream.send(frame(self.secret))
                # The frame is the answer's text block, as worker 1 made it: parsed once, here.
                result = text_result((await connection.exchange(body)).decode("utf-8", "surrogatepass"))
            except (OSError, anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, ValueError) as exc:
                if connection is not None:
                    await connection.stream.aclose()
                log.error("worker 1 did not take a write call: %s", exc or type(exc).__name__)
            else:
                self._idle.append(connection)
                return result
        return to_result(name, error_answer(InternalError(
            f"{name} could not reach the worker that writes (worker 1); nothing was written by this "
            "call's worker; see the server's stderr")), self.config.max_answer_chars)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.stream.aclose()


def write_threads(workers: int, connections: int) -> int:
    """The connections worker 1 of ``workers`` serves at once: the others' ``connections`` each
    (``delegate_connections``), plus as many again: room to reconnect."""
    return connections * workers


class WriteServer:
    """Worker 1's end: a thread taking connections on ``sock``, and one per connection (at most
    ``threads`` at once) checking the secret, then running the calls that come on it, one after
    another, through ``run_call``."""

    def __init__(self, sock: socket.socket, secret: str, run_call: RunCall, threads: int, *,
                 config: Settings) -> None:
        self.config = config
        self.sock = sock
        self.secret = secret.encode()
        self.run_call = run_call
        self._slots = threading.BoundedSemaphore(threads)
        self._refusals = Throttled(log, "worker 1 refused write-call connections: %d at once is the bound "
                                        "(docs/safety.md)", threads, every=config.log_every)

    def start(self) -> None:
        threading.Thread(target=self._accept, name="vault-mem-writes", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError as exc:
                if self.sock.fileno() == -1:  # the socket was closed: the worker is stopping
                    return
                self._refusals.note(f"accept failed ({exc.strerror or exc})")
                # out of file descriptors: give the open ones time to end
                time.sleep(self.config.delegate_accept_pause)
                continue
            if not self._slots.acquire(blocking=False):
                conn.close()  # no thread for it: it is closed at once, unread
                self._refusals.note("all busy")
                continue
            try:
                threading.Thread(target=self._serve, args=(conn,), name="vault-mem-write-calls",
                                 daemon=True).start()
            except RuntimeError:  # the system would start no more threads
                conn.close()
                self._slots.release()
                self._refusals.note("no thread")

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    conn.settimeout(self.config.delegate_secret_wait)
                    first = _receive(conn, len(self.secret))
                    if first is None or not self.secret or not hmac.compare_digest(first, self.secret):
                        return
                    conn.settimeout(None)  # a worker's connection waits for its next call as long as it likes
                    while (body := _receive(conn, MAX_FRAME)) is not None:
                        conn.sendall(frame(self._answer(body).encode("utf-8", "surrogatepass")))
                except OSError as exc:  # the other worker went away mid-call, or sent no secret in time
                    log.debug("a write-call connection ended: %s", exc)
        finally:
            self._slots.release()

    def _answer(self, body: bytes) -> str:
        try:
            request = json.loads(body)
            name, arguments, caller = str(request["name"]), request["arguments"], agent_of(request["caller"])
            reach = ({str(vault): agent_of(fields) for vault, fields in request["reach"].items()}
                     if "reach" in request else None)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return answer_json(error_answer(InternalError(
                f"worker 1 got a write call it cannot read ({type(exc).__name__})")))
        if reach is None:
            return self.run_call(name, arguments, caller)
        return self.run_call(name, arguments, caller, reach)


def _receive(conn: socket.socket, limit: int) -> bytes | None:
    """One frame, or None when the connection ended before one began or the frame is over
    ``limit`` bytes (then nothing of it is read)."""
    head = _exactly(conn, FRAME.size)
    if head is None:
        return None
    (size,) = FRAME.unpack(head)
    return None if size > limit else _exactly(conn, size)


def _exactly(conn: socket.socket, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = conn.recv(min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
