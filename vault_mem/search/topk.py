"""The first ``limit`` notes of a search in rank order, without scoring every note that matches.

The order is the ranking's (docs/ranking.md, ``search/ranking.py``): score, then ``updated``
newest first, then path; the page is exactly what scoring every match and sorting would
give, ties included. What makes skipping possible: each part of a score is a function of
one term's statistics, so what a term adds to a note is known from the note's weighted hits
of that term's two forms, and the most it can still add is known before notes are scored.

Each term's notes are grouped, per segment, by those weighted hits (``ranking.segment_groups``:
the notes of a plugin catalogue's boilerplate fall into a handful of groups), each group in
the tie order. A call orders a term's groups by what they add: the term's *stream*, read
from the top, groups adding the same merged in the tie order. The streams are read in turns
(Fagin's threshold algorithm; max-score and block-max pruning apply the same bound to
posting blocks): every note met is scored from its hits in every term, and the walk stops
when no note not met yet can enter the page, because the most it can score (each stream's
current group, plus the bonuses it could still get) is below the page's last score, or
equal to it while such a note comes later in the tie order than the page's last note.

Two passes keep the tiers apart: first the notes holding every term exactly (they rank
above all others), from the groups holding the exact form; then, only when those do not
fill the page, the others. Few matches (under ``DIRECT_BELOW``) and a filter admitting few
notes are scored directly. ``truncated`` stays exact: more matches than the page shows.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from vault_mem.search.query import newest_first
from vault_mem.search.ranking import (
    TermHits,
    TermStats,
    form_stats,
    segment_groups,
    segment_hits,
)
from vault_mem.search.snapshot import Snapshot, parts_of
from vault_mem.settings import Settings

Entry = tuple[float, tuple[int, str], int]  # (-score, tie key, docnum): ascending is rank order
Item = tuple[tuple[int, str], int, int, int]  # (tie key, docnum, segment, segment docnum)


@dataclass(frozen=True)
class Ranked:
    """A page of matches in rank order, their scores, and whether more notes matched."""

    page: list[int]
    scores: dict[int, float]
    truncated: bool
    ceiling: float = 0.0  # the query's ceiling: a score above it holds every term exactly


def best_notes(view: Snapshot, terms: list[str], limit: int, keep: Collection[int] | None = None,
               direct_below: int | None = None, tier_below: int | None = None) -> Ranked:
    """The first ``limit`` notes holding some term in some form (and in ``keep``, when given)
    in rank order; the same page as ``ranking.score_notes`` of every note, sorted. The two
    thresholds choose between ways to the same page (tests set them to take each way)."""
    config = view.config
    direct_below = config.topk_direct_below if direct_below is None else direct_below
    tier_below = config.topk_tier_below if tier_below is None else tier_below
    query = _Query(view, terms)
    bound = query.holders_bound()
    if bound < direct_below:
        return query.direct(query.union(), limit, keep)
    if keep is not None and len(keep) * config.topk_filter_share < bound:
        return query.direct(keep, limit, None)
    return query.pruned(limit, keep, tier_below)


def scores_of(view: Snapshot, terms: list[str], docs: Collection[int]) -> dict[int, float]:
    """The score of each of ``docs`` that holds some term in some form (as ``ranking.score_notes``
    gives it), without scoring any other note: the other versions of a page's chains."""
    query = _Query(view, terms)
    found: dict[int, float] = {}
    for doc in docs:
        score, matched, _exactly = query.score(*query.locate(doc))
        if matched:
            found[doc] = score
    return found


def word_scores(view: Snapshot, terms: list[str], docs: Collection[int]) -> dict[int, tuple[float, float, bool]]:
    """Each of ``docs`` that holds some term in some form: its score (as ``ranking.score_notes``
    gives it), that score without the two bonuses for holding every term (the +10 and the query's
    ceiling: what its words add, by rarity and hits), and whether it holds every term exactly. The
    meaning stage fuses the second (search/fusion.py)."""
    config = view.config
    query = _Query(view, terms)
    everything = len(terms)
    found: dict[int, tuple[float, float, bool]] = {}
    for doc in docs:
        score, matched, exactly = query.score(*query.locate(doc))
        if matched:
            bonus = (config.rank_all_terms_bonus if matched == everything else 0) \
                + (query.ceiling if exactly == everything else 0)
            found[doc] = (score, max(score - bonus, 0.0), exactly == everything)
    return found


class _Query:
    """One call's terms over the searcher's segments: their hits, rarities and the scoring."""

    def __init__(self, view: Snapshot, terms: list[str]) -> None:
        self.terms = terms
        self.segments = list(parts_of(view))  # a limited caller's hidden notes among each one's unseen
        self.offsets = [seg.offset for seg in self.segments]
        self.unseen = [seg.unseen for seg in self.segments]
        self.config = view.config
        self.hits: list[list[TermHits]] = [[segment_hits(seg, t, self.config) for seg in self.segments]
                                           for t in terms]
        notes = view.doc_count()
        self.stats: list[TermStats] = []
        self.ceiling = float(view.config.rank_all_terms_bonus)  # summed as score_notes sums it: the same float
        for per_segment in self.hits:
            exact_df = sum(self._live_count(i, h.exact) for i, h in enumerate(per_segment))
            stem_df = sum(self._live_count(i, h.stem) for i, h in enumerate(per_segment))
            stats = form_stats(notes, exact_df, stem_df)
            self.stats.append(stats)
            self.ceiling += stats.ceiling(self.config)
        self.updated = view.column("updated")
        self.paths = view.column("path")

    def _live_count(self, segment: int, docs: dict[int, float]) -> int:
        unseen = self.unseen[segment]
        return len(docs) - (sum(1 for d in unseen if d in docs) if unseen else 0)

    def holders_bound(self) -> int:
        """At least the number of notes holding some term: each term's holders, summed."""
        return sum(len(h.exact) + len(h.stem) for per_segment in self.hits for h in per_segment)

    def score(self, segment: int, local: int) -> tuple[float, int, int]:
        """A note's score (as ``ranking.score_notes`` computes it, operation for operation),
        and how many terms it holds in some form and exactly."""
        config = self.config
        total = 0.0
        matched = exactly = 0
        for stats, per_segment in zip(self.stats, self.hits, strict=True):
            hits = per_segment[segment]
            exact = hits.exact.get(local)
            if exact is not None:
                total = total + stats.exact_rarity * exact
                matched += 1
                exactly += 1
            stem = hits.stem.get(local)
            if stem is not None:
                total = total + stats.stem_rarity * stem
                if exact is None:
                    matched += 1
        everything = len(self.terms)
        score = round(total + (config.rank_all_terms_bonus if matched == everything else 0)
                      + (self.ceiling if exactly == everything else 0), config.rank_score_decimals)
        return score, matched, exactly

    def alone_score(self, exact: float | None, stem: float | None) -> float:
        """The score of a note of a one-term query holding these weighted hits (as ``score``)."""
        config = self.config
        stats, total = self.stats[0], 0.0
        if exact is not None:
            total = total + stats.exact_rarity * exact
        if stem is not None:
            total = total + stats.stem_rarity * stem
        exact_bonus = self.ceiling if exact is not None else 0
        return round(total + config.rank_all_terms_bonus + exact_bonus, config.rank_score_decimals)

    def tie(self, doc: int) -> tuple[int, str]:
        return newest_first(self.updated[doc], self.paths[doc])

    def locate(self, doc: int) -> tuple[int, int]:
        segment = bisect.bisect_right(self.offsets, doc) - 1
        return segment, doc - self.offsets[segment]

    def union(self) -> set[int]:
        """Every live note holding some term in some form."""
        found: set[int] = set()
        for per_segment in self.hits:
            for segment, hits in enumerate(per_segment):
                offset, unseen = self.offsets[segment], self.unseen[segment]
                for docs in (hits.exact, hits.stem):
                    found.update(offset + d for d in docs if d not in unseen)
        return found

    def direct(self, docs: Collection[int], limit: int, keep: Collection[int] | None) -> Ranked:
        """Every note of ``docs`` that matches scored, the best ``limit`` taken."""
        entries: list[Entry] = []
        for doc in docs:
            if keep is not None and doc not in keep:
                continue
            score, matched, _exactly = self.score(*self.locate(doc))
            if matched:
                entries.append((-score, self.tie(doc), doc))
        best = heapq.nsmallest(limit, entries)
        return Ranked([d for _s, _t, d in best], {d: -s for s, _t, d in best}, len(entries) > len(best),
                      self.ceiling)

    def pruned(self, limit: int, keep: Collection[int] | None, tier_below: int) -> Ranked:
        """The page by the threshold walk: the all-exact tier first, then the others.

        The notes holding every term (exactly, or in some form) are found first by
        intersecting the terms' holders (C's set operations, not a walk); when they are few
        they are scored directly and the walk need not look for them."""
        everything = len(self.terms)
        best = _Best(limit)
        tier = self.holding_every(exact=True, below=tier_below)
        if tier is not None:
            for doc in tier:
                self.offer(best, doc, keep, True)
        else:
            self.walk([self.stream(t, exact_only=True) for t in range(everything)], best, keep, tier_exact=True)
        if len(best.entries) < limit:  # every note holding every term exactly has been met
            rest = _Best(limit - len(best.entries))
            held = self.holding_every(exact=False, below=tier_below)
            for doc in held or ():
                self.offer(rest, doc, keep, False)
            streams = [self.stream(t, exact_only=False, stem_only=everything == 1) for t in range(everything)]
            self.walk(streams, rest, keep, tier_exact=False, met=held)
            best.entries += rest.entries
            best.extra = best.extra or rest.extra
        page = [d for _s, _t, d in best.entries]
        truncated = best.extra or self.another_match(set(page), keep)
        return Ranked(page, {d: -s for s, _t, d in best.entries}, truncated, self.ceiling)

    def holding_every(self, exact: bool, below: int) -> set[int] | None:
        """The live notes holding every term (``exact``: in the exact form), or None when
        they may be ``below`` or more (then the walk finds those that matter)."""
        if len(self.terms) == 1 and sum(len(h.exact) + (0 if exact else len(h.stem)) for h in self.hits[0]) >= below:
            return None  # (deleted notes counted: a bound is enough)
        found: set[int] = set()
        for segment, offset in enumerate(self.offsets):
            forms = [(h.exact,) if exact else (h.exact, h.stem) for h in (per[segment] for per in self.hits)]
            forms.sort(key=lambda f: sum(len(d) for d in f))
            common: set[int] = set().union(*forms[0])
            for holders in forms[1:]:
                # with a dict as the argument, C walks the smaller side: no Python loop per note
                common = common.intersection(holders[0]).union(*(common.intersection(d) for d in holders[1:]))
                if not common:
                    break
            unseen = self.unseen[segment]
            found.update(offset + d for d in common if d not in unseen)
            if len(found) >= below:
                return None
        return found

    def offer(self, best: _Best, doc: int, keep: Collection[int] | None, tier_exact: bool) -> None:
        """Offer ``best`` one note (scored) if ``keep`` admits it and it is of the tier."""
        if keep is not None and doc not in keep:
            return
        segment, local = self.locate(doc)
        score, _matched, exactly = self.score(segment, local)
        if (exactly == len(self.terms)) == tier_exact:
            best.offer((-score, self.tie(doc), doc))

    def stream(self, term: int, exact_only: bool, stem_only: bool = False) -> _Stream:
        """One term's groups over every segment, from what they add most down."""
        stats = self.stats[term]
        added: list[tuple[float, float, int, list[int]]] = []  # (what it adds, merge key, ...)
        alone = len(self.terms) == 1
        for segment, seg in enumerate(self.segments):
            for (exact, stem), docs in segment_groups(seg, self.terms[term], self.config):
                if (exact_only and exact is None) or (stem_only and exact is not None):
                    continue
                value = (stats.exact_rarity * exact if exact is not None else 0.0) \
                    + (stats.stem_rarity * stem if stem is not None else 0.0)
                # One term: a group's notes all have one score, so groups of one score (rounded)
                # are read as one, in the tie order: the stream is then the rank order itself.
                added.append((value, self.alone_score(exact, stem) if alone else value, segment, docs))
        added.sort(key=lambda a: -a[0])
        levels: list[tuple[float, list[tuple[int, list[int]]]]] = []
        keys: list[float] = []
        for value, key, segment, docs in added:
            if keys and keys[-1] == key:  # the group stands for the most its parts add: the first
                levels[-1][1].append((segment, docs))
            else:
                levels.append((value, [(segment, docs)]))
                keys.append(key)
        return _Stream(self, levels)

    def walk(self, streams: list[_Stream], best: _Best, keep: Collection[int] | None, tier_exact: bool,
             met: set[int] | None = None) -> None:
        """Offer ``best`` the notes of one tier met in the streams, read in turns until no note
        not met yet can enter it. ``met``: every note holding every term, already offered."""
        seen: set[int] = set() if met is None else set(met)
        everything = len(self.terms)
        while True:
            active = [s for s in streams if s.head is not None]
            if not active or (tier_exact and len(active) < len(streams)):
                break  # a tier-exact note is in every stream: one read to its end met them all
            full = len(best.entries) >= best.want
            if full:
                reach = self.reach(best.entries[-1], active, len(active) == len(streams), tier_exact, met is not None)
                if reach is None:
                    break
            # Only a note holding every term can fill the exact tier (or, here, still enter):
            # it is in every stream, so the shortest stream finds them all soonest, and the one
            # whose current group ends soonest lowers the bound soonest.
            if not full and tier_exact:
                active = [min(active, key=lambda s: s.left)]
            elif full and reach:  # and the streams whose heads come before the last note may tie it
                last_tie = best.entries[-1][1]
                soonest = min(active, key=lambda s: s.group_left)
                active = [s for s in active if s is soonest or s.head_tie < last_tie]
            for stream in active:
                tie, doc, segment, local = stream.pop()
                if doc in seen:
                    continue
                seen.add(doc)
                if keep is not None and doc not in keep:
                    continue
                score, _matched, exactly = self.score(segment, local)
                if (exactly == everything) == tier_exact:
                    best.offer((-score, tie, doc))

    def reach(self, last: Entry, active: list[_Stream], all_active: bool, tier_exact: bool,
              met_all: bool = False) -> bool | None:
        """Which notes not met yet can still rank before ``last``, the page's last entry: None
        when none can, True when only notes holding every term can, False when others can too.

        A note holding every term is in every stream, in the current group or a later one,
        and gets the +10 (and, in the exact tier, the ceiling); a note lacking a term gets no
        bonus and nothing from that term (a stream read to its end: every note not met lacks
        its term). ``met_all``: every note holding every term has been met."""
        config = self.config
        fronts = sum(s.frontier for s in active)
        if not all_active:
            return False if _may_enter(last, active, fronts, None, True, config) else None
        if not tier_exact and _raised(fronts - min(s.frontier for s in active), config) >= -last[0] and any(
                _may_enter(last, [s for s in active if s is not lacked], fronts - lacked.frontier, None, True,
                           config)
                for lacked in active):
            return False  # (the first test: the most any note lacking a term can score, quickly)
        if met_all:
            return None
        bonus = config.rank_all_terms_bonus + self.ceiling if tier_exact else float(config.rank_all_terms_bonus)
        return True if _may_enter(last, active, fronts, bonus, False, config) else None

    def another_match(self, shown: set[int], keep: Collection[int] | None) -> bool:
        """Whether a live note holds some term (and is in ``keep``) beyond ``shown``."""
        for per_segment in self.hits:
            for segment, hits in enumerate(per_segment):
                offset, unseen = self.offsets[segment], self.unseen[segment]
                for docs in (hits.exact, hits.stem):
                    for local in docs:
                        doc = offset + local
                        if local not in unseen and doc not in shown and (keep is None or doc in keep):
                            return True
        return False


class _Best:
    """The best ``want`` entries offered, in rank order, and whether one was left out."""

    def __init__(self, want: int) -> None:
        self.want = want
        self.entries: list[Entry] = []
        self.extra = False

    def offer(self, entry: Entry) -> None:
        if len(self.entries) < self.want:
            bisect.insort(self.entries, entry)
            return
        self.extra = True
        if entry < self.entries[-1]:
            bisect.insort(self.entries, entry)
            self.entries.pop()


def _may_enter(last: Entry, streams: list[_Stream], fronts: float, bonus: float | None, may_lack: bool,
               config: Settings) -> bool:
    """Whether a note not met yet, in or below the current group of each of ``streams``
    (adding ``fronts`` at most, plus ``bonus``), or outside some when ``may_lack`` (adding
    nothing from those and no bonus), can rank before ``last``.

    Scores are rounded, so such a note may tie ``last``'s score. A note in the current group
    of a stream whose head (the first note not read yet) is not before ``last`` in the tie
    order comes after ``last``; so only a note below (or outside) each such stream's current
    group can still come before it."""
    if not streams:
        return False  # it holds no term: not a match
    last_score, last_tie = -last[0], last[1]
    reach = _raised(fronts + (bonus or 0.0), config)
    if reach != last_score:
        return reach > last_score
    behind = [s for s in streams if last_tie <= s.head_tie]
    if not behind:
        return True
    outside = [s for s in behind if s.after is None]
    if outside and not may_lack:
        return False  # it holds every term: nothing is below those groups
    below = fronts - sum(s.frontier for s in behind) + sum(s.after for s in behind if s.after is not None)
    return _raised(below + (0.0 if outside or bonus is None else bonus), config) >= last_score


def _raised(value: float, config: Settings) -> float:
    """``value`` rounded as a score is, after raising it past any error of summing in another order."""
    return round(value + config.topk_margin * (1.0 + abs(value)), config.rank_score_decimals)


class _Stream:
    """One term's notes, group after group from what they add most down, each group's notes
    (merged over segments) in the tie order; deleted notes skipped."""

    def __init__(self, query: _Query, levels: list[tuple[float, list[tuple[int, list[int]]]]]) -> None:
        self._query = query
        self._levels = levels
        self._next = 0
        self._notes: Iterator[Item] = iter(())
        self.frontier = 0.0  # what the current group adds
        self.head: Item | None = None
        self.left = sum(len(docs) for _value, groups in levels for _segment, docs in groups)  # deleted too
        self.group_left = 0  # notes left in the current group (deleted too)
        self._advance()

    @property
    def after(self) -> float | None:
        """What the next group adds (None: this is the last)."""
        return self._levels[self._next][0] if self._next < len(self._levels) else None

    @property
    def head_tie(self) -> tuple[int, str]:
        assert self.head is not None
        return self.head[0]

    def pop(self) -> Item:
        item = self.head
        assert item is not None
        self.left -= 1
        self.group_left -= 1
        self._advance()
        return item

    def _advance(self) -> None:
        while True:
            item = next(self._notes, None)
            if item is not None:
                self.head = item
                return
            if self._next >= len(self._levels):
                self.head = None
                return
            self.frontier, groups = self._levels[self._next]
            self.group_left = sum(len(docs) for _segment, docs in groups)
            self._next += 1
            # A plain function's walks: a method's would hold this stream, and the stream its walks,
            # a cycle per search that only a full collection frees (runtime/collector.py).
            walks = [_walk(self._query, segment, docs) for segment, docs in groups]
            self._notes = walks[0] if len(walks) == 1 else heapq.merge(*walks)


def _walk(query: _Query, segment: int, docs: list[int]) -> Iterator[Item]:
    offset, unseen = query.offsets[segment], query.unseen[segment]
    updated, paths = query.updated, query.paths
    for local in docs:
        if local in unseen:
            continue
        doc = offset + local
        yield newest_first(updated[doc], paths[doc]), doc, segment, local
