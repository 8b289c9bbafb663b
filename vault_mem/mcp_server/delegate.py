"""``serve --http --workers N``: every write tool call runs on worker 1 (docs/concurrency.md).

Measured with 32 sessions of reads and writes (``bench/load_bench.py``): two workers that both
wrote were slower than one, with a tail of seconds. Each process takes its turn on the
index's one write lock, every commit of one makes the other's call threads reopen their
searchers, and a process whose next commit is always ready keeps the lock from the other.
With every write in one process, its saves share commits (``VaultIndex.submit``) and never
wait for another process, while reads still run on every worker.

So a worker other than the first passes each write tool call (its name, arguments, the agent
it acts as) to worker 1's private loopback port, where ``WriteRoute`` runs it as any call of
its own, and answers with what comes back. The route takes only requests that carry the
secret the parent gave its workers (``Vault-Mem-Worker`` on the client's HTTP answer names
the worker that took the request, not worker 1).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2

from vault_mem.errors import InternalError
from vault_mem.mcp_server.affinity import ASGIApp, Receive, Scope, Send, read_body
from vault_mem.mcp_server.answers import error_answer
from vault_mem.served.agents import Agent

log = logging.getLogger("vault_mem.mcp_server")
ROUTE = "/vault-mem/write-call"
SECRET = b"vault-mem-secret"
RunCall = Callable[[str, dict[str, Any] | None, Agent | None], Awaitable[dict[str, Any]]]


def agent_fields(agent: Agent | None) -> dict[str, Any] | None:
    if agent is None:
        return None
    return {"name": agent.name, "read": list(agent.read), "write": list(agent.write), "read_only": agent.read_only}


def agent_of(fields: dict[str, Any] | None) -> Agent | None:
    if fields is None:
        return None
    return Agent(str(fields["name"]), tuple(fields["read"]), tuple(fields["write"]), bool(fields["read_only"]))


class Delegate:
    """A worker's way to worker 1: ``call`` runs a write tool there."""

    def __init__(self, port: int, secret: str) -> None:
        self.url = f"http://127.0.0.1:{port}{ROUTE}"
        self.secret = secret
        self._client: httpx2.AsyncClient | None = None

    async def call(self, name: str, arguments: dict[str, Any] | None, caller: Agent | None) -> dict[str, Any]:
        if self._client is None:  # made in the server's event loop, kept for its life
            self._client = httpx2.AsyncClient(timeout=httpx2.Timeout(None, connect=10.0))
        body = json.dumps({"name": name, "arguments": arguments, "caller": agent_fields(caller)})
        try:
            response = await self._client.post(self.url, content=body, headers={SECRET.decode(): self.secret})
            if response.status_code == 200:
                answer = response.json()
                if isinstance(answer, dict):
                    return answer
            log.error("worker 1 answered a write call with HTTP %s", response.status_code)
        except (httpx2.HTTPError, ValueError) as exc:
            log.error("worker 1 did not take a write call: %s", exc)
        return error_answer(InternalError(f"{name} could not reach the worker that writes (worker 1); nothing "
                                          "was written by this call's worker; see the server's stderr"))

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class WriteRoute:
    """ASGI middleware of worker 1: runs the write calls the other workers pass it."""

    def __init__(self, app: ASGIApp, secret: str, run_call: RunCall) -> None:
        self.app = app
        self.secret = secret.encode()
        self.run_call = run_call

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != ROUTE or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if not self.secret or not hmac.compare_digest(dict(scope.get("headers") or []).get(SECRET, b""), self.secret):
            await _respond(send, 403, b"")
            return
        body = await read_body(receive)
        if body is None:
            return
        try:
            request = json.loads(body)
            name, arguments, caller = str(request["name"]), request["arguments"], agent_of(request["caller"])
        except (ValueError, KeyError, TypeError):
            await _respond(send, 400, b"")
            return
        answer = await self.run_call(name, arguments, caller)
        await _respond(send, 200, json.dumps(answer).encode())


async def _respond(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
