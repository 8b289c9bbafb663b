"""The one way changes reach the index (search/store.py ``VaultIndex.apply``): the watcher's
changes, submitted ``unless_committed``, are dropped under the write lock when the index already
holds them (another process on the vault heard the same event and committed first), and a batch
with nothing left commits nothing (docs/architecture.md#3-the-save-path)."""

from __future__ import annotations

import threading
from pathlib import Path

from conftest import stored

from vault_mem import settings
from vault_mem.search.store import VaultIndex
from vault_mem.vault.reader import read_note

NOTES = {"a.md": "---\ntitle: A\n---\nfirst\n", "b.md": "---\ntitle: B\n---\nbee\n"}
WAIT = 60.0


def test_a_change_the_index_already_holds_commits_nothing(make_vault) -> None:
    vault = make_vault(NOTES)
    index = vault.index
    before = index.generation()
    as_indexed = read_note(vault.root, "a.md", config=settings.current())
    assert index.apply([(as_indexed, "a.md")], ["never-indexed.md"], unless_committed=True) == 0
    assert index.generation() == before, "a batch with nothing left to write made a commit"
    (vault.root / "a.md").write_text("---\ntitle: A\n---\nchanged\n", encoding="utf-8")
    changed = read_note(vault.root, "a.md", config=settings.current())
    assert index.apply([(changed, "a.md")], ["b.md"], unless_committed=True) == 1
    assert index.generation() > before
    assert stored(index, "a.md")["etag"] == changed.etag  # type: ignore[index]
    assert stored(index, "b.md") is None


def test_what_another_process_committed_meanwhile_is_asked_under_the_lock(make_vault) -> None:
    """Two watchers (two servers) read the same changed file; the second to commit finds the first's
    commit under the write lock and writes nothing, however stale its own look at the index was."""
    vault = make_vault(NOTES)
    ours = vault.index
    other = VaultIndex(vault.root, ours.dir, config=settings.current())  # another server's index of the vault
    try:
        (vault.root / "a.md").write_text("---\ntitle: A\n---\nedited by hand\n", encoding="utf-8")
        edited = read_note(vault.root, "a.md", config=settings.current())
        assert ours.fingerprints(["a.md"])["a.md"][2] != edited.etag  # what both watchers saw
        assert other.apply([(edited, "a.md")], [], unless_committed=True) == 1
        committed = ours.generation()
        assert ours.apply([(edited, "a.md")], [], unless_committed=True) == 0
        assert ours.generation() == committed
    finally:
        other.close()


def test_a_write_tools_change_in_the_same_batch_is_not_dropped(make_vault) -> None:
    """A write tool's change (not ``unless_committed``) replacing the watcher's for the same path in one
    batch is written whatever the index holds; the watcher's change of another path is still checked."""
    vault = make_vault(NOTES)
    index = vault.index
    (vault.root / "a.md").write_text("---\ntitle: A\n---\nby a tool\n", encoding="utf-8")
    by_tool = read_note(vault.root, "a.md", config=settings.current())
    watchers = index.submit([(read_note(vault.root, "b.md",
        config=settings.current()), "b.md")], [], unless_committed=True)
    tools = index.submit([(by_tool, "a.md")], [])
    assert watchers is tools  # one open batch
    done = threading.Thread(target=index.commit_batch, args=(watchers,))
    done.start()
    index.commit_batch(tools)
    done.join(WAIT)
    assert tools.skipped == {"b.md"}  # the index held b.md as it is
    assert stored(index, "a.md")["etag"] == by_tool.etag  # type: ignore[index]
    assert Path(vault.root / "a.md").read_text(encoding="utf-8").endswith("by a tool\n")
