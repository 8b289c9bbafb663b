"""``vault-mem sync`` (docs/git.md): commit the vault's pending note changes, fetch, integrate, push.

1. **Commit** every changed, new or deleted note of the vault (``*.md`` outside hidden
   folders, so never ``.vault-mem/`` or ``.obsidian/``) in one commit, through a temporary
   index (git/commit.py): whatever else the person has staged stays as it was.
2. **Fetch** the branch's upstream (or the only remote, under the same branch name).
3. **Integrate** without touching the work tree until the result is known: up to date, a
   fast-forward, or a merge computed by ``git merge-tree``. A note changed on both sides
   keeps the remote version at its path and the local version beside it as
   ``<name> (conflict <host> <YYYY-MM-DD>).md``, so no conflict marker ever lands in a
   note. A conflict in a file that is not a note stops the sync before anything changes.
   The work tree then moves with ``git merge --ff-only``, which refuses (changing nothing)
   rather than overwrite a file someone is editing.
4. **Push**, never forced. Rejected because the remote moved meanwhile: fetch and integrate
   again (three rounds at most).

Anything that cannot be finished (no remote, no network, a rejected push, a repository in
the middle of a merge) ends the sync there and says what happened; what was done before it
(the local commit) is consistent and stays.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from vault_mem.errors import GitError
from vault_mem.git.commit import commit_paths
from vault_mem.git.repo import Repo, last_line
from vault_mem.settings import Settings

CONFLICT_COPY = re.compile(r" \(conflict [^()/]* \d{4}-\d{2}-\d{2}\)(?: \d+)?\.md$", re.IGNORECASE)
_HOST_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class SyncResult:
    """What a sync did, a line per step; ``complete`` when every step finished."""

    lines: list[str] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (note, its conflicted copy), vault-relative
    complete: bool = False
    committed: int = 0
    pushed: bool = False

    @property
    def exit_code(self) -> int:
        """0 synced; 1 not finished (see lines); 3 synced with conflicted copies to look at."""
        if not self.complete:
            return 1
        return 3 if self.conflicts else 0


def host_name() -> str:
    name = socket.gethostname().split(".")[0]
    return _HOST_CHARS.sub("-", name).strip("-") or "host"


def sync_vault(root: Path, host: str | None = None, today: dt.date | None = None, *,
               config: Settings) -> SyncResult:
    """Run one sync of the vault at ``root`` (with the timeouts and rounds of ``config``). Raises
    GitError only when the vault is not a git work tree; every other failure is a line of the
    result with ``complete`` False."""
    repo = Repo.find(root, config)
    if repo is None:
        raise GitError(f"{root} is not a git repository (not inside a git work tree): run `git init` there "
                       "and add a remote to sync it")
    host = host or host_name()
    day = (today or dt.datetime.now(dt.UTC).date()).isoformat()
    result = SyncResult()
    try:
        _sync(repo, result, host, day)
    except GitError as exc:
        result.lines.append(str(exc))
        result.complete = False
    return result


def _sync(repo: Repo, result: SyncResult, host: str, day: str) -> None:
    config = repo.config
    busy = repo.busy()
    if busy:
        result.lines.append(f"not synced: {busy}")
        return
    branch = repo.out(["symbolic-ref", "-q", "--short", "HEAD"], check=False)
    if not branch:
        result.lines.append("not synced: HEAD is detached (not on a branch); check out a branch first")
        return
    _commit_pending(repo, result, host)
    remote, remote_branch, has_upstream = _upstream(repo, branch)
    if remote is None:
        result.lines.append(remote_branch)  # the reason
        return
    for _round in range(config.sync_rounds):
        fetched = repo.git(["fetch", "--quiet", remote], timeout=config.git_network_timeout, check=False)
        if fetched.returncode != 0:
            result.lines.append(f"fetch from {remote} failed: {_reason(fetched.stderr)}; "
                                "your commits stay local, nothing else changed")
            return
        theirs = repo.out(["rev-parse", "-q", "--verify", f"refs/remotes/{remote}/{remote_branch}^{{commit}}"],
                          check=False) or None
        if theirs is not None and not _integrate(repo, result, theirs, f"{remote}/{remote_branch}", host, day):
            return
        ours = repo.head()
        if ours is None:
            result.lines.append("nothing to push: the branch has no commit yet")
            result.complete = True
            return
        if theirs is not None and ours == theirs:
            result.lines.append(f"up to date with {remote}/{remote_branch}")
            result.complete = True
            return
        args = ["push", "--quiet", "--porcelain"] + ([] if has_upstream else ["--set-upstream"])
        pushed = repo.git([*args, remote, f"HEAD:refs/heads/{remote_branch}"], timeout=config.git_network_timeout,
                          check=False)
        if pushed.returncode == 0:
            result.lines.append(f"pushed to {remote}/{remote_branch}")
            result.pushed = result.complete = True
            return
        text = (pushed.stdout + pushed.stderr).decode("utf-8", "replace")
        if "[rejected]" not in text and "non-fast-forward" not in text and "fetch first" not in text:
            result.lines.append(f"push to {remote} failed: {_reason(pushed.stderr)}; your commits stay local, "
                                "run sync again later")
            return
        result.lines.append(f"push to {remote} rejected: it received other commits meanwhile; integrating them")
    result.lines.append(f"push to {remote} kept being rejected; your commits stay local, run sync again")


def pending_notes(repo: Repo) -> list[str]:
    """The vault's notes (vault-relative) that differ from HEAD: changed, new, deleted."""
    out = repo.git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--",
                    repo.prefix or "."]).stdout.decode("utf-8", "surrogateescape")
    found = []
    for entry in out.split("\0"):
        if len(entry) < 4:
            continue
        rel = repo.to_vault(entry[3:])
        if rel is not None and is_note(rel):
            found.append(rel)
    return sorted(set(found))


def is_note(path: str) -> bool:
    return path.lower().endswith(".md") and not any(seg.startswith(".") for seg in path.split("/"))


def _commit_pending(repo: Repo, result: SyncResult, host: str) -> None:
    pending = pending_notes(repo)
    if not pending:
        return
    listed = "\n".join(f"- {p}" for p in pending[:200]) + (f"\n- ... and {len(pending) - 200} more"
                                                           if len(pending) > 200 else "")
    message = f"vault-mem sync: {len(pending)} note{'s' if len(pending) != 1 else ''} from {host}\n\n{listed}\n"
    if commit_paths(repo, pending, message) is not None:
        result.committed = len(pending)
        result.lines.append(f"committed {len(pending)} changed note{'s' if len(pending) != 1 else ''}")


def _upstream(repo: Repo, branch: str) -> tuple[str | None, str, bool]:
    """(remote, its branch name, whether the upstream is configured); (None, reason, False) without one."""
    remote = repo.out(["config", "--get", f"branch.{branch}.remote"], check=False)
    merge = repo.out(["config", "--get", f"branch.{branch}.merge"], check=False)
    if remote and remote != "." and merge.startswith("refs/heads/"):
        return remote, merge[len("refs/heads/"):], True
    remotes = [r for r in repo.out(["remote"]).splitlines() if r]
    if not remotes:
        return None, ("no remote configured: your notes are committed locally; add one with "
                      "`git remote add origin URL` to sync (see docs/git.md)"), False
    if len(remotes) > 1:
        return None, (f"several remotes ({', '.join(remotes)}) and no upstream for {branch}: choose one with "
                      f"`git branch --set-upstream-to REMOTE/{branch}`"), False
    return remotes[0], branch, False


def _integrate(repo: Repo, result: SyncResult, theirs: str, name: str, host: str, day: str) -> bool:
    """Bring ``theirs`` into the branch and the work tree. False (with a line) when it cannot."""
    ours = repo.head()
    if ours is not None and repo.is_ancestor(theirs, ours):
        return True
    if ours is None or repo.is_ancestor(ours, theirs):
        target, what = theirs, f"fast-forwarded to {name}"
    else:
        merged = _merge(repo, result, ours, theirs, name, host, day)
        if merged is None:
            return False
        target, what = merged, f"merged {name}"
    moved = repo.git(["merge", "--ff-only", "--quiet", target], check=False)
    if moved.returncode != 0:
        result.conflicts.clear()
        result.lines.append(f"could not update the files to {name}: {_reason(moved.stderr)}; nothing changed "
                            "(commit or move the files named, then sync again)")
        return False
    result.lines.append(what + (f" ({len(result.conflicts)} conflicted)" if result.conflicts else ""))
    for note, copy in result.conflicts:
        result.lines.append(f"conflict: {note}: kept the remote version; yours is in {copy}")
    return True


def _merge(repo: Repo, result: SyncResult, ours: str, theirs: str, name: str, host: str, day: str) -> str | None:
    """The merge commit of ``ours`` and ``theirs`` with every note changed on both sides resolved as
    remote version at the path + local version as a conflicted copy; None (with a line) when git
    reports a conflict in a file that is not a note."""
    base = repo.out(["merge-base", ours, theirs], check=False)
    if not base:
        result.lines.append(f"could not merge {name}: this branch and {name} share no history (a vault "
                            "started on both machines?); clone the remote instead, or join them once by hand "
                            f"with `git merge --allow-unrelated-histories {name}`; nothing changed")
        return None
    done = repo.git(["merge-tree", "--write-tree", "-z", "--name-only", ours, theirs], check=False)
    if done.returncode not in (0, 1):
        result.lines.append(f"could not merge {name}: {_reason(done.stderr)}")
        return None
    head = done.stdout.decode("utf-8", "surrogateescape").split("\0\0", 1)[0].split("\0")
    tree, conflicted = head[0], {p for p in head[1:] if p}
    both = _changed(repo, base, ours) & _changed(repo, base, theirs)
    both_notes = {p for p in both if (rel := repo.to_vault(p)) is not None and is_note(rel)}
    unresolved = sorted(conflicted - both_notes)
    if unresolved:
        result.lines.append(f"could not merge {name}: git found conflicts in {', '.join(unresolved[:10])}, which "
                            f"vault-mem does not resolve; merge by hand (`git merge {name}`); nothing changed")
        return None
    entries: list[str] = []
    taken: set[str] = set()
    my_entries, their_entries = _entries(repo, ours, both_notes), _entries(repo, theirs, both_notes)
    for path in sorted(both_notes):
        mine, remote = my_entries.get(path), their_entries.get(path)
        if mine == remote:
            continue
        entries.append(f"{remote[0]} {remote[1]}\t{path}" if remote else f"0 {'0' * 40}\t{path}")
        if mine is not None:
            copy = _copy_name(repo, path, host, day, taken)
            taken.add(copy)
            entries.append(f"{mine[0]} {mine[1]}\t{copy}")
            result.conflicts.append((repo.to_vault(path) or path, repo.to_vault(copy) or copy))
    if entries:
        tree = _edit_tree(repo, tree, entries)
    copies = "".join(f"\n- {note} -> {copy}" for note, copy in result.conflicts)
    message = f"vault-mem sync: merge {name} on {host}\n" + (f"\nConflicted copies:{copies}\n" if copies else "")
    return repo.out(["commit-tree", tree, "-p", ours, "-p", theirs, "-F", "-"], input=message.encode("utf-8"))


def _changed(repo: Repo, base: str, tip: str) -> set[str]:
    args = ["diff", "--name-only", "-z", "--no-renames", base, tip]
    if repo.prefix:
        args += ["--", repo.prefix]
    return {p for p in repo.out(args).split("\0") if p}


def _entries(repo: Repo, commit: str, paths: set[str]) -> dict[str, tuple[str, str]]:
    """{path: (mode, blob)} of those of ``paths`` that ``commit`` holds (one ls-tree)."""
    if not paths:
        return {}
    args = ["ls-tree", "-r", "-z", "--full-tree", commit]
    if repo.prefix:
        args += ["--", repo.prefix]
    found: dict[str, tuple[str, str]] = {}
    for entry in repo.out(args).split("\0"):
        meta, _, path = entry.partition("\t")
        bits = meta.split(" ")
        if path in paths and len(bits) == 3:
            found[path] = (bits[0], bits[2])
    return found


def _copy_name(repo: Repo, path: str, host: str, day: str, taken: set[str]) -> str:
    folder, _, name = path.rpartition("/")
    stem = name[:-3] if name.lower().endswith(".md") else name
    for n in range(1, 1000):
        suffix = "" if n == 1 else f" {n}"
        candidate = f"{folder + '/' if folder else ''}{stem} (conflict {host} {day}){suffix}.md"
        if candidate not in taken and not (repo.top / candidate).exists():
            return candidate
    raise GitError(f"too many conflicted copies of {path}")


def _edit_tree(repo: Repo, tree: str, entries: list[str]) -> str:
    fd, name = tempfile.mkstemp(prefix="vault-mem-merge-", dir=repo.git_dir)
    os.close(fd)
    os.unlink(name)
    env = {"GIT_INDEX_FILE": name}
    try:
        repo.git(["read-tree", tree], env=env)
        data = b"".join(e.encode("utf-8", "surrogateescape") + b"\0" for e in entries)
        repo.git(["update-index", "-z", "--index-info"], env=env, input=data)
        return repo.out(["write-tree"], env=env)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _reason(stderr: bytes) -> str:
    return last_line(stderr) or "no reason given"
