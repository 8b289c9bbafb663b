"""Per-document column values (path, dates, importance) for filtering and sorting.

Whoosh segments never change once written (deletions are kept apart), so each
segment's column is read once and cached by segment id; a searcher's view is the
concatenation over its segments, indexed by the searcher's document numbers.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Sequence
from typing import Any

from whoosh.searching import Searcher

from vault_mem.search.lru import CACHE
from vault_mem.search.segments import Parts, Segment, searcher_memo, segments

# Per field, the segments (key and offset) of the latest joined column and the column itself. Only
# the latest: a join is wanted until the next commit, and keeping each in the shared LRU (as
# ``View.kept`` keeps what a commit changes) would, under steady saves on a large vault, push a
# whole column a field a commit through it and crowd out the parsed notes and records.
_latest: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}


def column(searcher: Searcher, field: str) -> Sequence[Any]:
    """Values of a sortable ``field`` for every document number of ``searcher``.

    The concatenation is kept on the searcher: its segments never change while it lives (a
    thread's searcher is renewed after a commit), and joining 100,000 values costs a
    millisecond or two, which link resolution would otherwise pay per lookup. The call threads
    renew their searchers after the same commit, so the latest join of each field is also kept
    for the process and taken by every searcher of the same segments. It is a tuple: a tuple of
    strings and numbers is looked at once by Python's garbage collector and then left alone,
    while a list of 100,000 is walked at every collection that reaches it (docs/index-and-scale.md).
    """
    memo: dict[str, Sequence[Any]] = searcher_memo(searcher).setdefault("columns", {})
    values = memo.get(field)
    if values is not None:
        return values
    parts = segments(searcher)
    keys = tuple((seg.key, seg.offset) for seg in parts)
    latest = _latest.get(field)
    if latest is not None and latest[0] == keys:
        values = latest[1]
    else:
        joined: list[Any] = []
        for seg in parts:
            if len(joined) < seg.offset:
                joined.extend([None] * (seg.offset - len(joined)))
            joined.extend(segment_column(seg, field))
        values = tuple(joined)
        _latest[field] = (keys, values)
    memo[field] = values
    return values


def has_columns(searcher: Searcher, *fields: str) -> bool:
    """True when every one of ``fields`` is already joined on ``searcher`` (``column`` is then free)."""
    memo: dict[str, list[Any]] = searcher_memo(searcher).get("columns") or {}
    return all(field in memo for field in fields)


def stored_record(searcher: Searcher, docnum: int) -> dict[str, Any]:
    """The stored ``record`` of ``docnum`` (do not modify it: it is shared).

    Unpickling a record was most of a search row's and a backlink candidate's cost, paid
    again by each call thread; a segment's stored fields never change, so the record is
    kept in the process's LRU by segment and local document number, one copy for all.
    """
    located: tuple[list[Segment], list[int]] | None = searcher_memo(searcher).get("located")
    if located is None:  # kept with the searcher: its segments never change while it lives
        parts = segments(searcher)
        located = searcher_memo(searcher)["located"] = (parts, [seg.offset for seg in parts])
    parts, offsets = located
    seg = parts[bisect.bisect_right(offsets, docnum) - 1]
    local = docnum - seg.offset
    record: dict[str, Any] = CACHE.get_or_make(("record", seg.key, local),
                                               lambda: seg.reader.stored_fields(local)["record"], _record_size)
    return record


def _record_size(record: dict[str, Any]) -> int:
    """Bytes an unpickled record holds, roughly: a few times the note's own size."""
    many = sum(len(record.get(k) or ()) for k in ("tags", "aliases", "metadata", "paths", "problems"))
    return 3000 + 2 * len(str(record.get("head", ""))) + 400 * len(record.get("links") or ()) + 100 * many


def segment_column(seg: Segment, field: str) -> tuple[Any, ...]:
    """The values of a sortable ``field`` for every local number of one segment (cached; a tuple,
    for the garbage collector's sake, as ``column``)."""
    def read() -> tuple[Any, ...]:
        if seg.reader.has_column(field):
            return tuple(seg.reader.column_reader(field))
        return (None,) * seg.size

    return CACHE.get_or_make(("column", seg.key, field), read)


# -- path keys ---------------------------------------------------------------------------
# ``key_path`` and ``key_name`` (a note's lower-cased path and file name, without ".md") are
# what link resolution looks up most: a few per outgoing link, more per backlink candidate.
# A Whoosh term lookup costs a matcher per segment; both keys derive from the path column,
# so each segment gets a dict from key to its document numbers instead (built once, cached).

PATH_KEY_FIELDS = ("key_path", "key_name")


def path_key_docs(searcher: Searcher, parts: Parts, field: str, value: str) -> list[int]:
    """The live documents (as ``parts``, the searcher's segments, see them) whose ``field`` (one of
    PATH_KEY_FIELDS) equals ``value``."""
    memo: dict[str, list[dict[str, list[int]]]] = searcher_memo(searcher).setdefault("path_keys", {})
    tables = memo.get(field)
    if tables is None:  # kept on the searcher, like its columns: its segments do not change
        tables = memo[field] = [_path_keys(seg, field) for seg in segments(searcher)]
    found: list[int] = []
    for seg, table in zip(parts, tables, strict=True):
        hits = table.get(value)
        if hits:
            found.extend(seg.to_searcher_numbers(hits))
    return found


def _path_keys(seg: Segment, field: str) -> dict[str, list[int]]:
    from vault_mem.vault.fields import fold
    from vault_mem.vault.names import strip_md

    def make() -> dict[str, list[int]]:
        table: dict[str, list[int]] = {}
        for docnum, path in enumerate(segment_column(seg, "path")):
            if path is None:
                continue
            stem = strip_md(path)
            key = fold(stem if field == "key_path" else stem.rpartition("/")[2])
            table.setdefault(key, []).append(docnum)
        return table

    return CACHE.get_or_make(("path_keys", seg.key, field), make, _table_size)


def _table_size(table: dict[str, list[int]]) -> int:
    return sys.getsizeof(table) + sum(sys.getsizeof(key) + 88 for key in table)
