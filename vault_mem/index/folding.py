"""Folding the tiny segments live commits leave, beside the commits (docs/index-and-scale.md).

Every live commit adds one small segment, and every searcher pays for each segment. A server
folds them in a thread of its own (``Folder``): once ``TINY_FOLD`` tiny segments piled up, it
writes their live notes as one segment in a work folder without any lock, then takes this
process's write turn and Whoosh's lock only to swap it in (``merge.swap``, which carries over
the deletions made meanwhile). Before, the next live commit folded them itself, and every save
waiting for that commit waited for the fold too (on a busy machine up to 180 ms, one commit in
nine).

A live commit still folds when ``FOLD_BEHIND`` times as many piled up (this folder fell behind
or failed); a process without a folder (the CLI's writes) folds in its commits as before. The
work folder of a fold is removed when it ends; one a killed process left is removed by the next
server's folder once it is ``STALE``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vault_mem.errors import IndexBusy
from vault_mem.index.commits import tiny_segments, write_lock
from vault_mem.index.merge import merged_segment, swap
from vault_mem.index.whoosh_seam import read_toc

if TYPE_CHECKING:
    from vault_mem.index.store import VaultIndex

log = logging.getLogger("vault_mem.index")
FOLD_DIR = ".folding"  # in the index folder: one work folder per fold under way
STALE = 600.0  # seconds after which a work folder is one a killed fold left
SWAP_TIMEOUT = 60.0  # what a fold's swap waits for the write lock before it gives up this once


class Folder:
    """The background fold of one ``VaultIndex``: ``start`` it, and the index's live commits
    ``nudge`` it with the number of tiny segments they left."""

    def __init__(self, index: VaultIndex) -> None:
        self.index = index
        self.folds = 0  # folds swapped in
        self._due = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            _remove_stale(self.index.dir / FOLD_DIR)
            self._thread = threading.Thread(target=self._run, name="vault-mem-fold", daemon=True)
            self._thread.start()
        self.index.folder = self

    def stop(self, timeout: float = 10.0) -> None:
        """No more folds; a fold under way finishes (or is voided) first, for at most ``timeout`` s."""
        if self.index.folder is self:
            self.index.folder = None
        self._stop.set()
        self._due.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def nudge(self, tiny: int) -> None:
        """A live commit left ``tiny`` tiny segments: fold them once there are enough."""
        at = self.index.fold_at
        if at is not None and tiny >= at:
            self._due.set()

    def _run(self) -> None:
        while True:
            self._due.wait()
            if self._stop.is_set():
                return
            self._due.clear()
            try:
                while not self._stop.is_set() and self.fold_once():
                    pass
            except Exception as exc:  # the live commits fold them meanwhile (FOLD_BEHIND); try at the next nudge
                log.warning("could not fold the index's small segments: %s: %s", type(exc).__name__, exc)

    def fold_once(self, before_swap: Callable[[], None] | None = None) -> bool:
        """Fold the tiny segments into one when at least ``fold_at`` are there; True when it did.
        ``before_swap`` runs between the writing and the swap (tests). False as well when they
        changed under it (another fold, a merge or a rebuild took one): nothing is lost, the next
        nudge looks again."""
        index = self.index
        at = index.fold_at
        if at is None:
            return False
        ix = index.open()
        toc = read_toc(ix)
        chosen = tiny_segments(toc.segments)
        if len(chosen) < at:
            return False
        work = index.dir / FOLD_DIR / f"{os.getpid()}-{secrets.token_hex(4)}"
        work.mkdir(parents=True)
        try:
            built = merged_segment(ix, toc, chosen, work, index.own_tiny.peek, in_memory=True)
            if before_swap is not None:
                before_swap()
            carried = swap(ix, built, _turn_and_lock(index, ix))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if carried is None:
            return False
        for segment in chosen:
            index.own_tiny.pop(segment.segment_id())
        if built.segment is not None and built.notes is not None:
            index.own_tiny.keep(built.segment.segment_id(), built.notes)  # the next fold takes it in again
        self.folds += 1
        return True


@contextlib.contextmanager
def _turn_and_lock(index: VaultIndex, ix: Any) -> Iterator[None]:
    """This process's write turn (its writers wait on it, not on the lock file), then Whoosh's lock."""
    if not index.write_turn.take(SWAP_TIMEOUT):
        raise IndexBusy(f"the writers of this server kept the index busy for {SWAP_TIMEOUT:.0f} s")
    try:
        with write_lock(ix, SWAP_TIMEOUT):
            yield
    finally:
        index.write_turn.give_back()


def _remove_stale(folder: Path) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        with contextlib.suppress(OSError):
            if now - entry.stat(follow_symlinks=False).st_mtime > STALE:
                shutil.rmtree(entry.path, ignore_errors=True)
