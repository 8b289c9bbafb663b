"""The ``memory_search`` score (docs/ranking.md): each word form's rarity times its hits, exact first.

For each query term ``t`` with English Snowball stem ``s`` (Whoosh's own stemmer; the stem
is used only when it differs from ``t`` and has at least three characters), in each field
(title x6, permalink x5, tags x4, body x1) at most 3 hits count, hits of ``t`` first (the
*exact* form, 1 each), then hits of ``s`` outside them (the *stem* form, 0.5 each). Each form
has its own rarity, BM25's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``, with ``df`` the notes
holding that form (``N`` the notes in the index). A note's score is:

- the sum over terms of exact rarity x exact weighted hits + stem rarity x stem weighted hits;
- +10 when it holds every term in some form;
- + the query's *ceiling* when it holds every term exactly: the most any note can get from the
  terms and the +10 (each term's ``48 x max(exact rarity, stem rarity / 2)``, summed, + 10),
  so such a note ranks above every note holding some term only by its stem, or not at all;
- rounded to 4 decimals (so that equal sums compare equal).

Every part is a function of per-term, per-form statistics (``TermStats``), so a bound per
term is known before any note is scored. ``df`` and the hits come from the index's lexicons
and postings (``segment_form_hit_counts``), never from reading files.
"""

from __future__ import annotations

import math
import sys
from functools import lru_cache, partial
from typing import NamedTuple

from vault_mem.errors import InvalidInput
from vault_mem.search.lru import CACHE
from vault_mem.search.query import english_stem
from vault_mem.search.segments import Segment
from vault_mem.search.snapshot import Snapshot, parts_of
from vault_mem.search.substring import segment_form_hit_counts
from vault_mem.search.ties import grouped_in_tie_order
from vault_mem.settings import Settings
from vault_mem.vault.names import words

# Common English words that say little about a note (the usual function words, plus the
# words a question is phrased with); dropped from queries unless a query holds nothing
# else. Words under three characters are dropped anyway.
STOP_WORDS = frozenset({
    "about", "above", "after", "again", "against", "all", "also", "and", "any", "are",
    "aren", "because", "been", "before", "being", "below", "between", "both", "but", "can",
    "cannot", "could", "couldn", "did", "didn", "does", "doesn", "doing", "don", "down",
    "during", "each", "ever", "few", "for", "from", "further", "get", "got", "had", "hadn",
    "has", "hasn", "have", "haven", "having", "her", "here", "hers", "herself", "him",
    "himself", "his", "how", "into", "isn", "its", "itself", "just", "let", "many", "more",
    "most", "much", "mustn", "myself", "nor", "not", "now", "off", "once", "only", "other",
    "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "shan", "she",
    "should", "shouldn", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "too",
    "under", "until", "very", "was", "wasn", "were", "weren", "what", "when", "where",
    "which", "while", "who", "whom", "whose", "why", "will", "with", "won", "would",
    "wouldn", "yet", "you", "your", "yours", "yourself", "yourselves",
})


@lru_cache(maxsize=4096)
def stem_of(term: str, min_chars: int) -> str | None:
    """The term's English Snowball stem when it is another, useful form (``min_chars`` or more
    characters: the ``query_min_term_chars`` setting)."""
    stem = str(english_stem(term))
    return stem if stem != term and len(stem) >= min_chars else None


def search_terms(query: str, config: Settings) -> tuple[list[str], list[str]]:
    """The query's distinct lower-cased word runs to search for, and those dropped.

    Short terms (under ``config``'s ``query_min_term_chars``) and stop words are dropped unless
    nothing else is left, in which case all the terms are kept. Raises InvalidInput past
    ``query_max_terms`` distinct terms.
    """
    terms = list(dict.fromkeys(words(query)))
    if len(terms) > config.query_max_terms:
        raise InvalidInput("query", f"holds {len(terms)} distinct words; at most {config.query_max_terms} are accepted")
    kept = [t for t in terms if len(t) >= config.query_min_term_chars and t not in STOP_WORDS]
    if not kept:
        return terms, []
    return kept, [t for t in terms if t not in kept]


def rarity(notes: int, df: int) -> float:
    """BM25's idf of a term that ``df`` of ``notes`` notes match."""
    return math.log(1 + (notes - df + 0.5) / (df + 0.5))


class TermHits(NamedTuple):
    """One term's field-weighted hits by docnum, per form: the term itself, and its stem alone."""

    exact: dict[int, float]
    stem: dict[int, float]


class TermStats(NamedTuple):
    """What a term can add to a note's score: each form's rarity, and the most it can add."""

    exact_rarity: float  # 0 when no note holds the term exactly
    stem_rarity: float  # 0 when no note holds the stem outside the term

    def ceiling(self, chosen: Settings) -> float:
        """The most this term adds to any note: every field's hits capped, in its best form."""
        full_hits = chosen.rank_hit_cap * sum(weight for _field, weight in chosen.rank_field_weights)
        return full_hits * max(self.exact_rarity, chosen.rank_stem_hit * self.stem_rarity)


def term_stats(notes: int, hits: TermHits) -> TermStats:
    return form_stats(notes, len(hits.exact), len(hits.stem))


def form_stats(notes: int, exact_df: int, stem_df: int) -> TermStats:
    """A term's statistics from the notes holding each form (``df``) among ``notes``."""
    return TermStats(rarity(notes, exact_df) if exact_df else 0.0, rarity(notes, stem_df) if stem_df else 0.0)


def weighted_hits(view: Snapshot, term: str) -> TermHits:
    """Field-weighted hits of ``term`` and of its stem alone, for every note holding either.

    Computed per segment and kept in the shared cache (segments never change): a question's
    short common stems ("file", "time") expand to hundreds of tokens whose postings cost
    milliseconds to read, and the same words come back question after question. Deletions
    and the segments' offsets are applied per call."""
    exact: dict[int, float] = {}
    alone: dict[int, float] = {}
    for seg in parts_of(view):
        hits = segment_hits(seg, term, view.config)
        exact.update(seg.to_searcher_items(hits.exact))
        alone.update(seg.to_searcher_items(hits.stem))
    return TermHits(exact, alone)


def segment_hits(seg: Segment, term: str, config: Settings) -> TermHits:
    """``weighted_hits`` of one segment, by segment document number, deleted ones too (cached by
    the segment's content: the caller applies ``seg.unseen``, which holds a limited caller's mask)."""
    stem = stem_of(term, config.query_min_term_chars)
    return CACHE.get_or_make(("weighted_hits", seg.key, term, stem),
                             partial(_segment_weighted_hits, seg, term, stem, config), _hits_size)


Groups = list[tuple[tuple[float | None, float | None], list[int]]]


def segment_groups(seg: Segment, term: str, config: Settings) -> Groups:
    """One segment's notes holding ``term`` in some form, grouped by their weighted hits
    ``(exact, stem)`` (None: that form absent), each group in the tie order (cached by content;
    unseen notes too: the caller skips ``seg.unseen``). What ``search/topk.py`` walks from the
    greatest contribution down."""
    def make() -> Groups:
        hits = segment_hits(seg, term, config)
        profile: dict[int, tuple[float | None, float | None]] = {d: (e, None) for d, e in hits.exact.items()}
        for doc, s in hits.stem.items():
            profile[doc] = (profile.get(doc, (None, None))[0], s)
        return grouped_in_tie_order(seg, profile)

    def size(groups: Groups) -> int:
        return sum(120 + sys.getsizeof(docs) for _key, docs in groups)

    return CACHE.get_or_make(("impact groups", seg.key, term, stem_of(term, config.query_min_term_chars)), make, size)


def _segment_weighted_hits(seg: Segment, term: str, stem: str | None, chosen: Settings) -> TermHits:
    """``weighted_hits`` of one segment, by segment document number, deleted ones too."""
    exact_weighted: dict[int, float] = {}
    stem_weighted: dict[int, float] = {}
    get_exact, get_stem = exact_weighted.get, stem_weighted.get
    cap, stem_hit = chosen.rank_hit_cap, chosen.rank_stem_hit
    for field, weight in chosen.rank_field_weights:
        exact, stem_only = segment_form_hit_counts(seg, field, term, stem)
        for doc, hits in exact.items():
            counted = hits if hits < cap else cap
            exact_weighted[doc] = get_exact(doc, 0) + weight * counted
            extra = stem_only.get(doc, 0) if stem_only else 0
            if extra:  # the note holds the stem form even when the cap leaves its hits no room
                stem_weighted[doc] = get_stem(doc, 0) + weight * stem_hit * min(extra, cap - counted)
        for doc, extra in stem_only.items():
            if doc not in exact:
                stem_weighted[doc] = get_stem(doc, 0) + weight * stem_hit * min(extra, cap)
    return TermHits(exact_weighted, stem_weighted)


def _hits_size(hits: TermHits) -> int:
    # each dict's table plus, per entry, an int key and a float
    return sum(sys.getsizeof(d) + 56 * len(d) for d in hits)


def score_notes(view: Snapshot, terms: list[str]) -> dict[int, float]:
    """The score of every note holding at least one term in some form, by docnum."""
    notes = view.doc_count()
    totals: dict[int, float] = {}
    matched: dict[int, int] = {}  # terms held in some form
    exactly: dict[int, int] = {}  # terms held exactly
    chosen = view.config
    bonus, decimals = chosen.rank_all_terms_bonus, chosen.rank_score_decimals
    ceiling = float(bonus)
    for term in terms:
        hits = weighted_hits(view, term)
        stats = term_stats(notes, hits)
        ceiling += stats.ceiling(chosen)
        for doc, value in hits.exact.items():
            totals[doc] = totals.get(doc, 0.0) + stats.exact_rarity * value
            matched[doc] = matched.get(doc, 0) + 1
            exactly[doc] = exactly.get(doc, 0) + 1
        for doc, value in hits.stem.items():
            totals[doc] = totals.get(doc, 0.0) + stats.stem_rarity * value
            if doc not in hits.exact:
                matched[doc] = matched.get(doc, 0) + 1
    everything = len(terms)
    return {doc: round(total + (bonus if matched[doc] == everything else 0)
                       + (ceiling if exactly.get(doc) == everything else 0), decimals)
            for doc, total in totals.items()}


def match_forms(terms: list[str], config: Settings) -> list[str]:
    """The terms and their stems: the forms an excerpt may centre on."""
    forms = list(terms)
    forms += [s for t in terms if (s := stem_of(t, config.query_min_term_chars)) and s not in forms]
    return forms
