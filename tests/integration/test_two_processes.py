"""Two real ``vault-mem serve`` processes on the same vault and the same index folder (docs/index-and-sync.md: two
MCP clients open at once both keep working and see each other's writes)."""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from conftest import write_notes
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio

NOTES = {f"seed/s{i}.md": f"---\nid: seed{i}\ntitle: Seed {i}\n---\nseed body {i}\n" for i in range(20)}
WRITES = 30


class Served:
    """One server process with a client session, every answer checked and kept."""

    def __init__(self, name: str, client: Client, errlog: Path) -> None:
        self.name, self.client, self.errlog = name, client, errlog
        self.failures: list[str] = []

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        answer = result.structured_content
        if not isinstance(answer, dict) or result.is_error or answer.get("status") not in ("ok", "none"):
            self.failures.append(f"{self.name} {tool}({arguments}) -> {answer or result.content}")
            return answer if isinstance(answer, dict) else {}
        return answer

    async def until_built(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            answer = await self.call("list_by_domain", domain="", limit=1)
            if "indexing" not in answer and answer.get("status") == "ok":
                return
            assert time.monotonic() < deadline, f"{self.name}: the index was not built in time"
            await anyio.sleep(0.05)


@asynccontextmanager
async def serve(name: str, root: Path, index_dir: Path, logs: Path) -> AsyncIterator[Served]:
    errlog = logs / f"{name}.stderr"
    params = StdioServerParameters(command=sys.executable, cwd=str(logs), args=[
        "-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(index_dir)])
    with errlog.open("w") as sink:
        handle: TextIO = sink
        async with Client(stdio_client(params, errlog=handle), mode="legacy") as client:
            yield Served(name, client, errlog)


async def writes_and_searches(server: Served, uids: dict[str, str]) -> None:
    """30 new notes, an edit of every third, a search after each: all interleaved with the other process."""
    for i in range(WRITES):
        title = f"From {server.name} {server.name}{i:02d}q"
        written = await server.call("memory_write", agent=server.name, title=title, domain=server.name,
                                    content=f"Written by {server.name}, number {i}.", tags=["twoproc"])
        if written.get("uid"):
            uids[title] = written["uid"]
        if i % 3 == 0 and written.get("uid"):
            await server.call("memory_edit", agent=server.name, ref=written["uid"], append=f"Edit {i}.",
                              if_etag=written["etag"])
        await server.call("memory_search", agent=server.name, query=f"{server.name}{i:02d}q")


async def finds(server: Served, title: str, uid: str) -> bool:
    answer = await server.call("memory_search", agent="check", query=title.rpartition(" ")[2])
    return title in [row.get("title") for row in answer.get("notes", [])]


async def test_two_servers_write_and_read_at_once_and_see_each_other(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "vault", NOTES)
    index_dir = tmp_path / "ix"
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(serve("alice", root, index_dir, tmp_path))
        b = await stack.enter_async_context(serve("bob", root, index_dir, tmp_path))
        for server in (a, b):
            await server.until_built()
        uids: dict[str, str] = {}
        async with anyio.create_task_group() as group:
            group.start_soon(writes_and_searches, a, uids)
            group.start_soon(writes_and_searches, b, uids)
        assert not a.failures and not b.failures, a.failures + b.failures
        assert len(uids) == 2 * WRITES
        for server in (a, b):
            for title, uid in uids.items():
                read = await server.call("memory_read", ref=uid)
                assert read.get("title") == title, f"{server.name} cannot read {title}: {read}"
            missing = dict(uids)
            deadline = time.monotonic() + 20  # the other process's searcher refreshes on its next query
            while missing and time.monotonic() < deadline:
                missing = {t: u for t, u in missing.items() if not await finds(server, t, u)}
            assert not missing, f"{server.name} does not find {sorted(missing)}"
            seeds = await server.call("list_by_domain", domain="seed", limit=50)
            assert len(seeds["results"]) == len(NOTES)
        assert not a.failures and not b.failures, a.failures + b.failures
    for name in ("alice", "bob"):
        log = (tmp_path / f"{name}.stderr").read_text()
        assert "Traceback" not in log and "LockError" not in log, f"{name} logged:\n{log[-3000:]}"


# Both servers find no index; the build lock makes the second wait for the first build and then
# only reconcile (before it, the second build emptied the folder under the first one).
async def test_two_servers_started_at_once_on_a_new_vault_both_follow_the_files(tmp_path: Path) -> None:
    notes = {f"d{i % 5}/n{i}.md": f"---\nid: u{i}\ntitle: Note {i}\n---\n" + "x " * 200 + "\n" for i in range(4000)}
    root = write_notes(tmp_path / "vault", notes)
    index_dir = tmp_path / "ix"
    servers: list[Served] = []
    both_up, done = anyio.Event(), anyio.Event()

    async def run(name: str) -> None:
        async with serve(name, root, index_dir, tmp_path) as server:
            servers.append(server)
            if len(servers) == 2:
                both_up.set()
            await done.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(run, "alice")
        group.start_soon(run, "bob")
        await both_up.wait()
        try:
            for server in servers:
                await server.until_built()
            (root / "d0/by hand.md").write_text("---\ntitle: Written by hand zqx\n---\nzqxhand\n")
            for server in servers:
                deadline = time.monotonic() + 60
                while not await finds(server, "Written by hand zqx", ""):
                    assert time.monotonic() < deadline, f"{server.name} never saw the file written by hand"
                    await anyio.sleep(0.05)
        finally:
            done.set()
    for name in ("alice", "bob"):
        log = (tmp_path / f"{name}.stderr").read_text()
        assert "Traceback" not in log, f"{name} logged:\n{log[-3000:]}"
