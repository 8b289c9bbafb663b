"""Running git, safely: the one module of vault-mem that starts a ``git`` process.

Every call goes through ``run``: an argument list (never a shell), a timeout, ``LC_ALL=C``
so that messages can be matched, no prompts (``GIT_TERMINAL_PROMPT=0``; ssh in batch mode
unless the person set their own ``GIT_SSH_COMMAND``), and no pager. A failure raises
``GitError`` with git's own last line of stderr, which callers pass on as the message a
person reads. Works wherever a ``git`` executable is on the PATH (``shutil.which`` finds
``git.exe`` on Windows).

``Repo.find(folder)`` answers None when the folder is not inside a git work tree (or git is
not installed): vault-mem then behaves exactly as without git.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vault_mem.errors import GitError
from vault_mem.settings import Settings

ZERO_OID = "0" * 40


def git_executable() -> str | None:
    return shutil.which("git")


def _environment(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0",
                "GIT_PAGER": "cat", "PAGER": "cat", "GIT_OPTIONAL_LOCKS": "0"})
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    if extra:
        env.update(extra)
    return env


def run(cwd: Path, args: Sequence[str], *, env: Mapping[str, str] | None = None, input: bytes | None = None,
        timeout: float, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """``git args...`` in ``cwd``; raises GitError when git is missing, takes over ``timeout``
    seconds or (``check``) fails."""
    exe = git_executable()
    if exe is None:
        raise GitError("git is not installed (no 'git' on the PATH)")
    command = [exe, "-c", "core.quotepath=off", *args]
    try:
        done = subprocess.run(command, cwd=cwd, env=_environment(env), input=input, capture_output=True,
                              timeout=timeout, check=False, stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} did not finish within {timeout:.0f} s") from None
    except OSError as exc:
        raise GitError(f"git could not be started: {exc.strerror}") from None
    if check and done.returncode != 0:
        raise GitError(f"git {args[0]} failed: {last_line(done.stderr) or f'exit status {done.returncode}'}",
                       returncode=done.returncode, stderr=done.stderr.decode("utf-8", "replace"))
    return done


def last_line(stderr: bytes) -> str:
    """The most telling line of git's stderr: the last ``fatal:``/``error:`` line, else the last line."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[-1] if lines else ""


def blob_id(data: bytes, like: str = ZERO_OID) -> str:
    """The object id git gives a file holding ``data``, in the hash of the id ``like`` (SHA-1 ids
    are 40 hex digits, SHA-256 ones 64)."""
    algorithm = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return algorithm(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class Repo:
    """A git work tree that holds a vault: ``top`` is the work tree's root, ``prefix`` the vault's
    folder inside it ('' or ending in '/'), ``git_dir`` the repository's own folder; ``config``:
    the settings it was found with, whose timeouts its commands (and a ``History`` of it) keep."""

    top: Path
    prefix: str
    git_dir: Path
    vault: Path
    object_format: str = "sha1"
    config: Settings = field(default_factory=Settings, kw_only=True, compare=False, repr=False)

    @property
    def zero_oid(self) -> str:
        return "0" * (64 if self.object_format == "sha256" else 40)

    @classmethod
    def find(cls, vault: Path, config: Settings) -> Repo | None:
        """The work tree holding ``vault``, or None (not a work tree, a bare repository, no git).
        ``config``: the settings of the command or the served index (git's timeouts)."""
        if git_executable() is None:
            return None
        try:
            done = run(vault, ["rev-parse", "--is-inside-work-tree", "--show-toplevel", "--show-prefix",
                               "--absolute-git-dir", "--show-object-format"], check=False,
                       timeout=config.git_probe_timeout)
        except GitError:
            return None
        lines = done.stdout.decode("utf-8", "surrogateescape").split("\n")
        if done.returncode != 0 or len(lines) < 5 or lines[0] != "true":
            return None
        return cls(top=Path(lines[1]), prefix=lines[2], git_dir=Path(lines[3]), vault=vault,
                   object_format=lines[4] or "sha1", config=config)

    def git(self, args: Sequence[str], *, env: Mapping[str, str] | None = None, input: bytes | None = None,
            timeout: float | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """``git args`` run at the work tree's root (paths are then relative to ``top``); ``timeout``:
        ``git_timeout`` when None."""
        timeout = self.config.git_timeout if timeout is None else timeout
        return run(self.top, args, env=env, input=input, timeout=timeout, check=check)

    def out(self, args: Sequence[str], *, env: Mapping[str, str] | None = None, input: bytes | None = None,
            check: bool = True) -> str:
        """``git args``' standard output as text, without surrounding whitespace."""
        return self.git(args, env=env, input=input, check=check).stdout.decode("utf-8", "surrogateescape").strip()

    def head(self) -> str | None:
        """The commit HEAD points at; None on a branch with no commit yet."""
        done = self.git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], check=False)
        return done.stdout.decode().strip() or None if done.returncode == 0 else None

    def to_top(self, vault_rel: str) -> str:
        """A vault-relative '/'-path as a path relative to the work tree."""
        return self.prefix + vault_rel

    def to_vault(self, top_rel: str) -> str | None:
        """A work-tree-relative path as vault-relative; None when it lies outside the vault."""
        if not top_rel.startswith(self.prefix):
            return None
        return top_rel[len(self.prefix):]

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.git(["merge-base", "--is-ancestor", older, newer], check=False).returncode == 0

    def busy(self) -> str | None:
        """Why git is in the middle of something (a merge, rebase, a held index lock), or None."""
        marks = {"MERGE_HEAD": "a merge", "rebase-merge": "a rebase", "rebase-apply": "a rebase or am",
                 "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert", "BISECT_LOG": "a bisect"}
        for name, what in marks.items():
            if (self.git_dir / name).exists():
                return f"the repository is in the middle of {what}; finish or abort it first"
        if (self.git_dir / "index.lock").exists():
            return "another git command is running (.git/index.lock exists); try again when it is done"
        return None
