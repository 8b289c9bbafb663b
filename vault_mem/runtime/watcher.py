"""Following the files: a watchdog observer feeding a debounced, coalescing queue that one
indexing thread drains.

Events only say *where* to look. At flush time the disk decides: a path that is a memory
file is read and re-indexed when its size/mtime and then its content hash differ from the
index; a path that is gone is dropped; a folder that appeared, vanished or moved is
compared as a whole subtree. So atomic saves (temp file renamed over the note), vim's
backup dance, renames, folder moves and bursts all end with the index equal to the files,
and a write tool's own change (already indexed) costs one stat, not a second indexing pass.

Hidden top-level folders (``.git``, ``.obsidian``, ``.trash``, the index folder) are never
watched: the root is watched non-recursively and every visible top-level folder
recursively. Events under any hidden segment are ignored. When the operating system drops
events (the kernel queue overflowed) watchdog 7 says so with one event per watch: the whole
vault is then checked at once, as the periodic check does. That stat check (every 60 s, in
its own thread, queueing what it finds as events) is also the safety net for losses nobody
reports; an observer that dies is restarted.

A batch whose commit fails (an internal error) is said in the log, the error and its paths, and
those paths are applied again after a pause, each on its own, ``watch_retries`` times at most; a
path that still fails is left to the periodic check. No failure costs a walk of the whole vault
(docs/index-and-sync.md#while-serving).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import threading
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import DirMovedEvent, FileMovedEvent, FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from vault_mem.git.history import history_for
from vault_mem.runtime.observer import (
    INOTIFY,
    changes_to_watch,
    observer_alive,
    quiet_benign_watchdog_warning,
    stop_observer,
)
from vault_mem.search.api import (
    VaultIndex,
    note_present,
    records_under,
    same_content,
    stat_state,
)
from vault_mem.vault.note import Note
from vault_mem.vault.paths import Listing, display_path, listed_spelling, relative_to_root
from vault_mem.vault.reader import read_note
from vault_mem.vault.walk import IgnoreRules, is_memory_name, leads_to_a_note, walk_vault

log = logging.getLogger("vault_mem.watch")


class Watcher:
    """Keeps ``index`` equal to the files under its root while running, with the settings the
    index was made with (``index.config``)."""

    def __init__(self, index: VaultIndex, reconcile_every: float | None = None,
                 on_error: Callable[[str], None] | None = None,
                 pace: Callable[[str], None] | None = None) -> None:
        self.config = index.config
        reconcile_every = self.config.reconcile_every if reconcile_every is None else reconcile_every
        self.index = index
        self.pace = pace  # called with each file the periodic check reaches (tests slow it down)
        self.root = index.root
        self._roots = (str(self.root), os.path.realpath(self.root))  # FSEvents reports real paths
        self._root_names = {unicodedata.normalize("NFC", os.path.normpath(r)) for r in self._roots}
        self.reconcile_every = reconcile_every
        self.on_error = on_error
        self._files: set[str] = set()  # OS paths relative to the root
        self._dirs: set[str] = set()
        self._cond = threading.Condition()
        self._busy = False
        self._stopping = False
        self._paused = False  # listening, but applying nothing (a build owns the index)
        self._first_event = 0.0
        self._last_event = 0.0
        self._observer: Any = None
        self._watched_tops: dict[str, Any] = {}  # top-level folder -> its watchdog watch
        self._top_ids: dict[str, tuple[int, int]] = {}  # top-level folder -> (st_dev, st_ino) watched
        self._thread: threading.Thread | None = None
        self._sweeper: threading.Thread | None = None
        self.flushes = 0  # batches applied (for tests and benchmarks)
        # The vault folder itself was deleted or moved away: its watch is gone (inotify ends it),
        # even when a folder of the same name (and, on Linux, often the same inode) is made again.
        self.root_lost = False
        # Top-level folders whose watch to make anew at the next flush: one where a folder inside
        # was moved or deleted (see ``note_event``).
        self._rewatch: set[str] = set()
        self.indexed = 0  # notes (re)indexed by the watcher
        self.swept = 0  # paths the periodic check found changed although no event said so
        self.checks = 0  # whole-vault checks done (periodic, or after lost events)
        self._lost = False  # the OS said it dropped events: check the whole vault at the next turn
        self._lost_said: float | None = None  # when that was last logged (monotonic)
        self._sweeping = False  # a check runs (its own thread)
        self._sweep_again = False  # events were lost while it ran: check once more after it
        # What the system refused to watch, and why: "" for the whole vault (no observer could
        # start), else a top-level folder. While anything is, the checks run more often.
        self._refused: dict[str, str] = {}
        self._check_seconds = 0.0  # how long the last check of every note took
        # Paths whose batch failed, (OS path relative to the root, is a folder) -> failed attempts: applied
        # again, each on its own, once ``_retry_at`` (monotonic) has come.
        self._failed: dict[tuple[str, bool], int] = {}
        self._retry_at = 0.0
        self.retried = 0  # paths applied again after a failure (tests)
        self.given_up = 0  # paths left to the periodic check after ``watch_retries`` failures (tests)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, paused: bool = False) -> None:
        """Listen from now on; apply what is heard at once, or (``paused``) from ``resume()``."""
        self._paused = paused
        self._start_observer()
        self.index.on_failed_commit = self._retry  # a write's own commit failed: ours to index
        self._thread = threading.Thread(target=self._run, name="vault-mem-watch", daemon=True)
        self._thread.start()

    def pause(self) -> None:
        """Keep listening but apply nothing until ``resume()`` (a build is about to replace the
        index); returns once a batch being applied is done."""
        with self._cond:
            self._paused = True
            while self._busy:
                self._cond.wait(self.config.watch_idle_poll)

    def resume(self) -> None:
        """Apply what was heard while paused, and whatever comes next."""
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def _retry(self, fsrels: list[str]) -> None:
        for rel in fsrels:
            self.note_event(str(self.root / rel), False)

    def stop(self) -> None:
        if self.index.on_failed_commit == self._retry:
            self.index.on_failed_commit = None
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._observer is not None:
            stop_observer(self._observer, self.config.observer_stop_wait)
        if self._thread is not None:
            self._thread.join(timeout=self.config.watch_stop_wait)  # a daemon: a stop past it loses nothing

    def _start_observer(self) -> bool:
        """A new observer of the root and of every visible top-level folder. False when the system
        refuses (its limit of inotify watches or instances is reached, say): none is kept then, the
        checks of every note run more often instead (``check_period``), and each of them tries again."""
        quiet_benign_watchdog_warning()
        old, self._observer = self._observer, None
        if old is not None:  # a half-dead observer (one of its threads died): stop what is left
            stop_observer(old, self.config.observer_stop_wait)
        self._watched_tops, self._top_ids = {}, {}
        observer = Observer()
        try:
            handler = _Handler(self)
            observer.schedule(handler, str(self.root), recursive=False, event_filter=changes_to_watch())
            watched, ids = {}, {}
            for entry in _top_folders(self.root):
                identity = folder_identity(self.root / entry)
                if identity is not None:
                    watched[entry] = observer.schedule(handler, str(self.root / entry), recursive=True,
                                                       event_filter=changes_to_watch())
                    ids[entry] = identity
            observer.start()
        except OSError as exc:
            stop_observer(observer, self.config.observer_stop_wait)  # the watches it made are given back
            self._refuse("", exc)
            return False
        self._observer, self._watched_tops, self._top_ids = observer, watched, ids
        self._refused = {}
        self._watching_again()
        return True

    @property
    def unwatched(self) -> str | None:
        """Why some of the vault's folders are not watched (their saves are found by the more
        frequent checks), or None when all are."""
        with self._cond:
            return next(iter(self._refused.values()), None)

    def check_period(self) -> float:
        """Seconds between two checks of every note: the periodic interval while every folder is
        watched; shorter while one is not, bounded by the length of the last check."""
        if not self._refused:
            return self.reconcile_every
        config = self.config
        pause = max(config.unwatched_check_pause, config.unwatched_check_factor * self._check_seconds)
        return min(self.reconcile_every, pause)

    def _refuse(self, name: str, exc: OSError) -> None:
        """The system would not watch ``name`` ("" for the whole vault): say so once, then check more often."""
        reason = exc.strerror or str(exc)
        with self._cond:
            first = not self._refused
            self._refused[name] = reason
            self._cond.notify_all()  # the next check comes sooner
        if first:
            note_present(self.index.dir, "serve", unwatched=reason)  # `vault-mem status` says it too
            advice = {errno.ENOSPC: "; on Linux, raise fs.inotify.max_user_watches (docs/index-and-sync.md)",
                      errno.EMFILE: "; on Linux, raise fs.inotify.max_user_instances (docs/index-and-sync.md)",
                      }.get(exc.errno or 0, "")
            log.warning("cannot watch %s for changes (%s): saves made outside this server are found by a "
                        "check of every note every few seconds instead of at once%s",
                        self.root / name if name else self.root, reason, advice)

    def _watching_again(self, name: str | None = None) -> None:
        """``name`` (None: every folder) is watched again after a refusal."""
        with self._cond:
            if not self._refused:
                return
            if name is None:
                self._refused = {}
            else:
                self._refused.pop(name, None)
            back = not self._refused
        if back:
            note_present(self.index.dir, "serve", unwatched=None)
            log.info("watching %s for changes again", self.root)

    def _watch_top(self, name: str) -> None:
        """Make the watch of top-level folder ``name`` match the disk: none when it is gone, a new
        one when the folder there is not the one watched (a watch follows its folder when that is
        moved away, so a folder re-created under the old name needs its own)."""
        if self._observer is None or name.startswith("."):
            return
        identity = folder_identity(self.root / name)
        if identity is None:
            self._unwatch_top(name)
            return
        if name in self._watched_tops:
            if self._top_ids.get(name) == identity:
                return
            self._unwatch_top(name)
        try:
            self._watched_tops[name] = self._observer.schedule(_Handler(self), str(self.root / name),
                                                               recursive=True, event_filter=changes_to_watch())
            self._top_ids[name] = identity
        except OSError as exc:  # the system's limit: found by the more frequent checks meanwhile
            self._refuse(name, exc)
            return
        self._watching_again(name)

    def _unwatch_top(self, name: str) -> None:
        watch = self._watched_tops.pop(name, None)
        self._top_ids.pop(name, None)
        self._watching_again(name)  # gone: nothing there to watch
        if watch is not None and self._observer is not None:
            with contextlib.suppress(KeyError, OSError):
                self._observer.unschedule(watch)

    # -- events ----------------------------------------------------------------------------

    def note_event(self, path: str, is_dir: bool, gone: bool = False) -> None:
        if gone and is_dir and unicodedata.normalize("NFC", os.path.normpath(path)) in self._root_names:
            self.root_lost = True  # the runtime starts a new watcher once the folder is back
            return
        rel = self._relative(path)
        if rel is None:
            return
        if is_dir and "/" not in rel:
            self._watch_top(rel)  # a top-level folder appeared, vanished or was renamed: fix the watches
        elif is_dir and gone and INOTIFY:
            # watchdog's inotify watch keeps its folders by path: when a folder inside moved, removing
            # the old path's watches also removed the one just added on the same folder at its new
            # place (inotify has one per folder), and later saves there went unheard. A new watch of
            # the top-level folder at the next flush, before its subtrees are compared, sees them.
            with self._cond:
                self._rewatch.add(rel.split("/", 1)[0])
        self._queue(rel, is_dir)

    def _queue(self, rel: str, is_dir: bool) -> None:
        """Queue ``rel`` for the next flush."""
        with self._cond:
            (self._dirs if is_dir else self._files).add(rel)
            now = time.monotonic()
            if not self._first_event:
                self._first_event = now
            self._last_event = now
            self._cond.notify_all()

    def events_lost(self) -> None:
        """The OS dropped events (its queue overflowed): check the whole vault now, not at the next
        periodic check. Every watch reports the same loss: they settle like a burst of events into
        one check, and the warning is said once a minute at most."""
        with self._cond:
            self._lost = True
            now = time.monotonic()
            if not self._first_event:
                self._first_event = now
            self._last_event = now
            say = self._lost_said is None or now - self._lost_said >= self.config.watch_lost_said_every
            if say:
                self._lost_said = now
            self._cond.notify_all()
        if say:
            log.warning("the system dropped file events for %s (its event queue overflowed); checking "
                        "every note against the index now", self.root)

    def _relative(self, path: str) -> str | None:
        rel = relative_to_root(path, self._roots)
        if rel is None:
            return None
        if any(part.startswith(".") for part in rel.split("/")):
            return None
        return rel

    # -- the indexing thread ---------------------------------------------------------------

    def queued(self) -> int:
        """Paths heard and not yet applied (paused, or waiting for the debounce)."""
        with self._cond:
            return len(self._files) + len(self._dirs)

    def applying(self) -> bool:
        """Paths are queued or being applied (read without the lock: a hint for the start-up check's pace)."""
        return self._busy or bool(self._files) or bool(self._dirs)

    def wait_idle(self, timeout: float) -> bool:
        """Block until every event seen so far has been applied (True), or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._files or self._dirs or self._busy or self._failed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, self.config.watch_idle_poll))
            return True

    def _run(self) -> None:
        """The indexing loop: take a debounced batch (or wake for the periodic check), apply it."""
        last_check = time.monotonic()
        while True:
            batch = self._next_batch(last_check)
            if batch is None:
                return
            check_due = time.monotonic() >= last_check + self.check_period()
            if check_due:
                last_check = time.monotonic()
            with self._cond:
                lost, self._lost = self._lost, False
            self._process(*batch, check_due, lost)

    def _retry_due(self) -> bool:
        """Under the condition: paths that failed are waiting and their pause is over."""
        return bool(self._failed) and time.monotonic() >= self._retry_at

    def _next_batch(self, last_check: float) -> tuple[set[str], set[str], dict[tuple[str, bool], int]] | None:
        """Wait for events (or until the next check of every note is due: ``check_period`` after
        ``last_check``, asked anew at each wake, as a refused watch shortens it; or until paths that
        failed are due again), let a burst settle, then take every queued path (and the failed ones
        that are due, with their failed attempts) and mark the watcher busy. None when stopping."""
        with self._cond:
            while not self._stopping and (self._paused or (not self._files and not self._dirs
                                                         and not self._retry_due())):
                due = time.monotonic() >= last_check + self.check_period()
                if (due or self._lost) and not self._paused:
                    break
                # A change of what is waited for notifies; the wake looks again whether the check is due
                # (``check_period`` shortens while a watch is refused). A retry due already ends the loop.
                wake = self.config.watch_wake
                pause = self._retry_at - time.monotonic() if self._failed else wake
                self._cond.wait(min(wake, max(0.0, pause)))
            if self._stopping:
                return None
            if self._files or self._dirs or self._lost:
                self._debounce()
            files, dirs = self._files, self._dirs
            self._files, self._dirs = set(), set()
            failed: dict[tuple[str, bool], int] = {}
            if self._retry_due():
                failed, self._failed = self._failed, {}
            self._first_event = 0.0
            self._busy = True
            return files, dirs, failed

    def _debounce(self) -> None:
        """Under the condition: wait for ``watch_debounce`` seconds of quiet, never longer than ``watch_max_delay``."""
        config = self.config
        while not self._stopping:
            now = time.monotonic()
            quiet = now - self._last_event
            waited = now - self._first_event
            if quiet >= config.watch_debounce or waited >= config.watch_max_delay:
                return
            self._cond.wait(min(config.watch_debounce - quiet, config.watch_max_delay - waited))

    def _process(self, files: set[str], dirs: set[str], failed: dict[tuple[str, bool], int],
                 check_due: bool, lost: bool = False) -> None:
        """Apply one batch: the paths heard together, then each path that failed before on its own
        (one note that keeps failing holds no other back); then the periodic check when due, or at
        once when events were lost. A failure never stops the watching: it is said, and what failed
        is applied again later (``_failed_again``)."""
        try:
            fresh = ({rel for rel in files if (rel, False) not in failed},
                     {rel for rel in dirs if (rel, True) not in failed})
            if fresh[0] or fresh[1]:
                self._apply_paths(*fresh, failed)
            for rel, is_dir in sorted(failed):
                self.retried += 1
                self._apply_paths(set() if is_dir else {rel}, {rel} if is_dir else set(), failed)
            if check_due or lost:
                try:
                    self._safety_net(again=lost)
                except Exception:  # the next turn tries again; saves are still heard meanwhile
                    log.exception("the check of every note could not start; it is tried again later")
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _apply_paths(self, files: set[str], dirs: set[str], failed: dict[tuple[str, bool], int]) -> None:
        """``_flush`` these paths; when that raises, say what failed and queue them again."""
        try:
            self._flush(files, dirs)
        except Exception as exc:  # an internal error: never stop watching
            self._failed_again(files, dirs, failed, exc)

    def _failed_again(self, files: set[str], dirs: set[str], failed: dict[tuple[str, bool], int],
                      exc: Exception) -> None:
        """Say in the log what failed (the error and the paths), and queue each path to be applied
        again on its own after ``watch_retry_pause`` seconds, up to ``watch_retries`` attempts in
        all; then leave it to the periodic check, which finds it changed and tries once more."""
        config = self.config
        keys = [(rel, False) for rel in sorted(files)] + [(rel, True) for rel in sorted(dirs)]
        again, dropped = [], []
        with self._cond:
            for key in keys:
                attempts = failed.get(key, 0) + 1
                if attempts < config.watch_retries:
                    self._failed[key] = max(attempts, self._failed.get(key, 0))
                    again.append(key)
                else:
                    dropped.append(key)
            if again:
                self._retry_at = time.monotonic() + config.watch_retry_pause
            self.given_up += len(dropped)
            self._cond.notify_all()
        error = f"{type(exc).__name__}: {exc}"
        log.error("applying the changes of %s failed (%s)%s%s", _named(keys), error,
                  f"; applying {_named(again)} again on its own in {config.watch_retry_pause:g} s" if again else "",
                  f"; {_named(dropped)} failed {config.watch_retries} times, left to the check of every note "
                  f"(every {self.check_period():g} s)" if dropped else "",
                  exc_info=exc)
        if self.on_error:
            self.on_error(error)

    def _safety_net(self, again: bool = False) -> None:
        if self._observer is None or not observer_alive(self._observer):
            if self._observer is not None:  # None: the system refused it before; try again
                log.warning("the file watcher stopped; restarting it")
            self._start_observer()
        else:  # top-level folders whose events were lost (an overflow) are watched again
            for name in set(_top_folders(self.root)) | set(self._watched_tops):
                self._watch_top(name)
        _follow_head(self.root)
        self._start_sweep(again)

    def _start_sweep(self, again: bool = False) -> None:
        """The periodic check, off this thread: a stat walk over 100,000 notes takes seconds, and
        saves made meanwhile must not wait for it. What it finds is queued like events, so the
        flush decides from the disk, under the lock, as for any event. One runs at a time; when
        events were lost (``again``) during one, it may have passed their files already: another
        follows it."""
        with self._cond:
            if self._sweeping:
                self._sweep_again = self._sweep_again or again
                return
            self._sweeping = True
        self._sweeper = threading.Thread(target=self._sweeps, name="vault-mem-sweep", daemon=True)
        self._sweeper.start()

    def _sweeps(self) -> None:
        try:
            while True:
                self._sweep()
                self.checks += 1
                with self._cond:
                    if not self._sweep_again or self._stopping:
                        self._sweeping = False
                        return
                    self._sweep_again = False
        except BaseException:
            with self._cond:
                self._sweeping = False
            raise

    def _sweep(self) -> None:
        began = time.monotonic()
        try:
            known = self.index.fingerprints()  # the index first: see build.reconcile
            rules = IgnoreRules(self.root)
            walked = walk_vault(self.root, rules)
            on_disk: set[str] = set()
            missed: list[str] = []
            for rel in walked.files:
                if self.pace is not None:
                    self.pace(rel)
                shown = display_path(rel)
                on_disk.add(shown)
                if stat_state(self.root / rel, known.get(shown)) != "same":
                    missed.append(rel)
            gone = [path for path in known if path not in on_disk]
            for rel in [*missed, *gone]:
                self.note_event(str(self.root / rel), False)
            self.swept += len(missed) + len(gone)
            if missed or gone:  # no event is expected while folders go unwatched: not worth a line each time
                (log.debug if self._refused else log.info)(
                    "periodic check: %d changed and %d removed notes queued that no event reported",
                    len(missed), len(gone))
        except Exception:
            log.exception("the periodic check failed; it runs again later")
        finally:
            self._check_seconds = time.monotonic() - began

    def _flush(self, files: set[str], dirs: set[str]) -> None:
        config = self.config
        with self._cond:
            rewatch, self._rewatch = self._rewatch, set()
        for name in sorted(rewatch):
            self._unwatch_top(name)
            self._watch_top(name)
        _follow_head(self.root)  # a pull or checkout moved HEAD: history dates first, then the files
        rules = IgnoreRules(self.root)
        candidates = set(files)
        for rel_dir in dirs:
            candidates |= self._subtree(rel_dir)
        for rel in files:  # ReadDirectoryChangesW reports a deleted folder as a deleted file
            if not is_memory_name(rel.rpartition("/")[2]) and not os.path.lexists(self.root / rel):
                candidates |= self._subtree(rel)
        # What this process's write tools saved and indexed themselves needs nothing (search/commits.py),
        # not even a listing: they write under the spelling on disk (``existing_spelling``, the index's).
        self.index.file_steps.wait_steps(config.watch_steps_wait)  # a save heard before it was submitted
        candidates = {rel for rel in candidates if not self.index.own_saves.unchanged(self.root, rel)}
        # On a case-insensitive disk an old spelling still opens: the folder listings decide. A listing
        # is costly in a busy process: ``os.listdir`` lets go of the interpreter lock for every entry,
        # and each time another thread may take it for up to the switch interval
        # (docs/perf/folder-names.md).
        listings: dict[str, Listing] = {}
        spelled = {rel: listed_spelling(self.root, rel, listings) for rel in candidates}
        candidates |= {name for name in spelled.values() if name is not None}
        # Only a note's name is ever indexed: a write's temp file and the like need no look at the
        # index (a look renews this thread's searcher, after every commit of a busy server).
        candidates = {rel for rel in candidates if is_memory_name(rel.rpartition("/")[2])}
        if not candidates:
            self.flushes += 1
            return
        # A few paths are looked up one by one: a whole-index map grows with the vault.
        shown_paths = [display_path(rel) for rel in candidates]
        fingerprints = self.index.fingerprints(shown_paths if len(shown_paths) <= config.watch_lookup_limit else None)
        changed: list[tuple[Note, str]] = []
        removed: list[str] = []
        for rel in sorted(candidates):
            shown = display_path(rel)
            path = self.root / rel
            listed = spelled.get(rel, rel) == rel
            if rules.ignored(rel) or not listed or not _is_file(path) or not leads_to_a_note(self.root, rel):
                if shown in fingerprints:
                    removed.append(shown)
                continue
            seen = fingerprints.get(shown)
            state = stat_state(path, seen)
            if state == "unreadable":
                removed.append(shown)
                continue
            if state == "same":
                continue
            note = read_note(self.root, rel, self.index.history, config=config)
            if same_content(note, seen):
                continue
            changed.append((note, rel))
            if len(changed) >= config.watch_batch:
                self._apply(changed, removed)
                changed, removed = [], []
        self._apply(changed, removed)
        self.flushes += 1

    def _apply(self, changed: list[tuple[Note, str]], removed: list[str]) -> None:
        """Write ``changed`` and drop ``removed`` through the engine, less what another process (which
        saw the same events) committed since our fingerprints were read: checked under the lock."""
        self.indexed += self.index.apply(changed, removed, unless_committed=True)

    def _subtree(self, rel_dir: str) -> set[str]:
        """Every memory path the index has under ``rel_dir`` plus every one on disk there."""
        found: set[str] = set()
        for record in records_under(self.index, display_path(rel_dir) + "/"):
            found.add(record.get("fsrel") or record["path"])
        folder = self.root / rel_dir
        if folder.is_dir():
            sub = walk_vault(folder)
            found |= {f"{rel_dir}/{f}" for f in sub.files}
        return found


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.event_type == "events_lost":  # it names a watch, not a change (observer.EVENTS_LOST)
            self.watcher.events_lost()
            return
        is_dir = event.is_directory
        if is_dir and event.event_type == "modified":
            return
        self.watcher.note_event(_text(event.src_path), is_dir, gone=event.event_type in ("deleted", "moved"))
        if isinstance(event, FileMovedEvent | DirMovedEvent) and event.dest_path:
            self.watcher.note_event(_text(event.dest_path), is_dir)


def _named(keys: list[tuple[str, bool]]) -> str:
    """``a.md, b.md and 3 more`` (a folder with a slash after it), for a log line."""
    shown = [display_path(rel) + ("/" if is_dir else "") for rel, is_dir in keys[:5]]
    more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
    return ", ".join(shown) + more


def _follow_head(root: Path) -> None:
    """When the vault is a git work tree whose HEAD moved, catch the history map up (which
    re-indexes the notes whose dates changed); a stat of three files when nothing moved."""
    history = history_for(root)
    if history is not None:
        history.refresh()


def folder_identity(path: Path) -> tuple[int, int] | None:
    """(st_dev, st_ino) of a folder (through a symlink), None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _text(path: str | bytes) -> str:
    return os.fsdecode(path)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _top_folders(root: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(root) if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return []
