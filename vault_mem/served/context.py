"""What every query runs against: the vault root, its index, the server's settings, and what
each caller may see.

A ``View`` is made for one call and one caller (``served/agents.py``): the engine's snapshot
as that caller may see it (for an agent limited to some folders every other note looks as if
it was never indexed, so every document set a read gets is already filtered, and a hidden note
is ``not_found``). Writes ask ``check_write``."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from vault_mem.errors import PathRefused
from vault_mem.meaning.embedder import Meaning
from vault_mem.search.api import Snapshot, VaultIndex, cached_while_unchanged, reading
from vault_mem.served.agents import Agent
from vault_mem.settings import Settings
from vault_mem.vault.frontmatter import split_frontmatter
from vault_mem.vault.note import PERMALINK_PREFIX, permalink_of
from vault_mem.vault.paths import InsideCheck, NotANote, display_path, link_target
from vault_mem.vault.reader import VersionKey, decode, read_bytes, read_linked, read_whole_linked, version_key


class Health(Protocol):
    """How the served vault is doing; the server's runtime keeps it (``runtime/lifecycle.py``)."""

    def indexing(self) -> dict[str, int] | None:
        """``{done, total}`` while a build runs, else None."""

    def checking(self) -> dict[str, int] | None:
        """``{done, total}`` while the start-up check of an existing index is due or running, else None."""

    def check(self) -> None:
        """Raise VaultUnavailable when the vault cannot be served right now."""

    def answering(self) -> AbstractContextManager[None]:
        """Held for the length of each tool call (the runtime's start-up check gives way to calls)."""


class SteadyHealth:
    """A vault indexed before serving (tests, the CLI): never building, always there."""

    def indexing(self) -> dict[str, int] | None:
        return None

    def checking(self) -> dict[str, int] | None:
        return None

    def check(self) -> None:
        return None

    def answering(self) -> AbstractContextManager[None]:
        return nullcontext()


@dataclass
class Vault:
    """A vault being served: root, index, the ``--project`` default, and how it is doing."""

    root: Path
    index: VaultIndex
    project: str | None = None
    compat: bool = False
    health: Health = field(default_factory=SteadyHealth)
    git_commit: bool = False  # serve --git-commit: each write tool's change is its own commit (docs/git.md)
    meaning: Meaning | None = None  # --meaning-model: memory_search also ranks by meaning (docs/ranking.md)
    name: str = ""  # its name among the served vaults (served/vaults.py); "" for one vault built by older code
    named: bool = False  # several vaults are served: its permalinks name it (memory://NAME/...)

    def permalink(self, path: str) -> str:
        """The permalink of the note at ``path``: ``memory://NAME/path`` when several vaults are
        served, else ``memory://path`` as with one vault (docs/vaults.md)."""
        plain = permalink_of(path)
        return f"{PERMALINK_PREFIX}{self.name}/{plain[len(PERMALINK_PREFIX):]}" if self.named else plain

    def indexing(self) -> dict[str, int] | None:
        return self.health.indexing()

    def checking(self) -> dict[str, int] | None:
        return self.health.checking()

    def check(self) -> None:
        self.health.check()

    def answering(self) -> AbstractContextManager[None]:
        return self.health.answering()


class View:
    """One call's look at the served vault, as ``caller`` may see it (None: the vault's owner,
    who sees everything): the engine's ``snapshot`` (``search/snapshot.py``: every document set,
    record and column a read uses, with what the caller may not see already taken out), the
    vault it belongs to, the caller's write rules and the notes' bodies on disk. Made by
    ``view_of``."""

    def __init__(self, vault: Vault, snapshot: Snapshot, caller: Agent | None = None,
                 others: frozenset[str] = frozenset()) -> None:
        self.vault = vault
        self.snapshot = snapshot
        self.caller = caller
        self.others = others  # the other served vaults this caller reaches, by name (docs/vaults.md)
        self.config = snapshot.config  # the served index's settings, for every read of this call
        self._inside: InsideCheck | None = None  # the root and folders resolved once a call, not once a row

    def permalink(self, path: str) -> str:
        """The permalink of the note at ``path`` as this server shows it (``Vault.permalink``)."""
        return self.vault.permalink(path)

    def elsewhere(self, target: str) -> bool:
        """Whether ``target`` (a ``supersedes`` or ``superseded_by`` entry) is the permalink of a note
        in another served vault this caller reaches (``memory://NAME/...``): a lineage edge across
        vaults, shown as written (memory_supersede across vaults writes one on each side)."""
        if not self.others or not target.lower().startswith(PERMALINK_PREFIX):
            return False
        head, sep, _rest = target[len(PERMALINK_PREFIX):].partition("/")
        return bool(sep) and head in self.others

    def fresh(self) -> View:
        """A view of the same commit for the same caller, without the records this one read."""
        return View(self.vault, self.snapshot.fresh(), self.caller, self.others)

    def may_read(self, path: str) -> bool:
        return self.caller is None or self.caller.may_read(path)

    def may_see(self, path: str, fsrel: str | None = None, *recorded: str | None) -> bool:
        """``may_see`` for this call's caller."""
        return may_see(self.caller, self.vault.root, path, fsrel, *recorded)

    def note_bytes(self, record: dict[str, Any], param: str = "ref") -> tuple[bytes, str | None]:
        """The whole file of the note ``record`` as it is now, and the file a symlink makes its path
        (``link_target``), agreeing (``read_agreeing``): for the caller to judge with ``may_see``.
        PathRefused (``param``) when the path now leads to no note; OSError when it cannot be read."""
        fsrel = str(record["fsrel"])
        try:
            return read_whole_linked(self.vault.root, fsrel, self.config)
        except NotANote as exc:
            raise PathRefused(param, f"{display_path(fsrel)} {exc}") from None

    def check_write(self, path: str, tool: str, fsrel: str | None = None) -> None:
        """Forbidden (naming the rule) unless this caller may write the note at ``path`` and, when
        a symlink makes that file (``fsrel``, its OS path, existing or not) another file of the
        vault, that file too."""
        if self.caller is None:
            return
        self.caller.check_write(path, tool)
        if fsrel is not None:
            try:
                real = link_target(self.vault.root, fsrel)
            except (NotANote, OSError, ValueError):  # no note there: the write itself refuses and says why
                return
            if real:
                self.caller.check_write(real, tool)

    def body(self, record: dict[str, Any]) -> str:
        """The note's body as it is on disk now ('' when the file is gone or now leads outside the vault)."""
        if self._inside is None:
            self._inside = InsideCheck(self.vault.root)
        path = self.vault.root / record["fsrel"]
        if not self._inside(path):
            return ""
        if record.get("excalidraw"):
            return ""
        limited = self.caller is not None and not self.caller.reads_everything
        # Kept while the file is unchanged, as memory_read keeps its parse: the rows of every
        # search read their notes' bodies for the excerpts. Not a read that failed.
        stamp = settled_stamp(path, self.config.settled_ns)
        if stamp is None:
            if not limited:
                return _body_now(record, path, self.config)[0]
            try:  # judged by the file actually read: a link swapped meanwhile shows nothing hidden
                (data, _etag, _size, _mtime, problems), real = read_linked(self.vault.root, record["fsrel"],
                                                                           self.config)
            except NotANote:
                return ""
            if not self.may_see(record["path"], None, record.get("real"), real):
                return ""
            return _body_of(record, data, problems, self.config)[0]
        text = cached_while_unchanged(("body", str(self.vault.root), record["fsrel"], *stamp),
                                      lambda: _body_now(record, path, self.config), _text_size)
        if limited and not self._saw(record, stamp):
            return ""
        return text

    def _saw(self, record: dict[str, Any], stamp: VersionKey) -> bool:
        """Whether this caller may see the file whose version is ``stamp`` (read through the note's
        path), judged where the path leads now, after the read: the same file, one it may see."""
        try:
            real = link_target(self.vault.root, record["fsrel"])
            st = os.lstat(self.vault.root / (real if real is not None else record["fsrel"]))
        except (NotANote, OSError):
            return False
        return (st.st_ino, st.st_dev) == stamp[2:] and self.may_see(record["path"], None, record.get("real"), real)


@contextmanager
def view_of(vault: Vault, caller: Agent | None = None, others: frozenset[str] = frozenset()) -> Iterator[View]:
    """A ``View`` of ``vault``'s index as committed now, as ``caller`` may see it, for one call
    (``others``: the other served vaults the caller reaches)."""
    limited = caller is not None and not caller.reads_everything
    with reading(vault.index, caller.mask if caller is not None and limited else None,
                 caller.may_read if caller is not None and limited else None) as snapshot:
        yield View(vault, snapshot, caller, others)


def settled_stamp(path: Path, settled_ns: int) -> VersionKey | None:
    """The ``version_key`` of the file at ``path``, to keep what is derived from it for as long as
    it stays; None when it cannot be stat'ed or changed in the last ``settled_ns`` nanoseconds (the
    setting: a rewrite of the same size within one tick of the clock keeps its mtime, as git's
    index knows)."""
    key = version_key(path)
    if key is None or time.time_ns() - key[0] <= settled_ns:
        return None
    return key


def may_see(caller: Agent | None, root: Path, path: str, fsrel: str | None = None, *recorded: str | None) -> bool:
    """The one judge of whether ``caller`` may see what the note at ``path`` holds (its text, a diff
    or an excerpt of it, its title) wherever that shows: the read tools, the page, the journal's
    views (docs/sharing.md, "Symlinks"). The note's path must be one it may read, and so must each
    file a symlink made it (``recorded``: as the index, the journal or a read found it) and, given
    its OS path ``fsrel``, the file that path leads to now (``link_target``); a path that now leads
    to no note (outside the vault, into a hidden folder) shows nothing. The owner (None) and an
    agent without read limits see everything."""
    if caller is None or caller.reads_everything:
        return True
    if not caller.may_read(path) or any(real and not caller.may_read(real) for real in recorded):
        return False
    if fsrel is None:
        return True
    try:
        now = link_target(root, fsrel)
    except (NotANote, OSError, ValueError):
        return False
    return now is None or caller.may_read(now)


def _body_now(record: dict[str, Any], path: Path, config: Settings) -> tuple[str, bool]:
    """The body on disk now, and whether it was read (else the index's head stands in)."""
    data, _etag, _size, _mtime, problems = read_bytes(path, config)
    return _body_of(record, data, problems, config)


def _body_of(record: dict[str, Any], data: bytes, problems: list[str], config: Settings) -> tuple[str, bool]:
    if problems and not data:
        return str(record.get("head", "")), False
    text, _ = decode(data, config)
    return split_frontmatter(text).body, True


def _text_size(text: str) -> int:
    return 2 * len(text) + 100


_SIZER = json.JSONEncoder(ensure_ascii=False, default=str)  # one for all: json.dumps makes one per call


def json_size(value: Any) -> int:
    return len(_SIZER.encode(value))


class Budget:
    """The one size-bounded page: rows go in while their JSON fits ``budget`` characters;
    the first row always goes in (a row too big alone is cut by its tool, never dropped)."""

    def __init__(self, budget: int) -> None:
        self.left = budget
        self.taken = 0

    def take(self, row: Any) -> bool:
        """Count ``row`` in and say True, or say False when it no longer fits."""
        size = json_size(row) + 2
        if self.taken and size > self.left:
            return False
        self.left -= size
        self.taken += 1
        return True


def take_within(rows: list[Any], budget: int) -> int:
    """How many of ``rows`` fit in ``budget`` characters of JSON (at least one when any; the
    ``row_budget`` setting, ``view.config.row_budget``, for a page of rows)."""
    page = Budget(budget)
    for i, row in enumerate(rows):
        if not page.take(row):
            return i
    return len(rows)
