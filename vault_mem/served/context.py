"""What every query runs against: the vault root, its index, and the server's settings."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from whoosh.query import Query, Term
from whoosh.searching import Searcher

from vault_mem.index.columns import column, live_docs, stored_record
from vault_mem.index.store import VaultIndex
from vault_mem.vault.frontmatter import split_frontmatter
from vault_mem.vault.paths import InsideCheck
from vault_mem.vault.reader import decode, read_bytes

MAX_ANSWER_CHARS = 40_000  # no answer's JSON passes this (docs/tools.md, "Bounded")
ROW_BUDGET = 36_000  # what rows may take, leaving room for the envelope


class Health(Protocol):
    """How the served vault is doing; the server's runtime keeps it (``runtime/lifecycle.py``)."""

    def indexing(self) -> dict[str, int] | None:
        """``{done, total}`` while a build runs, else None."""

    def check(self) -> None:
        """Raise VaultUnavailable when the vault cannot be served right now."""


class SteadyHealth:
    """A vault indexed before serving (tests, the CLI): never building, always there."""

    def indexing(self) -> dict[str, int] | None:
        return None

    def check(self) -> None:
        return None


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

    def check(self) -> None:
        self.health.check()


class View:
    """One consistent look at the index for the length of a call."""

    def __init__(self, vault: Vault, searcher: Searcher) -> None:
        self.vault = vault
        self.searcher = searcher
        self._records: dict[int, dict[str, Any]] = {}
        self._inside: InsideCheck | None = None  # the root and folders resolved once a call, not once a row

    def docs(self, query: Query) -> list[int]:
        return list(self.searcher.docs_for_query(query))

    def all_docs(self) -> list[int]:
        """Every live document, ascending (per segment from its deleted set: Whoosh's
        all_doc_ids asks is_deleted of every document)."""
        return live_docs(self.searcher)

    def record(self, docnum: int) -> dict[str, Any]:
        rec = self._records.get(docnum)
        if rec is None:
            rec = stored_record(self.searcher, docnum)
            self._records[docnum] = rec
        return rec

    def column(self, field: str) -> list[Any]:
        return column(self.searcher, field)

    def by_path(self, path: str) -> int | None:
        docs = self.docs(Term("path", path))
        return docs[0] if docs else None

    def sort_newest(self, docs: list[int], field: str = "updated") -> list[int]:
        """``docs`` in the order of ``newest_first_key`` on ``field`` (two stable sorts: faster)."""
        dates = self.column(field)
        paths = self.column("path")
        try:  # the columns' own item lookup as the key: no Python frame per document
            ordered = sorted(docs, key=paths.__getitem__)
            ordered.sort(key=dates.__getitem__, reverse=True)
        except TypeError:  # a document without a value (None) sorts as "" or 0
            ordered = sorted(docs, key=lambda d: paths[d] or "")
            ordered.sort(key=lambda d: dates[d] or 0, reverse=True)
        return ordered

    def body(self, record: dict[str, Any]) -> str:
        """The note's body as it is on disk now ('' when the file is gone or now leads outside the vault)."""
        if self._inside is None:
            self._inside = InsideCheck(self.vault.root)
        if not self._inside(self.vault.root / record["fsrel"]):
            return ""
        data, _etag, _size, _mtime, problems = read_bytes(self.vault.root / record["fsrel"])
        if problems and not data:
            return str(record.get("head", ""))
        text, _ = decode(data)
        return "" if record.get("excalidraw") else split_frontmatter(text).body


def newest_first_key(dates: list[Any], paths: list[Any]) -> Callable[[int], tuple[int, str]]:
    """The one newest-first order: date descending, ties by vault-relative path ascending
    (docs/tools.md, "Order"). ``dates`` and ``paths`` are columns; a missing date is oldest.
    Put other keys in front of it (a score, importance) to rank by them first."""
    return lambda d: (-(dates[d] or 0), paths[d] or "")


def json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


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
