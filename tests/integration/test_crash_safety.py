"""kill -9 at any moment loses nothing (docs/index-and-sync.md): a note being rewritten is the old or the new file,
never torn; a stray temp file is never a memory; a server killed during its first build answers
every note after a restart. (A killed ``vault-mem index --rebuild`` is in test_index.py.)
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from conftest import eventually, write_notes
from mcp import Client, StdioServerParameters
from test_watcher import in_sync, index_etags

from vault_mem import settings
from vault_mem.runtime.watcher import Watcher
from vault_mem.search.api import VaultIndex, reconcile, sync
from vault_mem.vault.walk import walk_vault

REWRITER = """
import itertools, sys
from pathlib import Path
from vault_mem.settings import Settings
from vault_mem.vault.writer import atomic_write
path, versions = Path(sys.argv[1]), [Path(p).read_bytes() for p in sys.argv[2:]]
for i in itertools.count():
    atomic_write(path, versions[i % len(versions)], config=Settings())
    if i == 0:
        print("writing", flush=True)
"""


def test_kill_9_during_rewrites_leaves_old_or_new_and_no_temp_file_is_indexed(tmp_path: Path) -> None:
    old = b"---\nid: crash\ntitle: Old\n---\n" + b"old line\n" * 30_000
    new = b"---\nid: crash\ntitle: New\n---\n" + b"new words here\n" * 40_000  # a different size too
    versions = [tmp_path / "old.bin", tmp_path / "new.bin"]
    versions[0].write_bytes(old)
    versions[1].write_bytes(new)
    root = write_notes(tmp_path / "vault", {"n/other.md": "other\n"})
    note = root / "n/note.md"
    note.write_bytes(old)
    index = VaultIndex(root, tmp_path / "ix", config=settings.current())
    sync(index, procs=1)
    watcher = Watcher(index)  # live, as a server would be while an editor crashes
    watcher.start()
    rng = random.Random(1234)
    try:
        for _ in range(20):
            with subprocess.Popen([sys.executable, "-c", REWRITER, str(note), *map(str, versions)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as child:
                assert child.stdout is not None and child.stdout.readline() == b"writing\n"
                time.sleep(rng.uniform(0, 0.03))  # not a wait for a condition: the random moment of the kill
                child.send_signal(signal.SIGKILL)
            assert note.read_bytes() in (old, new), "a torn note"
            eventually(lambda: watcher.wait_idle(10) and in_sync(index), timeout=15, what="watcher caught up")
            reconcile(index)
            indexed = set(index_etags(index))
            assert indexed == {"n/note.md", "n/other.md"}, indexed
            assert set(walk_vault(root).files) == {"n/note.md", "n/other.md"}
    finally:
        watcher.stop()
    strays = [p.name for p in note.parent.iterdir() if p.name.endswith(".tmp")]
    assert all(name.startswith(".") for name in strays), strays  # hidden, so never a memory


@pytest.mark.anyio
async def test_server_killed_during_its_first_build_answers_every_note_after_restart(tmp_path: Path) -> None:
    notes = {f"d{i % 4}/n{i}.md": f"---\nid: u{i}\ntitle: Note {i}\n---\n" + "word " * 150 + "\n" for i in range(1200)}
    root = write_notes(tmp_path / "vault", notes)
    index_dir = tmp_path / "ix"
    args = ["-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(index_dir)]
    server = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    progress = index_dir / "build-progress.json"

    def some_batch_committed() -> bool:
        assert server.poll() is None, "the server exited"
        try:
            return int(json.loads(progress.read_text())["done"]) > 0
        except (OSError, ValueError, KeyError):
            return False

    try:
        eventually(some_batch_committed, timeout=60, what="a first batch of the build")
        os.killpg(server.pid, signal.SIGKILL)  # the server and its build child, mid-build
    finally:
        server.wait(timeout=30)
        assert server.stdin is not None
        server.stdin.close()
    assert not VaultIndex(root, index_dir, config=settings.current()).is_complete()

    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path))
    async with Client(params, mode="legacy") as client:
        deadline = time.monotonic() + 60
        while True:  # the restart repairs the index in the background; answers grow until complete
            result = await client.call_tool("list_domains", {})
            answer = result.structured_content
            assert answer is not None and not result.is_error, result.content
            root_row = next((d for d in answer.get("domains", []) if d["domain"] == ""), None)
            if root_row is not None and root_row["active"] == len(notes) and "indexing" not in answer:
                break
            assert time.monotonic() < deadline, f"the index was not repaired: {answer}"
            await anyio.sleep(0.05)
        seen: list[str] = []
        offset = 0
        while True:
            page = (await client.call_tool("list_by_domain", {"domain": "", "limit": 200, "offset": offset}))
            body = page.structured_content
            assert body is not None and body["status"] == "ok"
            seen += [row["path"] for row in body["results"]]
            if "next_offset" not in body:
                break
            offset = body["next_offset"]
        assert sorted(seen) == sorted(notes)
        read = (await client.call_tool("memory_read", {"ref": "u1199"})).structured_content
        assert read is not None and read["status"] == "ok" and read["path"] == "d3/n1199.md"
    assert VaultIndex(root, index_dir, config=settings.current()).is_complete()
