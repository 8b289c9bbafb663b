"""The index follows whatever git does to the files (docs/git.md): checkout, merge, rebase, stash,
pull, through the live watcher, and through the start-up reconcile when no server ran.
History dates follow HEAD too. Real git, a real watcher; every wait has a deadline."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import eventually, stored
from git_helpers import commit_all, git, git_env, new_repo

from vault_mem import settings
from vault_mem.runtime.watcher import Watcher
from vault_mem.search.api import VaultIndex, sync
from vault_mem.vault.paths import display_path
from vault_mem.vault.reader import file_etag
from vault_mem.vault.walk import walk_vault

__all__ = ["git_env"]


def disk(root: Path) -> dict[str, str]:
    return {display_path(rel): file_etag((root / rel).read_bytes()) for rel in walk_vault(root).files}


def indexed(index: VaultIndex) -> dict[str, str]:
    return {path: fp[2] for path, fp in index.fingerprints().items()}


def follows(index: VaultIndex, what: str) -> None:
    eventually(lambda: indexed(index) == disk(index.root), 30, f"the index equal to the files after {what}")


@pytest.fixture
def repo(git_env: Path, tmp_path: Path) -> Path:
    root = new_repo(tmp_path / "vault", {"a.md": "# A\n\nalpha\n", "notes/b.md": "# B\n\nbeta\n"})
    commit_all(root, "start", "2022-01-01T00:00:00Z")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "notes/c.md").write_text("# C\n\ngamma on feature\n", encoding="utf-8")
    (root / "a.md").write_text("# A\n\nalpha on feature\n", encoding="utf-8")
    commit_all(root, "feature work", "2022-02-01T00:00:00Z")
    git(root, "checkout", "-q", "main")
    (root / "notes/b.md").write_text("# B\n\nbeta on main\n", encoding="utf-8")
    commit_all(root, "main work", "2022-03-01T00:00:00Z")
    return root


def test_the_watcher_follows_checkout_merge_rebase_and_stash(repo: Path) -> None:
    index = VaultIndex(repo, config=settings.current())
    sync(index, procs=1)
    watcher = Watcher(index)
    watcher.start()
    try:
        git(repo, "checkout", "-q", "feature")
        follows(index, "checkout")
        assert "notes/c.md" in indexed(index)
        git(repo, "checkout", "-q", "main")
        follows(index, "checkout back")
        assert "notes/c.md" not in indexed(index)

        git(repo, "merge", "-q", "--no-edit", "feature")
        follows(index, "merge")
        assert "notes/c.md" in indexed(index)
        git(repo, "reset", "-q", "--hard", "HEAD~1")
        follows(index, "reset --hard")

        git(repo, "checkout", "-q", "feature")
        git(repo, "rebase", "-q", "main")
        follows(index, "rebase")
        assert (repo / "notes/b.md").read_text(encoding="utf-8") == "# B\n\nbeta on main\n"

        (repo / "a.md").write_text("# A\n\nwork in progress\n", encoding="utf-8")
        (repo / "notes/d.md").write_text("# D\n\nnew\n", encoding="utf-8")
        git(repo, "add", "notes/d.md")
        follows(index, "an edit")
        git(repo, "stash", "-q")
        follows(index, "stash")
        assert "notes/d.md" not in indexed(index)
        git(repo, "stash", "pop", "-q")
        follows(index, "stash pop")
        assert "notes/d.md" in indexed(index)
    finally:
        watcher.stop()


def test_a_pull_moves_the_index_and_the_history_dates(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    index = VaultIndex(clone, config=settings.current())
    sync(index, procs=1)
    assert stored(index, "notes/b.md")["updated"] == "2022-03-01T00:00:00+00:00"  # type: ignore[index]
    watcher = Watcher(index)
    watcher.start()
    try:
        (repo / "notes/b.md").write_text("# B\n\nbeta, later\n", encoding="utf-8")
        commit_all(repo, "later", "2023-04-05T06:07:08Z")
        git(clone, "pull", "-q", "--ff-only")
        follows(index, "pull")
        eventually(lambda: (stored(index, "notes/b.md") or {}).get("updated") == "2023-04-05T06:07:08+00:00", 30,
                   "the pulled note's date from its new commit")
        assert stored(index, "notes/b.md")["created"] == "2022-01-01T00:00:00+00:00"  # type: ignore[index]
    finally:
        watcher.stop()


def test_the_startup_reconcile_catches_up_with_git_done_while_no_server_ran(repo: Path) -> None:
    index = VaultIndex(repo, config=settings.current())
    sync(index, procs=1)
    index.close()
    git(repo, "merge", "-q", "--no-edit", "feature")
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.md").unlink()
    commit_all(repo, "drop a", "2024-01-01T00:00:00Z")
    again = VaultIndex(repo, config=settings.current())
    sync(again, procs=1)
    assert indexed(again) == disk(repo)
    assert stored(again, "notes/c.md")["created"] == "2022-02-01T00:00:00+00:00"  # type: ignore[index]
