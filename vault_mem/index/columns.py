"""Per-document column values (path, dates, importance) for filtering and sorting.

Whoosh segments never change once written (deletions are kept apart), so each
segment's column is read once and cached by segment id; a searcher's view is the
concatenation over its segments, indexed by the searcher's document numbers.
"""

from __future__ import annotations

from typing import Any

from whoosh.searching import Searcher

from vault_mem.index.lru import CACHE


def column(searcher: Searcher, field: str) -> list[Any]:
    """Values of a sortable ``field`` for every document number of ``searcher``."""
    values: list[Any] = []
    for reader, offset in searcher.reader().leaf_readers():
        if len(values) < offset:
            values.extend([None] * (offset - len(values)))
        values.extend(_segment_column(reader, field))
    return values


def segment_key(reader: Any) -> tuple[Any, ...]:
    """What identifies a segment's unchanging content across every index in the process.

    Whoosh draws segment ids from the ``random`` module, which tests (Hypothesis) reseed, so
    the same id can name segments of two indexes: the index folder and size are part of the key.
    """
    segment = reader.segment()
    if segment is None:
        return ("reader", id(reader))
    storage = getattr(reader, "_storage", None)
    folder = getattr(getattr(storage, "b", storage), "folder", None)
    return (folder, segment.segment_id(), reader.doc_count_all())


def _segment_column(reader: Any, field: str) -> list[Any]:
    def read() -> list[Any]:
        if reader.has_column(field):
            return list(reader.column_reader(field))
        return [None] * reader.doc_count_all()

    return CACHE.get_or_make(("column", segment_key(reader), field), read)
