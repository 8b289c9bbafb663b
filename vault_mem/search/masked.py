"""A searcher's segments as a caller limited to part of the vault sees them: the notes it may
not read count among each segment's unseen documents (served/context.py decides which part;
docs/sharing.md). A note it may not read is one whose path it may not read or, for a note that
is a symlink (its own or a folder's), whose linked file it may not read (``real``).

Every document set of the query API (``search/query.py``) goes through a segment's ``unseen``
(``to_searcher_numbers``, ``live``), so a masked segment hides the notes from every read at
once: for that caller a hidden note is one that was never indexed. The segments keep their ``key`` (what a
segment holds does not depend on who looks, so content caches are shared); a cache of
results that depend on the unseen documents adds ``deletions``, which names the mask. What
stays visible of a hidden note: the terms of its fields in a segment's lexicon (the view
filters what it lists, ``View.lexicon``) and its weight in term statistics.
"""

from __future__ import annotations

from collections.abc import Callable

from vault_mem.search.columns import segment_column
from vault_mem.search.lru import CACHE, approx_size
from vault_mem.search.query import Searcher
from vault_mem.search.segments import Segment, searcher_memo, segments


def masked_segments(searcher: Searcher, mask: str, visible: Callable[[str], bool]) -> list[Segment]:
    """The searcher's segments with every note whose vault-relative path ``visible`` refuses
    counted as unseen. ``mask`` names ``visible`` (the same mask, the same function): it keys the
    per-segment cache of hidden documents. Kept with the searcher, like its segments."""
    memo: dict[str, list[Segment]] = searcher_memo(searcher).setdefault("masked", {})
    found = memo.get(mask)
    if found is None:
        found = memo[mask] = [Segment(seg.reader, seg.offset, _hidden(seg, mask, visible), mask, config=seg.config)
                              for seg in segments(searcher)]
    return found


def _hidden(seg: Segment, mask: str, visible: Callable[[str], bool]) -> frozenset[int]:
    def make() -> frozenset[int]:
        hidden = {d for d, path in enumerate(segment_column(seg, "path")) if path is not None and not visible(path)}
        for real in seg.terms("real"):  # a symlinked note is the file it links to: both must be visible
            if not visible(real):
                hidden.update(seg.term_docs("real", real))
        return frozenset(hidden)

    return CACHE.get_or_make(("hidden", seg.key, mask), make, approx_size)
