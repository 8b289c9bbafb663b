"""Whose turn it is to commit, and what a live commit takes along (used by ``search/store.py``).

- Group commit: changes submitted while a commit runs share the next one (``Batch``).
- Live commits fold the tiny segments earlier live commits left (``fold_tiny``).
- Whoosh's lock itself, without a writer, for a merge's swap and for tidying (``write_lock``),
  and what killed writers left (``clean_debris``).
- The write tools' file steps under way (``FileSteps``), which a commit about to start and the
  watcher wait for, and the files this process's write tools indexed themselves (``OwnSaves``),
  so that the watcher's events for them need no look at the index.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from whoosh.index import FileIndex
from whoosh.reading import SegmentReader
from whoosh.writing import SegmentWriter

from vault_mem.errors import IndexBusy
from vault_mem.search.schema import document_of
from vault_mem.vault.note import Note


def tiny_segments(segments: list[Any], tiny: int) -> list[Any]:
    """The segments live commits fold in (``fold_tiny``): at most ``tiny`` documents (the
    ``tiny_segment`` setting), deleted ones counted (the background merge leaves them to the
    folds: ``merge.plan``)."""
    return [segment for segment in segments if segment.doc_count_all() <= tiny]


def fold_tiny(writer: SegmentWriter, segments: list[Any], at: int | None, tiny_size: int, head_chars: int,
              own: OwnTiny | None = None) -> tuple[list[Any], list[tuple[Note, str]] | None]:
    """Whoosh's merge policy for a live commit: once ``at`` tiny segments (of at most ``tiny_size``
    documents) piled up, fold them into the segment the commit writes (their few documents, as this
    writer sees them, its own deletions included); leave every other segment as it is. Returns the segments left and
    the notes taken in, in document order (None when a segment was read back instead). A note taken
    in again is a document again (``document_of``, its record's head ``head_chars`` long).

    Every searcher pays for each segment on every query and on every renewal, and under steady
    saves the background merge (a process started every few seconds) trails far behind the
    commits: this keeps the segments a burst of saves leaves to a handful, at the cost of one
    commit in eight taking in a few dozen documents. A tiny segment this process committed
    itself (``own``) is taken in again from the notes it was made of, far cheaper than reading
    it back (a reader per segment, every posting decoded: docs/perf/group-commit.md); any other
    is read.
    """
    tiny = tiny_segments(segments, tiny_size)
    if at is None or len(tiny) < at:
        return segments, []
    taken: list[tuple[Note, str]] | None = []
    for segment in tiny:
        notes = own.pop(segment.segment_id()) if own is not None else None
        if notes is not None and len(notes) == segment.doc_count_all():
            live = [(note, fsrel) for docnum, (note, fsrel) in enumerate(notes) if not segment.is_deleted(docnum)]
            for note, fsrel in live:
                writer.add_document(**document_of(note, fsrel, head_chars))
            if taken is not None:
                taken += live
            continue
        taken = None  # the new segment holds documents no note here stands for
        reader = SegmentReader(writer.storage, writer.schema, segment, generation=writer.generation)
        try:
            writer.add_reader(reader)
        finally:
            reader.close()
    folded = {segment.segment_id() for segment in tiny}
    return [segment for segment in segments if segment.segment_id() not in folded], taken


class OwnTiny:
    """The notes each tiny segment this process committed holds, in document order, by segment id,
    for ``fold_tiny``. Only ever used under the process's write turn; the oldest are forgotten
    past ``at_most`` (the ``tiny_kept`` setting: a segment merged away in the background is never asked
    for again); a segment of more than ``tiny`` notes (``tiny_segment``) is never folded."""

    def __init__(self, tiny: int, at_most: int) -> None:
        self._by_segment: OrderedDict[str, list[tuple[Note, str]]] = OrderedDict()
        self._tiny = tiny
        self._at_most = at_most

    def keep(self, segment_id: str, notes: list[tuple[Note, str]]) -> None:
        if notes and len(notes) <= self._tiny:
            self._by_segment[segment_id] = notes
            while len(self._by_segment) > self._at_most:
                self._by_segment.popitem(last=False)

    def pop(self, segment_id: str) -> list[tuple[Note, str]] | None:
        return self._by_segment.pop(segment_id, None)


class Batch:
    """Changes that threads submitted to ``VaultIndex`` while a commit ran: one commit, made by
    the first of them to ask for it (``claim_commit``); a thread may do other work between its
    submission and its wait (a write tool journals its change) without holding up the others.

    A change submitted ``unless_committed`` (the watcher's: read from the disk after an event,
    which another process on the vault may have heard and indexed too) is dropped, under the
    write lock, when the index already holds it (``skipped``)."""

    def __init__(self) -> None:
        self._claimed = threading.Lock()
        self.changes: dict[str, tuple[Note, str] | None] = {}  # by path: the note, or None to drop it
        self.unless_committed: set[str] = set()  # paths whose change is dropped if the index holds it
        self.skipped: set[str] = set()  # those dropped, once committed
        self.done = threading.Event()
        self.error: BaseException | None = None

    def claim_commit(self) -> bool:
        """True for the first thread that asks: it commits the batch; the others wait for ``done``."""
        return self._claimed.acquire(blocking=False)

    def add(self, notes: list[tuple[Note, str]], removed: list[str], unless_committed: bool = False) -> None:
        checked = self.unless_committed.add if unless_committed else self.unless_committed.discard
        for path in removed:
            self.changes.pop(path, None)
            self.changes[path] = None
            checked(path)
        for note, fsrel in notes:
            self.changes.pop(note.path, None)
            self.changes[note.path] = (note, fsrel)
            checked(note.path)


@contextlib.contextmanager
def write_lock(ix: FileIndex, first_retry: float, max_retry: float, timeout: float | None = None) -> Iterator[None]:
    """Whoosh's write lock itself, without a writer (for a merge's swap and for tidying), waited for
    as ``VaultIndex.acquire_writer`` waits: retried after ``first_retry`` s, doubling up to
    ``max_retry`` (the ``lock_first_retry`` and ``swap_max_retry`` settings)."""
    lock = ix.lock("WRITELOCK")
    start = time.monotonic()
    delay = first_retry
    while not lock.acquire(blocking=False):
        if timeout is not None and time.monotonic() - start > timeout:
            raise IndexBusy(f"the index stayed locked by another writer for {timeout:.0f} s")
        time.sleep(delay)
        delay = min(delay * 2, max_retry)
    try:
        yield
    finally:
        lock.release()


def clean_debris(index_dir: Path, stale_after: float) -> list[str]:
    """Remove what killed writers left in the index folder; call it holding Whoosh's write lock.

    Under that lock no other writer is at work (a build's parent holds it for the whole build),
    so every temp folder (``*.tmp``: a writer's pool, a build worker's) and every unfinished
    table of contents (``_MAIN_<n>.toc.<time>``) is debris. A temp file (``*.tmp``: the state
    file's atomic write, done without that lock) is debris only once it is old. Orphan
    segment files are Whoosh's to remove: every commit deletes those no TOC names. ``stale_after``:
    the ``debris_stale`` setting.
    """
    removed: list[str] = []
    now = time.time()
    try:
        entries = list(os.scandir(index_dir))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        try:
            if name.endswith(".tmp") and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            elif (".toc." in name and name.startswith("_")) or (
                    name.endswith(".tmp") and now - entry.stat(follow_symlinks=False).st_mtime > stale_after):
                os.unlink(entry.path)
            else:
                continue
        except OSError:
            continue
        removed.append(name)
    return removed


class FileSteps:
    """Tickets of the write tools' file steps under way in this process (from the file change to
    its submission to the index, writes/tools.py): what a commit about to start and the watcher
    wait for (``wait_steps``). Under load the watcher heard a save before the save was
    submitted, indexed the note itself and took the write lock from the batch that held it.

    ``steps()`` opens a ticket for this thread and closes it when the block ends or when
    ``close`` is called first (the write tool submitted and goes on to journal its change)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._issued = 0  # tickets issued so far: each one's ticket is its number
        self._open: dict[int, int] = {}  # thread -> the ticket of its file steps under way
        self._calm = threading.Condition(self._lock)
        self.waiting = 0  # threads in ``wait_steps`` now: a test sees the watcher stopped there

    def begin(self) -> None:
        """This thread's write tool starts its file steps (write tools of different notes run theirs
        side by side, writes/tools.py)."""
        with self._lock:
            self._issued += 1
            self._open[threading.get_ident()] = self._issued

    def end(self) -> None:
        """This thread's file steps are over (submitted, or failed); a second call does nothing."""
        with self._lock:
            if self._open.pop(threading.get_ident(), None) is not None:
                self._calm.notify_all()

    @contextlib.contextmanager
    def steps(self) -> Iterator[None]:
        """``begin``, then ``end`` when the block ends (if nothing ended them before)."""
        self.begin()
        try:
            yield
        finally:
            self.end()

    def in_steps(self) -> bool:
        """Whether a write tool of another thread is in its file steps now."""
        with self._lock:
            return any(thread != threading.get_ident() for thread in self._open)

    def wait_steps(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until every write tool that had begun its file steps when
        this was called has submitted (or failed); False when one still has not. Steps begun
        later are not waited for: under steady writes there may never be a moment without any."""
        with self._lock:
            upto = self._issued
            self.waiting += 1
            try:
                return self._calm.wait_for(lambda: all(ticket > upto for ticket in self._open.values()), timeout)
            finally:
                self.waiting -= 1


class OwnSaves:
    """The files this process's write tools submitted for indexing, by the size and mtime they
    had when read (the watcher asks ``unchanged``).

    The watcher gets an event for each such save too; while the file still has the size and
    mtime it had when submitted, the index has it (or is committing it) and the event needs
    nothing, not even a look at the index (which costs a searcher renewal after every commit).
    A file changed since (an editor) no longer matches and is indexed as usual. Past the
    ``written_kept`` setting (``at_most``) the oldest are forgotten."""

    def __init__(self, at_most: int) -> None:
        self._lock = threading.Lock()
        self._at_most = at_most
        self._files: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def add(self, notes: list[tuple[Note, str]]) -> None:
        with self._lock:
            for note, fsrel in notes:
                self._files.pop(fsrel, None)
                self._files[fsrel] = (note.size, note.mtime_ns)
            while len(self._files) > self._at_most:
                self._files.popitem(last=False)

    def forget(self, fsrels: list[str]) -> None:
        """A commit of these failed: they are not in the index."""
        with self._lock:
            for fsrel in fsrels:
                self._files.pop(fsrel, None)

    def unchanged(self, root: Path, fsrel: str) -> bool:
        with self._lock:
            seen = self._files.get(fsrel)
        if seen is None:
            return False
        try:
            st = os.stat(root / fsrel)
        except OSError:
            return False
        return (st.st_size, st.st_mtime_ns) == seen
