"""A vault shared between agents (docs/sharing.md), through real server processes: agent keys
over HTTP (legacy sessions and the 2026-07-28 stateless protocol), serve --agent and
serve --read-only over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import ToolClient, write_notes
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from serving import http_args, serve_args, start_http

from vault_mem.cli import main

pytestmark = pytest.mark.anyio

TOKEN = "shared-s3cret-token"
NOTES = {
    "projects/acme/Plan.md": "---\nid: plan\ntitle: Plan\n---\nThe zebra rollout; costs are in [[Secret salary]].\n",
    "projects/acme/Notes.md": "---\nid: notes\ntitle: Notes\n---\nAbout the [[Plan]].\n",
    "private/Secret salary.md": "---\nid: salary\ntitle: Secret salary\n---\nZebra budget: see [[Plan]].\n",
}
WRITE_TOOLS = {"memory_write", "memory_edit", "task_close", "memory_supersede", "memory_delete"}


def add_key(capsys: pytest.CaptureFixture[str], root: Path, name: str, *options: str) -> str:
    capsys.readouterr()
    assert main(["agents", "add", name, "--vault", str(root), "--json", *options]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["agent"] == name
    return str(answer["key"])


@pytest.fixture
def shared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[dict[str, Any]]:
    """An HTTP server on a vault with two agent keys (coder: projects/ only; reviewer: read-only)
    and the shared token; yields the URL and the keys, and checks no secret reached its log."""
    root = write_notes(tmp_path / "v", NOTES)
    keys = {"coder": add_key(capsys, root, "coder", "--read", "projects/"),
            "reviewer": add_key(capsys, root, "reviewer", "--read-only")}
    env = os.environ | {"VAULT_MEM_TOKEN": TOKEN}  # XDG_CONFIG_HOME: the test's own (conftest)
    proc, url = start_http(root, cwd=tmp_path, env=env)
    yield {"url": url, "keys": keys, "root": root}
    proc.terminate()
    _out, err = proc.communicate(timeout=30)
    for secret in (TOKEN, *keys.values()):
        assert secret.encode() not in err, "no token or key is ever logged"
    assert b"agent key(s)" in err


class Session(ToolClient):
    """A client session on a server process (conftest's checks on every answer)."""

    async def settled(self) -> None:
        """Wait (with a deadline) until the background build is done."""
        deadline = time.monotonic() + 60
        while "indexing" in await self.call("list_domains"):
            assert time.monotonic() < deadline, "the index was not built in time"
            await anyio.sleep(0.05)

    async def tools(self) -> set[str]:
        return {tool.name for tool in (await self.client.list_tools()).tools}


@asynccontextmanager
async def http_session(url: str, key: str, mode: str = "legacy") -> AsyncIterator[Session]:
    authed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
    async with authed, Client(streamable_http_client(url, http_client=authed), mode=mode) as client:
        session = Session(client)
        await session.settled()
        yield session


def permalinks(answer: dict[str, Any], rows: str = "notes") -> set[str]:
    return {row["permalink"] for row in answer.get(rows, [])}


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_once_a_vault_has_keys_a_request_without_one_is_refused_even_on_loopback(shared) -> None:
    async with httpx2.AsyncClient() as raw:
        for headers in ({}, {"Authorization": "Bearer vmk_not-a-key"}, {"Authorization": shared["keys"]["coder"]}):
            refused = await raw.post(shared["url"], json=INIT, headers=HEADERS | headers)
            assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_limited_agent_never_sees_a_note_outside_its_folders(shared, mode: str) -> None:
    async with http_session(shared["url"], shared["keys"]["coder"], mode) as coder:
        assert (await coder.call("memory_read", ref="salary"))["status"] == "not_found"
        assert (await coder.call("memory_read", ref="private/Secret salary"))["status"] == "not_found"
        assert (await coder.call("memory_read", ref="Secret salary"))["status"] == "not_found"
        found = await coder.call("memory_search", agent="coder", query="zebra")
        assert permalinks(found) == {"memory://projects/acme/Plan"}
        plan = await coder.call("memory_read", ref="plan")
        assert plan["backlinks"] == ["memory://projects/acme/Notes"], "the hidden note's link back is gone"
        assert [link["resolved"] for link in plan["links"]] == [False], "a link to a hidden note is unresolved"
        listed = await coder.call("memory_list")
        assert permalinks(listed, "memories") == {"memory://projects/acme/Plan", "memory://projects/acme/Notes"}
        domains = {row["domain"]: row["active"] for row in (await coder.call("list_domains"))["domains"]}
        assert domains == {"": 2, "projects": 2, "projects/acme": 2}
        everything = await coder.call("list_by_domain", domain="")
        assert "memory://private/Secret salary" not in permalinks(everything, "results")
        assert (await coder.call("list_by_domain", domain="private"))["status"] != "ok"
        resources = {str(r.uri) for r in (await coder.client.list_resources()).resources}
        assert resources == {"memory://projects/acme/Plan", "memory://projects/acme/Notes"}
        for uri in ("memory://private/Secret%20salary", "memory://private/Secret salary"):
            with pytest.raises(MCPError, match="no note matches"):
                await coder.client.read_resource(uri)


async def test_two_agents_at_once_each_get_their_own_answers(shared) -> None:
    async with http_session(shared["url"], shared["keys"]["coder"]) as coder, \
            http_session(shared["url"], shared["keys"]["reviewer"]) as reviewer:
        for _ in range(3):  # interleaved on one server: a caller never leaks into another's call
            assert (await coder.call("memory_read", ref="salary"))["status"] == "not_found"
            assert (await reviewer.call("memory_read", ref="salary"))["status"] == "ok"
        assert await coder.tools() >= WRITE_TOOLS and not await reviewer.tools() & WRITE_TOOLS


async def test_a_limited_agent_writes_only_inside_its_globs_and_only_as_itself(shared) -> None:
    async with http_session(shared["url"], shared["keys"]["coder"]) as coder:
        outside = await coder.call("memory_write", agent="coder", title="Leak", content="x", domain="private")
        assert outside["status"] == "forbidden" and "outside its read globs" in outside["message"]
        assert outside["rule"] == "read"
        forged = await coder.call("memory_write", agent="reviewer", title="As another", content="x",
                                  domain="projects")
        assert forged["status"] == "forbidden" and "cannot act as 'reviewer'" in forged["message"]
        hidden_edit = await coder.call("memory_edit", agent="coder", ref="salary", append="x")
        assert hidden_edit["status"] == "not_found", "a hidden note is not there to refuse"
        inside = await coder.call("memory_write", agent="coder", title="Sprint", content="Done.",
                                  domain="projects/acme")
        assert inside["status"] == "ok" and inside["path"] == "projects/acme/Sprint.md"
        unnamed = await coder.call("memory_edit", ref="Sprint", append="More.")  # its own name is filled in
        assert unnamed["status"] == "ok"
    assert not (shared["root"] / "private" / "Leak.md").exists()
    assert "agent: coder" in (shared["root"] / "projects/acme/Sprint.md").read_text(encoding="utf-8")


async def test_a_read_only_agent_sees_no_write_tool_and_cannot_write(shared) -> None:
    async with http_session(shared["url"], shared["keys"]["reviewer"], "2026-07-28") as reviewer:
        assert not await reviewer.tools() & WRITE_TOOLS
        assert (await reviewer.call("memory_read", ref="salary"))["status"] == "ok", "it reads everything"
        refused = await reviewer.call("memory_delete", agent="reviewer", ref="plan")
        assert refused["status"] == "forbidden" and "read-only" in refused["message"]
    assert (shared["root"] / "projects/acme/Plan.md").exists()


async def test_the_shared_token_still_reads_and_writes_everything(shared) -> None:
    async with http_session(shared["url"], TOKEN) as owner:
        assert await owner.tools() >= WRITE_TOOLS
        assert (await owner.call("memory_read", ref="salary"))["status"] == "ok"
        written = await owner.call("memory_write", agent="person", title="Raise", content="x", domain="private")
        assert written["status"] == "ok"
        resources = {str(r.uri) for r in (await owner.client.list_resources()).resources}
        assert "memory://private/Secret%20salary" in resources


async def test_keys_added_and_removed_while_serving_take_effect_at_once(shared, capsys) -> None:
    late = add_key(capsys, shared["root"], "late", "--read", "private/")
    async with http_session(shared["url"], late) as agent:
        assert (await agent.call("memory_read", ref="plan"))["status"] == "not_found"
    assert main(["agents", "remove", "late", "--vault", str(shared["root"])]) == 0
    async with httpx2.AsyncClient() as raw:
        gone = await raw.post(shared["url"], json=INIT, headers=HEADERS | {"Authorization": f"Bearer {late}"})
        assert gone.status_code == 401


@asynccontextmanager
async def stdio_session(root: Path, *extra: str) -> AsyncIterator[Session]:
    params = StdioServerParameters(command=sys.executable, args=serve_args(root, *extra), cwd=str(root.parent),
                                   env=dict(os.environ))
    async with Client(params, mode="legacy") as client:
        session = Session(client)
        await session.settled()
        yield session


async def test_serve_agent_gives_the_stdio_client_that_agents_limits(tmp_path: Path, capsys) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    add_key(capsys, root, "coder", "--read", "projects/", "--write", "projects/acme/")
    async with stdio_session(root, "--agent", "coder") as coder:
        assert (await coder.call("memory_read", ref="salary"))["status"] == "not_found"
        assert permalinks(await coder.call("memory_search", agent="coder", query="zebra")) == {
            "memory://projects/acme/Plan"}
        above = await coder.call("memory_write", agent="coder", title="Top", content="x", domain="projects")
        assert above["status"] == "forbidden" and above["rule"] == "write"
        assert "outside its write globs (projects/acme/)" in above["message"]
        assert (await coder.call("memory_edit", agent="coder", ref="plan", append="ok"))["status"] == "ok"


async def test_serve_read_only_lists_no_write_tool_and_refuses_one(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    async with stdio_session(root, "--read-only") as session:
        assert not await session.tools() & WRITE_TOOLS
        refused = await session.call("memory_write", agent="me", title="x", content="y")
        assert refused["status"] == "forbidden" and "--read-only" in refused["message"]
        assert (await session.call("memory_read", ref="salary"))["status"] == "ok"


def test_serve_agent_without_a_key_or_over_http_is_one_clear_line(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    unknown = subprocess.run([sys.executable, *serve_args(root, "--agent", "ghost")], capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert unknown.returncode == 1 and "'ghost' has no key for this vault" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    http = subprocess.run([sys.executable, *serve_args(root, *http_args(), "--agent", "ghost")], capture_output=True,
                          text=True, timeout=60)
    assert http.returncode == 1 and "--agent: applies to stdio" in http.stderr
