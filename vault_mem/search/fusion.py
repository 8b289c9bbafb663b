"""``memory_search``'s meaning stage: the keyword ranking fused with the notes nearest the query by
meaning, when a sentence model is loaded (docs/ranking.md, "By meaning").

The rule, in order:

1. The candidates: the keyword order's first ``depth`` notes and the ``depth`` notes nearest by
   meaning (similarity at least ``min_similarity``, admitted by the filters and the caller).
2. Each candidate's *words*: ``ln(1 + s)``, with ``s`` its keyword score without the two bonuses
   for holding every term (what its words add, by rarity and hits; a note found by meaning counts
   the query words it holds too; 0 for a note holding none; the logarithm keeps one very rare
   word from making every other difference look small), and its *similarity*: the cosine of its
   best chunk with the query (computed for the keyword candidates too; a note not embedded yet
   counts as the candidates' mean; when no candidate has vectors, the keyword order is the answer).
3. Both are z-scored over the candidates (minus their mean, over their standard deviation; 0 when
   all are equal), and the fused score is ``words_weight x z(words) + meaning_weight x
   z(similarity)``. Higher first; ties go to the keyword order, then the similarity.
4. Rare words win: when at most ``exact_first`` candidates hold every query term exactly, they
   come first, in keyword order (a known item's few notes keep the places words give them).
5. A note holding no query word (found by meaning alone) has score 0 and is marked
   ``found_by: "meaning"`` in its row; a note found by meaning that holds some word shows its score.

Without a model none of this runs: the keyword page is the answer, as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vault_mem.search.snapshot import Snapshot
from vault_mem.search.topk import Ranked, best_notes, word_scores
from vault_mem.settings import Settings

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


@dataclass(frozen=True)
class Candidates:
    """What the fusion ranks (steps 1 and 2 of the module docstring)."""

    keyword: Ranked  # the keyword order, ``depth`` deep (scores with their bonuses)
    nearest: list[int]  # the notes nearest by meaning, best first
    words: dict[int, float]  # each candidate holding a term: its score without the all-terms bonuses (not the log)
    exact: frozenset[int]  # the candidates holding every query term exactly
    similarity: dict[int, float]  # each candidate's similarity, where it has vectors
    scores: dict[int, float] = field(default_factory=dict)  # each candidate holding a term: its keyword score

    def docs(self) -> list[int]:
        """Every candidate: the keyword order's, then those found by meaning alone."""
        seen = set(self.keyword.page)
        return list(self.keyword.page) + [d for d in self.nearest if d not in seen]


@dataclass(frozen=True)
class Weights:
    """The fusion's parameters (the ``meaning_*`` settings; docs/settings.md)."""

    words: float
    meaning: float
    exact_first: int

    @classmethod
    def of(cls, config: Settings) -> Weights:
        return cls(config.meaning_words_weight, config.meaning_weight, config.meaning_exact_first)


def zscores(values: Sequence[float]) -> list[float]:
    """Each value minus their mean, over their (population) standard deviation; all 0 when equal."""
    if not values:
        return []
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if spread <= 1e-12:
        return [0.0] * len(values)
    return [(v - mean) / spread for v in values]


def combine(found: Candidates, weights: Weights) -> list[int]:
    """Every candidate in fused order (steps 3 and 4 of the module docstring)."""
    docs = found.docs()
    known = [found.similarity[d] for d in docs if d in found.similarity]
    if not known:  # nothing embedded yet (or nothing near): the keyword order, as without a model
        return list(found.keyword.page)
    unknown = sum(known) / len(known)
    by_words = zscores([math.log1p(found.words.get(d, 0.0)) for d in docs])
    by_meaning = zscores([found.similarity.get(d, unknown) for d in docs])
    fused = {d: weights.words * w + weights.meaning * m for d, w, m in zip(docs, by_words, by_meaning, strict=True)}
    place = {d: i for i, d in enumerate(found.keyword.page)}
    tier = [d for d in found.keyword.page if d in found.exact] if len(found.exact) <= weights.exact_first else []
    in_tier = set(tier)
    rest = sorted((d for d in docs if d not in in_tier),
                  key=lambda d: (-fused[d], place.get(d, len(place)), -found.similarity.get(d, unknown)))
    return tier + rest


def candidates(view: Snapshot, meaning: Meaning, query: str, terms: list[str], depth: int,
               keep: Collection[int] | None = None, min_similarity: float | None = None,
               meanwhile: Callable[[list[int]], None] | None = None, limit: int | None = None) -> Candidates:
    """Steps 1 and 2 of the module docstring (``keep``: the notes the filters admit, None for all).

    A helper thread ranks by words, then calls ``meanwhile`` with the keyword order's first
    ``limit`` notes (most of the page, as a rule: the caller starts on their rows before the fused
    order is known), while this thread embeds the query and compares it with the notes, which
    release the interpreter's lock."""
    config = view.config
    min_similarity = config.meaning_min_similarity if min_similarity is None else min_similarity
    shown = depth if limit is None else limit
    if CONCURRENT and len(meaning.store):
        def by_words() -> Ranked:
            ranked = best_notes(view, terms, depth, keep)
            if meanwhile is not None:
                meanwhile(ranked.page[:shown])
            return ranked

        pending = meaning.run_alongside(by_words)
        near = meaning.nearest(query, depth)
        keyword = pending.result()
    else:
        keyword = best_notes(view, terms, depth, keep)
        near = meaning.nearest(query, depth)
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
    paths = view.column("path")
    others = [d for d in keyword.page if d not in similarity]
    for path, sim in meaning.similarities(query, [paths[d] for d in others]).items():
        similarity[docs[path]] = sim
    scored = word_scores(view, terms, list(dict.fromkeys(keyword.page + nearest)))
    return Candidates(keyword, nearest, {d: w for d, (_, w, _) in scored.items()},
                      frozenset(d for d, (_, _, every) in scored.items() if every), similarity,
                      {d: score for d, (score, _, _) in scored.items()})


def fused_notes(view: Snapshot, meaning: Meaning, query: str, terms: list[str], limit: int,
                keep: Collection[int] | None = None, depth: int | None = None, weights: Weights | None = None,
                min_similarity: float | None = None, meanwhile: Callable[[list[int]], None] | None = None) -> Fused:
    """The first ``limit`` notes by the rule of the module docstring (``keep``: the notes the
    filters admit, None for all; the bounds and weights not given: the ``meaning_*`` settings)."""
    config = view.config
    depth = max(config.meaning_depth if depth is None else depth, limit)
    found = candidates(view, meaning, query, terms, depth, keep, min_similarity, meanwhile, limit)
    order = combine(found, Weights.of(config) if weights is None else weights)
    keyword = found.keyword
    page = order[:limit]
    scores = {d: found.scores.get(d, 0.0) for d in page}
    meaning_only = frozenset(d for d in page if d not in found.scores)
    return Fused(page, scores, keyword.truncated or len(order) > limit, keyword.ceiling,
                 similarity={d: found.similarity[d] for d in page if d in found.similarity}, meaning_only=meaning_only)


def _docs_by_path(view: Snapshot) -> dict[str, int]:
    """path -> document number of every live note this reader may see, made once a commit (and
    mask) and shared by the calls: a lookup by term for each of the nearest notes reads every
    segment's term index."""
    def make() -> dict[str, int]:
        paths = view.column("path")
        return {paths[doc]: doc for doc in view.all_docs()}

    return view.cached("meaning: docs by path", make)
