"""``vault-mem sync`` between machines (docs/git.md): a local bare repository and two clones, real
git, real MCP sessions, a real watcher on the receiving clone; no network."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import eventually
from git_helpers import commit_all, git, git_env, new_repo

from vault_mem import cli, settings
from vault_mem.git.sync import host_name, sync_vault
from vault_mem.runtime.watcher import Watcher
from vault_mem.search.api import VaultIndex, sync
from vault_mem.served.context import Vault
from vault_mem.settings import Settings

pytestmark = pytest.mark.anyio
__all__ = ["git_env"]
SEED = {"shared.md": "# Shared\n\nline one\nline two\n", "a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n",
        "person.md": "# Person\n\nwritten by hand\n", "code.txt": "not a note\n"}


@pytest.fixture
def machines(git_env: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A bare remote and two clones of it, each served (an index and a running watcher)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    seed = new_repo(tmp_path / "seed", SEED)
    commit_all(seed, "seed", "2022-01-01T00:00:00Z")
    git(seed, "remote", "add", "origin", str(remote))
    git(seed, "push", "-q", "-u", "origin", "main")
    served: dict[str, Any] = {"remote": remote}
    watchers = []
    for name in ("one", "two"):
        clone = tmp_path / name
        git(tmp_path, "clone", "-q", str(remote), str(clone))
        index = VaultIndex(clone, config=settings.current())
        sync(index, procs=1)
        watcher = Watcher(index)
        watcher.start()
        watchers.append(watcher)
        served[name] = Vault(clone, index, git_commit=True)
        served[f"{name}_watcher"] = watcher
    yield served
    for watcher in watchers:
        watcher.stop()


def settled(watcher: Watcher) -> None:
    eventually(lambda: watcher.wait_idle(30), 30, "watcher idle")


def no_markers(root: Path) -> bool:
    return not any("<<<<<<<" in p.read_text(encoding="utf-8", errors="replace") or ">>>>>>>" in
                   p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*.md")
                   if ".git" not in p.parts)


async def test_a_note_written_on_one_machine_is_found_on_the_other_after_sync(machines, mcp_session) -> None:
    one, two = machines["one"], machines["two"]
    async with mcp_session(one) as a:
        wrote = await a.call("memory_write", agent="agent-a", title="Deploy key rotation",
                             content="rotate the deploy key every quarter")
        assert wrote["status"] == "ok" and "warnings" not in wrote
    first = sync_vault(one.root, config=Settings())
    assert first.complete and first.pushed, first.lines
    async with mcp_session(two) as b:
        pulled = sync_vault(two.root, config=Settings())
        assert pulled.complete and pulled.exit_code == 0, pulled.lines
        start = time.monotonic()

        async def found() -> bool:
            answer = await b.call("memory_search", agent="agent-b", query="rotation")
            return answer["count"] == 1

        deadline = start + 30
        while not await found():
            assert time.monotonic() < deadline, "clone two's server never found the pulled note"
            time.sleep(0.01)
        print(f"\npulled note searchable on the other clone {time.monotonic() - start:.3f} s after the sync")
        read = await b.call("memory_read", ref="Deploy key rotation")
        assert read["history"][0]["author"] == "agent-a"
        assert read["history"][0]["subject"] == "memory_write: Deploy key rotation"
        assert read["uncommitted"] is False


async def test_different_notes_changed_on_both_sides_merge_cleanly(machines, mcp_session) -> None:
    one, two = machines["one"], machines["two"]
    (one.root / "a.md").write_text("# A\n\nalpha, edited on one\n", encoding="utf-8")
    assert sync_vault(one.root, config=Settings()).pushed
    (two.root / "b.md").write_text("# B\n\nbeta, edited on two\n", encoding="utf-8")
    result = sync_vault(two.root, config=Settings())
    assert result.complete and result.pushed and result.conflicts == [], result.lines
    assert any(line.startswith("merged origin/main") for line in result.lines)
    assert sync_vault(one.root, config=Settings()).complete
    for vault in (one, two):
        assert (vault.root / "a.md").read_text(encoding="utf-8") == "# A\n\nalpha, edited on one\n"
        assert (vault.root / "b.md").read_text(encoding="utf-8") == "# B\n\nbeta, edited on two\n"
        assert not list(vault.root.glob("*conflict*"))
        assert git(vault.root, "status", "--porcelain") == ""
    assert git(one.root, "rev-parse", "HEAD") == git(two.root, "rev-parse", "HEAD")


async def test_the_same_note_changed_on_both_sides_keeps_both_versions_without_markers(
        machines, mcp_session, capsys) -> None:
    one, two = machines["one"], machines["two"]
    (one.root / "shared.md").write_text("# Shared\n\nline one\nline two from one\n", encoding="utf-8")
    assert sync_vault(one.root, config=Settings()).pushed
    (two.root / "shared.md").write_text("# Shared\n\nline one\nline two from two\n", encoding="utf-8")
    code = cli.main(["sync", "--vault", str(two.root)])
    err = capsys.readouterr().err
    day = dt.datetime.now(dt.UTC).date().isoformat()
    copy = f"shared (conflict {host_name()} {day}).md"
    assert code == 3, err
    assert f"conflict: shared.md: kept the remote version; yours is in {copy}" in err
    assert (two.root / "shared.md").read_text(encoding="utf-8").endswith("line two from one\n")
    assert (two.root / copy).read_text(encoding="utf-8").endswith("line two from two\n")
    assert no_markers(two.root)
    assert git(two.root, "status", "--porcelain") == ""
    settled(machines["two_watcher"])
    async with mcp_session(two) as b:
        ones = await b.call("memory_search", agent="b", query="from one")
        twos = await b.call("memory_search", agent="b", query="from two")
        assert [n["permalink"] for n in ones["notes"]][:1] == ["memory://shared"]
        assert [n["permalink"] for n in twos["notes"]][:1] == [f"memory://{copy[:-3]}"]
        assert any(copy in hint for hint in ones.get("hints", []))
        # the other machine receives the merge and the conflicted copy too
        assert sync_vault(one.root, config=Settings()).complete
        assert (one.root / copy).read_text(encoding="utf-8").endswith("line two from two\n")
        assert no_markers(one.root)
        # resolved: the hint goes away
        (two.root / copy).unlink()
        deadline = time.monotonic() + 30
        while any("conflict" in hint for hint in (await b.call("memory_search", agent="b")).get("hints", [])):
            assert time.monotonic() < deadline, "the hint outlived the conflicted copy"
            time.sleep(0.01)
    # the resolution travels like any other change
    assert sync_vault(two.root, config=Settings()).pushed
    assert sync_vault(one.root, config=Settings()).complete
    assert not (one.root / copy).exists()


async def test_a_persons_uncommitted_edits_survive_an_agents_write_and_a_sync(machines, mcp_session) -> None:
    one, two = machines["one"], machines["two"]
    (two.root / "person.md").write_text("# Person\n\nwritten by hand, and more by hand\n", encoding="utf-8")
    (two.root / "code.txt").write_text("my unsaved code\n", encoding="utf-8")
    async with mcp_session(two) as b:
        wrote = await b.call("memory_write", agent="agent-b", title="From B", content="b's note")
        assert wrote["status"] == "ok"
    (one.root / "a.md").write_text("# A\n\nalpha from one\n", encoding="utf-8")
    assert sync_vault(one.root, config=Settings()).pushed
    result = sync_vault(two.root, config=Settings())
    assert result.complete, result.lines
    assert (two.root / "person.md").read_text(encoding="utf-8") == "# Person\n\nwritten by hand, and more by hand\n"
    assert (two.root / "code.txt").read_text(encoding="utf-8") == "my unsaved code\n"
    assert git(two.root, "status", "--porcelain") == " M code.txt\n"  # not a note: never committed by sync
    assert (two.root / "a.md").read_text(encoding="utf-8") == "# A\n\nalpha from one\n"
    assert sync_vault(one.root, config=Settings()).complete
    assert "b's note" in (one.root / "From B.md").read_text(encoding="utf-8")


def test_without_a_remote_sync_commits_locally_and_says_what_is_missing(git_env, tmp_path, capsys) -> None:
    root = new_repo(tmp_path / "solo", {"n.md": "# N\n\nbody\n"})
    code = cli.main(["sync", "--vault", str(root)])
    err = capsys.readouterr().err
    assert code == 1
    assert "committed 1 changed note" in err and "no remote configured" in err
    assert git(root, "log", "--format=%s").startswith("vault-mem sync: 1 note from")
    assert git(root, "status", "--porcelain") == ""


def test_an_unreachable_remote_changes_nothing_but_the_local_commit(machines) -> None:
    one = machines["one"]
    git(one.root, "remote", "set-url", "origin", str(one.root.parent / "nowhere.git"))
    (one.root / "a.md").write_text("# A\n\noffline edit\n", encoding="utf-8")
    result = sync_vault(one.root, config=Settings())
    assert result.exit_code == 1
    assert any(line.startswith("fetch from origin failed:") for line in result.lines), result.lines
    assert (one.root / "a.md").read_text(encoding="utf-8") == "# A\n\noffline edit\n"
    assert git(one.root, "status", "--porcelain") == ""
    assert git(one.root, "log", "-1", "--format=%s").startswith("vault-mem sync: 1 note")


def test_a_rejected_push_says_so_and_leaves_the_vault_consistent(machines) -> None:
    one, remote = machines["one"], machines["remote"]
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    (one.root / "b.md").write_text("# B\n\nbeta, not pushed\n", encoding="utf-8")
    before = git(remote, "rev-parse", "main")
    result = sync_vault(one.root, config=Settings())
    assert result.exit_code == 1 and not result.pushed
    assert any(line.startswith("push to origin failed") for line in result.lines), result.lines
    assert git(remote, "rev-parse", "main") == before
    assert git(one.root, "status", "--porcelain") == ""
    assert (one.root / "b.md").read_text(encoding="utf-8") == "# B\n\nbeta, not pushed\n"


async def test_serve_with_git_commit_and_sync_every_over_stdio(machines, tmp_path) -> None:
    """The real CLI and a real stdio session: an agent's write is committed under its name and the
    background sync pushes it, with no call to sync from anyone."""
    import os
    import sys

    from mcp import Client, StdioServerParameters

    remote = machines["remote"]
    three = tmp_path / "three"
    git(tmp_path, "clone", "-q", str(remote), str(three))
    params = StdioServerParameters(command=sys.executable, cwd=str(tmp_path), env=dict(os.environ),  # our git config
                                   args=["-m", "vault_mem", "serve", "--vault", str(three), "--git-commit",
                                         "--sync-every", "1"])
    async with Client(params, mode="legacy") as client:
        deadline = time.monotonic() + 120
        while (await client.call_tool("memory_search", {"agent": "x"})).structured_content.get("indexing"):
            assert time.monotonic() < deadline, "the index was never built"
            time.sleep(0.05)
        result = await client.call_tool("memory_write", {"agent": "stdio-agent", "title": "Over stdio",
                                                         "content": "written through the real CLI"})
        assert result.structured_content["status"] == "ok" and "warnings" not in result.structured_content
        eventually(lambda: "Over stdio.md" in git(remote, "ls-tree", "--name-only", "main"), 60,
                   "the background sync pushing the agent's commit")
        assert git(remote, "log", "-1", "--format=%an <%ae>|%s", "main", "--", "Over stdio.md") == \
            "stdio-agent <stdio-agent@vault-mem>|memory_write: Over stdio\n"
        read = (await client.call_tool("memory_read", {"ref": "Over stdio"})).structured_content
        assert read["history"][0]["author"] == "stdio-agent"


def test_a_vault_started_apart_from_the_remote_is_not_merged_blindly(machines, tmp_path) -> None:
    apart = new_repo(tmp_path / "apart", {"mine.md": "# Mine\n\nstarted here\n"})
    git(apart, "remote", "add", "origin", str(machines["remote"]))
    result = sync_vault(apart, config=settings.current())
    assert result.exit_code == 1
    assert any("share no history" in line for line in result.lines), result.lines
    assert (apart / "mine.md").read_text(encoding="utf-8") == "# Mine\n\nstarted here\n"
    assert not (apart / "shared.md").exists()
    assert git(apart, "status", "--porcelain") == ""
