"""What git knows about each note: when it was created and last changed, by whom, and whether
the file on disk is what HEAD holds (docs/git.md).

One ``git log`` pass over the repository (oldest first, renames followed) gives every note's
life: the commit that added it, the commits that touched it since (the last ``MAX_COMMITS``
kept) and its blob at HEAD (``git ls-tree``). After that the map follows HEAD
incrementally (``git log OLD..NEW`` when HEAD moved forward, a new pass when it jumped
elsewhere: a rebase, a reset, another branch) and is kept in the index folder
(``git-history.json``) so that the next start only reads what is new.

Its three uses:

- ``dates``: the ``created``/``updated`` a note without frontmatter dates takes: a
  clone or checkout sets every mtime to the checkout time, so history is the better
  default. A file whose bytes differ from its blob at HEAD (uncommitted) keeps its mtime.
  The reader is handed the map as an argument (``read_note(root, rel, history)``); the
  index finds the one map open for its vault with ``history_for`` below.
- ``history_of``: the last commits that touched a note, for ``memory_read``.
- ``uncommitted``: whether the file differs from HEAD (or is not in it).

No git call happens on a lookup; ``refresh`` runs git only when the repository's HEAD files
changed on disk since the last look (a stat of three files otherwise).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_mem.errors import GitError
from vault_mem.git.repo import Repo, blob_id
from vault_mem.vault.dates import UTC, iso

log = logging.getLogger("vault_mem.git")
CACHE_VERSION = 1
_FORMAT = "%x1e%h%x1f%at%x1f%an%x1f%s"


@dataclass
class Life:
    """One note's history: added at ``created``, last touched at ``updated`` (epoch seconds);
    ``commits`` are indices into ``History.commits``, oldest first."""

    created: int
    updated: int
    commits: list[int] = field(default_factory=list)


@dataclass
class _State:
    head: str | None = None
    commits: list[tuple[str, int, str, str]] = field(default_factory=list)  # (short sha, time, author, subject)
    lives: dict[str, Life] = field(default_factory=dict)  # vault-relative path -> its life, HEAD's notes only
    blobs: dict[str, str] = field(default_factory=dict)  # vault-relative path -> blob id at HEAD


class History:
    """The history map of one vault in a git work tree. Thread-safe; lookups never run git."""

    def __init__(self, repo: Repo, cache_file: Path | None = None) -> None:
        self.repo = repo
        self.cache_file = cache_file
        self._state = _State()
        self._stamp: tuple[tuple[int, int], ...] | None = None
        self._lock = threading.Lock()
        self.on_change: Callable[[set[str]], object] | None = None  # told which notes' dates moved
        self.seconds = 0.0  # the time of the last full pass (for benchmarks)
        self._unsaved = 0  # commits replayed since the map was last saved

    # -- lookups ---------------------------------------------------------------------------

    @property
    def head(self) -> str | None:
        return self._state.head

    def blob(self, path: str) -> str | None:
        return self._state.blobs.get(path)

    def uncommitted(self, path: str, data: bytes) -> bool:
        """True when ``data`` (the file's whole bytes) is not what HEAD holds at ``path``."""
        return not _same_blob(self._state.blobs.get(path), data)

    def dates(self, path: str, data: bytes) -> tuple[dt.datetime, dt.datetime] | None:
        """(created, updated) from history when the file is committed as it is; else None."""
        state = self._state
        life = state.lives.get(path)
        if life is None or not _same_blob(state.blobs.get(path), data):
            return None
        return _moment(life.created), _moment(life.updated)

    def history_of(self, path: str, count: int) -> list[dict[str, str]]:
        """The last ``count`` commits that touched ``path`` (following renames), newest first."""
        state = self._state
        life = state.lives.get(path)
        if life is None or count <= 0:
            return []
        rows = []
        for index in reversed(life.commits[-count:]):
            sha, when, author, subject = state.commits[index]
            rows.append({"sha": sha, "date": iso(_moment(when)), "author": author, "subject": subject})
        return rows

    # -- keeping up with HEAD --------------------------------------------------------------

    def load(self) -> set[str]:
        """Start from the cache file when there is one, then catch up with HEAD."""
        if self.cache_file is not None:
            self._state = _read_cache(self.cache_file, self.repo.prefix) or _State()
        return self.refresh(force=True)

    def refresh(self, force: bool = False) -> set[str]:
        """Follow HEAD if it moved; the notes whose dates or blobs changed (also told ``on_change``).

        Costs a stat of HEAD's files when nothing happened. Never raises: a git failure is
        logged and the map stays as it was.
        """
        with self._lock:
            stamp = self._head_stamp()
            if not force and stamp == self._stamp:
                return set()
            try:
                changed = self._catch_up()
            except GitError as exc:
                log.warning("reading the git history failed: %s", str(exc))
                return set()
            self._stamp = stamp
        if changed and self.on_change is not None:
            self.on_change(changed)
        return changed

    def _head_stamp(self) -> tuple[tuple[int, int], ...]:
        """What changes on disk when HEAD moves: HEAD, its reflog, the branch's ref (loose or packed)."""
        git_dir = self.repo.git_dir
        files = [git_dir / "HEAD", git_dir / "logs" / "HEAD"]
        common = git_dir
        with contextlib.suppress(OSError):  # a linked worktree keeps its refs in the main repository
            common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        files.append(common / "packed-refs")
        with contextlib.suppress(OSError, UnicodeDecodeError):
            head = files[0].read_text(encoding="utf-8").strip()
            if head.startswith("ref: "):
                files.append(common / head[5:])
        stamp = []
        for path in files:
            try:
                st = os.stat(path)
                stamp.append((st.st_mtime_ns, st.st_size))
            except OSError:
                stamp.append((0, 0))
        return tuple(stamp)

    def _catch_up(self) -> set[str]:
        config = self.repo.config
        old = self._state
        head = self.repo.head()
        if head == old.head and old.head is not None:
            return set()
        if head is None:
            new, changed = _State(), set(old.blobs)
        elif old.head is not None and self.repo.is_ancestor(old.head, head):
            # Forward: replay only the new commits; lives are replaced, never changed in place,
            # so lookups running meanwhile see the old state or the new one.
            new = _State(head, list(old.commits), dict(old.lives), dict(old.blobs))
            changed = self._apply_log(new, f"{old.head}..{head}") | self._apply_tree_diff(new, old.head, head)
            self._unsaved += len(new.commits) - len(old.commits)
        else:
            start = time.monotonic()
            new = _State(head)
            self._apply_log(new, head)
            new.blobs = self._blobs(head)
            new.lives = {p: life for p, life in new.lives.items() if p in new.blobs}
            self.seconds = time.monotonic() - start
            changed = {p for p in set(old.blobs) | set(new.blobs)
                       if old.blobs.get(p) != new.blobs.get(p) or _dates(old, p) != _dates(new, p)}
            self._unsaved = config.history_save_after
        for path in [p for p in changed if p in new.lives and p not in new.blobs]:
            del new.lives[path]
        self._state = new
        # The saved map only spares the next start a replay, so a few commits need not rewrite it.
        if self.cache_file is not None and self._unsaved >= config.history_save_after:
            _write_cache(self.cache_file, new, self.repo.prefix)
            self._unsaved = 0
        return changed

    def _apply_log(self, state: _State, revisions: str) -> set[str]:
        """Replay ``git log`` of ``revisions`` oldest first onto ``state``'s lives; the paths touched."""
        args = ["log", "-z", "--reverse", "--topo-order", "-M", "--cc", "--name-status", f"--format={_FORMAT}",
                revisions]
        if self.repo.prefix:
            args += ["--", self.repo.prefix]
        done = self.repo.git(args, timeout=self.repo.config.git_history_timeout)
        out = done.stdout.decode("utf-8", "surrogateescape")
        touched: set[str] = set()
        for header, changes in _records(out):
            parts = header.split("\x1f", 3)
            if len(parts) < 4:
                continue
            index = len(state.commits)
            when = int(parts[1]) if parts[1].isdigit() else 0
            state.commits.append((parts[0], when, parts[2], parts[3]))
            for status, paths in changes:
                rels = [self.repo.to_vault(p) for p in paths]
                self._apply_change(state, status, rels, index, when, self.repo.config.history_max_commits - 1)
                touched.update(p for p in rels if p is not None)
        return touched

    @staticmethod
    def _apply_change(state: _State, status: str, paths: list[str | None], index: int, when: int, kept: int) -> None:
        """``kept``: the commits a note keeps before this one (``history_max_commits`` - 1)."""
        lives = state.lives
        target = paths[-1]
        if status[0] in "RC" and len(paths) == 2:
            source = paths[0]
            moved = lives.pop(source, None) if status[0] == "R" and source is not None else None
            base = Life(moved.created, when, moved.commits) if moved else Life(when, when)
        elif status == "D" or (len(status) > 1 and "D" in status and "A" not in status and "M" not in status):
            if target is not None:
                lives.pop(target, None)
            return
        elif (status.startswith("A") and set(status) == {"A"}) or target not in lives:
            base = Life(when, when)
        else:
            earlier = lives[target]
            base = Life(earlier.created, max(earlier.updated, when), earlier.commits)
        if target is None or not _is_note(target):
            return
        lives[target] = Life(base.created, base.updated, [*base.commits[-kept:], index])

    def _apply_tree_diff(self, state: _State, old: str, new: str) -> set[str]:
        """Update ``state.blobs`` from ``git diff-tree old new``; the note paths whose blob changed."""
        args = ["diff-tree", "-r", "-z", "--no-renames", old, new]
        if self.repo.prefix:
            args += ["--", self.repo.prefix]
        done = self.repo.git(args, timeout=self.repo.config.git_history_timeout)
        tokens = done.stdout.decode("utf-8", "surrogateescape").split("\0")
        changed: set[str] = set()
        for meta, path in zip(tokens[0::2], tokens[1::2], strict=False):
            bits = meta.lstrip(":").split(" ")
            rel = self.repo.to_vault(path)
            if len(bits) < 5 or rel is None or not _is_note(rel):
                continue
            changed.add(rel)
            if bits[4].startswith("D") or not bits[1].startswith(("100", "120")):
                state.blobs.pop(rel, None)
            else:
                state.blobs[rel] = bits[3]
        return changed

    def _blobs(self, head: str) -> dict[str, str]:
        args = ["ls-tree", "-r", "-z", "--full-tree", head]
        if self.repo.prefix:
            args += ["--", self.repo.prefix]
        done = self.repo.git(args, timeout=self.repo.config.git_history_timeout)
        out = done.stdout.decode("utf-8", "surrogateescape")
        blobs: dict[str, str] = {}
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            bits = meta.split(" ")
            if len(bits) == 3 and bits[1] == "blob":
                rel = self.repo.to_vault(path)
                if rel is not None and _is_note(rel):
                    blobs[rel] = bits[2]
        return blobs


def _records(out: str) -> Iterator[tuple[str, list[tuple[str, list[str]]]]]:
    """``git log -z --name-status`` output as (header, [(status, paths)]) per commit."""
    for record in out.split("\x1e"):
        if not record:
            continue
        tokens = record.split("\0")
        header, changes, i = tokens[0], [], 1
        while i < len(tokens):
            status = tokens[i].strip("\n")
            i += 1
            if not status:
                continue
            width = 2 if status[0] in "RC" and status[1:].isdigit() else 1
            paths = tokens[i:i + width]
            i += width
            if len(paths) == width:
                changes.append((status, paths))
        yield header, changes


def _is_note(path: str) -> bool:
    return path.lower().endswith(".md") and not any(seg.startswith(".") for seg in path.split("/"))


def _same_blob(blob: str | None, data: bytes) -> bool:
    if blob is None:
        return False
    if blob_id(data, blob) == blob:
        return True
    # core.autocrlf checks files out with CRLF while the blob holds LF.
    return b"\r\n" in data and blob_id(data.replace(b"\r\n", b"\n"), blob) == blob


def _moment(seconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, UTC)


def _dates(state: _State, path: str) -> tuple[int, int] | None:
    life = state.lives.get(path)
    return None if life is None else (life.created, life.updated)


def _write_cache(path: Path, state: _State, prefix: str) -> None:
    data = {"version": CACHE_VERSION, "prefix": prefix, "head": state.head, "commits": state.commits,
            "lives": {p: [v.created, v.updated, v.commits] for p, v in state.lives.items()}, "blobs": state.blobs}
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8",
                       errors="surrogateescape")
        os.replace(tmp, path)
    except OSError as exc:  # a cache: without it the next start reads the whole history again
        log.warning("could not save the git history cache %s: %s", path, exc.strerror)


def _read_cache(path: Path, prefix: str) -> _State | None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8", errors="surrogateescape"))
        if data.get("version") != CACHE_VERSION or data.get("prefix") != prefix:
            return None
        commits = [(str(c[0]), int(c[1]), str(c[2]), str(c[3])) for c in data["commits"]]
        lives = {str(p): Life(int(v[0]), int(v[1]), [int(i) for i in v[2]]) for p, v in data["lives"].items()}
        return _State(data.get("head"), commits, lives, {str(p): str(b) for p, b in data["blobs"].items()})
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


# -- the maps open in this process, one per vault ----------------------------------------------

_OPEN: dict[str, History] = {}


def _keys(root: Path) -> set[str]:
    keys = {os.fspath(root)}
    with contextlib.suppress(OSError):
        keys.add(os.fspath(root.resolve()))
    return keys


def register(root: Path, history: History) -> None:
    """Make ``history`` the map that ``history_for(root)`` returns (loading one costs a git pass)."""
    for key in _keys(root):
        _OPEN[key] = history


def unregister(root: Path) -> None:
    """Forget the map of ``root`` (a server that stops)."""
    for key in _keys(root):
        _OPEN.pop(key, None)


def history_for(root: Path) -> History | None:
    return _OPEN.get(os.fspath(root)) if _OPEN else None
