"""``memory_search``'s meaning stage: the keyword ranking fused with the notes nearest the query by
meaning, when a sentence model is loaded (docs/ranking.md, "By meaning").

The rule, in order:

1. The notes holding every query term exactly keep their tier: first, in keyword order.
2. Every other note of the keyword ranking's first ``depth`` and of the ``depth`` notes nearest
   by meaning (similarity at least ``min_similarity``, admitted by the filters and the caller)
   is ranked by reciprocal-rank fusion: the sum, over the two lists that hold it, of
   ``1 / (rrf_k + rank)``, its rank in that list counted from 1. Ties go to the keyword order,
   then the similarity.
3. A note found by meaning alone has score 0 and is marked ``found_by: "meaning"`` in its row.

Without a model none of this runs: the keyword page is the answer, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vault_mem import settings
from vault_mem.search.snapshot import Snapshot
from vault_mem.search.topk import Ranked, best_notes

if TYPE_CHECKING:
    from vault_mem.meaning.embedder import Meaning

# Rank by words on a helper thread while this one embeds the query (meaning/embedder.py
# Meaning.beside); a bench turns it off to measure what it gains.
CONCURRENT = True


@dataclass(frozen=True)
class Fused(Ranked):
    """A fused page: ``Ranked`` plus each note's similarity and the notes found by meaning alone."""

    similarity: dict[int, float] = field(default_factory=dict)
    meaning_only: frozenset[int] = frozenset()


def fused_notes(view: Snapshot, meaning: Meaning, query: str, terms: list[str], limit: int,
                keep: Collection[int] | None = None, depth: int | None = None, rrf_k: int | None = None,
                min_similarity: float | None = None, meanwhile: Callable[[list[int]], None] | None = None) -> Fused:
    """The first ``limit`` notes by the rule of the module docstring (``keep``: the notes the
    filters admit, None for all; the bounds not given: the ``meaning_*`` settings).

    A helper thread ranks by words, then calls ``meanwhile`` with the keyword order's first
    ``limit`` notes (most of the page, as a rule: the caller starts on their rows before the fused
    order is known), while this thread embeds the query and compares it with the notes, which
    release the interpreter's lock."""
    config = settings.current()
    rrf_k = config.meaning_rrf_k if rrf_k is None else rrf_k
    min_similarity = config.meaning_min_similarity if min_similarity is None else min_similarity
    depth = max(config.meaning_depth if depth is None else depth, limit)
    if CONCURRENT and len(meaning.store):
        def by_words() -> Ranked:
            ranked = best_notes(view, terms, depth, keep)
            if meanwhile is not None:
                meanwhile(ranked.page[:limit])
            return ranked

        pending = meaning.beside(by_words)
        near = meaning.nearest(query, depth)
        keyword = pending.result()
    else:
        keyword = best_notes(view, terms, depth, keep)
        near = meaning.nearest(query, depth)
    tier = [d for d in keyword.page if keyword.scores[d] > keyword.ceiling]  # every term exactly
    similarity: dict[int, float] = {}
    nearest: list[int] = []
    admitted = None if keep is None else set(keep)
    docs = _docs_by_path(view)
    for path, sim in near:
        if sim < min_similarity:
            break
        doc = docs.get(path)  # None: deleted since, or hidden from this caller
        if doc is None or (admitted is not None and doc not in admitted):
            continue
        similarity[doc] = sim
        nearest.append(doc)
    fused: dict[int, float] = {}
    in_tier = set(tier)
    for rank, doc in enumerate(keyword.page, 1):
        if doc not in in_tier:
            fused[doc] = 1.0 / (rrf_k + rank)
    for rank, doc in enumerate(nearest, 1):
        if doc not in in_tier:
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (rrf_k + rank)
    keyword_place = {doc: i for i, doc in enumerate(keyword.page)}
    rest = sorted(fused, key=lambda d: (-fused[d], keyword_place.get(d, len(keyword_place)), -similarity.get(d, 0.0)))
    order = tier + rest
    page = order[:limit]
    scores = {d: keyword.scores.get(d, 0.0) for d in page}
    meaning_only = frozenset(d for d in page if d not in keyword.scores)
    return Fused(page, scores, keyword.truncated or len(order) > limit, keyword.ceiling,
                 similarity={d: similarity[d] for d in page if d in similarity}, meaning_only=meaning_only)


def _docs_by_path(view: Snapshot) -> dict[str, int]:
    """path -> document number of every live note this reader may see, made once a commit (and
    mask) and shared by the calls: a lookup by term for each of the nearest notes reads every
    segment's term index."""
    def make() -> dict[str, int]:
        paths = view.column("path")
        return {paths[doc]: doc for doc in view.all_docs()}

    return view.kept("meaning: docs by path", make)
