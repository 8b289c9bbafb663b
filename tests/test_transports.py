"""The real server process over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from conftest import write_notes
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio

NOTES = {
    "acme/x100/note.md": "---\nid: n1\ntitle: Queue decision\ntags: [queue]\n---\nWe chose NATS for the queue.\n",
    "personal/diary.md": "# Diary\n\nA walk in the park.\n",
}


def serve_args(root: Path, *extra: str) -> list[str]:
    return ["-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(root.parent / "ix"), *extra]


async def test_stdio_server_answers_a_real_client(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    params = StdioServerParameters(command=sys.executable, args=serve_args(root), cwd=str(tmp_path))
    async with Client(params, mode="legacy") as client:
        listing = await client.list_tools()
        names = {t.name for t in listing.tools}
        assert {"memory_search", "list_by_domain", "mem_recall", "memory_list", "memory_read",
                "list_domains"} <= names
        assert "get_memory" not in names
        # As it goes over the wire: compact JSON, as test_tool_contracts measures it too.
        size = len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools],
                              separators=(",", ":"), ensure_ascii=False))
        assert size < 12_000, f"tools/list is {size} bytes"
        deadline = time.monotonic() + 60  # the index is built in the background; wait for it
        while True:
            result = await client.call_tool("list_by_domain", {"domain": "acme"})
            answer = result.structured_content
            assert answer is not None
            if (answer["status"] == "ok" and "indexing" not in answer) or time.monotonic() > deadline:
                break
        assert [r["uid"] for r in answer["results"]] == ["n1"]
        assert json.loads(result.content[0].text) == answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path):
    root = write_notes(tmp_path / "v", NOTES)
    port = free_port()
    env = os.environ | {"VAULT_MEM_TOKEN": "s3cret-token"}
    proc = subprocess.Popen([sys.executable, *serve_args(root, "--http", "--port", str(port))], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp", proc
    proc.terminate()
    _out, err = proc.communicate(timeout=30)
    assert b"s3cret-token" not in err, "the token must never be logged"


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_http_requires_the_token_and_checks_the_host(http_server) -> None:
    url, _proc = http_server
    async with httpx2.AsyncClient() as raw:
        missing = await raw.post(url, json=INIT, headers=HEADERS)
        assert missing.status_code == 401 and missing.content == b""
        wrong = await raw.post(url, json=INIT, headers=HEADERS | {"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.content == b""
        rebinding = await raw.post(url, json=INIT, headers=HEADERS | {
            "Authorization": "Bearer s3cret-token", "Host": "evil.example:80"})
        assert rebinding.status_code in (400, 403, 421)
        origin = await raw.post(url, json=INIT, headers=HEADERS | {
            "Authorization": "Bearer s3cret-token", "Origin": "http://evil.example"})
        assert origin.status_code in (400, 403)
    authed = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret-token"})
    async with authed, Client(streamable_http_client(url, http_client=authed), mode="legacy") as client:
        deadline = time.monotonic() + 60  # the index is built in the background; wait for it
        while True:
            result = await client.call_tool("memory_read", {"ref": "n1"})
            answer = result.structured_content
            assert answer is not None
            if "indexing" not in answer or time.monotonic() > deadline:
                break
            await anyio.sleep(0.05)
        assert answer["status"] == "ok" and answer["uid"] == "n1", answer


def test_non_loopback_bind_without_token_is_refused(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_TOKEN"}
    proc = subprocess.run([sys.executable, *serve_args(root, "--http", "--host", "0.0.0.0")], env=env,
                          capture_output=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 1
    assert b"needs a bearer token" in proc.stderr and b"Traceback" not in proc.stderr
    assert proc.stdout == b""
