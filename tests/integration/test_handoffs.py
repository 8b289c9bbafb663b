"""Handoffs between agents and what an answer tells the agent that calls (docs/tools.md,
"Answers to an agent"; docs/sharing.md): ``inbox`` and ``inbox_more`` on memory_search,
``lost`` and ``persist_error`` on any answer. Through real sessions: HTTP server processes
with agent keys (stopped and started again), a stdio server with --agent, and in-process
sessions for the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import ToolClient, open_vault, write_notes
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from serving import serve_args, start_http

from vault_mem import settings
from vault_mem.cli import main
from vault_mem.mcp_server.app import build_server
from vault_mem.served.agents import Agent

pytestmark = pytest.mark.anyio

PERSON_HANDOFF = "---\nto: [reviewer]\nupdated: 2026-01-02\n---\nPlease check the [[Plan]] before Friday.\n"


def add_key(capsys: pytest.CaptureFixture[str], root: Path, name: str, *options: str) -> str:
    capsys.readouterr()
    assert main(["agents", "add", name, "--vault", str(root), "--json", *options]) == 0
    return str(json.loads(capsys.readouterr().out)["key"])


@contextmanager
def http_server(root: Path) -> Iterator[str]:
    """``vault-mem serve --http`` as its own process (watcher included); yields its URL."""
    proc, url = start_http(root, cwd=root.parent, stdout=subprocess.DEVNULL)
    try:
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


class Session(ToolClient):
    """A client session on a server process (conftest's checks on every answer)."""

    async def until(self, tool: str, check: Callable[[dict[str, Any]], bool], **arguments: Any) -> dict[str, Any]:
        """Call ``tool`` until its answer passes ``check`` (a generous deadline: the watcher, a build)."""
        deadline = time.monotonic() + 60
        while True:
            answer = await self.call(tool, **arguments)
            if "indexing" not in answer and check(answer):
                return answer
            assert time.monotonic() < deadline, f"still not there: {answer}"
            await anyio.sleep(0.05)


@asynccontextmanager
async def http_session(url: str, key: str) -> AsyncIterator[Session]:
    authed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
    async with authed, Client(streamable_http_client(url, http_client=authed), mode="legacy") as client:
        yield Session(client)


@asynccontextmanager
async def stdio_session(root: Path, *extra: str) -> AsyncIterator[Session]:
    params = StdioServerParameters(command=sys.executable, args=serve_args(root, *extra), cwd=str(root.parent),
                                   env=dict(os.environ))
    async with Client(params, mode="legacy") as client:
        yield Session(client)


@asynccontextmanager
async def in_process(vault: Any, caller: Agent | None = None) -> AsyncIterator[Session]:
    async with Client(build_server(vault, caller), mode="legacy") as client:
        yield Session(client)


def titles(answer: dict[str, Any]) -> list[str]:
    return [row["title"] for row in answer["inbox"]]


async def test_a_handoff_from_a_person_and_one_from_an_agent_wait_in_the_inbox_until_read_across_a_restart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"projects/Plan.md": "# Plan\nShip it.\n"})
    keys = {name: add_key(capsys, root, name) for name in ("coder", "reviewer")}
    person_note = root / "handoffs" / "Check the plan.md"
    with http_server(root) as url:
        async with http_session(url, keys["coder"]) as coder, http_session(url, keys["reviewer"]) as reviewer:
            await reviewer.until("memory_search", lambda a: a["inbox"] == [] and a["inbox_more"] == 0)
            person_note.parent.mkdir()
            person_note.write_text(PERSON_HANDOFF, encoding="utf-8")  # a person's editor: a plain file write
            wrote = await coder.call("memory_write", title="Review my change", content="The diff is in projects/.",
                                     type="handoff", domain="handoffs", to=["reviewer"])
            assert wrote["status"] == "ok"
            box = await reviewer.until("memory_search", lambda a: len(a["inbox"]) == 2)
            assert titles(box) == ["Review my change", "Check the plan"]  # newest first
            assert box["inbox_more"] == 0
            assert box["inbox"][0]["from"] == "coder" and box["inbox"][0]["kind"] == "handoff"
            assert "Please check the" in box["inbox"][1]["excerpt"]
            assert (await coder.call("memory_search"))["inbox"] == []  # not addressed to the coder
            assert (await reviewer.call("memory_read", ref="Check the plan"))["status"] == "ok"
            assert titles(await reviewer.call("memory_search", query="plan")) == ["Review my change"]
    assert person_note.read_text(encoding="utf-8") == PERSON_HANDOFF  # what was read is never written into it
    with http_server(root) as url:  # a new process: what the reviewer has read survives
        async with http_session(url, keys["reviewer"]) as reviewer:
            box = await reviewer.until("memory_search", lambda a: True)
            assert titles(box) == ["Review my change"]
            assert (await reviewer.call("memory_read", ref=wrote["uid"]))["status"] == "ok"
            assert (await reviewer.call("memory_search"))["inbox"] == []
    capsys.readouterr()
    assert main(["inbox", "reviewer", "--vault", str(root), "--index-dir", str(tmp_path / "ix"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inbox"] == []


async def test_serve_agent_gives_the_stdio_client_its_inbox_and_tells_it_what_it_lost(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"To coder.md": "---\nto: '[[coder]]'\n---\nFix the build.\n"})
    add_key(capsys, root, "coder")
    async with stdio_session(root, "--agent", "coder") as coder:
        box = await coder.until("memory_search", lambda a: True)  # no agent argument: the server's own
        assert titles(box) == ["To coder"]
        kept = await coder.call("memory_write", title="Kept", content="k", domain="mine")
        doomed = await coder.call("memory_write", title="Doomed", content="d", domain="mine")
        moved = await coder.call("memory_write", title="Moved", content="m", domain="mine")
        assert "lost" not in await coder.call("memory_read", ref="To coder")
        (root / doomed["path"]).unlink()  # someone else deletes one and moves another away
        (root / "elsewhere").mkdir()
        os.replace(root / moved["path"], root / "elsewhere" / "Moved.md")
        seen: list[dict[str, Any]] = []  # every lost row of every answer: each note comes once
        box = await coder.until("memory_read", lambda a: bool(seen.extend(a.get("lost", [])))
                                or {r["title"] for r in seen} == {"Doomed", "Moved"}, ref=kept["uid"])
        lost = {row["title"]: row for row in seen}
        assert len(seen) == 2 and lost["Doomed"]["what"] == "deleted" and "moved_to" not in lost["Doomed"]
        assert lost["Moved"]["what"] == "moved" and lost["Moved"]["moved_to"] == "memory://elsewhere/Moved"
        assert lost["Doomed"]["permalink"] == "memory://mine/Doomed" and lost["Doomed"]["uid"] == doomed["uid"]
        assert (await coder.call("memory_search"))["inbox"] == []  # read above
        assert "lost" not in await coder.call("memory_search")


async def test_archived_or_closed_notes_leave_the_inbox_and_inbox_more_counts_past_five(make_vault) -> None:
    notes = {f"h{i}.md": f"---\nto: reviewer\nupdated: 2026-01-0{i + 1}\n---\nHandoff {i}.\n" for i in range(7)}
    notes["task.md"] = "---\ntype: task\nto: [reviewer, coder]\nupdated: 2026-02-01\n---\nDo it.\n"
    vault = make_vault(notes)
    async with in_process(vault) as session:
        box = await session.call("memory_search", agent="reviewer")
        assert [r["permalink"] for r in box["inbox"]] == ["memory://task", *(f"memory://h{i}" for i in (6, 5, 4, 3))]
        assert box["inbox_more"] == 3
        assert (await session.call("task_close", agent="coder", ref="task"))["status"] == "ok"
        archived = await session.call("memory_edit", agent="coder", ref="h6", set={"status": "archived"})
        assert archived["status"] == "ok"
        box = await session.call("memory_search", agent="Reviewer")  # names compare in any case
        assert [r["permalink"] for r in box["inbox"]][:2] == ["memory://h5", "memory://h4"]
        assert box["inbox_more"] == 1
        assert (await session.call("memory_read", ref="h5"))["status"] == "ok"  # no agent: nobody's read
        assert (await session.call("memory_read", ref="h4", agent="reviewer"))["status"] == "ok"
        box = await session.call("memory_search", agent="reviewer")
        assert [r["permalink"] for r in box["inbox"]] == [f"memory://h{i}" for i in (5, 3, 2, 1, 0)]
        assert box["inbox_more"] == 0
        edited = await session.call("memory_edit", agent="coder", ref="h0", to=["coder"])
        assert edited["status"] == "ok"
        assert [r["permalink"] for r in (await session.call("memory_search", agent="coder"))["inbox"]] == ["memory://h0"]
        bad = await session.call("memory_write", agent="coder", title="x", content="y", to=["not a name!"])
        assert bad["status"] == "invalid" and "to" in bad["message"]


async def test_a_limited_agent_has_no_inbox_note_it_may_not_read(make_vault) -> None:
    vault = make_vault({"projects/For coder.md": "---\nto: coder\n---\nok\n",
                        "private/Salary.md": "---\nto: coder\n---\nsecret\n"})
    async with in_process(vault, Agent("coder", read=("projects/",))) as coder:
        box = await coder.call("memory_search")
        assert [r["permalink"] for r in box["inbox"]] == ["memory://projects/For coder"] and box["inbox_more"] == 0


def test_what_agents_have_seen_is_kept_when_the_index_is_rebuilt(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "---\nto: r\n---\nx\n"})
    vault = open_vault(root)
    from vault_mem.history import agentstate

    agentstate.change(vault.index.history_dir, "r", lambda state: state.put("read", "a", "now"),
        config=settings.current())
    vault.index.create()
    assert agentstate.load(vault.index.history_dir, "R")["read"] == {"a": "now"}


def test_an_agents_state_is_changed_from_a_copy_and_a_change_on_disk_is_seen(tmp_path: Path) -> None:
    from vault_mem.history import agentstate

    index_dir = tmp_path / "ix"
    agentstate.change(index_dir, "r", lambda state: state.put("read", "a", "t1"), config=settings.current())

    def half_done(state: agentstate.Changes) -> None:
        state.put("read", "b", "t2")
        raise RuntimeError("the edit failed halfway")

    with pytest.raises(RuntimeError):
        agentstate.change(index_dir, "r", half_done, config=settings.current())
    assert agentstate.load(index_dir, "r")["read"] == {"a": "t1"}  # what this process keeps, untouched
    # Another process rewrote the file since (here: by hand): the next change starts from it.
    path = agentstate.state_file(index_dir, "r")
    path.write_text(json.dumps({"read": {"c": "t3"}, "wrote": {}, "errors": []}), encoding="utf-8")
    agentstate.change(index_dir, "r", lambda state: state.put("read", "d", "t4"), config=settings.current())
    assert json.loads(path.read_text(encoding="utf-8"))["read"] == {"c": "t3", "d": "t4"}


CHANGER = """
import sys
from pathlib import Path
import dataclasses
from vault_mem import settings
from vault_mem.history import agentstate, journal
index_dir, who = Path(sys.argv[1]), sys.argv[2]
# rewrites of the whole file between the other process's appends
settings.configure(dataclasses.replace(settings.current(), state_rewrite_slack=64))
for i in range(40):
    agentstate.change(index_dir, "reviewer", lambda state: state.put("read", f"{who}-{i}", "t"),
        config=settings.current())
    journal.record(index_dir, "coder", "memory_write", [{"path": f"{who}-{i}.md", "before": None, "after": b"x"}],
        config=settings.current())
"""


def test_two_processes_marking_notes_read_and_journaling_keep_each_others_changes(tmp_path: Path) -> None:
    index_dir = tmp_path / "ix"
    procs = [subprocess.Popen([sys.executable, "-c", CHANGER, str(index_dir), who]) for who in ("a", "b")]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    from vault_mem.history import agentstate, journal

    read = agentstate.load(index_dir, "reviewer")["read"]
    assert set(read) == {f"{who}-{i}" for who in "ab" for i in range(40)}
    assert len(journal.entries(index_dir)) == 80


async def test_an_answer_shared_until_the_next_commit_carries_lost_only_in_its_callers_copy(tmp_path: Path) -> None:
    """list_domains keeps its answer until the next commit; ``lost`` is added to one call's copy."""
    from conftest import commit_removal

    root = write_notes(tmp_path / "v", {"a/keep.md": "x\n"})
    vault = open_vault(root)
    async with in_process(vault, Agent("coder")) as coder, in_process(vault) as owner:
        written = await coder.call("memory_write", title="Doomed", content="x", domain="b")
        commit_removal(vault.index, written["path"])
        first = await coder.call("list_domains")
        assert [row["title"] for row in first["lost"]] == ["Doomed"]
        for again in (await coder.call("list_domains"), await owner.call("list_domains")):
            assert "lost" not in again and again["domains"] == first["domains"]
