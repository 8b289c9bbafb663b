"""A segment's documents grouped by a value, each group in the order ties take.

Pruned ranking (``search/topk.py``) walks a term's notes from the greatest contribution down
and, among notes that contribute the same, in the order ties are broken: ``updated`` newest
first, then the path (docs/ranking.md; a missing date is oldest, a missing path ``""``).
That order within one segment never changes (segments are immutable, deletions are kept
apart), so each segment's positions in it are computed once and cached; across segments
the caller merges on the same key, ``query.newest_first``.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Mapping
from typing import TypeVar

from vault_mem.search.columns import segment_column
from vault_mem.search.lru import CACHE
from vault_mem.search.query import newest_first
from vault_mem.search.segments import Segment

K = TypeVar("K", bound=Hashable)


def newest_positions(seg: Segment) -> list[int]:
    """For each document number of one segment (unseen ones too), its position in the segment's
    tie order (cached by ``seg.key``: the segment's content never changes, and the order holds
    every document whoever looks; callers skip ``seg.unseen``, which holds a caller's mask)."""

    def make() -> list[int]:
        updated = segment_column(seg, "updated")
        paths = segment_column(seg, "path")
        order = sorted(range(len(paths)), key=lambda d: newest_first(updated[d], paths[d]))
        positions = [0] * len(order)
        for position, doc in enumerate(order):
            positions[doc] = position
        return positions

    return CACHE.get_or_make(("newest positions", seg.key), make,
                             lambda p: sys.getsizeof(p) + 28 * len(p))


def grouped_in_tie_order(seg: Segment, values: Mapping[int, K]) -> list[tuple[K, list[int]]]:
    """The segment documents of ``values`` (local number -> value) grouped by value, each
    group's documents in the segment's tie order (unseen ones too: the caller skips them)."""
    groups: dict[K, list[int]] = {}
    for doc, value in values.items():
        found = groups.get(value)
        if found is None:
            groups[value] = [doc]
        else:
            found.append(doc)
    position = newest_positions(seg).__getitem__
    for docs in groups.values():
        docs.sort(key=position)
    return list(groups.items())
