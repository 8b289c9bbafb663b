"""The clusters ``vault-mem tidy`` proposes (docs/cli.md): notes that say nearly the same, each
cluster with the note to keep.

Every current note (one no other note supersedes: ``reads/lineage.py``) is compared with the
notes resembling it (``search/similar.py``, as ``memory_write``'s ``similar``), and two notes
that resemble each other at least ``threshold`` fall in one cluster, with what resembles either
(the connected pieces of that relation); then only the notes that resemble the note to keep at
least as much stay in its cluster. Only reading: what is done with a cluster is
``writes/tidy.py``'s.

The note to keep is the most recently updated (then the one created last, then the path, as
every list orders them): a restatement written later is likelier to hold what is true now. But
a note an agent wrote (the journal in the history folder says which agent's write tools wrote
each note: ``Authors``) never replaces a note that agent may not write (its key's write globs,
docs/sharing.md): an agent refused ``memory_supersede`` of a person's note must not get the
same by writing a near copy for the owner's tidy to keep. Then the next note in that order that
may replace the others is kept instead; when none may, the cluster is *held*: a person picks
the note to keep (``picked``: ``vault-mem tidy --keep``), whoever wrote it.

Memory stays bounded on a large vault: a fresh view (whose records cache is the call's) every
``tidy_view_notes`` notes (settings), words' rarities kept for at most ``similar_rarity_words``
words, and only the notes that resemble another remembered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_mem.history import journal
from vault_mem.reads.lineage import Lineage
from vault_mem.search.api import Rarity, Said, likeness, note_said, resembling
from vault_mem.served.context import View
from vault_mem.settings import Settings
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
    by: list[str] = field(default_factory=list)  # the agents whose write tools wrote it; none: a person (Authors)

    def public(self) -> dict[str, Any]:
        return {"permalink": permalink_of(self.path), "path": self.path, "title": self.title,
                "updated": self.updated, "similarity": self.similarity, "by": self.by}


@dataclass
class Cluster:
    """Notes that say nearly the same: ``keep`` and the ``others`` it would supersede. ``held``:
    why no note of it may be kept without a person's choice (None: ``keep`` may replace the
    others); ``picked``: a person chose ``keep``."""

    keep: Member
    others: list[Member] = field(default_factory=list)
    held: str | None = None
    picked: bool = False

    def public(self) -> dict[str, Any]:
        return {"keep": self.keep.public(), "supersede": [m.public() for m in self.others],
                **({"held": self.held} if self.held else {}), **({"picked": True} if self.picked else {})}


class Authors:
    """Who wrote each note, from the journal of the history folder ``history_dir``
    (history/journal.py: each write tool's change names its agent), and whether a writer may
    write another note: ``may_write(agent name, path)``, False for an agent whose key's globs do
    not cover the path. In a vault without keys every name is the owner's own caller and may
    write everything; in a vault with keys a name that has none (removed since) may write nothing.
    A note no entry names was written by a person or another program (an editor, git, a script)."""

    def __init__(self, history_dir: Path, may_write: Callable[[str, str], bool]) -> None:
        self._by: dict[str, list[str]] = {}
        for entry in journal.entries(history_dir):
            if entry.after is None:
                continue
            for key in dict.fromkeys((entry.fsrel, entry.path)):
                names = self._by.setdefault(key, [])
                if entry.agent not in names:
                    names.append(entry.agent)
        self.may_write = may_write

    def of(self, path: str, fsrel: str) -> list[str]:
        return list(dict.fromkeys([*self._by.get(fsrel, []), *self._by.get(path, [])]))

    def refusal(self, keep: Member, others: list[Member]) -> str | None:
        """Why ``keep`` may not replace ``others`` (None: it may)."""
        for name in keep.by:
            for other in others:
                if not (self.may_write(name, other.path) and self.may_write(name, other.fsrel)):
                    return (f"{keep.path} was written by agent {name!r}, which may not write {other.path} (its "
                            "key's write globs; docs/sharing.md): a person picks the note to keep")
        return None


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
             advance: Callable[[int], None] | None = None, total: Callable[[int], None] | None = None,
             authors: Authors | None = None, picked: Collection[str] = ()) -> list[Cluster]:
    """The clusters of near-duplicate notes of one searcher's index (``views`` makes a fresh view
    over it: each keeps the records it read until dropped), the largest first. ``threshold``: the
    ``similar_threshold`` setting when None. ``total`` is told how many notes will be compared,
    ``advance`` each one compared. ``authors``: who wrote each note and what they may write (None:
    nobody is asked, every note may replace any); ``picked``: the paths a person chose to keep."""
    view = views()
    config = view.config
    threshold = config.similar_threshold if threshold is None else threshold
    chunk = config.tidy_view_notes
    pieces = _Pieces()
    rarest = Rarity(view.snapshot)
    lineage = Lineage(view)
    current = [d for d in view.snapshot.all_docs() if not lineage.superseded(d)]
    del lineage
    keep = set(current)
    if total is not None:
        total(len(current))
    for start in range(0, len(current), chunk):
        view = views()
        for doc in current[start:start + chunk]:
            record = view.snapshot.record(doc)
            found = resembling(view.snapshot, str(record.get("title") or ""), str(record.get("head") or ""),
                               exclude={doc}, keep=keep, limit=config.tidy_neighbours, threshold=threshold,
                               rarest=rarest)
            for near in found:
                pieces.join(doc, near.docnum)
            if advance is not None:
                advance(1)
    return _proposed(views, pieces.groups(), rarest, threshold, authors, set(picked), config.tidy_view_clusters)


def _proposed(views: Callable[[], View], groups: list[list[int]], rarest: Rarity, threshold: float,
              authors: Authors | None, picked: set[str], clusters_a_view: int) -> list[Cluster]:
    out: list[Cluster] = []
    for part in _chunks(groups, clusters_a_view):
        view = views()
        snapshot = view.snapshot
        updated, created, paths = snapshot.cells("updated"), snapshot.cells("created"), snapshot.cells("path")
        for docs in part:
            # newest first: updated, then created, then path
            ordered = sorted(docs, key=lambda d: (-(updated[d] or 0), -(created[d] or 0), paths[d] or ""))
            records = [view.snapshot.record(d) for d in ordered]
            members = [_member(r, by=authors.of(r["path"], r.get("fsrel") or r["path"]) if authors else [])
                       for r in records]
            cluster = _cluster(members, [_said(r, view.config) for r in records], rarest, threshold, authors, picked)
            if cluster is not None:
                out.append(cluster)
    out.sort(key=lambda c: (-len(c.others), c.keep.path))
    return out


def _cluster(members: list[Member], said: list[Said], rarest: Rarity, threshold: float, authors: Authors | None,
             picked: set[str]) -> Cluster | None:
    """The cluster of ``members`` (newest first): the note a person picked, else the newest that
    may replace the others it resembles; held with the newest when none may."""
    chosen = [i for i, m in enumerate(members) if m.path in picked or m.fsrel in picked]
    first: Cluster | None = None
    for n, i in enumerate(chosen[:1] or range(len(members))):
        # only what resembles the note kept: a chain of resemblances can join two notes that differ
        others = [dataclasses.replace(m, similarity=round(s, 3)) for j, m in enumerate(members)
                  if j != i and (s := likeness(said[i], said[j], rarest)) >= threshold]
        if chosen:
            return Cluster(members[i], others, picked=True) if others else None
        if n == 0 and not others:
            return None  # the newest resembles none of them closely enough: nothing to propose
        if not others:
            continue
        refusal = authors.refusal(members[i], others) if authors is not None else None
        if refusal is None:
            return Cluster(members[i], others)
        if first is None:
            first = Cluster(members[i], others, held=refusal)
    return first


def _chunks(groups: list[list[int]], size: int) -> Iterator[list[list[int]]]:
    for start in range(0, len(groups), size):
        yield groups[start:start + size]


def _said(record: dict[str, Any], config: Settings) -> Said:
    return note_said(str(record.get("title") or ""), str(record.get("head") or ""), config)


def _member(record: dict[str, Any], similarity: float = 1.0, by: list[str] | None = None) -> Member:
    return Member(path=record["path"], fsrel=record.get("fsrel") or record["path"],
                  title=str(record.get("title") or ""), uid=str(record.get("uid") or ""),
                  has_id=bool(record.get("has_id")), updated=str(record.get("updated") or ""),
                  created=str(record.get("created") or ""), etag=str(record.get("etag") or ""),
                  supersedes=[str(s) for s in record.get("supersedes") or []], similarity=similarity,
                  by=by or [])
