"""Real git in temp folders for the git tests: an identity from a temp global config (the
machine's own config is never read or touched), and small helpers to run git."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

MACHINE = ("Machine Person", "person@example.org")


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """``git args`` in ``cwd``; its stdout. Fails the test with git's stderr when git fails."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})}, timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def commit_all(cwd: Path, message: str, date: str | None = None, author: tuple[str, str] | None = None) -> None:
    env = {}
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    if author:
        env |= {"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1]}
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message, env=env)


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A global git config of our own (identity, default branch) for everything this test runs."""
    config = tmp_path / "gitconfig"
    config.write_text(f"[user]\n\tname = {MACHINE[0]}\n\temail = {MACHINE[1]}\n[init]\n\tdefaultBranch = main\n"
                      "[advice]\n\tdetachedHead = false\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
                 "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    yield config


def new_repo(path: Path, notes: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for rel, text in notes.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text, encoding="utf-8")
    return path
