"""Per-document column values (path, dates, importance) for filtering and sorting.

Whoosh segments never change once written (deletions are kept apart), so each
segment's column is read once and cached by segment id; a searcher's view is the
concatenation over its segments, indexed by the searcher's document numbers.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Callable
from typing import Any

from whoosh.searching import Searcher

from vault_mem.index.lru import CACHE, approx_size


def column(searcher: Searcher, field: str) -> list[Any]:
    """Values of a sortable ``field`` for every document number of ``searcher`` (do not modify).

    The concatenation is kept on the searcher: its segments never change while it lives (a
    thread's searcher is renewed after a commit), and joining 100,000 values costs a
    millisecond or two, which link resolution would otherwise pay per lookup.
    """
    memo: dict[str, list[Any]] | None = getattr(searcher, "_vault_mem_columns", None)
    if memo is None:
        memo = {}
        searcher._vault_mem_columns = memo
    values = memo.get(field)
    if values is not None:
        return values
    values = []
    for reader, offset in searcher.reader().leaf_readers():
        if len(values) < offset:
            values.extend([None] * (offset - len(values)))
        values.extend(_segment_column(reader, field))
    memo[field] = values
    return values


def has_columns(searcher: Searcher, *fields: str) -> bool:
    """True when every one of ``fields`` is already joined on ``searcher`` (``column`` is then free)."""
    memo: dict[str, list[Any]] = getattr(searcher, "_vault_mem_columns", None) or {}
    return all(field in memo for field in fields)


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


def stored_record(searcher: Searcher, docnum: int) -> dict[str, Any]:
    """The stored ``record`` of ``docnum`` (do not modify it: it is shared).

    Unpickling a record was most of a search row's and a backlink candidate's cost, paid
    again by each call thread; a segment's stored fields never change, so the record is
    kept in the process's LRU by segment and local document number, one copy for all.
    """
    leaves: tuple[list[Any], list[int]] | None = getattr(searcher, "_vault_mem_leaves", None)
    if leaves is None:  # kept on the searcher: its segments never change while it lives
        pairs = list(searcher.reader().leaf_readers())
        leaves = [reader for reader, _ in pairs], [offset for _, offset in pairs]
        searcher._vault_mem_leaves = leaves
    readers, offsets = leaves
    i = bisect.bisect_right(offsets, docnum) - 1
    reader, local = readers[i], docnum - offsets[i]
    record: dict[str, Any] = CACHE.get_or_make(("record", segment_key(reader), local),
                                               lambda: reader.stored_fields(local)["record"], _record_size)
    return record


def _record_size(record: dict[str, Any]) -> int:
    """Bytes an unpickled record holds, roughly (measured: 2.5-5 KB on ~1 KB notes)."""
    many = sum(len(record.get(k) or ()) for k in ("tags", "aliases", "metadata", "paths", "problems"))
    return 3000 + 2 * len(str(record.get("head", ""))) + 400 * len(record.get("links") or ()) + 100 * many


def segment_column(reader: Any, field: str) -> list[Any]:
    """The values of ``field`` for every document number of one segment (cached)."""
    return _segment_column(reader, field)


def _segment_column(reader: Any, field: str) -> list[Any]:
    def read() -> list[Any]:
        if reader.has_column(field):
            return list(reader.column_reader(field))
        return [None] * reader.doc_count_all()

    return CACHE.get_or_make(("column", segment_key(reader), field), read)


# -- path keys ---------------------------------------------------------------------------
# ``key_path`` and ``key_name`` (a note's lower-cased path and file name, without ".md") are
# what link resolution looks up most: a few per outgoing link, more per backlink candidate.
# A Whoosh term lookup costs a matcher per segment; both keys derive from the path column,
# so each segment gets a dict from key to its document numbers instead (built once, cached).

PATH_KEY_FIELDS = ("key_path", "key_name")


def path_key_docs(searcher: Searcher, field: str, value: str) -> list[int]:
    """Document numbers of ``searcher`` whose ``field`` (one of PATH_KEY_FIELDS) equals ``value``."""
    memo: dict[str, list[tuple[Any, int, dict[str, list[int]]]]] | None = getattr(
        searcher, "_vault_mem_path_keys", None)
    if memo is None:
        memo = {}
        searcher._vault_mem_path_keys = memo
    tables = memo.get(field)
    if tables is None:  # kept on the searcher, like its columns: its segments do not change
        tables = memo[field] = [(reader, offset, _path_keys(reader, field))
                                for reader, offset in searcher.reader().leaf_readers()]
    found: list[int] = []
    for reader, offset, table in tables:
        hits = table.get(value)
        if hits:
            dead = reader.deleted_docs_set if reader.has_deletions() else ()
            found.extend(offset + d for d in hits if d not in dead)
    return found


def _path_keys(reader: Any, field: str) -> dict[str, list[int]]:
    from vault_mem.index.schema import fold, strip_md

    def make() -> dict[str, list[int]]:
        table: dict[str, list[int]] = {}
        for docnum, path in enumerate(_segment_column(reader, "path")):
            if path is None:
                continue
            stem = strip_md(path)
            key = fold(stem if field == "key_path" else stem.rpartition("/")[2])
            table.setdefault(key, []).append(docnum)
        return table

    return CACHE.get_or_make(("path_keys", segment_key(reader), field), make, _table_size)


def _table_size(table: dict[str, list[int]]) -> int:
    return sys.getsizeof(table) + sum(sys.getsizeof(key) + 88 for key in table)


def term_docs(searcher: Searcher, field: str, values: list[str]) -> list[int]:
    """Document numbers of ``searcher`` holding any of the exact ``values`` in ``field``, sorted.

    What ``docs_for_query(Or([Term, ...]))`` answers, without Whoosh's query machinery: its union
    matcher walks each segment in blocks of document numbers whether or not a term occurs
    there (100 ms and more a call at 100,000 notes); a missing term costs one hash lookup here.
    """
    found: set[int] = set()
    for reader, offset in searcher.reader().leaf_readers():
        dead = reader.deleted_docs_set if reader.has_deletions() else ()
        for value in values:
            if (field, value) not in reader:
                continue
            found.update(offset + d for d in reader.postings(field, value).all_ids() if d not in dead)
    return sorted(found)


# -- whole-segment filters without a matcher per call ------------------------------------
# A Whoosh And/Or matcher walks every posting of a common term (status "active" holds nearly
# every note: 100,000 ids decoded per call at scale). What never changes in a segment is read
# once into the shared cache instead: a term's membership as one byte per document, and a
# column's document numbers in value order; deletions (which only grow) are applied per call.


def live_ids(reader: Any, offset: int = 0) -> list[int] | range:
    """The document numbers of one segment that are not deleted, ascending, plus ``offset``."""
    count = reader.doc_count_all()
    if not reader.has_deletions():
        return range(offset, offset + count)
    segment = reader.segment()
    if segment is None:
        return [offset + d for d in range(count) if not reader.is_deleted(d)]
    live: list[int] = []
    start = 0
    for dead in sorted(segment.deleted_docs()):
        live.extend(range(offset + start, offset + dead))
        start = dead + 1
    live.extend(range(offset + start, offset + count))
    return live


def live_docs(searcher: Searcher) -> list[int]:
    """Every document number of ``searcher`` that is not deleted, ascending."""
    docs: list[int] = []
    for reader, offset in searcher.reader().leaf_readers():
        docs.extend(live_ids(reader, offset))
    return docs


def term_mask(reader: Any, field: str, value: str) -> bytes:
    """One byte per document of one segment: 1 where ``field`` holds ``value`` (cached)."""
    def make() -> bytes:
        mask = bytearray(reader.doc_count_all())
        if (field, value) in reader:
            for docnum in reader.postings(field, value).all_ids():
                mask[docnum] = 1
        return bytes(mask)

    return CACHE.get_or_make(("term_mask", segment_key(reader), field, value), make)


def docs_where(searcher: Searcher, require: list[tuple[str, str]],
               field: str | None = None, values: list[str] | None = None) -> list[int]:
    """Live document numbers, ascending, holding every (field, value) of ``require`` and, when
    ``field`` is given, any of ``values`` in it: what ``docs_for_query(And([Or([Term(field, v),
    ...]), Term(*require[0]), ...]))`` answers."""
    found: list[int] = []
    for reader, offset in searcher.reader().leaf_readers():
        if field is None:
            candidates: list[int] | range = live_ids(reader)
        else:
            assert values is not None
            hits: set[int] = set()
            for value in values:
                if (field, value) in reader:
                    hits.update(reader.postings(field, value).all_ids())
            if not hits:
                continue
            dead = reader.deleted_docs_set if reader.has_deletions() else ()
            candidates = sorted(d for d in hits if d not in dead)
        for f, v in require:
            mask = term_mask(reader, f, v)
            candidates = [d for d in candidates if mask[d]]
            if not candidates:
                break
        found.extend(offset + d for d in candidates)
    return found


def _ordered(reader: Any, field: str) -> tuple[list[Any], list[int]]:
    """One segment's (values, document numbers) of a sortable ``field`` in value order, equal
    values by path descending (read backwards: newest first, ties by path ascending), documents
    without a value left out (cached)."""
    def make() -> tuple[list[Any], list[int]]:
        paths = _segment_column(reader, "path")
        pairs = [(v, d) for d, v in enumerate(_segment_column(reader, field)) if v is not None]
        pairs.sort(key=lambda p: paths[p[1]] or "", reverse=True)
        pairs.sort(key=lambda p: p[0])  # stable: equal values keep the path order
        return [v for v, _d in pairs], [d for _v, d in pairs]

    def size(value: tuple[list[Any], list[int]]) -> int:
        return approx_size(value[0]) + approx_size(value[1])

    return CACHE.get_or_make(("ordered", segment_key(reader), field), make, size)


def docs_in_range(searcher: Searcher, field: str, lo: Any | None, hi: Any | None) -> list[int]:
    """Live document numbers, ascending, whose ``field`` value is in ``[lo, hi)`` (None: open)."""
    found: list[int] = []
    for reader, offset in searcher.reader().leaf_readers():
        values, docs = _ordered(reader, field)
        start = 0 if lo is None else bisect.bisect_left(values, lo)
        end = len(values) if hi is None else bisect.bisect_left(values, hi)
        picked = sorted(docs[start:end])
        if reader.has_deletions():  # the reader's set: Whoosh's is_deleted is 3 calls a document
            dead = reader.deleted_docs_set
            picked = [d for d in picked if d not in dead]
        found.extend(map(offset.__add__, picked))
    return found



def newest_docs(searcher: Searcher, field: str, limit: int, keep: Callable[[int], bool] | None = None,
                floor: Any | None = None) -> list[int] | None:
    """Up to ``limit`` live documents with the highest ``field`` values, newest first, ties by path
    ascending (docs/tools.md, "Order"): only those ``keep`` accepts, with a value at least
    ``floor``. None when fewer than ``limit`` have a value (the caller ranks them all then).

    Each segment's order is cached (``_ordered``: read backwards it is this order), so this
    reads the first ``limit`` entries of each segment instead of ranking every document: the
    first ``limit`` overall are among them.
    """
    picked: list[tuple[Any, int]] = []
    for reader, offset in searcher.reader().leaf_readers():
        values, docs = _ordered(reader, field)
        dead = reader.deleted_docs_set if reader.has_deletions() else ()
        taken = 0
        for i in range(len(values) - 1, -1, -1):
            if taken == limit or (floor is not None and values[i] < floor):
                break
            doc = docs[i]
            if doc in dead or (keep is not None and not keep(offset + doc)):
                continue
            picked.append((values[i], offset + doc))
            taken += 1
    if len(picked) < limit:
        return None
    paths = column(searcher, "path")
    picked.sort(key=lambda p: (-p[0], paths[p[1]] or ""))
    return [doc for _value, doc in picked[:limit]]
