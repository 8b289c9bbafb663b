"""Committing exactly some files, whatever else a person has staged or changed (docs/git.md).

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
from vault_mem.git.repo import Repo
from vault_mem.settings import Settings

_AGENT_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def agent_identity(agent: str) -> dict[str, str]:
    """The author of an agent's commit: ``<agent> <<agent>@vault-mem>`` (docs/git.md)."""
    name = _AGENT_NAME.sub("-", agent).strip("-") or "agent"
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": f"{name}@vault-mem"}


def commit_paths(repo: Repo, paths: Sequence[str], message: str, author: Mapping[str, str] | None = None,
                 parents: Sequence[str] | None = None, contents: Mapping[str, bytes] | None = None) -> str | None:
    """Commit the vault-relative ``paths`` as they are on disk (a missing file: its deletion), or
    as ``contents`` gives them.

    Returns the new commit, or None when those files already match HEAD. Raises GitError with
    git's reason when the commit cannot be made (no identity, a held lock, a detached HEAD...).
    """
    for _attempt in range(repo.config.git_commit_attempts):
        old = repo.head()
        tree = _tree_with(repo, old, [repo.to_top(p) for p in paths if p not in (contents or {})],
                          {repo.to_top(p): data for p, data in (contents or {}).items()})
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


def _tree_with(repo: Repo, base: str | None, top_paths: Sequence[str], contents: Mapping[str, bytes]) -> str:
    """The tree of ``base`` with ``top_paths`` replaced by the files on disk and ``contents`` by
    those bytes, built in a temp index."""
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
        for path, data in contents.items():
            blob = repo.out(["hash-object", "-w", "--stdin"], input=data)
            listed = repo.out(["ls-files", "-s", "--", path], env=env).split(" ")[0]
            repo.git(["update-index", "--add", "--cacheinfo", f"{listed or '100644'},{blob},{path}"], env=env)
        return repo.out(["write-tree"], env=env)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _sync_index(repo: Repo, top_paths: Sequence[str]) -> None:
    """Set the person's index entries of ``top_paths`` to HEAD (they now equal the commit)."""
    done = repo.git(["reset", "-q", "HEAD", "--pathspec-from-file=-", "--pathspec-file-nul"],
                    input=_nul(top_paths), check=False)
    if done.returncode != 0:
        raise GitError("committed, but the index could not be updated for "
                       f"{', '.join(top_paths)}: run `git reset -q -- <those files>`")


def _nul(paths: Sequence[str]) -> bytes:
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


def write_commit(root: Path, tool: str, agent: str, title: str, paths: Sequence[str],
                 before: Mapping[str, bytes | None], *, config: Settings) -> str | None:
    """``serve --git-commit``: commit one write tool's change, author the agent. Never raises.

    Returns None when the change was committed, else the warning the answer carries. A note that
    held a person's uncommitted changes before the write gets a commit of the agent's change
    alone (applied to HEAD's version by a three-way merge), and the person's edit stays
    uncommitted on disk; when the two overlap, nothing is committed and the warning says so.
    """
    repo = Repo.find(root, config)
    if repo is None:
        return "not committed: the vault is not a git work tree (serve --git-commit needs one)"
    try:
        busy = repo.busy()
        if busy:
            return f"not committed: {busy}"
        staged = [p for p in paths if repo.git(["diff", "--cached", "--quiet", "HEAD", "--", repo.to_top(p)],
                                               check=False).returncode == 1]
        if staged:
            return (f"not committed: you have staged changes to {', '.join(staged)}; the change is saved, "
                    "commit it with yours")
        contents: dict[str, bytes] = {}
        for path in paths:
            earlier = before.get(path)
            head = _head_bytes(repo, path)
            if earlier is None or (head is not None and _same(earlier, head)):
                continue
            if head is None:
                return (f"not committed: {path} is not in git yet (a note of yours never committed?); the change "
                        "is saved, commit it yourself")
            agent_only = _agent_change_on_head(repo, path, earlier, head)
            if agent_only is None:
                return (f"not committed: {path} had uncommitted changes before this write (yours?) that overlap "
                        "it; the change is saved, commit it yourself")
            contents[path] = agent_only
        commit_paths(repo, paths, f"{tool}: {title}", agent_identity(agent), contents=contents)
        return None
    except GitError as exc:
        return f"the change is saved but not committed: {exc!s}"


def _same(data: bytes, head: bytes) -> bool:
    return data == head or data.replace(b"\r\n", b"\n") == head


def _head_bytes(repo: Repo, path: str) -> bytes | None:
    done = repo.git(["cat-file", "blob", f"HEAD:{repo.to_top(path)}"], check=False)
    return done.stdout if done.returncode == 0 else None


def _agent_change_on_head(repo: Repo, path: str, before: bytes, head: bytes) -> bytes | None:
    """HEAD's version of ``path`` plus only what the agent changed (``before`` -> the file now):
    ``git merge-file`` of (now, base before, HEAD). None when they overlap or the file is gone."""
    try:
        after = (repo.top / repo.to_top(path)).read_bytes()
    except OSError:
        return None
    folder = Path(tempfile.mkdtemp(prefix="vault-mem-merge-", dir=repo.git_dir))
    try:
        for name, data in (("now", after), ("before", before), ("head", head)):
            (folder / name).write_bytes(data)
        done = repo.git(["merge-file", "-p", "--quiet", str(folder / "now"), str(folder / "before"),
                         str(folder / "head")], check=False)
        return done.stdout if done.returncode == 0 else None
    finally:
        for name in ("now", "before", "head"):
            with contextlib.suppress(OSError):
                (folder / name).unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()
