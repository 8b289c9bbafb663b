"""Faults while serving: a full disk, a read-only vault, the index folder deleted and the
vault folder moved away under a running server (docs/tools.md "Statuses", docs/index-and-sync.md).

How each fault is made, real where the sandbox allows it:
- full disk: a 1 MiB tmpfs mounted on a domain folder and filled up (needs root and
  mount); otherwise ENOSPC injected at the one OS call ``os.fsync`` in vault.writer.
- read-only vault: ``chmod -R a-w`` when not root; as root (permissions are ignored) a
  read-only bind mount of the vault; root without mount rights skips.
- index lock held: a second real Whoosh writer holds it while a write tool waits (briefly).
- index deleted / vault moved: a real ``python -m vault_mem serve`` over stdio with the
  real MCP client, the folder removed or renamed under it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import open_vault, write_notes
from mcp import Client, StdioServerParameters

from vault_mem import settings
from vault_mem.search.api import VaultIndex, sync
from vault_mem.served.context import Vault
from vault_mem.vault import writer

pytestmark = pytest.mark.anyio

AGENT = "fault-agent"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NOTE = "---\nid: keep1\ntitle: Keeper\ntype: task\ntags: [disk]\n---\nThe original body.\n- [ ] one\n"


def _mount(*args: str) -> bool:
    # VAULT_MEM_TEST_NO_MOUNT=1 exercises the fallbacks on a machine that could mount.
    if not IS_ROOT or shutil.which("mount") is None or os.environ.get("VAULT_MEM_TEST_NO_MOUNT"):
        return False
    done = subprocess.run(["mount", *args], capture_output=True, check=False)
    return done.returncode == 0


def _umount(target: Path) -> None:
    if subprocess.run(["umount", str(target)], capture_output=True, check=False).returncode != 0:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


def files_under(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- (a) a full disk --------------------------------------------------------------------------


def _fill(folder: Path) -> None:
    """Write a hidden filler file until the file system says ENOSPC."""
    chunk = b"\0" * 4096
    with open(folder / ".filler", "wb", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
        with contextlib.suppress(OSError):
            os.fsync(f.fileno())


@pytest.fixture
def full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Vault, str]]:
    """A vault whose ``full/`` folder holds the note ``full/keeper.md`` on a full file system.

    Yields the vault and how the fault was made ("tmpfs" or "injected").
    """
    root = tmp_path / "v"
    full = root / "full"
    full.mkdir(parents=True)
    mounted = _mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(full))
    try:
        write_notes(root, {"full/keeper.md": NOTE, "other.md": "Elsewhere.\n"})
        vault = open_vault(root)
        if mounted:
            _fill(full)
        else:
            def no_space(fd: int) -> None:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            monkeypatch.setattr(writer.os, "fsync", no_space)
        yield vault, "tmpfs" if mounted else "injected"
    finally:
        monkeypatch.undo()
        if mounted:
            _umount(full)


async def test_full_disk_write_and_edit_answer_clearly_and_keep_the_old_file(full_disk, mcp_session) -> None:
    vault, how = full_disk
    folder = vault.root / "full"
    before = files_under(folder)
    async with mcp_session(vault) as c:
        written = await c.call("memory_write", agent=AGENT, title="Too big", content="x" * 20_000, domain="full")
        assert written["status"] == "error", (how, written)
        assert "disk full" in written["message"] and "nothing was written" in written["message"]
        assert written["retry"] is False and "free some disk space, then retry" in written["message"]
        for args in ({"append": "y" * 20_000}, {"content": "replaced " * 3000}, {"set": {"importance": 0.9}}):
            edited = await c.call("memory_edit", agent=AGENT, ref="keep1", **args)
            assert edited["status"] == "error" and edited["retry"] is False, (how, args, edited)
            assert "disk full" in edited["message"] and "unchanged" in edited["message"]
        closed = await c.call("task_close", agent=AGENT, ref="keep1", state="completed")
        assert closed["status"] == "error" and "disk full" in closed["message"]
        assert files_under(folder) == before, "the old file changed or a temp file was left behind"
        read = await c.call("memory_read", ref="keep1")
        assert read["status"] == "ok" and read["body"] == "The original body.\n- [ ] one\n"
        assert (await c.call("list_by_domain", domain="full"))["results"][0]["uid"] == "keep1"


async def test_writes_resume_once_space_is_freed(full_disk, mcp_session, monkeypatch: pytest.MonkeyPatch) -> None:
    vault, how = full_disk
    async with mcp_session(vault) as c:
        refused = await c.call("memory_edit", agent=AGENT, ref="keep1", append="later")
        assert refused["status"] == "error"
        if how == "tmpfs":
            (vault.root / "full" / ".filler").unlink()
        else:
            monkeypatch.undo()
        edited = await c.call("memory_edit", agent=AGENT, ref="keep1", append="later")
        assert edited["status"] == "ok", edited
        assert (vault.root / "full" / "keeper.md").read_text(encoding="utf-8").endswith("\n\nlater\n")
        written = await c.call("memory_write", agent=AGENT, title="Small", content="fits", domain="full")
        assert written["status"] == "ok" and (vault.root / "full" / "Small.md").is_file()


# -- (b) a read-only vault ---------------------------------------------------------------------


@pytest.fixture
def read_only_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A vault the process cannot write: chmod when not root, a read-only bind mount as root."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = write_notes(tmp_path / "v", {"a/keeper.md": NOTE, "a/b/other.md": "# Other\n\nSecond note.\n"})
    if not IS_ROOT:
        modes = {p: p.stat().st_mode for p in [root, *root.rglob("*")]}
        for p in modes:
            p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
        try:
            yield root, "chmod"
        finally:
            for p, mode in modes.items():
                p.chmod(stat.S_IMODE(mode))
        return
    if not (_mount("--bind", str(root), str(root)) and _mount("-o", "remount,ro,bind", str(root), str(root))):
        _umount(root)
        pytest.skip("running as root without mount rights: a read-only vault cannot be made here")
    try:
        yield root, "ro-bind"
    finally:
        _umount(root)


# How each way of making the vault read-only refuses a new file: (the OS error, the advice).
REFUSED = {
    "ro-bind": ("read-only file system (EROFS)", "retrying will not help while the vault is read-only"),
    "chmod": ("permission denied (EACCES)", "retrying will not help until the file's permissions allow it"),
}
UNFIXED = "retrying will not help until this is fixed in the vault"  # a file found read-only before writing


async def test_read_only_vault_reads_work_writes_answer_clearly(read_only_vault, mcp_session,
                                                                tmp_path: Path) -> None:
    root, how = read_only_vault
    index = VaultIndex(root, config=settings.current())
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    assert index.dir == tmp_path / "cache" / "vault-mem" / digest, how
    sync(index, procs=1)
    assert not (root / ".vault-mem").exists()
    assert (index.dir / ".gitignore").is_file()
    before = files_under(root)
    async with mcp_session(Vault(root, index)) as c:
        read = await c.call("memory_read", ref="keep1")
        assert read["status"] == "ok" and read["body"].startswith("The original body.")
        found = await c.call("memory_search", agent=AGENT, query="second")
        assert [n["permalink"] for n in found["notes"]] == ["memory://a/b/other"]
        assert (await c.call("list_by_domain", domain="a"))["status"] == "ok"
        assert (await c.call("memory_list"))["count"] == 2
        assert "original" in (await c.client.read_resource("memory://a/keeper")).contents[0].text
        writes: list[tuple[str, dict[str, Any]]] = [
            ("memory_write", {"title": "New", "content": "x", "domain": "a"}),
            ("memory_edit", {"ref": "keep1", "append": "x"}),
            ("memory_edit", {"ref": "keep1", "set": {"importance": 0.1}}),
            ("task_close", {"ref": "keep1", "state": "completed"}),
            ("memory_supersede", {"ref": "keep1", "title": "Newer", "content": "x"}),
            ("memory_delete", {"ref": "keep1"}),
        ]
        reason, advice = REFUSED[how]
        refused = f"is read-only (its permissions forbid writing); the file is unchanged; {UNFIXED}"
        expected = {
            "memory_write": f"{reason} while creating {root / 'a' / 'New.md'}; nothing was written; {advice}",
            "memory_edit": f"{root / 'a' / 'keeper.md'} {refused}",
            "task_close": f"{root / 'a' / 'keeper.md'} {refused}",
            "memory_supersede": f"{reason} while creating {root / 'a' / 'Newer.md'}; nothing was written; {advice}",
            "memory_delete": f"{reason} while moving a/keeper.md to .trash; the file is where it was; {advice}",
        }
        for tool, args in writes:
            answer = await c.call(tool, agent=AGENT, **args)
            assert answer["status"] == "error" and answer["retry"] is False, (how, tool, answer)
            assert answer["message"] == expected[tool], (how, tool)
        assert (await c.call("memory_read", ref="keep1"))["status"] == "ok"
    assert files_under(root) == before


# -- (c) the index lock held by someone else for longer than a write may wait -------------------


def many_notes(n: int) -> dict[str, str]:
    return {f"d{i % 7}/sub{i % 3}/note {i}.md": f"---\nid: n{i}\ntags: [bulk]\n---\nBulk note number {i} "
            f"about widgets.\n" for i in range(n)}


def serve_params(root: Path, index_dir: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, cwd=str(root.parent),
                                 args=["-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(index_dir)])


async def answer_of(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    answer = result.structured_content
    assert isinstance(answer, dict) and "status" in answer, result
    assert result.is_error == (answer["status"] in ("invalid", "error")), answer
    # faults too carry the whole answer in the text block, for clients that read only text
    assert json.loads(result.content[0].text) == answer  # type: ignore[union-attr]
    return answer


async def poll(client: Client, tool: str, args: dict[str, Any], done: Any, seconds: float = 90) -> list[dict[str, Any]]:
    """Call ``tool`` until ``done(answer)``; every answer seen, in order. Fails at the deadline."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while True:
        seen.append(await answer_of(client, tool, **args))
        if done(seen[-1]):
            return seen
        assert time.monotonic() < deadline, f"gave up after {len(seen)} answers; last: {seen[-1]}"
        await anyio.sleep(0.05)


def settled(count: int) -> Any:
    def check(answer: dict[str, Any]) -> bool:
        return answer["status"] == "ok" and "indexing" not in answer and answer.get("count") == count
    return check


async def test_index_folder_deleted_while_serving_is_rebuilt(tmp_path: Path) -> None:
    n = 400
    root = write_notes(tmp_path / "v", many_notes(n))
    index_dir = tmp_path / "ix"
    listing = {"limit": -1, "fields": ["id"]}
    async with Client(serve_params(root, index_dir), mode="legacy") as client:
        await poll(client, "memory_list", listing, settled(n))
        shutil.rmtree(index_dir)
        seen = await poll(client, "memory_list", listing, settled(n))
        # The first answer after the loss waited for the rebuild (its first seconds), or says a build
        # is under way; none is an error.
        assert "indexing" in seen[0] or settled(n)(seen[0]), seen[0]
        for answer in seen[:-1]:
            assert answer["status"] in ("ok", "none"), answer
            progress = answer.get("indexing")
            assert progress is None or 0 <= progress["done"] <= progress["total"], answer
        assert (index_dir / "state.json").is_file() and (index_dir / ".gitignore").is_file()
        found = await answer_of(client, "memory_search", agent=AGENT, query="number 123")
        assert "memory://d4/sub0/note 123" in [note["permalink"] for note in found["notes"]]
        # Live updates still flow into the rebuilt index.
        (root / "d0" / "after rebuild.md").write_text("---\nid: fresh1\n---\nZebrafinch.\n", encoding="utf-8")
        await poll(client, "memory_read", {"ref": "fresh1"}, lambda a: a["status"] == "ok", seconds=30)


async def test_vault_folder_moved_away_and_back(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", many_notes(20))
    away = tmp_path / f"v-away-{uuid.uuid4().hex[:6]}"
    async with Client(serve_params(root, tmp_path / "ix"), mode="legacy") as client:
        await poll(client, "memory_list", {"limit": -1}, settled(20))
        root.rename(away)
        for tool, args in (("memory_search", {"agent": AGENT, "query": "widgets"}), ("memory_read", {"ref": "n1"}),
                           ("list_by_domain", {"domain": "d1"}),
                           ("memory_write", {"agent": AGENT, "title": "Lost", "content": "x"})):
            gone = await answer_of(client, tool, **args)
            assert gone["status"] == "error" and gone["retry"] is True, (tool, gone)
            assert "vault folder" in gone["message"] and "missing" in gone["message"], gone
            assert "answers resume when it is back" in gone["message"], gone
        assert not root.exists(), "a write must not recreate the vault folder"
        away.rename(root)
        back = await poll(client, "memory_read", {"ref": "n1"}, lambda a: a["status"] == "ok", seconds=30)
        assert back[-1]["uid"] == "n1"
        await poll(client, "memory_list", {"limit": -1}, settled(20))
        (root / "d3" / "added after return.md").write_text("---\nid: back1\n---\nKingfisher.\n", encoding="utf-8")
        found = await poll(client, "memory_search", {"agent": AGENT, "query": "kingfisher"},
                           lambda a: a["status"] == "ok" and a["count"] == 1, seconds=30)
        assert found[-1]["notes"][0]["permalink"] == "memory://d3/added after return"
