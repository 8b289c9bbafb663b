"""A write tool locked out of the index by another writer (one holding Whoosh's lock itself, as a
build or another server does): the answer is an error that says the file is saved, and the file
is indexed once the lock is free. The lock is taken behind the engine's face, so the test lives
beside the engine (the other fault tests: tests/integration/test_faults.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_notes
from test_faults import AGENT, NOTE

from vault_mem import settings
from vault_mem.search.api import VaultIndex, reconcile, sync
from vault_mem.served.context import Vault

pytestmark = pytest.mark.anyio


class ImpatientIndex(VaultIndex):
    """The real index, its write tools waiting at most 0.3 s for the writer lock (20 s in the server)."""

    def __init__(self, root: Path, index_dir: Path) -> None:
        super().__init__(root, index_dir, config=settings.current())
        self.write_timeout = 0.3


async def test_a_write_locked_out_of_the_index_answers_error_and_keeps_its_file(tmp_path: Path,
                                                                               mcp_session) -> None:
    root = write_notes(tmp_path / "v", {"keeper.md": NOTE, "gone.md": "---\nid: gone1\n---\nTo the trash.\n"})
    index = ImpatientIndex(root, tmp_path / "ix")
    sync(index, procs=1)
    holder = VaultIndex(root, tmp_path / "ix",
        config=settings.current()).open().writer()  # a second writer: the lock is held
    try:
        async with mcp_session(Vault(root, index)) as c:
            written = await c.call("memory_write", agent=AGENT, title="Locked out", content="Still saved.")
            assert written["status"] == "error" and written["retry"] is False, written
            assert "Locked out.md was saved" in written["message"] and "lock" in written["message"]
            assert "do not repeat this call" in written["message"], written
            deleted = await c.call("memory_delete", agent=AGENT, ref="gone1")
            assert deleted["status"] == "error" and "moved to .trash/gone.md" in deleted["message"], deleted
            assert (await c.call("memory_read", ref="keep1"))["status"] == "ok", "reads need no lock"
    finally:
        holder.cancel()
    assert (root / "Locked out.md").read_text(encoding="utf-8").endswith("Still saved.\n")
    assert not (root / "gone.md").exists() and (root / ".trash" / "gone.md").is_file()
    reconcile(index)  # what the watcher or the periodic reconcile does once the lock is free
    async with mcp_session(Vault(root, index)) as c:
        assert (await c.call("memory_read", ref="Locked out"))["status"] == "ok"
        assert (await c.call("memory_read", ref="gone1"))["status"] == "not_found"


# -- (d) and (e): a real stdio server losing its index or its vault ----------------------------
