"""``memory_search``'s rows by supersession chain (docs/ranking.md, "The current version first").

The matches come in rank order (score, newest, path). The first match met of a chain (the notes
connected by supersession edges, ``reads/lineage.py``) places the whole chain there: its matching
versions are grouped at once, wherever they rank, so a page is always the start of the same row
sequence however many matches were read to fill it.

In a chain, a matching version is a *head* when no later version of it matches; every other
matching version belongs to the first head its successors reach, heads taken current ones
(nothing supersedes them) first, then active before archived (or ended), then newest: which row
a version folds into never depends on the rank order, so the rows are the same whatever stages
ranked the matches (words alone, or fused with meaning). Heads in order: current first, then
active before archived (or ended), then rank. The first head carries the best score of the
chain's matches. ``follow``:

- ``active`` (default): the older versions fold into their head's row (``older``: how many, and
  the first few permalinks); a head that is itself superseded (its successors do not match) is a
  row of its own, marked ``superseded_by``;
- ``full_history``: each head row is followed by its older versions as rows of their own;
- ``latest``: as ``active``, but a superseded head gives way to its current version(s), which
  carry its score and list it in ``older``;
- ``all``: no grouping, the rank order as it is (rows are still marked).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from vault_mem.reads.lineage import Lineage


@dataclass
class Row:
    """One row of the answer: a note, the score it shows, and the older versions folded into it."""

    doc: int
    score: float
    older: list[int] = field(default_factory=list)


def regroup(prefix: list[int], scores: dict[int, float], lineage: Lineage, follow: str,
            matching: Callable[[list[int]], dict[int, float]], demoted: Callable[[int], bool],
            rank: Callable[[int], tuple[object, ...]], newest: Callable[[int], tuple[object, ...]],
            chains: Lineage | None = None) -> list[Row]:
    """The rows of the matches ``prefix`` (in rank order, with their ``scores``). ``chains``: the
    graph whose connected notes make a chain (default ``lineage``; ``as_of`` passes the whole graph
    while ``lineage`` holds only the notes current then).

    ``matching(chain)`` scores the members of a chain that match the search (the others left out);
    ``demoted(doc)`` is true of an archived or ended note; ``rank`` is the rank order's key and
    ``newest`` the newest-first order's."""
    chains = lineage if chains is None else chains
    if follow == "all" or not chains.has_edges():
        return [Row(d, scores.get(d, 0.0)) for d in prefix]
    rows: list[Row] = []
    placed: set[int] = set()
    listed = set(prefix)
    for doc in prefix:
        if doc in placed:
            continue
        chain = chains.history(doc)
        if len(chain) == 1:
            placed.add(doc)
            rows.append(Row(doc, scores.get(doc, 0.0)))
            continue
        found = matching(chain)
        for member in chain:  # a version the order holds though no word of it matches (found by meaning)
            if member in listed:
                found.setdefault(member, scores.get(member, 0.0))
        placed.update(chain)
        rows += _chain_rows(found, lineage, follow, demoted, rank, newest)
    return rows


def _chain_rows(found: dict[int, float], lineage: Lineage, follow: str, demoted: Callable[[int], bool],
                rank: Callable[[int], tuple[object, ...]], newest: Callable[[int], tuple[object, ...]]) -> list[Row]:
    later = {d: _successors(lineage, d) for d in found}

    def standing(d: int) -> tuple[bool, bool]:
        return lineage.superseded(d), demoted(d)

    hosts = sorted((d for d in found if not (later[d] & found.keys())), key=lambda d: (*standing(d), newest(d)))
    folded: dict[int, list[int]] = {}
    for doc in sorted(found.keys() - set(hosts), key=newest):
        host = next((h for h in hosts if h in later[doc]), None)
        if host is None:  # on a cycle every version has a later one: the newest stands for it
            hosts.append(doc)
        else:
            folded.setdefault(host, []).append(doc)
    for versions in folded.values():
        versions.sort(key=rank)
    heads = sorted(hosts, key=lambda d: (*standing(d), rank(d)))
    rows = {h: Row(h, max([found[h], *(found[d] for d in folded.get(h, []))]), folded.get(h, [])) for h in heads}
    first = rows[heads[0]]
    first.score = max(found.values())
    out: list[Row] = []
    for head in heads:
        row = rows[head]
        if follow == "full_history":
            out.append(Row(head, row.score))
            out += [Row(d, found[d]) for d in row.older]
        elif follow == "latest" and lineage.superseded(head):
            for current in lineage.latest(head):
                if current in rows:
                    continue
                shown = next((r for r in out if r.doc == current), None)
                if shown is None:
                    out.append(Row(current, row.score, [head, *row.older]))
                else:  # two branches give way to the same version: both fold into its row
                    shown.older += [d for d in (head, *row.older) if d not in shown.older]
        else:
            out.append(row)
    return out


def _successors(lineage: Lineage, doc: int) -> set[int]:
    """Every note reached from ``doc`` along "superseded by" edges (``doc`` left out)."""
    seen: set[int] = set()
    stack = [doc]
    while stack:
        for nxt in lineage.superseders(stack.pop()):
            if nxt not in seen and nxt != doc:
                seen.add(nxt)
                stack.append(nxt)
    return seen
