"""One consistent look at the index, as one reader may see it: the engine's answer to every
question a read asks (which notes hold a term, lie in a range, come newest first, score best
for some words; a note's stored record; a field's column or lexicon).

A snapshot is made for one call over one searcher. For a reader limited to some folders
(``visible``, named by ``mask``) the notes it may not read count among each segment's unseen
documents (``search/masked.py``), so every document set it gives is already filtered and a
hidden note looks like one never indexed; ``record`` refuses one as well, should a document
number reach it some other way. Document numbers are the searcher's; sets are ascending.

What is derived from the segments is cached here, keyed by the segments and their deletions
(``cached``): nothing above the engine walks segments or composes cache keys.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from vault_mem.errors import NotFound
from vault_mem.search import query, vocabulary
from vault_mem.search.cells import LazyColumn
from vault_mem.search.columns import column, path_key_docs, segment_column, stored_record
from vault_mem.search.lru import CACHE, approx_size
from vault_mem.search.masked import masked_segments
from vault_mem.search.query import Searcher, newest_first_key, ranked_newest_key
from vault_mem.search.segments import Parts, Segment, segments
from vault_mem.search.substring import segment_docs_containing, terms_containing
from vault_mem.settings import Settings
from vault_mem.vault.fields import fold

if TYPE_CHECKING:
    from vault_mem.search.store import VaultIndex

V = TypeVar("V")
SortKey = Callable[[int], tuple[Any, ...]]


@contextmanager
def reading(index: VaultIndex, mask: str | None = None,
            visible: Callable[[str], bool] | None = None) -> Iterator[Snapshot]:
    """A snapshot of ``index`` as it is committed now, for one call (``mask`` and ``visible``: what
    a limited reader may see, as ``Snapshot`` takes them). The one way above the engine to look at
    the index: the searcher under it stays behind the face."""
    with index.searching() as searcher:
        yield Snapshot(searcher, mask, visible, config=index.config)


def note_count(index: VaultIndex) -> int:
    """How many notes ``index`` holds now, every reader's included."""
    with index.searching() as searcher:
        return int(query.doc_count(searcher))


def records_under(index: VaultIndex, prefix: str) -> list[dict[str, Any]]:
    """The stored records of every note ``index`` holds now whose path starts with ``prefix``
    (every reader's included: for the watcher, which follows a folder's moves and removals)."""
    with index.searching() as searcher:
        return [fields["record"] for fields in query.prefix_records(searcher, "path", prefix)]


class Snapshot:
    """The index as one call of one reader sees it (see the module). Made by ``reading``; not a
    class to subclass (``served/context.py:View`` holds one)."""

    def __init__(self, searcher: Searcher, mask: str | None = None,
                 visible: Callable[[str], bool] | None = None, *, config: Settings) -> None:
        self._searcher = searcher
        self.config = config  # the index's settings: every read of this call tunes by them
        self.limited = visible is not None
        self._mask = mask
        self._visible = visible
        self._parts: Parts = (masked_segments(searcher, mask or "", visible) if visible is not None
                             else segments(searcher))
        self._records: dict[int, dict[str, Any]] = {}
        self._state: tuple[Any, ...] | None = None

    def fresh(self) -> Snapshot:
        """A snapshot of the same commit for the same reader, without the records this one read
        (a long walk takes a fresh one now and then, so that what it read can be dropped)."""
        return Snapshot(self._searcher, self._mask, self._visible, config=self.config)

    def cached(self, name: Hashable, make: Callable[[], V]) -> V:
        """``make()``, cached in the process's shared cache for as long as the snapshot's segments and
        their deletions (and what its reader may not see) stay: for what every call asks and only
        a commit changes."""
        if self._state is None:
            self._state = tuple((segment.key, segment.deletions) for segment in self._parts)
        return CACHE.get_or_make((name, self._state), make)

    # -- document sets ----------------------------------------------------------------

    def all_docs(self) -> list[int]:
        """Every live document."""
        return query.live_docs(self._parts)

    def term_docs(self, field: str, values: Iterable[str]) -> list[int]:
        """The documents holding any of the exact ``values`` in ``field``."""
        return query.term_docs(self._parts, field, values)

    def docs_where(self, require: list[tuple[str, str]], field: str | None = None,
                   values: list[str] | None = None) -> list[int]:
        """The documents holding every (field, value) of ``require`` and, when ``field`` is
        given, any of ``values`` in it."""
        return query.docs_where(self._parts, require, field, values)

    def docs_in_range(self, field: str, lo: Any | None, hi: Any | None) -> list[int]:
        """The documents whose sortable ``field`` is in ``[lo, hi)`` (None: open)."""
        return query.docs_in_range(self._parts, field, lo, hi)

    def newest(self, field: str, limit: int, keep: Callable[[int], bool] | None = None,
               floor: Any | None = None) -> list[int] | None:
        """Up to ``limit`` documents newest first on ``field`` (see ``index.query.newest_docs``)."""
        return query.newest_docs(self._parts, field, limit, keep, floor)

    def path_key_docs(self, field: str, value: str) -> list[int]:
        """The documents whose ``key_path`` or ``key_name`` is ``value``."""
        return path_key_docs(self._searcher, self._parts, field, value)

    def docs_containing(self, field: str, needle: str) -> list[int]:
        """The live documents whose ``field`` contains the word-only ``needle`` (any case), ascending."""
        needle = needle.lower()
        found: list[int] = []
        for seg in self._parts:
            found.extend(seg.to_searcher_numbers(segment_docs_containing(seg, field, needle)))
        return found

    def written_by(self, agent: str) -> frozenset[str]:
        """The paths of the live notes indexed with ``agent`` as their writer. Each segment's share
        is kept by the segment (its documents never change), so after a commit only the new
        segment is read."""
        def make() -> frozenset[str]:
            there: set[str] = set()
            for segment in self._parts:
                unseen = segment.unseen
                there.update(path for docnum, path in _agent_paths(segment, agent) if docnum not in unseen)
            return frozenset(there)

        return self.cached(("written by", agent), make)

    # -- orders -----------------------------------------------------------------------

    def sort_newest(self, docs: Iterable[int], field: str = "updated") -> list[int]:
        """``docs`` in the one newest-first order on ``field`` (``index.query.newest_first_key``)."""
        return query.sort_newest(self._searcher, docs, field)

    def listing_key(self, by_importance: bool) -> SortKey:
        """The listing order as a sort key: newest first on ``created`` (then path), behind the
        highest importance when ``by_importance``."""
        return _order_key(self.column("created"), self.column("path"),
                          self.column("importance") if by_importance else None)

    def in_listing_order(self, docs: list[int], by_importance: bool) -> Iterator[int]:
        """``docs`` (live notes, in any order) in listing order, lazily: each segment's share sorted
        by its place in the segment's cached order, the segments merged only as far as the caller
        reads."""
        ordered = sorted(docs)
        streams = []
        start = 0
        for seg in self._parts:
            end = bisect.bisect_left(ordered, seg.offset + seg.size, start)
            if end > start:
                rank = _segment_listing(seg, by_importance).rank
                offset = seg.offset
                local = sorted((d - offset for d in ordered[start:end]), key=rank.__getitem__)
                streams.append([offset + d for d in local])
            start = end
        if len(streams) == 1:
            return iter(streams[0])
        return heapq.merge(*streams, key=self.listing_key(by_importance))

    def every_in_listing_order(self, by_importance: bool) -> Iterator[int]:
        """Every live note in listing order, lazily (each segment's order is cached)."""
        streams = [seg.to_searcher_numbers_lazily(_segment_listing(seg, by_importance).order) for seg in self._parts]
        return heapq.merge(*streams, key=self.listing_key(by_importance))

    # -- what the index knows besides document sets ------------------------------------

    def has_term(self, field: str, value: str) -> bool:
        return query.has_term(self._parts, field, value)

    def terms_containing(self, field: str, needle: str) -> list[str]:
        return terms_containing(self._parts, field, needle)

    def has_word(self, fields: tuple[str, ...], needle: str, substring: bool = True) -> bool:
        """Whether a live note has the word ``needle`` in any of ``fields`` (inside a token too,
        with ``substring``)."""
        return vocabulary.has_word(self._parts, fields, needle, substring)

    def closest_words(self, fields: tuple[str, ...], word: str) -> list[str]:
        """The words of ``fields`` closest to ``word`` ("did you mean"), the commonest first."""
        return vocabulary.closest_words(self._parts, fields, word, self.config.suggestions)

    def doc_frequency(self, field: str, value: str) -> int:
        return query.doc_frequency(self._searcher, field, value)

    def doc_frequencies(self, field: str) -> Callable[[str], int]:
        """``doc_frequency`` of ``field`` as a function of the term, for a caller asking about many
        terms: each segment's counts are read once (shared by every snapshot holding it), so a term
        costs a dictionary look-up per segment."""
        tables = [segment.doc_frequencies(field) for segment in self._parts]
        return lambda term: sum(table.get(term, 0) for table in tables)

    def doc_count(self) -> int:
        return query.doc_count(self._searcher)

    def segment_count(self) -> int:
        """How many segments the committed index is made of (each commit adds one until a fold or a
        merge takes several into one)."""
        return len(self._parts)

    def record(self, docnum: int) -> dict[str, Any]:
        rec = self._records.get(docnum)
        if rec is None:
            rec = stored_record(self._searcher, docnum)
            if self._visible is not None and not self._visible(str(rec.get("path", ""))):
                raise NotFound("no such note")  # masked already; a second lock on the same door
            self._records[docnum] = rec
        return rec

    def column(self, field: str) -> Sequence[Any]:
        return column(self._searcher, field)

    def cells(self, field: str) -> LazyColumn:
        """``field``'s values by document number, for a few documents: the column is read whole
        only once many are asked for (``search/cells.py``)."""
        return LazyColumn(self._searcher, field, self.config.cells_whole_after)

    def lexicon(self, field: str) -> list[str]:
        """Every term of ``field`` in the index (a term only deleted notes hold included); for a
        limited reader only those held by a note it may see (a segment's lexicon lists the terms
        of every note in it, whoever may read them)."""
        def make() -> list[str]:
            found = query.lexicon(self._parts, field)
            return [t for t in found if self.has_term(field, t)] if self.limited else found

        return list(self.cached(("lexicon", field), make))

    def by_path(self, path: str) -> int | None:
        docs = self.term_docs("path", [path])
        return docs[0] if docs else None

    def indexed_version(self, docnum: int) -> tuple[Any, int]:
        """What names the indexed version of the note ``docnum`` across calls and threads, without
        reading its stored record: its segment (which never changes) and its place there."""
        offsets = self.cached("offsets", lambda: [seg.offset for seg in self._parts])
        at = bisect.bisect_right(offsets, docnum) - 1
        seg = self._parts[at]
        return seg.key, docnum - seg.offset

    def folder_counts(self) -> dict[str, tuple[int, int, int]]:
        """The live notes by their own folder: (active, archived, newest ``updated``)."""
        own: dict[str, list[int]] = {}
        for seg in self._parts:
            for folder, (active, arch, newest) in _segment_folders(seg).items():
                entry = own.setdefault(folder, [0, 0, 0])
                entry[0] += active
                entry[1] += arch
                entry[2] = max(entry[2], newest)
        return {folder: (a, b, c) for folder, (a, b, c) in own.items()}


def _order_key(created: Sequence[Any], paths: Sequence[Any], importance: Sequence[Any] | None) -> SortKey:
    if importance is None:
        return newest_first_key(created, paths)
    return ranked_newest_key(importance, created, paths)


def searcher_of(snapshot: Snapshot) -> Searcher:
    """The Whoosh searcher under ``snapshot``: for the engine's own modules, never above the face."""
    return snapshot._searcher


def parts_of(snapshot: Snapshot) -> Parts:
    """The segments ``snapshot`` reads, as its reader may see them: for the engine's own modules."""
    return snapshot._parts


class _Listing(NamedTuple):
    """One segment's listing order, both ways, made together and cached as one entry: a filtered
    listing sorts by ``rank``, an unfiltered one reads ``order``, and deriving either from the
    other would cost a pass over the whole segment at each call."""

    order: list[int]  # the local numbers in listing order
    rank: list[int]  # each local number's place in it


def _segment_listing(seg: Segment, by_importance: bool) -> _Listing:
    """One segment's ``_Listing`` (cached)."""
    def make() -> _Listing:
        created = segment_column(seg, "created")
        key = _order_key(created, segment_column(seg, "path"),
                         segment_column(seg, "importance") if by_importance else None)
        order = sorted(range(len(created)), key=key)
        return _Listing(order, query.places(order))

    def size(value: _Listing) -> int:
        return approx_size(value.order) + approx_size(value.rank)

    return CACHE.get_or_make(("listing order", seg.key, by_importance), make, size)


def _segment_folders(seg: Segment) -> dict[str, tuple[int, int, int]]:
    """One segment's live notes by own folder: (active, archived, newest updated), cached by the
    segment and its deletions (which only ever grow)."""
    def count() -> dict[str, tuple[int, int, int]]:
        paths = segment_column(seg, "path")
        updated = segment_column(seg, "updated")
        archived = set(seg.term_docs("status", "archived"))
        own: dict[str, list[int]] = {}
        for doc in seg.live_local():
            path = paths[doc]
            if not path:
                continue
            entry = own.setdefault(path.rpartition("/")[0], [0, 0, 0])
            entry[doc in archived] += 1
            entry[2] = max(entry[2], updated[doc] or 0)
        return {folder: (a, b, c) for folder, (a, b, c) in own.items()}

    return CACHE.get_or_make(("folders", seg.key, seg.deletions), count)


def _agent_paths(segment: Segment, agent: str) -> list[tuple[int, str]]:
    """(local number, path) of every document of ``segment`` with ``agent`` as its writer, deleted
    ones included (cached: a segment's documents never change)."""
    def make() -> list[tuple[int, str]]:
        paths = segment_column(segment, "path")
        return [(docnum, paths[docnum]) for docnum in segment.term_docs("agent", fold(agent))]

    return CACHE.get_or_make(("agent paths", segment.key, agent), make)
