"""Nothing on disk is invisible to a starting server (docs/index-and-sync.md, "Starting on an
existing index"): a note a killed server wrote but never committed, or one saved while no server
ran, is in the answers once the start-up check ends, and every answer until then says the check is
still to come or running (``checking``), as ``indexing`` does for a build."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ToolClient, Tuned, eventually, write_notes
from holding import HOLD_AT, wait_held
from mcp import Client, StdioServerParameters

from vault_mem import settings
from vault_mem.mcp_server.app import build_server
from vault_mem.runtime.lifecycle import Runtime
from vault_mem.search.api import VaultIndex, sync
from vault_mem.served.context import Vault

pytestmark = pytest.mark.anyio
HANG = 60.0  # generous: only a hang fails


def indexed_vault(tmp_path: Path, count: int = 5) -> tuple[Path, VaultIndex]:
    root = write_notes(tmp_path / "v", {f"n{i}.md": f"# Note {i}\n\nabout queues\n" for i in range(count)})
    index = VaultIndex(root, config=settings.current())
    sync(index)
    index.close()
    return root, index


def left_by_a_killed_server(root: Path, name: str) -> None:
    """What a server killed between a write's rename and its commit leaves: the note on disk, not
    in the index (no server runs to hear it)."""
    (root / name).write_text("# Orphan\n\nwritten as its server was killed, about a zeppelin\n", encoding="utf-8")


def permalinks(answer: dict[str, Any]) -> set[str]:
    return {row["permalink"] for row in answer.get("results", [])}


async def test_answers_say_the_start_up_check_is_due_until_it_has_indexed_what_no_server_saw(
        tmp_path: Path) -> None:
    root, index = indexed_vault(tmp_path)
    left_by_a_killed_server(root, "orphan.md")
    loaded = threading.Event()  # the check waits for it: held here, at the exact step
    runtime = Runtime(index)
    runtime.start(check_after=loaded)
    try:
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            session = ToolClient(client)
            before = await session.call("list_by_domain", domain="", status="all", limit=50)
            assert "memory://orphan" not in permalinks(before)  # the check has not run yet
            assert before["checking"] == {"done": 0, "total": 5}, before  # and the answer says so
            assert any("start-up check" in hint for hint in before["hints"]), before
            assert "indexing" not in before
            missing = await session.call("memory_read", ref="orphan")  # a ref not found says it too
            assert missing["status"] != "ok" and "checking" in missing, missing
            loaded.set()
            assert runtime.wait_ready(HANG)
            after = await session.call("list_by_domain", domain="", status="all", limit=50)
            assert "checking" not in after and "memory://orphan" in permalinks(after), after
            assert runtime.report is not None and runtime.report.added == 1
    finally:
        loaded.set()
        runtime.stop()
        index.close()


async def test_checking_counts_the_files_the_check_compared_while_it_walks(tmp_path: Path) -> None:
    root, index = indexed_vault(tmp_path)
    left_by_a_killed_server(root, "orphan.md")
    at_n3, go = threading.Event(), threading.Event()

    def pace(rel: str) -> None:
        if rel == "n3.md":
            at_n3.set()
            go.wait(HANG)

    runtime = Runtime(index, pace=pace)
    runtime.start()
    try:
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            session = ToolClient(client)
            assert at_n3.wait(HANG)
            answer = await session.call("memory_search", agent="t", query="queues")
            # Walked in order n0.md .. n4.md, orphan.md: three compared, six listed.
            assert answer["checking"]["total"] == 6 and 3 <= answer["checking"]["done"] <= 4, answer
            go.set()
            assert runtime.wait_ready(HANG)
            assert "checking" not in await session.call("memory_search", agent="t", query="zeppelin")
    finally:
        go.set()
        runtime.stop()
        index.close()


async def test_a_check_that_fails_does_not_leave_answers_saying_it_runs(tmp_path: Path) -> None:
    """Attack: the check raising half way must not leave ``checking`` in every answer for the
    server's life (nor hide a note the watcher indexes meanwhile)."""
    root, index = indexed_vault(tmp_path)

    def pace(rel: str) -> None:
        raise OSError("the disk went away under the walk")

    runtime = Runtime(index, pace=pace)
    runtime.start()
    try:
        assert runtime.wait_ready(HANG)
        assert runtime.error is not None and "disk went away" in runtime.error
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            answer = await ToolClient(client).call("memory_search", agent="t", query="queues")
            assert "checking" not in answer and answer["status"] == "ok", answer
    finally:
        runtime.stop()
        index.close()


async def test_a_save_made_while_the_check_commits_is_never_undone_by_the_checks_older_reading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A note changed while no server ran is read by the start-up check; saved again before the
    check commits it, the watcher indexes the save first. The check's older reading must not
    land after it (it did: the save stayed unfindable until the periodic check)."""
    root, index = indexed_vault(tmp_path)
    (root / "n2.md").write_text("# Note 2\n\nchanged while no server ran\n", encoding="utf-8")
    marker = tmp_path / "held"
    monkeypatch.setenv(HOLD_AT, f"check-commit={marker}")  # read in this process, at the step
    runtime = Runtime(index)
    runtime.start()
    try:
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            session = ToolClient(client)
            wait_held(marker)  # the check has read n2.md as changed, and not committed it yet
            with open(root / "n2.md", "a", encoding="utf-8") as f:
                f.write("\nsaved again as the check was about to commit: kumquat\n")
            assert runtime.watcher is not None
            eventually(lambda: runtime.watcher is not None and runtime.watcher.indexed >= 1, HANG,
                       "the watcher indexed the save")
            marker.unlink()
            assert runtime.wait_ready(HANG)
            found = await session.call("memory_search", agent="t", query="kumquat")
            assert [row["permalink"] for row in found["notes"]] == ["memory://n2"], found
            assert runtime.report is not None and runtime.report.updated == 1
    finally:
        marker.unlink(missing_ok=True)
        runtime.stop()
        index.close()


async def test_a_note_the_start_up_check_finds_changed_is_indexed_before_its_walk_ends(
        tmp_path: Path, tuned: Tuned) -> None:
    """Issue 54: the check committed what it found only once it had walked the whole vault (seconds
    at 100,000 notes, longer under calls). A note changed while no server ran, early in the walk, is
    searchable while the walk is held near its end; answers still carry ``checking`` meanwhile."""
    tuned(check_apply_every=0.0)  # at once: the walk is held below, not timed
    root, index = indexed_vault(tmp_path, 30)
    (root / "n1.md").write_text("# Note 1\n\nchanged while no server ran: a quokka\n", encoding="utf-8")
    near_the_end, go = threading.Event(), threading.Event()

    def pace(rel: str) -> None:
        if rel == "n9.md":  # the walk is sorted: n1.md, n10.md ... n29.md, n3.md ... n9.md
            near_the_end.set()
            go.wait(HANG)

    runtime = Runtime(index, pace=pace)
    runtime.start()
    try:
        assert near_the_end.wait(HANG)
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            session = ToolClient(client)
            answer = await session.call("memory_search", agent="t", query="quokka")
            assert [row["permalink"] for row in answer["notes"]] == ["memory://n1"], answer
            assert answer["checking"]["done"] < answer["checking"]["total"] == 30, answer
            go.set()
            assert runtime.wait_ready(HANG)
            assert runtime.report is not None and runtime.report.updated == 1 and runtime.report.unchanged == 29
    finally:
        go.set()
        runtime.stop()
        index.close()


def serve(root: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_MEM_")}
    return StdioServerParameters(command=sys.executable, args=["-m", "vault_mem", "serve", "--vault", str(root)],
                                 cwd=str(root.parent), env=env)


@pytest.mark.skipif(sys.platform == "win32", reason="kills the server with SIGKILL")
async def test_notes_written_as_a_server_was_killed_are_listed_once_no_answer_says_checking(
        tmp_path: Path) -> None:
    """The whole path through real processes: a server killed with kill -9 after notes reached the
    disk uncommitted, then a new ``serve`` over stdio, asked as a client would until its answers
    carry neither ``indexing`` nor ``checking``: then every note on disk is listed."""
    root, _ = indexed_vault(tmp_path, 20)
    killed = subprocess.Popen([sys.executable, "-m", "vault_mem", "serve", "--vault", str(root)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        for i in range(3):  # the killed server's writes in flight: renamed into place, not committed
            left_by_a_killed_server(root, f"orphan{i}.md")
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.communicate()
    async with Client(serve(root), mode="legacy") as client:
        session = ToolClient(client)
        deadline = time.monotonic() + HANG
        while True:
            answer = await session.call("list_by_domain", domain="", status="all", limit=50)
            if "indexing" not in answer and "checking" not in answer:
                break
            assert time.monotonic() < deadline, answer
            await anyio.sleep(0.6)  # calls that leave the check a quiet moment (runtime/lifecycle.py)
        on_disk = {f"memory://{p.stem}" for p in root.glob("*.md")}
        assert len(on_disk) == 23 and permalinks(answer) == on_disk, sorted(on_disk - permalinks(answer))
