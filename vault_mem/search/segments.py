"""The segments of a searcher: where Whoosh's leaf readers and their deletions are read.

A searcher's document numbers run over its segments one after another: segment ``s`` holds
the searcher's numbers ``s.offset .. s.offset + s.size - 1`` (its local numbers ``0 ..
size - 1``). A segment never changes once written except that deletions are added to it
(kept apart, and only ever growing), so what is derived from its documents is cached by
``s.key`` and the deletions (``s.unseen``) are applied per call, here. Every document set of
``search/query.py`` goes through ``unseen`` (``to_searcher_numbers``, ``live``): it is what a
view does not see.

A segment tunes its lookups by the settings of the index whose searcher it belongs to: the index
hands them over with the searcher (``VaultIndex.searching`` calls ``attach_settings``), and every
segment of that searcher keeps them (``Segment.config``).
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any, TypeVar

from whoosh.searching import Searcher

from vault_mem.search.lru import CACHE
from vault_mem.search.whoosh.files import field_doc_frequencies, field_terms, postings
from vault_mem.search.whoosh.seam import reader_folder
from vault_mem.settings import Settings

V = TypeVar("V")
# A small segment keeps the terms of each field it is asked about as a set (``term_set_below`` in the
# settings): a term it lacks then costs a set lookup, not Whoosh's hashed probe of its terms file,
# for every segment and every term a call asks (docs/perf/read-caches.md). Larger ones, a vault's
# few big segments, are probed as before (their sets would hold hundreds of thousands).


_memos: weakref.WeakKeyDictionary[Searcher, dict[str, Any]] = weakref.WeakKeyDictionary()
_memos_lock = threading.Lock()


def searcher_memo(searcher: Searcher) -> dict[str, Any]:
    """A dict for what is derived from ``searcher``'s segments, living as long as it does."""
    memo = _memos.get(searcher)
    if memo is None:
        with _memos_lock:
            memo = _memos.setdefault(searcher, {})
    return memo


def attach_settings(searcher: Searcher, config: Settings) -> Searcher:
    """``searcher``, its segments tuned by ``config`` (the settings of the index that opened it),
    before any reads it."""
    searcher_memo(searcher)["config"] = config
    return searcher


def settings_of(searcher: Searcher) -> Settings:
    """The settings ``attach_settings`` gave ``searcher``."""
    config: Settings | None = searcher_memo(searcher).get("config")
    if config is None:
        raise RuntimeError("a searcher not opened by VaultIndex.searching: its segments have no settings "
                           "(attach_settings gives them)")
    return config


class Segment:
    """One segment as one searcher sees it (``reader`` is Whoosh's: for ``search/`` only), tuned by
    ``config``, the settings of the index that opened the searcher."""

    def __init__(self, reader: Any, offset: int, hidden: frozenset[int] = frozenset(),
                 mask: str | None = None, *, config: Settings) -> None:
        self.reader = reader
        self.offset = offset
        self.hidden = hidden  # local numbers a limited caller may not see (search/masked.py)
        self.mask = mask  # names what ``hidden`` hides; None: nothing
        self.config = config

    @cached_property
    def size(self) -> int:
        """Documents in the segment, deleted ones included."""
        return int(self.reader.doc_count_all())

    @cached_property
    def key(self) -> tuple[Any, ...]:
        """What identifies the segment's unchanging content across every index in the process.

        A segment id is unique within one index only: an index folder copied elsewhere (a
        test's fixture, a backup) keeps its ids, so the index folder and size are part of it."""
        segment = self.reader.segment()
        if segment is None:
            return ("reader", id(self.reader))
        return (reader_folder(self.reader), segment.segment_id(), self.size)

    @cached_property
    def unseen(self) -> frozenset[int] | set[int]:
        """The local numbers this view does not see: those deleted (the reader's own set: Whoosh
        caches it per reader, and its ``is_deleted`` costs three calls a document), and those
        hidden from this view's caller."""
        deleted = self.reader.deleted_docs_set if self.reader.has_deletions() else frozenset()
        return deleted | self.hidden if self.hidden else deleted

    @property
    def deletions(self) -> tuple[int, str | None]:
        """What ``unseen`` depends on, for a cache key with ``key``: how many documents are deleted
        (only ever grows) and the mask hiding others from a limited caller."""
        segment = self.reader.segment()
        return (segment.deleted_count() if segment is not None else -1, self.mask)

    def live_local(self) -> list[int] | range:
        """The local numbers not deleted, ascending."""
        if not self.unseen:
            return range(self.size)
        live: list[int] = []
        start = 0
        for gone in sorted(self.unseen):
            live.extend(range(start, gone))
            start = gone + 1
        live.extend(range(start, self.size))
        return live

    def live(self) -> list[int] | range:
        """The searcher's numbers of the segment's live documents, ascending."""
        local = self.live_local()
        if isinstance(local, range):
            return range(self.offset + local.start, self.offset + local.stop)
        return [self.offset + d for d in local]

    def to_searcher_numbers(self, docs: Iterable[int]) -> list[int]:
        """Local numbers ``docs`` as the searcher numbers them, in their order, the ``unseen`` ones
        left out."""
        unseen, offset = self.unseen, self.offset
        if not unseen:
            return list(map(offset.__add__, docs))
        return [offset + d for d in docs if d not in unseen]

    def to_searcher_numbers_lazily(self, docs: Iterable[int]) -> Iterator[int]:
        """``to_searcher_numbers``, read only as far as the caller reads (a listing merged up to its
        page)."""
        unseen, offset = self.unseen, self.offset
        if not unseen:
            return (offset + d for d in docs)
        return (offset + d for d in docs if d not in unseen)

    def to_searcher_items(self, values: Mapping[int, V]) -> Iterator[tuple[int, V]]:
        """``(searcher's number, value)`` for the documents this view sees of a map keyed by local
        number."""
        unseen, offset = self.unseen, self.offset
        if not unseen:
            return ((offset + d, v) for d, v in values.items())
        return ((offset + d, v) for d, v in values.items() if d not in unseen)

    def term_docs(self, field: str, value: str) -> list[int]:
        """The local numbers whose ``field`` holds ``value``, ascending, some deleted ones perhaps
        among them (``to_searcher_numbers`` applies ``unseen``). A long list is kept in the shared
        cache: a segment's terms never change, and deletions only grow (an agent's name in every
        call's ``lost``, a common tag). Whether the segment holds ``value`` at all is a set lookup in a
        small segment (``term_set_below``), a probe of its terms file in a large one."""
        config = self.config
        terms = self._terms(field) if self.size <= config.term_set_below else None
        if terms is not None:
            if value not in terms:
                return []
        elif (field, value) not in self.reader:
            return []
        if self.size < config.cached_postings_from:
            return [doc for doc, _freq in postings(self.reader, field, value)]
        key = ("term_docs", self.key, field, value)
        kept: list[int] | None = CACHE.peek(key)
        if kept is not None:
            return kept
        docs = [doc for doc, _freq in postings(self.reader, field, value)]
        return CACHE.get_or_make(key, lambda: docs) if len(docs) >= config.cached_postings_from else docs

    def terms(self, field: str) -> frozenset[str]:
        """Every term of ``field`` in this segment, for a field of few terms (kept as ``_terms``)."""
        return self._terms(field) or frozenset()

    def _terms(self, field: str) -> frozenset[str] | None:
        """The terms of ``field`` in this (small) segment, None when they cannot be read as text:
        made once for every searcher and thread (the shared cache), then kept on this object for
        its searcher's life (no lock)."""
        if field not in self._field_terms:
            self._field_terms[field] = CACHE.get_or_make(("field terms", self.key, field),
                                                         lambda: _terms_of(self.reader, field), _set_size)
        return self._field_terms[field]

    @cached_property
    def _field_terms(self) -> dict[str, frozenset[str] | None]:
        return {}

    def doc_frequencies(self, field: str) -> Mapping[str, int]:
        """How many documents of this segment hold each term of ``field``, deleted ones too (empty
        for a field it lacks): read in one walk into the shared cache, since a segment never
        changes, so that a question about many words costs a dictionary look-up for each."""
        return CACHE.get_or_make(("field df", self.key, field), lambda: _doc_frequencies_of(self.reader, field),
                                 _table_size)


Parts = Sequence[Segment]  # a searcher's segments, as a view sees them


def segments(searcher: Searcher) -> list[Segment]:
    """The searcher's segments in document-number order (kept with it: they do not change)."""
    memo = searcher_memo(searcher)
    found: list[Segment] | None = memo.get("segments")
    if found is None:
        config = settings_of(searcher)
        found = memo["segments"] = [Segment(reader, offset, config=config)
                                    for reader, offset in searcher.reader().leaf_readers()]
    return found


def _terms_of(reader: Any, field: str) -> frozenset[str] | None:
    try:
        return frozenset(field_terms(reader, field))
    except (UnicodeDecodeError, KeyError, ValueError):  # not text, or not a field of this segment
        return None


def _doc_frequencies_of(reader: Any, field: str) -> dict[str, int]:
    try:
        return field_doc_frequencies(reader, field)
    except (UnicodeDecodeError, KeyError, ValueError):  # not text, or not a field of this segment
        return {}


def _table_size(table: dict[str, int]) -> int:
    return sys.getsizeof(table) + sum(sys.getsizeof(term) for term in table)


def _set_size(terms: frozenset[str] | None) -> int:
    return 16 if terms is None else sys.getsizeof(terms) + sum(sys.getsizeof(term) for term in terms)
