"""Supersession lineage (docs/tools.md, ``memory_list``'s ``follow``): which memory replaces which.

An edge "A supersedes B" is declared on either side: A's ``supersedes`` names B, or B's
``superseded_by`` names A. A target is a uid or, failing that, a wikilink target, resolved
exactly as a ``[[wikilink]]`` in the declaring note would be (``LinkResolver``); several
notes with one uid, like any tie, go to the note nearest the declaring one
(``Names.nearest``). A target that resolves nowhere is *dangling*: it is not an edge.

Every note in the index is live (present in the vault), whatever its status, so an
archived superseder still supersedes.

Only the notes that declare an edge (index field ``lineage`` = "y") are loaded, so
building a ``Lineage`` costs nothing on a vault without chains. Chains may branch or
cycle: every walk is iterative with a visited set.

    lin = Lineage(view)
    lin.superseded(d)   # hidden under follow="active"
    lin.latest(d)       # newest version(s) of d: follow="latest"
    lin.history(d)      # d's whole chain, oldest first: follow="full_history"
    lin.lineage_of(d)   # {"supersedes", "superseded_by", "latest"} as permalinks (memory_read)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vault_mem.reads.links import LinkResolver
from vault_mem.search.api import newest_first_key
from vault_mem.served.context import View
from vault_mem.served.refs import without_prefix
from vault_mem.vault.fields import fold
from vault_mem.vault.names import strip_md
from vault_mem.vault.note import domain_of

FOLLOWS = ("active", "latest", "full_history", "all")  # the lineage modes (``follow``) of memory_list and memory_search


class Lineage:
    """The supersession graph of one view of the index (document numbers as nodes)."""

    def __init__(self, view: View, docs: list[int] | None = None) -> None:
        """The graph of the whole index, or of ``docs`` only (a closed chain: ``lineage_for``)."""
        self.view = view
        self._members = docs
        # superseders[b] = notes that supersede b; predecessors[a] = notes a supersedes
        self._superseders: dict[int, set[int]] = {}
        self._predecessors: dict[int, set[int]] = {}
        self._dangling: dict[tuple[int, str], list[str]] = {}
        self._names = LinkResolver(view)
        self._resolved: dict[tuple[str, str], int | None] = {}
        self._current: dict[int, list[int]] = {}
        self._created_col: Sequence[Any] | None = None
        self._path_col: Sequence[Any] | None = None
        self._build()
        self._rep = self._terminal_representatives()

    # -- building -------------------------------------------------------------------

    def _build(self) -> None:
        members = self._members if self._members is not None else self.view.snapshot.term_docs("lineage", ["y"])
        for doc in members:
            rec = self.view.snapshot.record(doc)
            for target in rec.get("supersedes") or []:
                old = self.resolve(target, rec["path"])
                if old is None:
                    self._dangling.setdefault((doc, "supersedes"), []).append(target)
                else:
                    self._add_edge(doc, old)
            for target in rec.get("superseded_by") or []:
                new = self.resolve(target, rec["path"])
                if new is None:
                    self._dangling.setdefault((doc, "superseded_by"), []).append(target)
                else:
                    self._add_edge(new, doc)

    def _add_edge(self, new: int, old: int) -> None:
        if new == old:  # a note that names itself replaces nothing
            return
        self._superseders.setdefault(old, set()).add(new)
        self._predecessors.setdefault(new, set()).add(old)

    def resolve(self, target: str, from_path: str) -> int | None:
        """The note a supersession target names: a uid, else what the same ``[[wikilink]]`` names;
        None for a permalink of another served vault (an edge across vaults: ``View.elsewhere``)."""
        if self.view.elsewhere(target.strip()):
            return None
        text = without_prefix(target.strip())
        cache_key = (fold(text), domain_of(from_path))
        if cache_key in self._resolved:
            return self._resolved[cache_key]
        by_uid = self._names.hits("key_uid", fold(text))
        found = self._names.nearest(by_uid, from_path) if by_uid else self._names.wikilink(text, from_path)
        self._resolved[cache_key] = found
        return found

    def _terminal_representatives(self) -> dict[int, int]:
        """For each node on a cycle that nothing outside supersedes: its cycle's newest member.

        Such a cycle has no member that nothing supersedes, so the member created last
        stands for it (docs/tools.md: "in a cycle, the one created last").
        """
        nodes = set(self._superseders) | set(self._predecessors)
        rep: dict[int, int] = {}
        for comp in _strong_components(nodes, self._superseders):
            if len(comp) < 2:
                continue
            members = set(comp)
            escapes = any(s not in members for n in comp for s in self._superseders.get(n, ()))
            if not escapes:
                newest = self._newest_first(comp)[0]
                for n in comp:
                    rep[n] = newest
        return rep

    # -- ordering -------------------------------------------------------------------

    def _columns(self) -> tuple[Sequence[Any], Sequence[Any]]:
        if self._created_col is None or self._path_col is None:
            self._created_col, self._path_col = self.view.snapshot.column("created"), self.view.snapshot.column("path")
        return self._created_col, self._path_col

    def _oldest_first(self, docs: Any) -> list[int]:
        created, paths = self._columns()
        return sorted(docs, key=lambda d: (created[d] or 0, paths[d] or ""))

    def _newest_first(self, docs: Any) -> list[int]:
        return sorted(docs, key=newest_first_key(*self._columns()))

    # -- questions ------------------------------------------------------------------

    def has_edges(self) -> bool:
        return bool(self._superseders)

    def superseded_targets(self) -> list[int]:
        """Every note some live note supersedes (a cycle's newest member too)."""
        return sorted(self._superseders)

    def without(self, ignore: set[int]) -> Lineage:
        """The same graph without the notes of ``ignore`` and their edges (``as_of``: the notes not
        current then are out of the answer, and so are their edges)."""
        if not ignore or not self._superseders:
            return self
        other = object.__new__(Lineage)
        other.__dict__.update(self.__dict__)
        other._superseders = {o: {n for n in news if n not in ignore} for o, news in self._superseders.items()
                              if o not in ignore}
        other._superseders = {o: news for o, news in other._superseders.items() if news}
        other._predecessors = {n: {o for o in olds if o not in ignore} for n, olds in self._predecessors.items()
                               if n not in ignore}
        other._predecessors = {n: olds for n, olds in other._predecessors.items() if olds}
        other._current = {}
        other._rep = other._terminal_representatives()
        return other

    def superseded_docs(self) -> set[int]:
        """Every note ``superseded`` is true of."""
        return {d for d in self._superseders if self.superseded(d)}

    def superseders(self, doc: int) -> list[int]:
        """The notes that directly supersede ``doc``, oldest first."""
        return self._oldest_first(self._superseders.get(doc, ()))

    def predecessors(self, doc: int) -> list[int]:
        """The notes ``doc`` directly supersedes, oldest first."""
        return self._oldest_first(self._predecessors.get(doc, ()))

    def dangling(self, doc: int, key: str | None = None) -> list[str]:
        """The targets ``doc`` declares that name no note in the vault, as written.

        ``key`` is "supersedes" or "superseded_by"; None gives both.
        """
        keys = ("supersedes", "superseded_by") if key is None else (key,)
        return [t for k in keys for t in self._dangling.get((doc, k), ())]

    def superseded(self, doc: int) -> bool:
        """True when a live memory supersedes ``doc``.

        One exception keeps a cycle from vanishing whole: the newest member of a cycle
        that nothing outside it supersedes counts as current, as ``latest`` says.
        """
        if doc not in self._superseders:
            return False
        return self._rep.get(doc) != doc

    def latest(self, doc: int) -> list[int]:
        """The newest version(s) of ``doc``, newest first, no duplicates.

        Walks ``superseded_by`` edges from ``doc`` (``doc`` itself included) and keeps the
        notes nothing supersedes; a cycle nothing outside supersedes gives its newest
        member. A note without superseders is its own latest.
        """
        if doc not in self._superseders:
            return [doc]
        hit = self._current.get(doc)
        if hit is not None:
            return list(hit)
        found: set[int] = set()
        seen = {doc}
        stack = [doc]
        while stack:
            node = stack.pop()
            above = self._superseders.get(node)
            if not above:
                found.add(node)
            elif node in self._rep:
                found.add(self._rep[node])
            for nxt in above or ():
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        result = self._newest_first(found)
        self._current[doc] = result
        return list(result)

    def history(self, doc: int) -> list[int]:
        """``doc``'s whole chain (connected along edges in either direction), oldest first."""
        if doc not in self._superseders and doc not in self._predecessors:
            return [doc]
        seen = {doc}
        stack = [doc]
        while stack:
            node = stack.pop()
            for nxt in (*self._superseders.get(node, ()), *self._predecessors.get(node, ())):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return self._oldest_first(seen)

    def lineage_of(self, doc: int) -> dict[str, list[str]]:
        """For memory_read: direct predecessors and superseders, and the latest version(s)."""
        elsewhere = self.view.elsewhere  # an edge to a note of another served vault, as written
        return {
            "supersedes": [self._permalink(d) for d in self.predecessors(doc)]
            + [t for t in self.dangling(doc, "supersedes") if elsewhere(t)],
            "superseded_by": [self._permalink(d) for d in self.superseders(doc)]
            + [t for t in self.dangling(doc, "superseded_by") if elsewhere(t)],
            "latest": [self._permalink(d) for d in self.latest(doc)],
        }

    def _permalink(self, doc: int) -> str:
        return self.view.permalink(self.view.snapshot.record(doc)["path"])




def lineage_for(view: View, doc: int) -> Lineage:
    """The lineage graph of ``doc``'s chain only, for memory_read.

    The chain is found by index terms, not by loading every note that declares an edge: the
    notes ``doc`` names are resolved from its record, and the notes that may name ``doc`` come
    from the ``sup_keys`` field (each declared target's lookup keys), walked until closed. A
    candidate that names another note is harmless: the graph resolves every edge itself.
    """
    chain = {doc}
    frontier = [doc]
    resolver = Lineage(view, docs=[])
    while frontier:
        node = frontier.pop()
        rec = view.snapshot.record(node)
        near = [resolver.resolve(t, rec["path"]) for t in [*(rec.get("supersedes") or []),
                                                            *(rec.get("superseded_by") or [])]]
        keys = _keys_naming(rec)
        if keys:
            near += view.snapshot.term_docs("sup_keys", [f"{side}:{k}" for side in "sb" for k in keys])
        for other in near:
            if other is not None and other not in chain:
                chain.add(other)
                frontier.append(other)
        if len(chain) > view.config.chain_limit:
            return Lineage(view)
    return Lineage(view, docs=sorted(chain))


def _keys_naming(rec: dict[str, Any]) -> list[str]:
    """The keys a target naming this note may have: uid, path, file name, title, aliases."""
    path = strip_md(str(rec.get("path") or ""))
    keys = [fold(str(rec.get("uid") or "")), fold(path), fold(path.rpartition("/")[2]),
            fold(str(rec.get("title") or "")), *(fold(str(a)) for a in rec.get("aliases") or [])]
    return [k for k in dict.fromkeys(keys) if k]


def _strong_components(nodes: set[int], edges: dict[int, set[int]]) -> list[list[int]]:
    """Strongly connected components (iterative Tarjan), each a list of nodes."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work: list[tuple[int, list[int]]] = [(root, sorted(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp: list[int] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                components.append(comp)
    return components
