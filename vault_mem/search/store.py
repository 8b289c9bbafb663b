"""Opening the index, searching it, and writing notes into it.

One ``VaultIndex`` per process. Writers take Whoosh's lock with a retry, so two
processes on one vault (two MCP clients) take turns instead of failing; searchers
are refreshed whenever any process has committed. Commits merge only the tiny segments
earlier live commits made (``fold_tiny``; a merge of a big index takes minutes):
``search/merge.py`` does the rest off the live path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock
from whoosh import index as whoosh_index
from whoosh.index import FileIndex, LockError
from whoosh.reading import MultiReader, SegmentReader
from whoosh.searching import Searcher
from whoosh.writing import SegmentWriter

from vault_mem.errors import IndexBusy, VaultUnavailable
from vault_mem.git.history import History, history_for
from vault_mem.history import location
from vault_mem.search.commits import (
    Batch,
    FileSteps,
    OwnSaves,
    OwnTiny,
    clean_debris,
    fold_tiny,
    write_lock,
)
from vault_mem.search.schema import SCHEMA_VERSION, document_of, make_schema
from vault_mem.search.segments import attach_settings
from vault_mem.search.whoosh.parts import LeanSearcher, frozen_segment, lend_searcher, parts_in_memory
from vault_mem.search.whoosh.seam import new_segment_id, renewed_searcher, with_deletions
from vault_mem.settings import Settings
from vault_mem.vault.note import Note
from vault_mem.vault.paths import INDEX_DIRNAME
from vault_mem.vault.portable import replace_file, user_cache_root
from vault_mem.vault.reader import VersionKey, version_key

log = logging.getLogger("vault_mem.search")
STATE_FILE = "state.json"
BUILD_LOCK = "build.lock"  # held for a whole build; kept when the folder is emptied
MERGE_LOCK = "merge.lock"  # held by the one merging process; kept when the folder is emptied
HISTORY_CACHE = "git-history.json"  # the git history map (search/gitfollow.py): not the index
# Not the index, so kept when a build empties the folder: presence (search/presence.py), the meaning
# vectors (meaning/store.py: keyed by each note's content hash, so a rebuild leaves them right), and
# where versions before 0.4.22 kept the history (history/location.py), until it is moved out.
KEPT_ON_REBUILD = frozenset({BUILD_LOCK, MERGE_LOCK, "presence", HISTORY_CACHE, "agents", "journal", "meaning"})
# Group commit (``commit_gather`` and ``commit_spacing`` in the settings): under steady saves from
# several callers a commit starts some time after the one before it, and the saves made meanwhile
# join it, because every commit costs each reader of the index a searcher renewal and a new pass
# over what a call keeps per set of segments (docs/perf/group-commit.md). A lone caller's save
# never waits for it.


Fingerprint = tuple[int, int, str]  # what the index holds of a file: (size, mtime_ns, etag)


def stat_state(path: Path, seen: Fingerprint | None) -> str:
    """Whether the file at ``path`` has changed since ``seen``, asked of its size and mtime only:
    ``"same"``, ``"changed"`` (other values, or nothing indexed: not asked) or ``"unreadable"``
    (no stat: gone or refused). "changed" only says the file must be read: ``same_content``
    then decides (an editor may rewrite a file unchanged)."""
    if seen is None:
        return "changed"
    try:
        st = os.stat(path)
    except OSError:
        return "unreadable"
    return "same" if (st.st_size, st.st_mtime_ns) == seen[:2] else "changed"


def same_content(note: Note, seen: Fingerprint | None) -> bool:
    """Whether ``note``, as read now, holds what the index holds (``seen``): the same content hash."""
    return seen is not None and seen[2] == note.etag


def default_index_dir(root: Path) -> Path:
    """``<vault>/.vault-mem``, or the user's cache folder when the vault cannot be written."""
    preferred = root / INDEX_DIRNAME
    try:
        preferred.mkdir(exist_ok=True)
        probe = preferred / ".probe"
        probe.write_bytes(b"")
        probe.unlink()
        return preferred
    except OSError:
        return cache_index_dir(root)


def cache_index_dir(root: Path) -> Path:
    """The index folder of a vault that cannot be written: ``<user cache>/vault-mem/<hash>``."""
    digest = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return user_cache_root() / "vault-mem" / digest


# Which of some changes read from the files a while ago the files still bear out, asked in the
# batch's lock (``VaultIndex.submit``): called with (notes, removed paths), returns those that stand.
StillOnDisk = Callable[[list[tuple[Note, str]], list[str]], tuple[list[tuple[Note, str]], list[str]]]


class VaultIndex:
    """The Whoosh index of one vault, and the one way changes reach it (``apply``)."""

    def __init__(self, root: Path, index_dir: Path | None = None, *, config: Settings) -> None:
        # Its settings: every part of it tunes by them, but for what the process holds once for all
        # its indexes (the cache's size, the Whoosh patches' sizes: docs/settings.md).
        self.config = config
        self.root = root
        self.dir = index_dir or default_index_dir(root)
        self._ix: FileIndex | None = None
        # Reading. One searcher per thread (Whoosh searchers are not shared across threads), so reads
        # run side by side and never wait behind a write; ``_epoch`` retires them all on close().
        # ``_lock``: opening the index, renewing a searcher, lending the writer its readers.
        self._local = threading.local()
        self._epoch = 0
        self._lock = threading.RLock()
        self._writer_readers: dict[Any, SegmentReader] = {}  # see _lend_searcher
        # Writing (docs/architecture.md#3-the-save-path): the open group-commit batch, one group
        # commit at a time, one writer at a time, and what the commits keep for each other.
        self._batch_lock = threading.Lock()  # guards _open_batch (see submit)
        self._open_batch: Batch | None = None
        self._committing = threading.Lock()  # one group commit at a time in this process
        self._last_commit = (-config.commit_spacing, 1)  # when the last group commit began (monotonic), and its size
        self.fold_at: int | None = config.tiny_fold  # see fold_tiny (None: never, for tests of merges)
        self.own_tiny = OwnTiny(config.tiny_segment, config.tiny_kept)  # the notes of this process's tiny segments
        self.file_steps = FileSteps()  # the write tools' file steps under way (a commit waits for them)
        self.own_saves = OwnSaves(config.written_kept)  # what this process's write tools indexed (for its watcher)
        # Called with the OS paths of notes a commit failed to index (the watcher's: index them later).
        self.on_failed_commit: Callable[[list[str]], None] | None = None
        self.write_timeout = config.write_lock_wait
        self._state_seen: tuple[VersionKey, dict[str, Any]] | None = None  # see state()
        self._history_dir: Path | None = None

    @property
    def history_dir(self) -> Path:
        """Where the journal behind undo and the agents' states live, apart from the index
        (history/location.py); an older version's, found in the index folder, is moved there first."""
        if self._history_dir is None:
            history = location.history_dir(self.dir)
            location.adopt_old(self.dir, history, self.config)
            self._history_dir = history
        return self._history_dir

    @property
    def history(self) -> History | None:
        """The vault's git history map when one is open in this process (``search/gitfollow.py``),
        for the reader's default dates; None outside a git work tree."""
        return history_for(self.root)

    # -- lifecycle -------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """``state.json``: what the index is (schema, complete). Every call asks (is a build under
        way?), so the file is read again only when its stat changed (it is replaced whole)."""
        path = self.dir / STATE_FILE
        key = version_key(path)
        if key is None:
            return {}
        seen = self._state_seen
        if seen is not None and seen[0] == key:
            return dict(seen[1])
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        self._state_seen = (key, data)
        return dict(data)

    def set_state(self, **values: Any) -> None:
        state = self.state() | values
        tmp = self.dir / f".{STATE_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(state), encoding="utf-8")
        replace_file(tmp, self.dir / STATE_FILE, config=self.config)  # a reader may hold it open for a moment (Windows)
        self._state_seen = None  # a file written within the same clock tick may repeat the old stat

    def needs_build(self) -> bool:
        """True when there is no usable index (none yet, another schema, or unreadable)."""
        if self.state().get("schema") != SCHEMA_VERSION:
            return True
        try:
            return not whoosh_index.exists_in(str(self.dir))
        except Exception:  # a damaged TOC is repaired by rebuilding, whatever the error
            return True

    def is_complete(self) -> bool:
        return bool(self.state().get("complete"))

    def open(self) -> FileIndex:
        with self._lock:
            if self._ix is None:
                try:
                    stored = whoosh_index.open_dir(str(self.dir)).schema
                    # Given the schema, Whoosh skips unpickling it again from every table of
                    # contents it reads: each searcher's renewal and each writer read one.
                    self._ix = whoosh_index.open_dir(str(self.dir), schema=stored)
                except Exception as exc:
                    raise VaultUnavailable(f"index at {self.dir} cannot be opened: {exc}") from exc
            return self._ix

    def generation(self) -> int:
        """The newest committed generation of the index: it changes with every commit of any process."""
        return int(self.open().latest_generation())

    def create(self) -> FileIndex:
        """A new empty index, replacing whatever was in the index folder."""
        with self._lock:
            self.close()
            _ = self.history_dir  # an older version's history moves out before the folder is emptied
            if self.dir.exists():
                for child in self.dir.iterdir():
                    if child.name in KEPT_ON_REBUILD:
                        continue
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child, ignore_errors=True)
                    else:
                        with contextlib.suppress(OSError):
                            child.unlink()
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / ".gitignore").write_text("*\n", encoding="utf-8")
            self._ix = whoosh_index.create_in(str(self.dir), make_schema())
            self.set_state(schema=SCHEMA_VERSION, complete=False, vault=str(self.root))
            return self._ix

    @contextlib.contextmanager
    def build_lock(self) -> Iterator[None]:
        """An exclusive lock between processes for deciding on and running a full build."""
        self.dir.mkdir(parents=True, exist_ok=True)
        # filelock: flock on Linux and macOS, a Windows file lock on Windows; the OS drops it when the process dies.
        with FileLock(self.dir / BUILD_LOCK):
            yield

    def close(self) -> None:
        """Drop the searcher and the index handle (safe to call twice, or on a vanished index)."""
        with self._lock:
            self._epoch += 1
            ix, self._ix = self._ix, None
            searcher, self._local.searcher = getattr(self._local, "searcher", None), None
            lent, self._writer_readers = list(self._writer_readers.values()), {}
            # Other threads' searchers are retired by their own thread at its next use.
            for handle in (searcher, ix, *lent):
                if handle is not None:
                    with contextlib.suppress(Exception):
                        handle.close()

    # -- reading ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def searching(self) -> Iterator[Searcher]:
        """This thread's searcher, renewed when any process has committed since its last use; its
        segments tune by this index's settings (``segments.attach_settings``)."""
        with self._lock:
            ix = self.open()
            epoch = self._epoch
        local = self._local
        searcher: Searcher | None = getattr(local, "searcher", None)
        stale: Searcher | None = None
        if searcher is not None and (local.epoch != epoch or not _up_to_date(searcher)):
            stale, searcher, local.searcher = (searcher if local.epoch == epoch else None), None, None
        if searcher is None:
            with self._lock:
                try:
                    searcher = attach_settings(renewed_searcher(ix, stale), self.config)
                except (OSError, whoosh_index.EmptyIndexError) as exc:
                    self.close()
                    raise VaultUnavailable(f"index at {self.dir} cannot be read: {exc}") from exc
            local.searcher, local.epoch = searcher, epoch
        yield searcher

    def records(self) -> dict[str, dict[str, Any]]:
        """Every stored record by path (for reconcile, doctor and stats)."""
        with self.searching() as s:
            # Not ``all_stored_fields``: a segment reader's version yields deleted documents too.
            reader = s.reader()
            records = (reader.stored_fields(d)["record"] for d in reader.all_doc_ids())
            return {rec["path"]: rec for rec in records}

    def fingerprints(self, paths: list[str] | None = None) -> dict[str, Fingerprint]:
        """``{path: (size, mtime_ns, etag)}`` for every note (or those of ``paths`` that are indexed),
        from columns: no stored record is loaded."""
        from vault_mem.search.columns import column, has_columns

        with self.searching() as s:
            if (paths is not None and len(paths) <= self.config.few_paths
                    and not has_columns(s, "size", "mtime_ns", "etag")):
                # A few paths on a searcher whose columns are not loaded yet (the watcher's first save
                # after a start or a commit): their stored records, not three whole columns.
                few = {}
                for path in paths:
                    docnum = s.document_number(path=path)
                    if docnum is not None:
                        rec = s.stored_fields(docnum)["record"]
                        few[path] = (int(rec["size"]), int(rec["mtime_ns"]), str(rec["etag"]))
                return few
            sizes, mtimes, etags = column(s, "size"), column(s, "mtime_ns"), column(s, "etag")
            if paths is not None:
                found = {}
                for path in paths:
                    docnum = s.document_number(path=path)
                    if docnum is not None:
                        found[path] = (sizes[docnum], mtimes[docnum], etags[docnum])
                return found
            names = column(s, "path")
            return {names[d]: (sizes[d], mtimes[d], etags[d]) for d in s.reader().all_doc_ids()}

    # -- writing ---------------------------------------------------------------------------

    def acquire_writer(self, timeout: float | None = None) -> SegmentWriter:
        """Whoosh's writer, waiting its turn (with backoff) while another writer holds the lock.

        A held lock is a wait, not a failure: with no ``timeout`` this waits as long as the other
        writer works (a build in another process can take minutes; the lock dies with its holder).
        With one, it raises ``IndexBusy`` when the lock stayed held that long. This process's live
        commits never wait here for each other: they take turns on ``_committing`` first.
        """
        config = self.config
        ix = self.open()
        start = time.monotonic()
        notice = start + config.write_wait_notice
        delay = config.lock_first_retry
        while True:
            try:
                with parts_in_memory():  # a live commit's small segment (whoosh_seam patch 10)
                    writer = ix.writer()
            except LockError:
                now = time.monotonic()
                if timeout is not None and now - start > timeout:
                    raise IndexBusy(f"the index at {self.dir} stayed locked by another writer (a build "
                                    f"or another server) for {timeout:.0f} s") from None
                if now > notice:
                    log.info("still waiting for the index lock (held by another writer for %.0f s)",
                             now - start)
                    notice = now + config.write_wait_notice
                time.sleep(delay)
                delay = min(delay * 2, config.writer_max_retry)
                continue
            try:
                self._lend_searcher(writer)
            except BaseException:
                writer.cancel()
                raise
            return writer

    def _lend_searcher(self, writer: SegmentWriter) -> None:
        """Give ``writer`` a searcher of its segments for finding the notes it replaces or deletes.
        Whoosh's writer opens a reader of every segment for that on every commit (most of a save's
        time); they are kept between writers, reused while a segment's deletions stay, else remade on
        its open files: a save opens only the segments the last commit wrote (write lock holder only)."""
        with self._lock:
            lent_before, self._writer_readers = self._writer_readers, {}
            readers = []
            try:
                for segment in writer.segments:
                    key = segment.segment_id()
                    reader = lent_before.pop(key, None)
                    if reader is None or reader.is_closed:
                        reader = SegmentReader(writer.storage, writer.schema, frozen_segment(segment),
                                               generation=writer.generation)
                    elif reader.segment().deleted_count() != segment.deleted_count():
                        reader = with_deletions(reader, frozen_segment(segment))
                    readers.append(reader)
                    self._writer_readers[key] = reader
            except Exception:  # a segment that will not open: Whoosh's writer opens its own and says why
                readers = []
            for old in lent_before.values():
                with contextlib.suppress(Exception):
                    old.close()
            if not readers:
                return
        combined = MultiReader(readers, generation=writer.generation) if len(readers) > 1 else readers[0]
        lend_searcher(writer, LeanSearcher(combined, closereader=False))

    @contextlib.contextmanager
    def writer(self, timeout: float | None = None,
               added: list[tuple[Note, str]] | None = None) -> Iterator[SegmentWriter]:
        """A writer committed when the block ends, cancelled (releasing the lock) when it raises;
        ``added``: the notes the block adds, in order, and nothing else (see ``commit_live``).

        The commit adds one small segment and merges nothing bigger than what live commits make
        (``search/commits.py``), so its cost does not grow with the index; ``search/merge.py``
        merges the rest in the background.
        """
        w = self.acquire_writer(timeout)
        try:
            yield w
            self.commit_live(w, added)
        except BaseException:
            # A writer whose work or commit raised keeps Whoosh's lock until it is cancelled.
            with contextlib.suppress(Exception):
                w.cancel()
            raise

    def commit_live(self, writer: SegmentWriter, added: list[tuple[Note, str]] | None = None) -> None:
        """Commit a live writer's change: one new segment, with the tiny ones folded in (``fold_tiny``).
        ``added``: the notes the writer added, in order, when nothing else was (kept for a later fold)."""
        def merge(w: SegmentWriter, segments: list[Any]) -> list[Any]:
            left, taken = fold_tiny(w, segments, self.fold_at, self.config.tiny_segment,
                                    self.config.record_head_chars, self.own_tiny)
            if added and taken is not None:  # the new segment: these notes, then those folded in
                self.own_tiny.keep(new_segment_id(w), added + taken)
            return left

        writer.commit(mergetype=merge)

    def apply(self, notes: list[tuple[Note, str]], removed: list[str], timeout: float | None = None, *,
              still_on_disk: StillOnDisk | None = None, unless_committed: bool = False) -> int:
        """The one way changes reach the index (write tools, the watcher, the start-up check, undo,
        tidy; an import only writes files, which the watcher then indexes): index ``notes`` (each
        with its OS-relative path) and drop ``removed`` paths,
        committed when this returns (waiting for the lock as ``acquire_writer`` does; past
        ``timeout``, ``IndexBusy``): ``submit`` then ``commit_batch``. Returns how many of ``notes``
        were written (not skipped as ``unless_committed``).

        ``still_on_disk``: see ``submit``. ``unless_committed`` (the watcher's changes, read after an
        event another process on the vault may have heard and indexed too): a note whose content
        hash the index already holds, or a removed path it does not hold, is skipped, checked under
        the write lock."""
        if not notes and not removed:
            return 0
        batch = self.submit(notes, removed, still_on_disk, unless_committed=unless_committed)
        self.commit_batch(batch, timeout)
        return sum(1 for note, _ in notes if note.path not in batch.skipped)

    def submit(self, notes: list[tuple[Note, str]], removed: list[str], still_on_disk: StillOnDisk | None = None,
               *, unless_committed: bool = False) -> Batch:
        """Put changes in the open batch; ``commit_batch`` must follow (it commits or waits for the commit).
        Group commit: threads that submit while another thread's commit runs join one batch, which
        the first of them to call ``commit_batch`` commits for all once that commit is done, so under
        many writers one commit (and the segment every searcher then opens) serves several changes.
        A path's last change in a batch wins, as in commits one after another: a caller that orders
        its file writes (writes/tools.py) submits before it lets the next write begin.

        ``still_on_disk``, for changes read from the files a while ago (the start-up check): called
        with them in the batch's lock, it returns those the files still bear out. A save that landed
        since then is indexed by its own event: checked here, it cannot have been submitted before
        this batch joins the queue, so the older read never lands after it.

        A write tool's own saves are remembered (``own_saves``) for the watcher; changes
        ``unless_committed`` (the watcher's own) are not."""
        with self._batch_lock:
            if still_on_disk is not None:
                notes, removed = still_on_disk(notes, removed)
            batch = self._open_batch
            if batch is None:
                batch = self._open_batch = Batch()
            batch.add(notes, removed, unless_committed)
        if not unless_committed:
            self.own_saves.add(notes)
        return batch

    def commit_batch(self, batch: Batch, timeout: float | None = None) -> None:
        """Return once ``batch`` is committed (raising what its commit raised). The first thread to
        ask commits it: one group commit at a time (``_committing``), spaced under steady saves
        (``_space``), after the write tools in their file steps joined (``commit_gather``)."""
        if not batch.claim_commit():
            batch.done.wait()
            if batch.error is not None:
                raise batch.error
            return
        try:
            started = time.monotonic()
            if not self._committing.acquire(timeout=-1 if timeout is None else timeout):
                raise IndexBusy(f"the index at {self.dir} was committing other changes of this server "
                                f"for {timeout:.0f} s")
            try:
                self._space(batch, started, timeout)
                self.file_steps.wait_steps(self.config.commit_gather)
                self._close(batch)  # later changes make the next batch
                self._last_commit = (time.monotonic(), len(batch.changes))
                if batch.changes:
                    left = None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
                    self._write(batch, left)
            finally:
                self._committing.release()
        except BaseException as exc:
            batch.error = exc
            self._close(batch)
            # Not in the index: the watcher must not take these files for saves already indexed; it
            # applies its own changes again itself, the others are handed to it.
            self.own_saves.forget([change[1] for change in batch.changes.values() if change is not None])
            failed = [change[1] for path, change in batch.changes.items()
                      if change is not None and path not in batch.unless_committed]
            hook = self.on_failed_commit
            if hook is not None and failed:
                hook(failed)
        finally:
            batch.done.set()
        if batch.error is not None:
            raise batch.error

    def _write(self, batch: Batch, timeout: float | None) -> None:
        """Commit ``batch``'s changes with this process's one writer: those ``unless_committed`` that
        the index already holds are skipped (asked of the index as committed, under the lock); when
        nothing is left the writer is cancelled, no commit."""
        w = self.acquire_writer(timeout)
        try:
            if batch.unless_committed:
                committed = w.searcher()  # the index as committed now that we hold the lock
                for path in sorted(batch.unless_committed):
                    change = batch.changes[path]
                    docnum = committed.document_number(path=path)
                    etag = None if docnum is None else str(committed.stored_fields(docnum)["record"]["etag"])
                    if etag == (None if change is None else change[0].etag):
                        del batch.changes[path]
                        batch.skipped.add(path)
            if not batch.changes:
                w.cancel()
                return
            for path, change in batch.changes.items():
                if change is None:
                    w.delete_by_term("path", path)
                else:
                    w.update_document(**document_of(*change, self.config.record_head_chars))
            self.commit_live(w, [change for change in batch.changes.values() if change is not None])
        except BaseException:
            # A writer whose work or commit raised keeps Whoosh's lock until it is cancelled.
            with contextlib.suppress(Exception):
                w.cancel()
            raise

    def _space(self, batch: Batch, started: float, timeout: float | None) -> None:
        """Under steady saves, wait until ``commit_spacing`` after the last commit began (the saves made
        meanwhile join ``batch``). Steady: the last batch held several saves, or this one does, or
        another write is in its file steps now; a lone caller's saves never wait here."""
        began, size = self._last_commit
        wait = began + self.config.commit_spacing - time.monotonic()
        if timeout is not None:
            wait = min(wait, timeout - (time.monotonic() - started))
        if wait > 0 and (size > 1 or len(batch.changes) > 1 or self.file_steps.in_steps()):
            time.sleep(wait)

    def _close(self, batch: Batch) -> None:
        with self._batch_lock:
            if self._open_batch is batch:
                self._open_batch = None

    def tidy(self) -> list[str]:
        """Remove what killed writers left in the index folder (see ``clean_debris``)."""
        config = self.config
        with write_lock(self.open(), config.lock_first_retry, config.swap_max_retry):
            return clean_debris(self.dir, config.debris_stale)


def _up_to_date(searcher: Searcher) -> bool:
    try:
        return bool(searcher.up_to_date())
    except Exception:  # the index vanished under it: a new searcher will say how
        return False
