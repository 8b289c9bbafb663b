"""Notes that say nearly the same as a text (docs/tools.md, ``memory_write``'s ``similar``;
``vault-mem tidy``), found from the index without any model, at a bounded cost.

Two steps. First the candidates: the text's most distinctive words (the ``terms`` rarest in
the index's bodies, by document frequency; numbers are left out, since a restatement often
changes them, and so are words no other note holds) are looked up exactly, and the
``candidates`` notes holding the most of them (each word counting its rarity) are kept. Then each candidate is
compared with the text: the *resemblance* is the Jaccard index of the two texts' word sets
(title and the first characters of the body, what the index stores of it: the ``record_head_chars`` setting;
numbers left out), each word weighted by its rarity in the index (BM25's idf, as the ranking
uses it). Reordered sentences and a few words added or dropped keep a restatement above the
``threshold``, while notes that share only boilerplate or common words stay below it: words
every note holds weigh next to nothing. The wording is not enough: two notes whose names,
numbers or dates differ say different things however alike their words (one template filled
twice), and notes that are mostly links compare their targets (``search/facts.py``). A text of
fewer than ``min_words`` distinct words (a title and a line), or a list of fewer than
``similar_min_links`` links, is compared with nothing: in so little any two notes look alike.

Cost: one document-frequency look-up per distinct word of the text and of its ``candidates``
(their stored records; each segment's counts are read once and shared), and one posting list
per segment for each of the ``terms`` words: never a walk over every note or every word.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass

from vault_mem.search.facts import Said, alike, said
from vault_mem.search.ranking import STOP_WORDS, rarity
from vault_mem.search.snapshot import Snapshot, parts_of
from vault_mem.settings import Settings
from vault_mem.vault.names import words

_HAS_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class Resembling:
    """A note resembling a text: its document number and the resemblance, 0..1."""

    docnum: int
    resemblance: float


class Rarity:
    """Words' document frequencies in the bodies of an index, and their rarity (BM25's idf, as
    the ranking's), the last ``size`` words asked kept."""

    def __init__(self, view: Snapshot, size: int | None = None) -> None:
        self.count = view.doc_frequencies("body")
        self.notes = view.doc_count()
        self.size = view.config.similar_rarity_words if size is None else size
        self._known: OrderedDict[str, tuple[int, float]] = OrderedDict()  # word: (df, rarity)

    def _look_up(self, word: str) -> tuple[int, float]:
        found = self._known.get(word)
        if found is not None:
            self._known.move_to_end(word)
            return found
        df = self.count(word)
        found = self._known[word] = (df, rarity(max(self.notes, 1), min(df, self.notes)))
        if len(self._known) > self.size:
            self._known.popitem(last=False)
        return found

    def df(self, word: str) -> int:
        return self._look_up(word)[0]

    def __call__(self, word: str) -> float:
        return self._look_up(word)[1]


def note_text(title: str, body: str, config: Settings) -> str:
    """What is compared of a note: its title and the head of its body, as the index stores it."""
    return f"{title}\n{body[:config.record_head_chars]}"


def note_said(title: str, body: str, config: Settings) -> Said:
    """What is compared of a note (search/facts.py): its title and the head of its body."""
    return said(title, body[:config.record_head_chars], config.similar_link_share)


def comparable(note: Said, min_words: int, config: Settings) -> bool:
    """Whether a note says enough to be compared: ``min_words`` distinct words, or
    ``similar_min_links`` link targets when it is mostly links."""
    if note.links is not None:
        return len(note.links) >= config.similar_min_links
    return len(note.words) >= min_words


def likeness(a: Said, b: Said, weight: Callable[[str], float], a_weight: float | None = None) -> float:
    """How alike two notes are (search/facts.py's ``alike``, their words' ``resemblance`` weighted by
    ``weight``)."""
    return alike(a, b, lambda x, y: resemblance(x.words, y.words, weight, a_weight))


def word_set(text: str) -> frozenset[str]:
    """The text's distinct words, lower-cased, numbers (words without a letter) left out."""
    return frozenset(w for w in words(text) if _HAS_LETTER.search(w))


def resemblance(a: Collection[str], b: Collection[str], weight: Callable[[str], float] | None = None,
                a_weight: float | None = None) -> float:
    """The Jaccard index of two word sets (0 when either is empty); with ``weight``, each word
    counts its weight (its rarity), so the words every note holds (a template's boilerplate,
    the commonest words) count next to nothing. ``a_weight``: the sum of ``a``'s weights, when
    the caller compares ``a`` with many sets."""
    if not a or not b:
        return 0.0
    both = set(a) & set(b)
    if weight is None:
        return len(both) / (len(a) + len(b) - len(both))
    shared = math.fsum(weight(w) for w in both)
    if a_weight is None:
        a_weight = math.fsum(weight(w) for w in a)
    union = a_weight + math.fsum(weight(w) for w in b) - shared
    return shared / union if union > 0 else 0.0


def distinctive_terms(text: str, terms: int, rarest: Rarity, min_chars: int) -> list[str]:
    """The ``terms`` words of ``text`` the fewest notes' bodies hold (at least one does), rarest
    first; numbers, stop words and words under ``min_chars`` characters (``query_min_term_chars``)
    left out."""
    found: list[tuple[int, str]] = []
    for word in dict.fromkeys(words(text)):
        if len(word) < min_chars or word in STOP_WORDS or not _HAS_LETTER.search(word):
            continue
        df = rarest.df(word)
        if df:
            found.append((df, word))
    found.sort()
    return [word for _df, word in found[:terms]]


def _holding_most(view: Snapshot, chosen: list[str], count: int, keep: Collection[int] | None,
                  weigh: Callable[[str], float]) -> list[int]:
    """The ``count`` notes (of ``keep``, when given) holding the most of the words ``chosen``
    exactly in their title or body, each word counting its rarity; the earlier note first on a
    tie. Exact words only: a restatement repeats its distinctive words, and looking each up is a
    dictionary look-up per segment (its counts, ``Segment.doc_frequencies``) and a posting list
    where it is held, where a search's substring forms would scan every word of the index."""
    admitted = None if keep is None else set(keep)
    weight: dict[int, float] = {}
    for word in chosen:
        rare = weigh(word)
        holders: set[int] = set()
        for segment in parts_of(view):
            for field in ("body", "title"):
                if segment.doc_frequencies(field).get(word):
                    holders.update(segment.to_searcher_numbers(segment.term_docs(field, word)))
        for doc in holders:
            if admitted is None or doc in admitted:
                weight[doc] = weight.get(doc, 0.0) + rare
    return heapq.nsmallest(count, weight, key=lambda doc: (-weight[doc], doc))


def resembling(view: Snapshot, title: str, body: str, *, exclude: Collection[int] = (),
               keep: Collection[int] | None = None, limit: int | None = None, threshold: float | None = None,
               terms: int | None = None, candidates: int | None = None, min_words: int | None = None,
               rarest: Rarity | None = None) -> list[Resembling]:
    """Up to ``limit`` notes of ``view`` (none of ``exclude``) whose resemblance to the note
    ``title`` + ``body`` is at least ``threshold``, the most resembling first (see the module).
    ``keep``: only these notes (all when None). ``rarest``: the index's word rarities, when the
    caller keeps them across calls (tidy). The bounds not given are the ``similar_*`` settings."""
    config = view.config
    limit = config.similar_shown if limit is None else limit
    threshold = config.similar_threshold if threshold is None else threshold
    terms = config.similar_terms if terms is None else terms
    candidates = config.similar_candidates if candidates is None else candidates
    min_words = config.similar_min_words if min_words is None else min_words
    if limit <= 0:
        return []
    text = note_text(title, body, config)
    mine = note_said(title, body, config)
    if not comparable(mine, min_words, config):
        return []
    rarest = rarest or Rarity(view)
    chosen = distinctive_terms(text, terms, rarest, config.query_min_term_chars)
    if not chosen:
        return []
    weights: dict[str, float] = {}  # this call's, in front of ``rarest``'s bounded memory

    def weigh(word: str) -> float:
        known = weights.get(word)
        if known is None:
            known = weights[word] = rarest(word)
        return known

    mine_weight = math.fsum(weigh(w) for w in mine.words)
    found = []
    for doc in _holding_most(view, chosen, candidates + len(exclude), keep, weigh):
        if doc in exclude:
            continue
        record = view.record(doc)
        theirs = note_said(str(record.get("title") or ""), str(record.get("head") or ""), config)
        if not comparable(theirs, min_words, config):
            continue
        score = likeness(mine, theirs, weigh, mine_weight)
        if score >= threshold:
            found.append(Resembling(doc, round(score, 3)))
    found.sort(key=lambda r: -r.resemblance)
    return found[:limit]
