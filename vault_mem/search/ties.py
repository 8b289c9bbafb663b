"""A segment's documents grouped by a value, each group in the order ties take.

Pruned ranking (``search/topk.py``) walks a term's notes from the greatest contribution down
and, among notes that contribute the same, in the order ties are broken: ``updated`` newest
first, then the path (docs/ranking.md; a missing date is oldest, a missing path ``""``).
That order within one segment never changes (segments are immutable, deletions are kept
apart), so each segment's positions in it are computed once and cached with the segment's
other uses of that order (``query.segment_order``); across segments the caller merges on the
same key, ``query.newest_first``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

from vault_mem.search.query import segment_order
from vault_mem.search.segments import Segment

K = TypeVar("K", bound=Hashable)


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
    position = segment_order(seg, "updated").positions.__getitem__
    for docs in groups.values():
        docs.sort(key=position)
    return list(groups.items())
