"""A searcher that counts some documents as deleted: how a caller limited to part of the
vault sees only that part (served/context.py decides which part; docs/sharing.md).

Every read reaches documents through Whoosh's deletion bookkeeping: postings filtered by
the reader's ``deleted_docs_set``, ``live_ids`` from the segment's ``deleted_docs()``,
``is_deleted``, ``doc_count``. A masked segment reader answers all of them with the
segment's real deletions plus the hidden documents, so a query module cannot forget the
filter: a hidden note is, for that caller, a note that was never indexed.

The masked readers share the real readers' files (they are never closed) and their
segment's content caches (``segment_key`` is unchanged: what a segment holds does not
depend on who looks); a cache keyed by the deletions as well must add ``deletions_key`` (index/columns.py).
What stays visible of a hidden note: the terms of its fields in a lexicon (Whoosh keeps one
per segment, whoever may read the documents) and its weight in term statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from whoosh.reading import MultiReader, SegmentReader
from whoosh.searching import Searcher

from vault_mem.index.columns import segment_column, segment_key
from vault_mem.index.lru import CACHE, approx_size


class _MaskedSegment:
    """A segment's info with the hidden documents counted among its deletions."""

    def __init__(self, inner: Any, dead: frozenset[int]) -> None:
        self._inner = inner
        self._dead = dead

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def has_deletions(self) -> bool:
        return bool(self._dead)

    def deleted_count(self) -> int:
        return len(self._dead)

    def deleted_docs(self) -> Iterator[int]:
        return iter(self._dead)

    def is_deleted(self, docnum: int) -> bool:
        return docnum in self._dead

    def doc_count(self) -> int:
        return int(self._inner.doc_count_all()) - len(self._dead)


class MaskedReader(SegmentReader):  # type: ignore[misc]  # Whoosh has no type hints
    """One segment as a caller limited by ``mask`` sees it; shares ``inner``'s open files."""

    def __init__(self, inner: SegmentReader, hidden: frozenset[int], mask: str) -> None:
        self.__dict__.update(inner.__dict__)
        dead = inner.deleted_docs_set | hidden if hidden else inner.deleted_docs_set
        self.__dict__["deleted_docs_set"] = frozenset(dead)  # cached_property's slot
        self._dead = self.__dict__["deleted_docs_set"]
        self._masked_segment = _MaskedSegment(inner.segment(), self._dead)
        self.mask = mask

    def segment(self) -> Any:
        return self._masked_segment

    def segments(self) -> list[Any]:
        return [self._masked_segment]

    def has_deletions(self) -> bool:
        return bool(self._dead)

    def is_deleted(self, docnum: int) -> bool:
        return docnum in self._dead

    def deleted_docs(self) -> Iterator[int]:
        return iter(self._dead)

    def doc_count(self) -> int:
        return int(self.doc_count_all()) - len(self._dead)

    def all_doc_ids(self) -> Iterator[int]:
        dead = self._dead
        return (d for d in range(self.doc_count_all()) if d not in dead)

    def close(self) -> None:
        """Nothing to close: the files belong to the real reader."""


def masked_searcher(searcher: Searcher, mask: str, visible: Callable[[str], bool]) -> Searcher:
    """A searcher over the same segments in which every note whose vault-relative path
    ``visible`` refuses counts as deleted. ``mask`` names ``visible`` (the same mask string,
    the same function) for the per-segment cache of hidden documents. Never close it.

    Kept on ``searcher`` (a thread's own, renewed after a commit), like its column memos."""
    memo: dict[str, Searcher] | None = getattr(searcher, "_vault_mem_masked", None)
    if memo is None:
        memo = searcher._vault_mem_masked = {}
    found = memo.get(mask)
    if found is None:
        found = memo[mask] = _masked(searcher, mask, visible)
    return found


def _masked(searcher: Searcher, mask: str, visible: Callable[[str], bool]) -> Searcher:
    leaves = []
    for reader, _offset in searcher.reader().leaf_readers():
        if not isinstance(reader, SegmentReader):  # an empty index: nothing to hide
            return searcher
        leaves.append(MaskedReader(reader, _hidden(reader, mask, visible), mask))
    if not leaves:
        return searcher
    combined: Any = leaves[0] if len(leaves) == 1 else MultiReader(leaves, generation=searcher.reader().generation())
    return Searcher(combined, weighting=searcher.weighting, closereader=False)


def _hidden(reader: Any, mask: str, visible: Callable[[str], bool]) -> frozenset[int]:
    def make() -> frozenset[int]:
        return frozenset(d for d, path in enumerate(segment_column(reader, "path"))
                         if path is not None and not visible(path))

    return CACHE.get_or_make(("hidden", segment_key(reader), mask), make, approx_size)
