"""The clusters ``vault-mem tidy`` proposes (docs/cli.md): notes that say nearly the same, each
cluster with the note to keep.

Every current note (one no other note supersedes: ``reads/lineage.py``) is compared with the
notes resembling it (``search/similar.py``, as ``memory_write``'s ``similar``), and two notes
that resemble each other at least ``threshold`` fall in one cluster, with what resembles either
(the connected pieces of that relation); then only the notes that resemble the note to keep at
least as much stay in its cluster. Only reading: what is done with a cluster is
``writes/tidy.py``'s.

The note to keep is the most recently updated (then the one created last, then the path, as
every list orders them): a restatement written later is likelier to hold what is true now.

Memory stays bounded on a large vault: a fresh view (whose records cache is the call's) every
``tidy_view_notes`` notes (settings), words' rarities kept for at most ``similar_rarity_words``
words, and only the notes that resemble another remembered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from vault_mem import settings
from vault_mem.reads.lineage import Lineage
from vault_mem.search.api import Rarity, resemblance, resembling, word_set
from vault_mem.served.context import View
from vault_mem.vault.note import permalink_of


@dataclass
class Member:
    """One note of a cluster, as the cluster's list shows it."""

    path: str
    fsrel: str
    title: str
    uid: str
    has_id: bool
    updated: str
    created: str
    etag: str
    supersedes: list[str]
    similarity: float = 1.0  # its resemblance to the note kept (1 for that note)

    def public(self) -> dict[str, Any]:
        return {"permalink": permalink_of(self.path), "path": self.path, "title": self.title,
                "updated": self.updated, "similarity": self.similarity}


@dataclass
class Cluster:
    """Notes that say nearly the same: ``keep`` and the ``others`` it would supersede."""

    keep: Member
    others: list[Member] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        return {"keep": self.keep.public(), "supersede": [m.public() for m in self.others]}


class _Pieces:
    """Union-find over document numbers: the clusters as they are found."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, doc: int) -> int:
        root = self.parent.setdefault(doc, doc)
        while root != self.parent[root]:
            root = self.parent[root]
        while doc != root:  # path compression
            self.parent[doc], doc = root, self.parent[doc]
        return root

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[int]]:
        found: dict[int, list[int]] = {}
        for doc in self.parent:
            found.setdefault(self.find(doc), []).append(doc)
        return [sorted(docs) for docs in found.values() if len(docs) > 1]


def clusters(views: Callable[[], View], *, threshold: float | None = None,
             advance: Callable[[int], None] | None = None, total: Callable[[int], None] | None = None) -> list[Cluster]:
    """The clusters of near-duplicate notes of one searcher's index (``views`` makes a fresh view
    over it: each keeps the records it read until dropped), the largest first. ``threshold``: the
    ``similar_threshold`` setting when None. ``total`` is told how many notes will be compared,
    ``advance`` each one compared."""
    config = settings.current()
    threshold = config.similar_threshold if threshold is None else threshold
    chunk = config.tidy_view_notes
    pieces = _Pieces()
    view = views()
    rarest = Rarity(view)
    lineage = Lineage(view)
    current = [d for d in view.all_docs() if not lineage.superseded(d)]
    del lineage
    keep = set(current)
    if total is not None:
        total(len(current))
    for start in range(0, len(current), chunk):
        view = views()
        for doc in current[start:start + chunk]:
            record = view.record(doc)
            found = resembling(view, str(record.get("title") or ""), str(record.get("head") or ""),
                               exclude={doc}, keep=keep, limit=config.tidy_neighbours, threshold=threshold,
                               rarest=rarest)
            for near in found:
                pieces.join(doc, near.docnum)
            if advance is not None:
                advance(1)
    return _proposed(views, pieces.groups(), rarest, threshold)


def _proposed(views: Callable[[], View], groups: list[list[int]], rarest: Rarity, threshold: float) -> list[Cluster]:
    out: list[Cluster] = []
    for part in _chunks(groups, settings.current().tidy_view_clusters):
        view = views()
        updated, created, paths = view.cells("updated"), view.cells("created"), view.cells("path")
        for docs in part:
            # newest first: updated, then created, then path
            ordered = sorted(docs, key=lambda d: (-(updated[d] or 0), -(created[d] or 0), paths[d] or ""))
            records = [view.record(d) for d in ordered]
            kept = _words(records[0])
            cluster = Cluster(_member(records[0]))
            for record in records[1:]:
                # only what resembles the note kept: a chain of resemblances can join two notes that differ
                similarity = resemblance(kept, _words(record), rarest)
                if similarity >= threshold:
                    cluster.others.append(_member(record, round(similarity, 3)))
            if cluster.others:
                out.append(cluster)
    out.sort(key=lambda c: (-len(c.others), c.keep.path))
    return out


def _chunks(groups: list[list[int]], size: int) -> Iterator[list[list[int]]]:
    for start in range(0, len(groups), size):
        yield groups[start:start + size]


def _words(record: dict[str, Any]) -> frozenset[str]:
    return word_set(f"{record.get('title') or ''}\n{record.get('head') or ''}")


def _member(record: dict[str, Any], similarity: float = 1.0) -> Member:
    return Member(path=record["path"], fsrel=record.get("fsrel") or record["path"],
                  title=str(record.get("title") or ""), uid=str(record.get("uid") or ""),
                  has_id=bool(record.get("has_id")), updated=str(record.get("updated") or ""),
                  created=str(record.get("created") or ""), etag=str(record.get("etag") or ""),
                  supersedes=[str(s) for s in record.get("supersedes") or []], similarity=similarity)
