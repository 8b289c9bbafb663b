"""Substring matching on Whoosh by expanding the needle against a field's lexicon.

A ``*term*`` wildcard walks every term with a regex on every call and an n-gram field makes
the build several times slower (docs/perf/substrings.md). Instead, each segment's lexicon is
joined once into one string (segments never change, so the cache lives as long as the
segment), ``str.find`` locates the needle in it, and the notes holding those terms are read
from their postings.

For a needle made only of word characters this is exact: the fields are tokenised into
maximal runs of word characters, so the needle occurs in a text exactly where it occurs
inside one of its tokens. ``form_hit_counts`` goes further and counts the occurrences a
plain ``text.lower().count(needle)`` would.
"""

from __future__ import annotations

import sys
from array import array

from vault_mem.search.lru import CACHE
from vault_mem.search.segments import Parts, Segment
from vault_mem.search.whoosh.files import field_terms, postings


def _joined_lexicon(seg: Segment, field: str) -> str:
    """Every term of ``field`` in one segment, each followed by a newline."""

    def join() -> str:
        try:
            terms = field_terms(seg.reader, field)
        except Exception:  # a field with no terms in this segment
            terms = []
        return "\n".join(terms) + "\n" if terms else ""

    return CACHE.get_or_make(("lexicon", seg.key, field), join)


def segment_terms_containing(seg: Segment, field: str, needle: str) -> list[str]:
    """The terms of one segment's ``field`` that contain ``needle`` (lower-case, no newline)."""
    joined = _joined_lexicon(seg, field)
    found: list[str] = []
    pos = joined.find(needle)
    while pos >= 0:
        start = joined.rfind("\n", 0, pos) + 1
        end = joined.find("\n", pos)
        found.append(joined[start:end])
        pos = joined.find(needle, end + 1)
    return found


def terms_containing(parts: Parts, field: str, needle: str) -> list[str]:
    """The terms of ``field`` across all segments that contain ``needle``."""
    terms: dict[str, None] = {}
    for seg in parts:
        terms.update(dict.fromkeys(segment_terms_containing(seg, field, needle)))
    return list(terms)


def segment_docs_containing(seg: Segment, field: str, needle: str) -> array[int]:
    """The local numbers of ``seg``'s documents whose ``field`` contains the word-only (lower
    case) ``needle``, deleted ones too, ascending. Kept in the shared cache: a segment never
    changes, and a listing's query asks the same words of the same old segments call after
    call (decoding their postings again was a large share of a memory_list with a query)."""
    def make() -> array[int]:
        found: set[int] = set()
        for term in segment_terms_containing(seg, field, needle):
            found.update(docid for docid, _freq in postings(seg.reader, field, term))
        return array("i", sorted(found))

    return CACHE.get_or_make(("docs containing", seg.key, field, needle), make, sys.getsizeof)


def form_hit_counts(parts: Parts, field: str, term: str,
                    stem: str | None = None) -> tuple[dict[int, int], dict[int, int]]:
    """Hits of a word-only ``term`` and of its other word form ``stem`` in ``field``.

    Returns two maps from the searcher's document numbers: how many times ``term`` occurs
    (as ``text.lower().count(term)`` counts it), and how many times ``stem`` occurs outside the
    occurrences of ``term`` (a stem that is part of the term, as ``support`` is of
    ``supported``, is not counted again where the term itself stands). A document appears
    in at least one map when its field contains either form; the second map is empty
    without a ``stem``. Each posting list is read once, however many forms it holds.
    """
    term = term.lower()
    stem = stem.lower() if stem and stem.lower() != term else None
    exact: dict[int, int] = {}
    alone: dict[int, int] = {}
    for seg in parts:
        seg_exact, seg_alone = segment_form_hit_counts(seg, field, term, stem)
        exact.update(seg.to_searcher_items(seg_exact))
        alone.update(seg.to_searcher_items(seg_alone))
    return exact, alone


def segment_form_hit_counts(seg: Segment, field: str, term: str,
                            stem: str | None = None) -> tuple[dict[int, int], dict[int, int]]:
    """``form_hit_counts`` of one segment, by segment document number, deleted ones too.

    A segment never changes, so a caller may cache what it derives from this by segment
    (``ranking`` keeps each term's weighted hits in the shared cache)."""
    term = term.lower()
    stem = stem.lower() if stem and stem.lower() != term else None
    inside = term.count(stem) if stem else 0  # occurrences of the stem inside one of the term
    exact: dict[int, int] = {}
    alone: dict[int, int] = {}
    tokens = segment_terms_containing(seg, field, stem if stem and inside else term)
    if stem and not inside:
        tokens = list(dict.fromkeys([*tokens, *segment_terms_containing(seg, field, stem)]))
    for token in tokens:
        n_exact = token.count(term)
        n_alone = max(0, token.count(stem) - inside * n_exact) if stem else 0
        if n_exact and n_alone:
            for docid, freq in postings(seg.reader, field, token):
                exact[docid] = exact.get(docid, 0) + n_exact * int(freq)
                alone[docid] = alone.get(docid, 0) + n_alone * int(freq)
            continue
        counts, n = (exact, n_exact) if n_exact else (alone, n_alone)
        get = counts.get
        for docid, freq in postings(seg.reader, field, token):
            counts[docid] = get(docid, 0) + n * int(freq)
    return exact, alone
