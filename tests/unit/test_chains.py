"""reads/chains.py: the rows of a search fold the same versions into the same rows whatever
order ranked the matches (words alone, or fused with meaning): only the rows' order follows it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_mem.reads.chains import Row, regroup


class Graph:
    """A supersession graph asked what ``regroup`` asks of ``reads/lineage.py:Lineage``: notes are
    numbers, a higher number is newer (created later)."""

    def __init__(self, edges: set[tuple[int, int]]) -> None:  # (new, old)
        self.later: dict[int, set[int]] = {}
        self.earlier: dict[int, set[int]] = {}
        for new, old in edges:
            if new != old:
                self.later.setdefault(old, set()).add(new)
                self.earlier.setdefault(new, set()).add(old)

    def has_edges(self) -> bool:
        return bool(self.later)

    def superseders(self, doc: int) -> list[int]:
        return sorted(self.later.get(doc, ()))

    def superseded(self, doc: int) -> bool:
        return doc in self.later

    def latest(self, doc: int) -> list[int]:
        seen, stack, found = {doc}, [doc], set()
        while stack:
            node = stack.pop()
            if node not in self.later:
                found.add(node)
            for nxt in self.later.get(node, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return sorted(found, reverse=True)

    def history(self, doc: int) -> list[int]:
        seen, stack = {doc}, [doc]
        while stack:
            node = stack.pop()
            for nxt in (*self.later.get(node, ()), *self.earlier.get(node, ())):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return sorted(seen)


NOTES = 12


@st.composite
def cases(draw: st.DrawFn) -> tuple[Graph, list[int], list[int], set[int], dict[int, float]]:
    """A lineage of up to 12 notes (mostly newer superseding older, now and then a cycle), the
    notes that match, two orders of them, the archived ones and each match's score."""
    edges = draw(st.sets(st.tuples(st.integers(0, NOTES - 1), st.integers(0, NOTES - 1)), max_size=14))
    forward = {(max(a, b), min(a, b)) for a, b in edges}
    backward = draw(st.sets(st.sampled_from(sorted(forward)), max_size=1)) if forward else set()
    graph = Graph(forward | {(old, new) for new, old in backward})
    matched = draw(st.lists(st.integers(0, NOTES - 1), min_size=1, unique=True))
    second = draw(st.permutations(matched))
    archived = draw(st.sets(st.sampled_from(matched)))
    scores = {d: draw(st.floats(0, 10)) for d in matched}
    return graph, matched, list(second), archived, scores


def rows_of(graph: Graph, order: list[int], archived: set[int], scores: dict[int, float],
            follow: str) -> list[Row]:
    place = {d: i for i, d in enumerate(order)}
    matched = set(order)
    return regroup(order, scores, graph, follow,  # type: ignore[arg-type]
                   matching=lambda chain: {d: scores[d] for d in chain if d in matched},
                   demoted=archived.__contains__, rank=lambda d: (place[d],), newest=lambda d: (-d,))


def structure(rows: list[Row]) -> set[tuple[int, frozenset[int]]]:
    return {(r.doc, frozenset(r.older)) for r in rows}


@settings(max_examples=300, deadline=None)
@given(cases())
def test_the_same_matches_fold_into_the_same_rows_whatever_order_ranked_them(case) -> None:
    graph, first, second, archived, scores = case
    for follow in ("active", "latest", "full_history"):
        one, other = rows_of(graph, first, archived, scores, follow), rows_of(graph, second, archived, scores, follow)
        assert structure(one) == structure(other), follow
    rows = rows_of(graph, first, archived, scores, "active")
    shown = [r.doc for r in rows] + [d for r in rows for d in r.older]
    assert sorted(shown) == sorted(first)  # every match once, as a row or folded into one
    for row in rows:
        for older in row.older:  # folded into a version that supersedes it, directly or not
            assert row.doc in graph.latest(older) or row.doc in _reachable(graph, older)
    for chain_rows in _by_chain(graph, rows).values():
        current = [r for r in chain_rows if not graph.superseded(r.doc)]
        if current:  # a chain's first row is a current version when one matches
            assert not graph.superseded(chain_rows[0].doc)


def _reachable(graph: Graph, doc: int) -> set[int]:
    seen, stack = set(), [doc]
    while stack:
        for nxt in graph.later.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _by_chain(graph: Graph, rows: list[Row]) -> dict[int, list[Row]]:
    chains: dict[int, list[Row]] = {}
    for row in rows:
        chains.setdefault(min(graph.history(row.doc)), []).append(row)
    return chains


def test_a_version_found_by_meaning_alone_joins_its_chain_once() -> None:
    """v1 <- v2 <- v3 and v2b superseding v1: words match v2b only, meaning found v3 and put it
    after v2b. One row for v3 (the current version of its branch, first) and one for v2b: never
    v2b twice, as when only the versions matching by words were grouped."""
    v1, v2, v2b, v3 = 1, 2, 3, 4
    graph = Graph({(v2, v1), (v3, v2), (v2b, v1)})
    scores = {v2b: 3.5, 9: 3.5}
    order = [9, v2b, v3]
    rows = regroup(order, scores, graph, "active",  # type: ignore[arg-type]
                   matching=lambda chain: {d: scores[d] for d in chain if d == v2b},
                   demoted={v2b}.__contains__, rank=lambda d: (order.index(d),), newest=lambda d: (-d,))
    assert [r.doc for r in rows] == [9, v3, v2b]
