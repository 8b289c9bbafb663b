"""What words the vault holds: whether a word occurs in live notes, and the closest words it
does hold when it does not ("did you mean ...", docs/tools.md, "Hints on a miss").

The closest words come from Whoosh's own spelling corrector: each segment reader's
``terms_within`` walks the field's lexicon with a Levenshtein automaton (Whoosh's
``MultiReader`` has none of its own: the base class would measure the distance to every
term of the vault). Suggestions of all segments are merged and ranked by edit distance,
then by how many notes hold them; a word left only in deleted notes is never suggested.
A segment never changes, so what it suggests for a word is cached with it.

A word's presence is a whole-token lookup per segment and field (a substring scan of the
cached lexicon only when the word is no whole token); suggestions keep the first letter within
one edit and the first two within two, as Whoosh's docs advise: without them a suggestion
costs many times more (docs/perf/suggestions.md).
"""

from __future__ import annotations

import contextlib
from typing import Any

from whoosh.codec.base import Automata
from whoosh.support.levenshtein import distance

from vault_mem.search.lru import CACHE
from vault_mem.search.segments import Parts, Segment
from vault_mem.search.substring import segment_terms_containing

# Suggestions share the word's first character, and its first two at two edits: Whoosh's
# automaton then skips most of the lexicon (docs/perf/suggestions.md), and a misspelling
# rarely starts there. Past these lengths building the automaton alone costs seconds.
KEEP_PREFIX = {1: 1, 2: 2}
MAX_CHARS = {1: 30, 2: 20}  # the longest word looked up at each distance


def _live(seg: Segment, field: str, term: str) -> bool:
    """Whether a live document of one segment (one not in ``seg.unseen``) holds ``term`` in ``field``.

    Counting first: a term in more documents than the segment has unseen is in a live one
    (reading its postings costs a block decode, about as much as the rest of the check)."""
    try:
        frequency = seg.reader.doc_frequency(field, term)
        if not frequency:
            return False
        if not seg.unseen or frequency > len(seg.unseen):
            return True
        return bool(seg.to_searcher_numbers(seg.term_docs(field, term)))
    except Exception:  # the term (or field) is not in this segment
        return False


def has_word(parts: Parts, fields: tuple[str, ...], needle: str, substring: bool = True) -> bool:
    """Whether a live note has the lower-case word ``needle`` in any of ``fields``: as a
    whole token, or, with ``substring``, inside one (as ``memory_search`` matches terms)."""
    for seg in parts:  # the whole token first: one hash lookup per segment and field
        for field in fields:
            if _live(seg, field, needle):
                return True
    if not substring:
        return False
    for seg in parts:
        for field in fields:
            if any(_live(seg, field, term) for term in segment_terms_containing(seg, field, needle)):
                return True
    return False


def closest_words(parts: Parts, fields: tuple[str, ...], word: str, limit: int) -> list[str]:
    """Up to ``limit`` words of ``fields`` closest to ``word`` (which the vault does not hold):
    within one edit, else within two (``_plausible``); the words more notes hold first. Empty
    when nothing is that close."""
    word = word.lower()
    for maxdist in _distances(word):
        found: dict[str, int] = {}
        for seg in parts:
            for field in fields:
                for term in _within(seg, field, word, maxdist):
                    if _plausible(term, word, maxdist) and (term in found or _live(seg, field, term)):
                        found[term] = found.get(term, 0) + _doc_frequency(parts, field, term)
        if found:
            return sorted(found, key=lambda t: (-found[t], t))[:limit]
    return []


def _doc_frequency(parts: Parts, field: str, term: str) -> int:
    """How many documents of all segments hold ``term`` (deleted ones too, as Whoosh counts)."""
    total = 0
    for seg in parts:
        with contextlib.suppress(Exception):  # the field is not in this segment
            total += seg.reader.doc_frequency(field, term)
    return total


def _distances(word: str) -> tuple[int, ...]:
    """The edit distances to try, nearest first: two edits only from four characters on."""
    return tuple(d for d in (1, 2) if len(word) <= MAX_CHARS[d] and (d == 1 or len(word) >= 4))


def _plausible(term: str, word: str, maxdist: int) -> bool:
    """Whether a suggestion two edits away is worth offering: for a word under five characters
    only a swap of two letters (Whoosh's automaton counts a swap as two edits, and any other
    two edits of a four-letter word is a different word)."""
    if term == word:
        return False
    return maxdist < 2 or len(word) >= 5 or sorted(term) == sorted(word)


def _within(seg: Segment, field: str, word: str, maxdist: int) -> list[str]:
    """The terms of one segment's ``field`` within ``maxdist`` edits of ``word`` (cached).

    What ``seg.reader.terms_within`` answers, with the automaton built once per word and
    distance (``_automaton``) instead of once per segment and field: on a vault of many
    segments, building it again was a large share of a miss's cost."""

    def find() -> list[str]:
        try:
            reader = seg.reader
            if not hasattr(reader, "cursor"):  # not a segment reader: Whoosh's own way
                return sorted(reader.terms_within(field, word, maxdist, prefix=KEEP_PREFIX[maxdist]))
            cursor = reader.cursor(reader.schema[field].spelling_fieldname(field))
            return sorted(Automata.find_matches(_automaton(word, maxdist), cursor))
        except Exception:  # a field with no terms in this segment
            return []

    return CACHE.get_or_make(("terms_within", seg.key, field, word, maxdist), find)


def _automaton(word: str, maxdist: int) -> Any:
    """Whoosh's Levenshtein DFA for ``word`` (the one its ``terms_within`` builds), cached."""
    return CACHE.get_or_make(("levenshtein_dfa", word, maxdist),
                             lambda: Automata.levenshtein_dfa(word, maxdist, KEEP_PREFIX[maxdist]),
                             lambda _dfa: 4096 + 64 * len(word) * (maxdist + 1) ** 3)


def closest_names(names: list[str], word: str, limit: int) -> list[str]:
    """Up to ``limit`` of ``names`` (a short list: folder names, kinds) closest to ``word``, by
    the Damerau-Levenshtein distance Whoosh's base reader corrects with (a swap of two letters
    is one edit): within one edit, else two from five characters on; ties by name.

    Whoosh's ``ListCorrector`` would walk the sorted list with an automaton, but its skipper
    steps past the next name whenever it is asked for a smaller one, so it misses most of them
    (``acm`` does not find ``acme``); for a few hundred names the plain distance is fast."""
    word = word.lower()
    found: dict[str, int] = {}
    for name in {n.lower() for n in names if n}:
        if name != word and (d := distance(name, word, limit=2)) <= (2 if len(word) >= 5 else 1):
            found[name] = d
    return sorted(found, key=lambda n: (found[n], n))[:limit]
