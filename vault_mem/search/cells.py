"""A few documents' values of a column without reading the column whole.

``columns.column`` joins a field's values for every document of a searcher: on a large vault
that is a noticeable pause per field the first time a segment is seen, and the first search after a
start (or after the watcher's commit added a segment) ranked its handful of candidates by
two such columns. ``LazyColumn`` answers ``values[docnum]`` exactly as the joined column would,
from whatever is already loaded (the searcher's joined column, a segment's cached column)
and otherwise from the segment's column reader, one document at a time. Past ``WHOLE_AFTER``
lookups it joins the column after all: for many documents that is the cheaper way.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from vault_mem.search.columns import column, has_columns
from vault_mem.search.lru import CACHE
from vault_mem.search.query import Searcher
from vault_mem.search.segments import segments


class LazyColumn:
    """One field's column over one searcher, read a cell at a time: ``values[docnum]`` is the
    document's value, as the column joined whole would give it, without joining it until many
    cells were asked for (see the module)."""

    def __init__(self, searcher: Searcher, field: str, whole_after: int) -> None:
        """``whole_after``: the cells asked for before the column is joined whole (the
        ``cells_whole_after`` setting)."""
        self.searcher = searcher
        self.field = field
        self.whole_after = whole_after
        self._whole: Sequence[Any] | None = column(searcher, field) if has_columns(searcher, field) else None
        self._seen: dict[int, Any] = {}
        self._segments = segments(searcher)
        self._offsets = [seg.offset for seg in self._segments]
        self._segment_values: dict[int, Any] = {}  # leaf index -> its cached column or column reader

    def __getitem__(self, docnum: int) -> Any:
        if self._whole is not None:
            return self._whole[docnum]
        seen = self._seen
        if docnum in seen:
            return seen[docnum]
        if len(seen) >= self.whole_after:
            self._whole = column(self.searcher, self.field)
            return self._whole[docnum]
        i = bisect.bisect_right(self._offsets, docnum) - 1
        value = self._leaf_values(i)[docnum - self._offsets[i]]
        seen[docnum] = value
        return value

    def _leaf_values(self, i: int) -> Any:
        values = self._segment_values.get(i)
        if values is None:
            seg = self._segments[i]
            values = CACHE.peek(("column", seg.key, self.field))  # as columns.segment_column caches it
            if values is None:
                values = (seg.reader.column_reader(self.field) if seg.reader.has_column(self.field)
                          else _Nones())
            self._segment_values[i] = values
        return values


class _Nones:
    """A segment without the column: every value is None (as ``columns.column`` has it)."""

    def __getitem__(self, docnum: int) -> None:
        return None
