"""The real server process over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
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
from serving import http_args, serve_args, start_http

pytestmark = pytest.mark.anyio

NOTES = {
    "acme/x100/note.md": "---\nid: n1\ntitle: Queue decision\ntags: [queue]\n---\nWe chose NATS for the queue.\n",
    "personal/diary.md": "# Diary\n\nA walk in the park.\n",
}


async def test_stdio_server_answers_a_real_client(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    params = StdioServerParameters(command=sys.executable, args=serve_args(root), cwd=str(tmp_path))
    async with Client(params, mode="legacy") as client:
        listing = await client.list_tools()
        names = {t.name for t in listing.tools}
        assert {"memory_search", "list_by_domain", "mem_recall", "memory_list", "memory_read",
                "list_domains"} <= names
        assert "get_memory" not in names
        # As it goes over the wire: compact JSON, as test_tool_contracts measures it too: what a
        # model is given (no output schema), and the whole listing.
        data = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools]
        size = len(json.dumps([{k: v for k, v in t.items() if k != "outputSchema"} for t in data],
                              separators=(",", ":"), ensure_ascii=False))
        assert size < 12_000, f"tools/list without output schemas is {size} bytes"
        assert len(json.dumps(data, separators=(",", ":"), ensure_ascii=False)) < 40_000
        deadline = time.monotonic() + 60  # the index is built in the background; wait for it
        while True:
            result = await client.call_tool("list_by_domain", {"domain": "acme"})
            answer = result.structured_content
            assert answer is not None
            if (answer["status"] == "ok" and "indexing" not in answer) or time.monotonic() > deadline:
                break
        assert [r["uid"] for r in answer["results"]] == ["n1"]
        assert json.loads(result.content[0].text) == answer


@pytest.fixture
def http_server(tmp_path: Path):
    root = write_notes(tmp_path / "v", NOTES)
    env = os.environ | {"VAULT_MEM_TOKEN": "s3cret-token"}
    proc, url = start_http(root, cwd=tmp_path, env=env)
    yield url, proc
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
        assert missing.status_code == 401 and "needs a bearer token or an agent key" in missing.json()["message"]
        wrong = await raw.post(url, json=INIT, headers=HEADERS | {"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        assert "not one this server accepts" in wrong.json()["message"] and "nope" not in wrong.text
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


async def test_http_answers_each_request_with_one_json_body(http_server) -> None:
    """No SSE stream per request (docs/clients.md): the answer is the response body."""
    url, _proc = http_server
    auth = {"Authorization": "Bearer s3cret-token"}
    async with httpx2.AsyncClient() as raw:
        init = await raw.post(url, json=INIT, headers=HEADERS | auth)
        assert init.status_code == 200, init.text
        assert init.headers["content-type"].startswith("application/json")
        assert init.json()["result"]["serverInfo"]["name"]
        session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        note = await raw.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                              headers=HEADERS | auth | session)
        assert note.status_code == 202
        call = await raw.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_read", "arguments": {"ref": "n1"}}}, headers=HEADERS | auth | session)
        assert call.status_code == 200 and call.headers["content-type"].startswith("application/json")
        body = call.json()
        assert body["id"] == 2 and json.loads(body["result"]["content"][0]["text"])["uid"] == "n1"


def test_non_loopback_bind_without_token_is_refused(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_TOKEN"}
    proc = subprocess.run([sys.executable, *serve_args(root, *http_args(), "--host", "0.0.0.0")], env=env,
                          capture_output=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 1
    assert b"needs a bearer token" in proc.stderr and b"Traceback" not in proc.stderr
    assert proc.stdout == b""
