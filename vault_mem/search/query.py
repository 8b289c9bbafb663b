"""The index's query API: what everything above ``search/`` asks of a searcher, by document
number, without Whoosh (``served/``, ``reads/`` and ``runtime/`` never import it).

Every function answers live documents only, ascending unless it says otherwise, and never
goes through Whoosh's query matchers: a union or intersection matcher walks each segment in
blocks whether or not a term occurs there, a cost that grows with the vault; a term
lookup here costs a hash lookup per segment, and what never changes in a segment (a term's
membership, a column's order) is read once into the shared cache, deletions applied per call.

The one newest-first order (docs/tools.md, "Order") is ``newest_first``: date descending,
ties by vault-relative path ascending, a missing date oldest.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, Protocol

from whoosh.lang.snowball.english import EnglishStemmer
from whoosh.searching import Searcher as Searcher  # re-exported: the type the layers above name

from vault_mem.search.columns import column, segment_column
from vault_mem.search.lru import CACHE, approx_size
from vault_mem.search.segments import Parts, Segment, segments

english_stem: Callable[[str], str] = EnglishStemmer().stem  # the Snowball English stemmer


class ByDoc(Protocol):
    """Values by document number: a column (a list), or ``search/cells.py``'s few of one."""

    def __getitem__(self, docnum: int, /) -> Any: ...


def doc_count(searcher: Searcher) -> int:
    """How many live documents the searcher holds."""
    return int(searcher.doc_count())


def live_docs(parts: Parts) -> list[int]:
    """Every live document."""
    docs: list[int] = []
    for seg in parts:
        docs.extend(seg.live())
    return docs


def term_docs(parts: Parts, field: str, values: Iterable[str]) -> list[int]:
    """The documents holding any of the exact ``values`` in ``field``."""
    values = list(values)
    found: set[int] = set()
    for seg in parts:
        for value in values:
            found.update(seg.to_searcher_numbers(seg.term_docs(field, value)))
    return sorted(found)


def has_term(parts: Parts, field: str, value: str) -> bool:
    """Whether any live document holds ``value`` in ``field``."""
    return any(seg.to_searcher_numbers(seg.term_docs(field, value)) for seg in parts)


def lexicon(parts: Parts, field: str) -> list[str]:
    """Every term of ``field`` in any segment, sorted (a term only deleted documents hold included).

    From each segment's terms, read once into the shared cache (``Segment.terms``), not from
    Whoosh's lexicon of the whole index, which merges every segment's terms file term by term on
    each call: under steady saves, with many segments, that was most of a ``mem_recall``."""
    found: set[str] = set()
    for seg in parts:
        found.update(seg.terms(field))
    return sorted(found)


def doc_frequency(searcher: Searcher, field: str, value: str) -> int:
    """How many documents hold ``value`` in ``field``, as the segments' term infos count (deleted ones too)."""
    return int(searcher.reader().doc_frequency(field, value))


def prefix_records(searcher: Searcher, field: str, prefix: str) -> list[dict[str, Any]]:
    """The stored fields of every live document with a term of ``field`` starting with ``prefix``."""
    found: set[int] = set()
    for seg in segments(searcher):  # (not a view's: what the index holds, for the watcher)
        for raw in seg.reader.expand_prefix(field, prefix):
            term = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            found.update(seg.to_searcher_numbers(seg.term_docs(field, term)))
    return [searcher.stored_fields(d) for d in sorted(found)]


def term_mask(seg: Segment, field: str, value: str) -> bytes:
    """One byte per local number of one segment: 1 where ``field`` holds ``value`` (cached)."""
    def make() -> bytes:
        mask = bytearray(seg.size)
        for docnum in seg.reader.postings(field, value).all_ids() if (field, value) in seg.reader else ():
            mask[docnum] = 1
        return bytes(mask)

    return CACHE.get_or_make(("term_mask", seg.key, field, value), make)


def docs_where(parts: Parts, require: list[tuple[str, str]],
               field: str | None = None, values: list[str] | None = None) -> list[int]:
    """The documents holding every (field, value) of ``require`` and, when ``field`` is given,
    any of ``values`` in it."""
    found: list[int] = []
    for seg in parts:
        if field is None:
            candidates: list[int] | range = seg.live_local()
        else:
            assert values is not None
            hits: set[int] = set()
            for value in values:
                hits.update(seg.term_docs(field, value))
            if not hits:
                continue
            candidates = sorted(hits - seg.unseen) if seg.unseen else sorted(hits)
        for f, v in require:
            mask = term_mask(seg, f, v)
            candidates = [d for d in candidates if mask[d]]
            if not candidates:
                break
        found.extend(seg.offset + d for d in candidates)
    return found


def newest_first(date: Any, path: Any) -> tuple[int, str]:
    """The one newest-first order's key of one document: ``date`` descending (missing: oldest),
    then ``path`` ascending (missing: ``""``). Every newest-first order is made from it."""
    return -(date or 0), path or ""


def newest_first_key(dates: Sequence[Any], paths: Sequence[Any]) -> Callable[[int], tuple[int, str]]:
    """The one newest-first order as a sort key over columns ``dates`` and ``paths``."""
    return lambda d: newest_first(dates[d], paths[d])


def ranked_newest_key(first: Sequence[Any] | dict[int, Any], dates: ByDoc,
                      paths: ByDoc) -> Callable[[int], tuple[Any, int, str]]:
    """Highest ``first`` (a column or a score map; missing is 0) ahead of the newest-first order."""
    if isinstance(first, dict):
        get = first.get
        return lambda d: (-get(d, 0), *newest_first(dates[d], paths[d]))
    return lambda d: (-(first[d] or 0), *newest_first(dates[d], paths[d]))


def sort_newest(searcher: Searcher, docs: Iterable[int], field: str = "updated") -> list[int]:
    """``docs`` in ``newest_first`` order on ``field`` (two stable sorts give that order without a
    key per document)."""
    dates = column(searcher, field)
    paths = column(searcher, "path")
    try:  # the columns' own item lookup as the key: no Python frame per document
        ordered = sorted(docs, key=paths.__getitem__)
        ordered.sort(key=dates.__getitem__, reverse=True)
    except TypeError:  # a document without a value (None) sorts as "" or 0
        ordered = sorted(docs, key=lambda d: paths[d] or "")
        ordered.sort(key=lambda d: dates[d] or 0, reverse=True)
    return ordered


class SegmentOrder(NamedTuple):
    """One segment's documents in the newest-first order on one field, made once (one sort) and
    cached by ``segment_order``: what never changes in a segment."""

    values: list[Any]  # the field's values in ascending order, documents without one left out
    docs: list[int]  # their local numbers: read backwards, newest first
    positions: list[int]  # each local number's place in the newest-first order of every document


def places(order: list[int]) -> list[int]:
    """Each local number's place in ``order`` (an ordering of every local number of a segment)."""
    placed = [0] * len(order)
    for place, doc in enumerate(order):
        placed[doc] = place
    return placed


def segment_order(seg: Segment, field: str) -> SegmentOrder:
    """The segment's ``SegmentOrder`` on a sortable ``field`` (cached by ``seg.key``: it holds every
    document whoever looks; callers skip ``seg.unseen``, which holds deletions and a caller's mask)."""
    def make() -> SegmentOrder:
        dates = segment_column(seg, field)
        paths = segment_column(seg, "path")
        order = sorted(range(len(paths)), key=newest_first_key(dates, paths))
        docs = [d for d in reversed(order) if dates[d] is not None]
        return SegmentOrder([dates[d] for d in docs], docs, places(order))

    def size(value: SegmentOrder) -> int:
        return approx_size(value.values) + approx_size(value.docs) + approx_size(value.positions)

    return CACHE.get_or_make(("newest order", seg.key, field), make, size)


def docs_in_range(parts: Parts, field: str, lo: Any | None, hi: Any | None) -> list[int]:
    """The documents whose ``field`` value is in ``[lo, hi)`` (None: open)."""
    found: list[int] = []
    for seg in parts:
        values, docs, _positions = segment_order(seg, field)
        start = 0 if lo is None else bisect.bisect_left(values, lo)
        end = len(values) if hi is None else bisect.bisect_left(values, hi)
        found.extend(seg.to_searcher_numbers(sorted(docs[start:end])))
    return found


def newest_docs(parts: Parts, field: str, limit: int, keep: Callable[[int], bool] | None = None,
                floor: Any | None = None) -> list[int] | None:
    """Up to ``limit`` documents with the highest ``field`` values, in ``newest_first_key`` order:
    only those ``keep`` accepts, with a value at least ``floor``. None when fewer than ``limit``
    have a value (the caller ranks them all then).

    Each segment's order is cached (``segment_order``), so this
    reads the first ``limit`` entries of each segment instead of ranking every document.
    """
    picked: list[tuple[Any, str, int]] = []  # (date, path, document)
    for seg in parts:
        values, docs, _positions = segment_order(seg, field)
        paths = segment_column(seg, "path")
        unseen, offset = seg.unseen, seg.offset
        taken = 0
        for i in range(len(values) - 1, -1, -1):
            if taken == limit or (floor is not None and values[i] < floor):
                break
            doc = docs[i]
            if doc in unseen or (keep is not None and not keep(offset + doc)):
                continue
            picked.append((values[i], paths[doc] or "", offset + doc))
            taken += 1
    if len(picked) < limit:
        return None
    picked.sort(key=lambda p: newest_first(p[0], p[1]))
    return [doc for _date, _path, doc in picked[:limit]]
