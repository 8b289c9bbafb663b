"""Committing exactly some files, whatever else a person has staged or changed (SPEC 8).

``commit_paths`` builds the commit in a temporary index (HEAD's tree plus the given files as
they are on disk), writes it with ``git commit-tree`` and moves the branch with ``git
update-ref HEAD NEW OLD``, which fails rather than overwrite a commit someone made in the
meantime (then it starts again, up to three times). The person's own index is touched only
for the committed paths, which are set to what was committed, so their other staged and
unstaged work is never included, reset or lost. Being plumbing, these commits do not run the
repository's commit hooks.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from vault_mem.errors import GitError
from vault_mem.vault.git import Repo, blob_id

ATTEMPTS = 3
_AGENT_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def agent_identity(agent: str) -> dict[str, str]:
    """The author of an agent's commit: ``<agent> <<agent>@vault-mem>`` (SPEC 8)."""
    name = _AGENT_NAME.sub("-", agent).strip("-") or "agent"
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": f"{name}@vault-mem"}


def commit_paths(repo: Repo, paths: Sequence[str], message: str, author: Mapping[str, str] | None = None,
                 parents: Sequence[str] | None = None) -> str | None:
    """Commit the vault-relative ``paths`` as they are on disk (a missing file: its deletion).

    Returns the new commit, or None when those files already match HEAD. Raises GitError with
    git's reason when the commit cannot be made (no identity, a held lock, a detached HEAD...).
    """
    for _attempt in range(ATTEMPTS):
        old = repo.head()
        tree = _tree_with(repo, old, [repo.to_top(p) for p in paths])
        if old is not None and tree == repo.out(["rev-parse", f"{old}^{{tree}}"]):
            return None
        args = ["commit-tree", tree]
        for parent in ([old] if old else []) + list(parents or []):
            args += ["-p", parent]
        new = repo.out([*args, "-F", "-"], input=message.encode("utf-8"), env=author)
        reflog = f"vault-mem: {message.splitlines()[0]}"
        moved = repo.git(["update-ref", "-m", reflog, "HEAD", new, old or repo.zero_oid], check=False)
        if moved.returncode == 0:
            _sync_index(repo, [repo.to_top(p) for p in paths])
            return new
    raise GitError("the branch kept moving while vault-mem committed (another git command at work?)")


def _tree_with(repo: Repo, base: str | None, top_paths: Sequence[str]) -> str:
    """The tree of ``base`` with ``top_paths`` replaced by the files on disk, built in a temp index."""
    fd, name = tempfile.mkstemp(prefix="vault-mem-index-", dir=repo.git_dir)
    os.close(fd)
    os.unlink(name)  # git refuses an existing empty file as an index; it creates it
    env = {"GIT_INDEX_FILE": name}
    try:
        repo.git(["read-tree", base] if base else ["read-tree", "--empty"], env=env)
        present = [p for p in top_paths if os.path.lexists(repo.top / p)]
        gone = [p for p in top_paths if p not in present]
        if present:
            repo.git(["update-index", "--add", "-z", "--stdin"], env=env, input=_nul(present))
        if gone:
            repo.git(["update-index", "--force-remove", "-z", "--stdin"], env=env, input=_nul(gone))
        return repo.out(["write-tree"], env=env)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _sync_index(repo: Repo, top_paths: Sequence[str]) -> None:
    """Set the person's index entries of ``top_paths`` to HEAD (they now equal the commit)."""
    done = repo.git(["reset", "-q", "HEAD", "--", *top_paths], check=False)
    if done.returncode != 0:
        raise GitError("committed, but the index could not be updated for "
                       f"{', '.join(top_paths)}: run `git reset -q -- <those files>`")


def _nul(paths: Sequence[str]) -> bytes:
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


def write_commit(root: Path, tool: str, agent: str, title: str, paths: Sequence[str],
                 before: Mapping[str, bytes | None]) -> str | None:
    """``serve --git-commit``: commit one write tool's change, author the agent. Never raises.

    Returns None when the change was committed, else the warning the answer carries. A path
    that held uncommitted changes before the write (a person's edit in progress) is not
    committed: its commit would carry their work under the agent's name.
    """
    repo = Repo.find(root)
    if repo is None:
        return "not committed: the vault is not a git work tree (serve --git-commit needs one)"
    try:
        busy = repo.busy()
        if busy:
            return f"not committed: {busy}"
        dirty = [p for p in paths if before.get(p) is not None and not _matches_head(repo, p, before[p])]
        if dirty:
            return (f"not committed: {', '.join(dirty)} had uncommitted changes before this write (yours?); "
                    "the change is saved, commit it yourself")
        commit_paths(repo, paths, f"{tool}: {title}", agent_identity(agent))
        return None
    except GitError as exc:
        return f"the change is saved but not committed: {exc.message}"


def _matches_head(repo: Repo, path: str, data: bytes | None) -> bool:
    done = repo.git(["rev-parse", "-q", "--verify", f"HEAD:{repo.to_top(path)}"], check=False)
    blob = done.stdout.decode().strip()
    if data is None or not blob:
        return False
    return blob_id(data, blob) == blob or blob_id(data.replace(b"\r\n", b"\n"), blob) == blob
