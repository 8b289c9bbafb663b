"""The pruned page (search/topk.py) is the full ranking's page: every note scored, then sorted.

Generated vaults are made to trip a shortcut: a few dates shared by many notes (ties broken by
the path), words whose stems are inside other words (stem-only title hits, exact hits in the
body only), words in nearly every note, several segments with deleted notes. Each vault is
asked many queries at every page size, each way to the page forced in turn (the threshold
walk, the tier sets scored directly, the defaults), with and without a filter; the page, its
scores and ``truncated`` must equal the full ranking's. A plain cut (the first notes a cheap
order gives) fails it, which ``test_a_plain_cut_is_caught`` checks on seeded vaults.
"""

from __future__ import annotations

import json
import random
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import commit_note, commit_removal, write_notes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_mem.search import topk
from vault_mem.search.build import sync
from vault_mem.search.ranking import score_notes, search_terms
from vault_mem.search.snapshot import Snapshot
from vault_mem.search.store import VaultIndex
from vault_mem.served.agents import Agent
from vault_mem.served.context import Vault, View, view_of
from vault_mem.settings import current as current_settings

# Stems inside other words, words in every note, rare words, and words holding other words.
WORDS = ["color", "colors", "colorful", "colorizing", "recolor", "plugin", "plugins", "community",
         "communities", "footer", "run", "running", "runs", "rerun", "support", "supported",
         "supporting", "install", "installation", "zebra", "archive", "archived"]
COMMON = ["community", "footer", "plugin"]
DATES = ["2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"]
WAYS = {"walk": {"direct_below": 0, "tier_below": 0}, "tier sets": {"direct_below": 0, "tier_below": 10**9},
        "defaults": {}}


def note_text(rng: random.Random, i: int) -> str:
    title = " ".join(rng.choice(WORDS).capitalize() for _ in range(rng.randint(1, 3)))
    tags = rng.sample(WORDS, rng.randint(0, 2))
    body = [rng.choice(COMMON) for _ in range(rng.randint(0, 3))] + rng.choices(WORDS, k=rng.randint(0, 8))
    rng.shuffle(body)
    if rng.random() < 0.5:  # boilerplate shared word for word: equal scores
        body += ["Install", "the", "community", "plugin", "from", "the", "footer."]
    lines = ["---", f"title: {json.dumps(title)}", f"updated: {rng.choice(DATES)}", f"tags: {json.dumps(tags)}",
             "---", " ".join(body)]
    return "\n".join(lines) + "\n"


def mirrored_pair(rng: random.Random, i: int) -> dict[str, str]:
    """Two notes holding ``alpha`` and ``bravo`` as often as each other holds the other: both
    words have one rarity, so notes of swapped hits tie, and reach that tie from other groups."""
    a, b = rng.randint(0, 3), rng.randint(0, 3)
    title = rng.choice(["", "Alpha", "Bravo", "Alpha Bravo"])
    pair = {}
    for name, (x, y) in (("p", (a, b)), ("q", (b, a))):
        swapped = title if name == "p" else title.replace("Alpha", "X").replace("Bravo", "Alpha").replace("X", "Bravo")
        body = " ".join(["alpha"] * x + ["bravo"] * y + ["filler"])
        folder = rng.choice(["a", "b", "z"])
        pair[f"{folder}/{name}{i:03}.md"] = "\n".join(
            ["---", f"title: {json.dumps(swapped or 'Note')}", f"updated: {rng.choice(DATES[:2])}", "---", body]) + "\n"
    return pair


def make_vault(root: Path, seed: int, notes: int) -> tuple[VaultIndex, dict[str, str]]:
    """A vault of ``notes`` generated notes and as many mirrored pairs, built, then edited and
    trimmed in commits of their own (new segments, and deletions in the old ones)."""
    rng = random.Random(seed)
    files = {f"{rng.choice(['a', 'b', 'b/c'])}/n{i:03}.md": note_text(rng, i) for i in range(notes)}
    for i in range(rng.randint(0, notes)):
        files |= mirrored_pair(rng, i)
    write_notes(root, files)
    index = VaultIndex(root, root.parent / f"{root.name}-ix", config=current_settings())
    sync(index, procs=1)
    for rel in rng.sample(sorted(files), min(len(files), rng.randint(1, 4))):
        files[rel] = note_text(rng, 0)
        commit_note(index, rel, files[rel])
    for rel in rng.sample(sorted(files), min(len(files), rng.randint(0, 2))):
        commit_removal(index, rel)
        del files[rel]
    return index, files


def queries(rng: random.Random, count: int) -> list[str]:
    found = [rng.choice(COMMON) for _ in range(2)] + [" ".join(COMMON), "alpha bravo", "bravo alpha filler"]
    while len(found) < count:
        found.append(" ".join(rng.sample(WORDS, rng.randint(1, 3))))
    return found


def full_ranking(view: View, terms: list[str], keep: Collection[int] | None) -> tuple[list[int], dict[int, float]]:
    """Every match scored, sorted by score, newest, path: the order docs/ranking.md states."""
    scores = score_notes(view.snapshot, terms)
    updated, paths = view.snapshot.column("updated"), view.snapshot.column("path")
    matches = sorted((d for d in scores if keep is None or d in keep),
                     key=lambda d: (-scores[d], -(updated[d] or 0), paths[d] or ""))
    return matches, scores


def full_page(ranking: tuple[list[int], dict[int, float]], limit: int) -> tuple[list[int], dict[int, float], bool]:
    matches, scores = ranking
    return matches[:limit], {d: scores[d] for d in matches[:limit]}, len(matches) > limit


def compare(view: View, query: str, keep: Collection[int] | None, limits: range) -> list[str]:
    """Each way's page against the full ranking's, at every limit; the differences found."""
    terms, _dropped = search_terms(query, view.config)
    wrong = []
    ranking = full_ranking(view, terms, keep)
    for limit in limits:
        want = full_page(ranking, limit)
        for way, knobs in WAYS.items():
            if way == "defaults" and limit not in (1, 10, 50):
                continue  # few matches: scored directly, the same whatever the limit
            got = topk.best_notes(view.snapshot, terms, limit, keep, **knobs)
            if (got.page, got.scores, got.truncated) != want:
                wrong.append(f"{query!r} limit {limit} ({way}, keep {keep is not None}): "
                             f"{got.page} {got.truncated} != {want[0]} {want[2]}")
    return wrong


def filters(view: View, rng: random.Random) -> list[Collection[int] | None]:
    live = view.snapshot.all_docs()
    return [None, set(rng.sample(live, len(live) // 2)), set(rng.sample(live, min(len(live), 3)))]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), notes=st.integers(1, 30))
def test_the_pruned_page_is_the_full_rankings_page(tmp_path_factory: Any, seed: int, notes: int) -> None:
    tmp = tmp_path_factory.mktemp("topk")
    index, files = make_vault(tmp / "v", seed, notes)
    rng = random.Random(seed)
    try:
        with view_of(Vault(index.root, index)) as view:
            wrong = [w for q in queries(rng, 10) for keep in filters(view, rng)
                     for w in compare(view, q, keep, range(1, min(len(files) + 3, 51)))]
    finally:
        index.close()
    assert not wrong, "\n".join(wrong[:10])


def test_a_limited_callers_pruned_page_holds_only_its_notes(tmp_path: Path) -> None:
    """The groups and the tie order are cached per segment, shared by every caller; each caller's
    hidden notes are skipped as unseen. Asked in turn by the owner and two limited agents (each on
    the caches the others warmed), every page is the full ranking of what that caller may see."""
    index, _files = make_vault(tmp_path / "v", 7, 40)
    rng = random.Random(7)
    callers = [None, Agent("ab", read=("a/", "b/c/")), Agent("z", read=("z/",)), None, Agent("ab", read=("a/", "b/c/"))]
    try:
        for caller in callers:
            with view_of(Vault(index.root, index), caller) as view:
                paths = view.snapshot.column("path")
                visible = {d for d in range(len(paths)) if paths[d] is not None and view.may_read(paths[d])}
                wrong = [w for q in queries(rng, 6) for w in compare(view, q, None, range(1, 20))]
                assert not wrong, "\n".join(wrong[:10])
                for q in queries(rng, 6):
                    for way in WAYS.values():
                        page = topk.best_notes(view.snapshot, search_terms(q, view.config)[0], 50, None, **way).page
                        assert set(page) <= visible, (caller, q)
    finally:
        index.close()


def test_a_walk_leaves_no_garbage_cycle_behind(tmp_path: Path) -> None:
    """A serving process freezes what outlives a young collection (runtime/collector.py), so a
    cycle made per search waits there for a full collection: every way to the page must leave
    its objects to be freed as soon as the page is made."""
    import gc

    index, _files = make_vault(tmp_path / "v", 3, 30)
    try:
        with view_of(Vault(index.root, index)) as view:
            terms = search_terms(" ".join(COMMON), view.config)[0]
            gc.collect()
            gc.disable()  # only reference counts free anything until the check
            try:
                for way in WAYS.values():
                    assert topk.best_notes(view.snapshot, terms, 5, None, **way).page
                left = [type(o).__name__ for o in gc.get_objects() if type(o) in (topk._Query, topk._Stream)]
            finally:
                gc.enable()
    finally:
        index.close()
    assert not left, left


@contextmanager
def plain_cut() -> Iterator[None]:
    """The walk stopping as soon as it holds ``limit`` notes: the first a cheap order gives."""
    saved = topk._Query.reach
    topk._Query.reach = lambda *args, **kwargs: None  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        topk._Query.reach = saved  # type: ignore[method-assign]


def test_a_plain_cut_is_caught(tmp_path: Path) -> None:
    """The vaults above are hard enough: a walk cut at ``limit`` notes gives other pages."""
    caught = 0
    for seed in range(6):
        index, _files = make_vault(tmp_path / f"v{seed}", seed, 40)
        rng = random.Random(seed)
        try:
            with index.searching() as searcher, plain_cut():
                view = View(Vault(index.root, index), Snapshot(searcher, config=index.config))
                caught += sum(bool(compare(view, q, None, range(1, 12))) for q in queries(rng, 8))
        finally:
            index.close()
    assert caught >= 6


@pytest.mark.anyio
async def test_memory_search_pages_are_the_full_rankings_at_every_limit(tmp_path: Path, mcp_session: Any) -> None:
    """Through a real MCP session on a vault big enough for the walk (hundreds of matches):
    every page size, with and without filters, answers the full ranking's notes and scores."""
    rng = random.Random(22)
    files = {f"p/n{i:03}.md": note_text(rng, i) for i in range(320)}
    root = write_notes(tmp_path / "v", files)
    index = VaultIndex(root, tmp_path / "ix", config=current_settings())
    sync(index, procs=1)
    vault = Vault(root, index)
    async with mcp_session(vault) as c:
        for query, extra in [("community", {}), ("colorful plugin", {}), ("support", {"tag": "zebra"}),
                             ("footer community", {"since": "2025-02-01T00:00:00Z"}), ("running archive", {})]:
            with view_of(vault) as view:
                keep = None
                if extra:
                    keep = set(view.snapshot.all_docs())
                    if "tag" in extra:
                        keep = {d for d in keep if extra["tag"] in (view.snapshot.record(d).get("tags") or [])}
                    if "since" in extra:
                        keep = {d for d in keep if view.snapshot.column("updated")[d] >= 1738368000}
                terms, _ = search_terms(query, view.config)
                ranking = full_ranking(view, terms, keep)
                expected = [full_page(ranking, limit) for limit in range(1, 51)]
                names = {d: view.snapshot.record(d)["path"].removesuffix(".md") for d in view.snapshot.all_docs()}
            for limit, (page, scores, truncated) in zip(range(1, 51), expected, strict=True):
                answer = await c.call("memory_search", agent="t", query=query, limit=limit, **extra)
                got = [(n["permalink"].removeprefix("memory://"), n["score"]) for n in answer["notes"]]
                assert got == [(names[d], scores[d]) for d in page], (query, limit)
                assert answer["truncated"] == truncated, (query, limit)
    index.close()
