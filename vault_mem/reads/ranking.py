"""The ``memory_search`` score (docs/ranking.md): term rarity times field-weighted hits, word forms too.

For each query term ``t`` with English Snowball stem ``s`` (Whoosh's own stemmer; the stem
is used only when it differs from ``t`` and has at least three characters):

- a note matches ``t`` when its title, permalink, tags or body contains ``t`` or ``s`` as a
  case-insensitive substring;
- ``df`` is the number of notes matching ``t``; rarity is BM25's idf,
  ``ln(1 + (N - df + 0.5) / (df + 0.5))`` with ``N`` the notes in the index;
- field-weighted hits: title x6, permalink x5, tags x4, body x1; in each field at most 3
  hits count, exact hits of ``t`` first (1 each), then hits of ``s`` alone (0.5 each);
- the note's score is the sum over terms of rarity x weighted hits, +10 when it matches
  every term, rounded to 4 decimals (so that equal sums compare equal).

``df`` and the hits come from the index's lexicons and postings (``segment_form_hit_counts``),
never from reading files. A common word therefore weighs little, and the note that holds a
question's rare words ranks above newer notes that only repeat its common ones.
"""

from __future__ import annotations

import math
import sys
from functools import lru_cache, partial

from vault_mem.errors import InvalidInput
from vault_mem.index.lru import CACHE
from vault_mem.index.query import english_stem
from vault_mem.index.segments import Segment
from vault_mem.index.substring import segment_form_hit_counts, words
from vault_mem.served.context import View

MAX_TERMS = 32
MIN_TERM_CHARS = 3
FIELD_WEIGHTS = (("title", 6), ("perm", 5), ("tagtext", 4), ("body", 1))
HIT_CAP = 3  # hits counted per field and term
STEM_HIT = 0.5  # what a hit of the stem alone counts, against 1 for the exact term
ALL_TERMS_BONUS = 10
SCORE_DECIMALS = 4

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
def stem_of(term: str) -> str | None:
    """The term's English Snowball stem when it is another, useful form (3+ characters)."""
    stem = str(english_stem(term))
    return stem if stem != term and len(stem) >= MIN_TERM_CHARS else None


def search_terms(query: str) -> tuple[list[str], list[str]]:
    """The query's distinct lower-cased word runs to search for, and those dropped.

    Short terms and stop words are dropped unless nothing else is left, in which case all
    the terms are kept. Raises InvalidInput past MAX_TERMS distinct terms.
    """
    terms = list(dict.fromkeys(words(query)))
    if len(terms) > MAX_TERMS:
        raise InvalidInput("query", f"holds {len(terms)} distinct words; at most {MAX_TERMS} are accepted")
    kept = [t for t in terms if len(t) >= MIN_TERM_CHARS and t not in STOP_WORDS]
    if not kept:
        return terms, []
    return kept, [t for t in terms if t not in kept]


def rarity(notes: int, df: int) -> float:
    """BM25's idf of a term that ``df`` of ``notes`` notes match."""
    return math.log(1 + (notes - df + 0.5) / (df + 0.5))


def weighted_hits(view: View, term: str) -> dict[int, float]:
    """Field-weighted hits of ``term`` (and its stem) for every note matching it, by docnum.

    Computed per segment and kept in the shared cache (segments never change): a question's
    short common stems ("file", "time") expand to hundreds of tokens whose postings cost
    milliseconds to read, and the same words come back question after question. Deletions
    and the segments' offsets are applied per call."""
    stem = stem_of(term)
    weighted: dict[int, float] = {}
    for seg in view.segments():
        hits = CACHE.get_or_make(("weighted_hits", seg.key, term, stem),
                                 partial(_segment_weighted_hits, seg, term, stem), _hits_size)
        weighted.update(seg.lift_items(hits))
    return weighted


def _segment_weighted_hits(seg: Segment, term: str, stem: str | None) -> dict[int, float]:
    """``weighted_hits`` of one segment, by segment document number, deleted ones too."""
    weighted: dict[int, float] = {}
    get = weighted.get
    for field, weight in FIELD_WEIGHTS:
        exact, stem_only = segment_form_hit_counts(seg, field, term, stem)
        for doc, hits in exact.items():
            counted = hits if hits < HIT_CAP else HIT_CAP
            extra = stem_only.get(doc, 0) if stem_only else 0
            if extra and counted < HIT_CAP:
                weighted[doc] = get(doc, 0) + weight * (counted + STEM_HIT * min(extra, HIT_CAP - counted))
            else:
                weighted[doc] = get(doc, 0) + weight * counted
        for doc, extra in stem_only.items():
            if doc not in exact:
                weighted[doc] = get(doc, 0) + weight * STEM_HIT * min(extra, HIT_CAP)
    return weighted


def _hits_size(hits: dict[int, float]) -> int:
    # the dict's table plus, per entry, an int key and a float
    return sys.getsizeof(hits) + 56 * len(hits)


def score_notes(view: View, terms: list[str]) -> dict[int, float]:
    """The score of every note matching at least one term, by docnum."""
    notes = view.doc_count()
    totals: dict[int, float] = {}
    matched: dict[int, int] = {}
    for term in terms:
        hits = weighted_hits(view, term)
        idf = rarity(notes, len(hits))
        for doc, value in hits.items():
            totals[doc] = totals.get(doc, 0.0) + idf * value
            matched[doc] = matched.get(doc, 0) + 1
    everything = len(terms)
    return {doc: round(total + (ALL_TERMS_BONUS if matched[doc] == everything else 0), SCORE_DECIMALS)
            for doc, total in totals.items()}


def match_forms(terms: list[str]) -> list[str]:
    """The terms and their stems: the forms an excerpt may centre on."""
    forms = list(terms)
    forms += [s for t in terms if (s := stem_of(t)) and s not in forms]
    return forms
