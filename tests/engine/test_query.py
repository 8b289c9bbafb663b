"""The index's query API (search/query.py, search/segments.py) answers what Whoosh's own queries
answer, over several segments with deletions: live documents only, ascending, and the one
newest-first order."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from conftest import commit_note, commit_removal
from whoosh.query import And, Every, Or, Prefix, Term

from vault_mem.search import query
from vault_mem.search.columns import column
from vault_mem.search.segments import segments
from vault_mem.search.snapshot import parts_of, searcher_of
from vault_mem.served.context import Vault

TAGS = ["alpha", "beta", "gamma", "delta"]


def note(rng: random.Random, n: int) -> str:
    tags = rng.sample(TAGS, rng.randint(0, 3))
    day = rng.randint(1, 9)  # few dates: many ties, broken by path
    return (f"---\ntags: [{', '.join(tags)}]\ntype: {rng.choice(['note', 'fact'])}\n"
            f"created: 2025-01-0{day}\nupdated: 2025-02-0{day}\n---\n# Note {n}\nword{n % 7}\n")


@pytest.fixture
def vault(make_vault: Callable[..., Vault]) -> Vault:
    """A vault in one built segment plus one-note commits (edits, new notes) and removals."""
    rng = random.Random(5)
    built = make_vault({f"d{n % 3}/n{n:02}.md": note(rng, n) for n in range(30)})
    for n in rng.sample(range(30), 8):
        commit_note(built.index, f"d{n % 3}/n{n:02}.md", note(rng, n))  # an edit: the old copy is deleted
    for n in range(30, 36):
        commit_note(built.index, f"d{n % 3}/n{n:02}.md", note(rng, n))
    for n in rng.sample(range(36), 5):
        commit_removal(built.index, f"d{n % 3}/n{n:02}.md")
    return built


def whoosh_docs(searcher: Any, q: Any) -> list[int]:
    return sorted(searcher.docs_for_query(q))


def test_the_vault_has_several_segments_with_deletions(vault: Vault) -> None:
    with vault.index.searching() as searcher:
        parts = segments(searcher)
        assert len(parts) > 2 and any(seg.unseen for seg in parts)
        assert [seg.offset for seg in parts] == sorted(seg.offset for seg in parts)
        assert query.live_docs(parts) == whoosh_docs(searcher, Every()) and query.doc_count(searcher) == 31


def test_term_lookups_answer_what_whoosh_queries_answer(vault: Vault) -> None:
    with vault.index.searching() as searcher:
        parts = segments(searcher)
        for values in (["alpha"], ["alpha", "gamma"], ["nothing"], []):
            want = whoosh_docs(searcher, Or([Term("tags", v) for v in values])) if values else []
            assert query.term_docs(parts, "tags", values) == want
        for tag in [*TAGS, "nothing"]:
            assert query.has_term(parts, "tags", tag) == bool(whoosh_docs(searcher, Term("tags", tag)))
        require = [("type", "fact"), ("tags", "beta")]
        assert query.docs_where(parts, require) == whoosh_docs(searcher, And([Term(f, v) for f, v in require]))
        assert query.docs_where(parts, [("type", "note")], "tags", ["alpha", "delta"]) == whoosh_docs(
            searcher, And([Or([Term("tags", "alpha"), Term("tags", "delta")]), Term("type", "note")]))
        records = query.prefix_records(searcher, "path", "d1/")
        assert sorted(r["path"] for r in records) == sorted(
            f["path"] for f in searcher.search(Prefix("path", "d1/"), limit=None))
        assert len(parts) > 1
        assert query.lexicon(parts, "type") == ["fact", "note"]
        for name in ("tags", "type", "dom_anc", "path", "title"):  # Whoosh's own, every segment merged
            assert query.lexicon(parts, name) == [t.decode("utf-8") for t in searcher.reader().lexicon(name)]


def test_the_document_counts_read_in_one_walk_are_whooshs_for_every_term(vault: Vault) -> None:
    from vault_mem.served.context import view_of

    with view_of(vault) as view:
        reader = searcher_of(view.snapshot).reader()
        for field in ("body", "tags", "title", "path"):
            count = view.snapshot.doc_frequencies(field)
            terms = [t.decode("utf-8") for t in reader.lexicon(field)]
            assert terms and [count(t) for t in terms] == [reader.doc_frequency(field, t) for t in terms]
            assert count("nowhere-at-all") == 0 and view.snapshot.doc_frequency(field, terms[0]) == count(terms[0])
        assert view.snapshot.doc_frequencies("no such field")("word1") == 0


def test_ranges_and_the_newest_first_order(vault: Vault) -> None:
    with vault.index.searching() as searcher:
        parts = segments(searcher)
        created = column(searcher, "created")
        paths = column(searcher, "path")
        live = query.live_docs(parts)
        lo, hi = sorted(created[d] for d in live)[5], sorted(created[d] for d in live)[20]
        assert query.docs_in_range(parts, "created", lo, hi) == [d for d in live if lo <= created[d] < hi]
        assert query.docs_in_range(parts, "created", None, None) == live
        full = sorted(live, key=lambda d: (-created[d], paths[d]))
        assert query.sort_newest(searcher, live, "created") == full
        assert sorted(live, key=query.newest_first_key(created, paths)) == full
        assert query.newest_docs(parts, "created", 7) == full[:7]
        odd = [d for d in full if d % 2]
        assert query.newest_docs(parts, "created", 3, keep=lambda d: d % 2 == 1) == odd[:3]
        assert query.newest_docs(parts, "created", len(live) + 1) is None  # fewer than asked: the caller ranks


def test_one_cached_order_per_segment_gives_the_ranges_the_listing_and_the_tie_positions(vault: Vault) -> None:
    from vault_mem.search.columns import segment_column
    from vault_mem.search.lru import CACHE
    from vault_mem.search.ties import grouped_in_tie_order

    with vault.index.searching() as searcher:
        parts = segments(searcher)
        for seg in parts:
            dates, paths = segment_column(seg, "updated"), segment_column(seg, "path")
            values, docs, positions = query.segment_order(seg, "updated")
            every = sorted(range(len(paths)), key=query.newest_first_key(dates, paths))
            assert [positions[d] for d in every] == list(range(len(paths)))  # the tie order, every document
            assert values == sorted(values) and [dates[d] for d in docs] == values
            assert sorted(docs[::-1], key=positions.__getitem__) == docs[::-1], "backwards: the same order"
        query.docs_in_range(parts, "updated", None, None)
        query.newest_docs(parts, "updated", 3)
        for seg in parts:
            grouped_in_tie_order(seg, dict.fromkeys(range(len(segment_column(seg, "path"))), "same"))
        mine = {seg.key for seg in parts}
        kinds = {key[0] for key in CACHE._items if isinstance(key, tuple) and any(k in mine for k in key[1:])}
        assert kinds == {"column", "newest order"}, "besides the columns, one entry: no second copy of the order"


def test_a_listing_keeps_its_order_both_ways_in_one_entry_per_segment(vault: Vault) -> None:
    from vault_mem.search.lru import CACHE
    from vault_mem.served.context import view_of

    with view_of(vault) as view:
        live = query.live_docs(parts_of(view.snapshot))
        for by_importance in (False, True):
            every = list(view.snapshot.every_in_listing_order(by_importance))
            assert every == sorted(live, key=view.snapshot.listing_key(by_importance))
            some = set(live[::3])
            assert list(view.snapshot.in_listing_order(sorted(some), by_importance)) == [d for d in every if d in some]
        mine = {seg.key for seg in parts_of(view.snapshot)}
        kinds = {key[0] for key in CACHE._items if isinstance(key, tuple) and any(k in mine for k in key[1:])}
        assert kinds == {"column", "listing order"}, "the order and its inverse are one entry"
