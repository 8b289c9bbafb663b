"""What every query runs against: the vault root, its index, the server's settings, and what
each caller may see.

A ``View`` is made for one call and one caller (``served/agents.py``): for an agent limited
to some folders its segments count every other note as dead (``index/masked.py``), so every
document set a read gets (live documents, term lookups, ref resolution, links, hints) is
already filtered, and a hidden note is ``not_found``; ``record`` refuses one as well, should
a document number reach it some other way, and ``lexicon`` lists only its notes' terms.
Writes ask ``check_write``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from vault_mem.errors import NotFound
from vault_mem.index import query, vocabulary
from vault_mem.index.cells import Cells
from vault_mem.index.columns import column, path_key_docs, stored_record
from vault_mem.index.lru import CACHE
from vault_mem.index.masked import masked_segments
from vault_mem.index.query import Searcher
from vault_mem.index.segments import Parts, segments
from vault_mem.index.store import VaultIndex
from vault_mem.index.substring import segment_docs_containing, terms_containing
from vault_mem.served.agents import Agent
from vault_mem.vault.frontmatter import split_frontmatter
from vault_mem.vault.paths import InsideCheck
from vault_mem.vault.reader import VersionKey, decode, linked_to, read_bytes, version_key

V = TypeVar("V")
SETTLED_NS = 2_000_000_000  # a file unchanged this long has an mtime that tells a later change

MAX_ANSWER_CHARS = 40_000  # no answer's JSON passes this (docs/tools.md, "Bounded")
ROW_BUDGET = 36_000  # what rows may take, leaving room for the envelope


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

    def indexing(self) -> dict[str, int] | None:
        return self.health.indexing()

    def checking(self) -> dict[str, int] | None:
        return self.health.checking()

    def check(self) -> None:
        self.health.check()

    def answering(self) -> AbstractContextManager[None]:
        return self.health.answering()


class View:
    """One consistent look at the index for the length of a call, as ``caller`` may see it
    (None: the vault's owner, who sees everything). Every document set a read uses comes
    from these methods (``index/query.py`` behind them), over the view's segments ``parts``:
    a document a segment counts as dead (deleted, or not this caller's to see:
    ``index/masked.py``) is in none of them, so what one caller may see is applied there,
    once. Document numbers are the searcher's; sets are ascending."""

    def __init__(self, vault: Vault, searcher: Searcher, caller: Agent | None = None) -> None:
        self.vault = vault
        self.caller = caller
        self.limited = caller is not None and not caller.reads_everything
        self.searcher = searcher
        self.parts = (masked_segments(searcher, caller.mask, caller.may_read) if caller is not None and self.limited
                      else segments(searcher))
        self._records: dict[int, dict[str, Any]] = {}
        self._inside: InsideCheck | None = None  # the root and folders resolved once a call, not once a row
        self._state: tuple[Any, ...] | None = None

    def kept(self, name: Hashable, make: Callable[[], V]) -> V:
        """``make()``, kept in the process's shared cache for as long as the view's segments and
        their deletions (and what its caller may not see) stay: for what every call asks and
        only a commit changes (under steady saves a dozen calls share each commit)."""
        if self._state is None:
            self._state = tuple((segment.key, segment.deletions) for segment in self.parts)
        return CACHE.get_or_make((name, self._state), make)

    def may_read(self, path: str) -> bool:
        return self.caller is None or self.caller.may_read(path)

    def check_write(self, path: str, tool: str, fsrel: str | None = None) -> None:
        """Forbidden (naming the rule) unless this caller may write the note at ``path`` and, when
        a symlink makes that file (``fsrel``, its OS path, existing or not) another file of the
        vault, that file too."""
        if self.caller is None:
            return
        self.caller.check_write(path, tool)
        if fsrel is not None:
            try:
                real = linked_to(self.vault.root, fsrel)
            except (OSError, RuntimeError, ValueError):  # a loop: the write itself fails and says so
                return
            if real:
                self.caller.check_write(real, tool)

    # -- document sets ----------------------------------------------------------------

    def all_docs(self) -> list[int]:
        """Every live document."""
        return query.live_docs(self.parts)

    def term_docs(self, field: str, values: Iterable[str]) -> list[int]:
        """The documents holding any of the exact ``values`` in ``field``."""
        return query.term_docs(self.parts, field, values)

    def docs_where(self, require: list[tuple[str, str]], field: str | None = None,
                   values: list[str] | None = None) -> list[int]:
        """The documents holding every (field, value) of ``require`` and, when ``field`` is
        given, any of ``values`` in it."""
        return query.docs_where(self.parts, require, field, values)

    def docs_in_range(self, field: str, lo: Any | None, hi: Any | None) -> list[int]:
        """The documents whose sortable ``field`` is in ``[lo, hi)`` (None: open)."""
        return query.docs_in_range(self.parts, field, lo, hi)

    def newest(self, field: str, limit: int, keep: Callable[[int], bool] | None = None,
               floor: Any | None = None) -> list[int] | None:
        """Up to ``limit`` documents newest first on ``field`` (see ``index.query.newest_docs``)."""
        return query.newest_docs(self.parts, field, limit, keep, floor)

    def path_key_docs(self, field: str, value: str) -> list[int]:
        """The documents whose ``key_path`` or ``key_name`` is ``value``."""
        return path_key_docs(self.searcher, self.parts, field, value)

    def docs_containing(self, field: str, needle: str) -> list[int]:
        """The live documents whose ``field`` contains the word-only ``needle`` (any case),
        ascending."""
        needle = needle.lower()
        found: list[int] = []
        for seg in self.parts:
            found.extend(seg.lift(segment_docs_containing(seg, field, needle)))
        return found

    def segments(self) -> Parts:
        """The view's segments, for a read that caches what it derives per segment (and applies
        each one's ``dead`` through ``lift``)."""
        return self.parts

    # -- what the index knows besides document sets ------------------------------------

    def has_term(self, field: str, value: str) -> bool:
        return query.has_term(self.parts, field, value)

    def terms_containing(self, field: str, needle: str) -> list[str]:
        return terms_containing(self.parts, field, needle)

    def holds(self, fields: tuple[str, ...], needle: str, substring: bool = True) -> bool:
        """Whether a live note holds the word ``needle`` in any of ``fields`` (inside a token too,
        with ``substring``)."""
        return vocabulary.holds(self.parts, fields, needle, substring)

    def closest_words(self, fields: tuple[str, ...], word: str) -> list[str]:
        """The words of ``fields`` closest to ``word`` ("did you mean"), the commonest first."""
        return vocabulary.closest_words(self.parts, fields, word)

    def doc_frequency(self, field: str, value: str) -> int:
        return query.doc_frequency(self.searcher, field, value)

    def doc_count(self) -> int:
        return query.doc_count(self.searcher)

    def record(self, docnum: int) -> dict[str, Any]:
        rec = self._records.get(docnum)
        if rec is None:
            rec = stored_record(self.searcher, docnum)
            if self.limited and not self.may_read(str(rec.get("path", ""))):
                raise NotFound("no such note")  # masked already; a second lock on the same door
            self._records[docnum] = rec
        return rec

    def column(self, field: str) -> Sequence[Any]:
        return column(self.searcher, field)

    def cells(self, field: str) -> Cells:
        """``field``'s values by document number, for a few documents: the column is read whole
        only once many are asked for (``index/cells.py``)."""
        return Cells(self.searcher, field)

    def lexicon(self, field: str) -> list[str]:
        """Every term of ``field`` in the index (a term only deleted notes hold included); for a
        limited caller only those held by a note it may see (a segment's lexicon lists the terms
        of every note in it, whoever may read them)."""
        def make() -> list[str]:
            found = query.lexicon(self.parts, field)
            return [t for t in found if self.has_term(field, t)] if self.limited else found

        return list(self.kept(("lexicon", field), make))

    def by_path(self, path: str) -> int | None:
        docs = self.term_docs("path", [path])
        return docs[0] if docs else None

    def sort_newest(self, docs: Iterable[int], field: str = "updated") -> list[int]:
        """``docs`` in the one newest-first order on ``field`` (``index.query.newest_first_key``)."""
        return query.sort_newest(self.searcher, docs, field)

    def body(self, record: dict[str, Any]) -> str:
        """The note's body as it is on disk now ('' when the file is gone or now leads outside the vault)."""
        if self._inside is None:
            self._inside = InsideCheck(self.vault.root)
        path = self.vault.root / record["fsrel"]
        if not self._inside(path):
            return ""
        if record.get("excalidraw"):
            return ""
        # Kept while the file is unchanged, as memory_read keeps its parse: the rows of every
        # search read their notes' bodies for the excerpts. Not a read that failed.
        stamp = settled_stamp(path)
        if stamp is None:
            return _body_now(record, path)[0]
        key = ("body", str(self.vault.root), record["fsrel"], *stamp)
        kept: str | None = CACHE.peek(key)
        if kept is not None:
            return kept
        body, readable = _body_now(record, path)
        if readable:
            CACHE.get_or_make(key, lambda: body, _text_size)
        return body


def settled_stamp(path: Path) -> VersionKey | None:
    """The ``version_key`` of the file at ``path``, to keep what is derived from it for as long as
    it stays; None when it cannot be stat'ed or changed in the last ``SETTLED_NS`` (a rewrite of
    the same size within one tick of the clock keeps its mtime, as git's index knows)."""
    key = version_key(path)
    if key is None or time.time_ns() - key[0] <= SETTLED_NS:
        return None
    return key


def _body_now(record: dict[str, Any], path: Path) -> tuple[str, bool]:
    """The body on disk now, and whether it was read (else the index's head stands in)."""
    data, _etag, _size, _mtime, problems = read_bytes(path)
    if problems and not data:
        return str(record.get("head", "")), False
    text, _ = decode(data)
    return split_frontmatter(text).body, True


def _text_size(text: str) -> int:
    return 2 * len(text) + 100


_SIZER = json.JSONEncoder(ensure_ascii=False, default=str)  # one for all: json.dumps makes one per call


def json_size(value: Any) -> int:
    return len(_SIZER.encode(value))


class Budget:
    """The one size-bounded page: rows go in while their JSON fits ``budget`` characters;
    the first row always goes in (a row too big alone is cut by its tool, never dropped)."""

    def __init__(self, budget: int = ROW_BUDGET) -> None:
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


def take_within(rows: list[Any], budget: int = ROW_BUDGET) -> int:
    """How many of ``rows`` fit in ``budget`` characters of JSON (at least one when any)."""
    page = Budget(budget)
    for i, row in enumerate(rows):
        if not page.take(row):
            return i
    return len(rows)
