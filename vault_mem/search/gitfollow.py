"""The index and git history (docs/git.md): open a vault's history map once per process (the
index hands it to the reader for default dates, ``VaultIndex.history``), and re-index the notes
whose dates move when HEAD does.

A commit, pull, checkout or rebase may change a note's history dates without changing its
bytes (a person commits an edit: the note is no longer "uncommitted", so ``updated`` goes
from the mtime to the commit). The stat-based reconcile cannot see that, so the map tells
us which notes changed and they are re-read here.
"""

from __future__ import annotations

import logging
from pathlib import Path

from vault_mem.git.history import History, history_for, register
from vault_mem.git.repo import Repo
from vault_mem.search.store import HISTORY_CACHE, VaultIndex
from vault_mem.settings import Settings
from vault_mem.vault.reader import read_note

log = logging.getLogger("vault_mem.git")


def attach_history(index: VaultIndex, redate: bool = True) -> History | None:
    """The history map of ``index``'s vault (None outside a git work tree), loaded and registered.

    With ``redate``, notes already in the index whose dates changed since the map was last saved
    are re-indexed, now and whenever HEAD moves later.
    """
    history = history_for(index.root)
    if history is not None:
        history.refresh()
        return history
    repo = Repo.find(index.root, index.config)
    if repo is None:
        return None
    history = History(repo, index.dir / HISTORY_CACHE)
    changed = history.load()
    register(index.root, history)
    if redate:
        history.on_change = lambda paths: redate_notes(index, paths)
        if changed and not index.needs_build():
            redate_notes(index, changed)
    return history


def open_history_readonly(root: Path, index_dir: Path, config: Settings) -> History | None:
    """In a build worker process: the map the parent has just saved (no re-indexing)."""
    history = history_for(root)
    if history is not None:
        return history
    repo = Repo.find(root, config)
    if repo is None:
        return None
    history = History(repo, index_dir / HISTORY_CACHE)
    history.load()
    register(root, history)
    return history


def redate_notes(index: VaultIndex, paths: set[str]) -> int:
    """Re-index those of ``paths`` whose stored dates differ from what a fresh read gives."""
    if not paths:
        return 0
    if len(paths) > 200:
        records = index.records()
    else:
        with index.searching() as searcher:
            found = {p: searcher.document(path=p) for p in paths}
        records = {p: fields["record"] for p, fields in found.items() if fields is not None}
    changed = []
    for path in sorted(paths):
        record = records.get(path)
        if record is None or not (index.root / path).is_file():
            continue
        note = read_note(index.root, record.get("fsrel") or path, index.history, config=index.config)
        if (note.created, note.updated) != (record.get("created"), record.get("updated")):
            changed.append((note, record.get("fsrel") or path))
    for first in range(0, len(changed), 1000):
        index.apply(changed[first:first + 1000], [])
    if changed:
        log.info("git history: new dates for %d notes", len(changed))
    return len(changed)
