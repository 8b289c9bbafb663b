"""Bringing a served vault up: the index build or reconcile in the background, progress for
answers, and the live watcher. The server answers ``initialize`` at once. A call made in the
first FIRST_ANSWER_WAIT seconds of a build waits for the build (a small vault's first answer is
then complete); later calls answer from what is committed so far and say how far the build
got, in real counts (docs/index-and-sync.md).

The watcher listens before any walk of the vault starts (a build's, the start-up check's, the
periodic check's): during a build it only queues what it hears, and applies it once the build
is done; otherwise it applies it at once. So a save at any moment of a start is seen.

A cold build runs in a child process (``vault-mem index``) with its stdout pointed at our
stderr: the build forks workers, and nothing a child does may reach the protocol's stdout.

Segments are merged off the live path: a scheduler thread checks the index's segments
every few seconds and, when the tiered policy asks for a merge and no process holds the
merge lock, starts ``python -m vault_mem.runtime.tuning`` at low priority (see
``search/merge.py``, ``runtime/tuning.py`` and docs/index-and-scale.md). Nothing here ever waits for it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from vault_mem.errors import VaultUnavailable
from vault_mem.git.history import unregister
from vault_mem.runtime.watcher import Watcher, folder_identity
from vault_mem.search.api import (
    SCHEMA_VERSION,
    SyncReport,
    VaultIndex,
    attach_history,
    merge_due,
    merge_lock,
    note_count,
    reconcile,
)
from vault_mem.vault.walk import walk_vault

log = logging.getLogger("vault_mem.mcp_server")
PROGRESS_FILE = "build-progress.json"
# A call made in the first seconds of a build (or of the resume of one) waits for it, until the
# build is this old: a vault of a few hundred notes then answers its first call complete, and a
# client that calls once and leaves has left an index behind (docs/index-and-sync.md).
# Once the server is loaded, the start-up check of an existing index lets the session's first call
# go first: a client calls right after the handshake, and the check (mostly reading four columns
# whole) would share the one interpreter lock with that call. It starts once that call is answered,
# or once a quiet spell with no call in flight has passed, and never later than a bound after
# loading (all in vault_mem/settings.py); it does not wait for later calls, since a client that
# keeps asking would starve it, and it gives way to them as it walks. The watcher applies saves meanwhile.


class Runtime:
    """Owns the background indexing of one served vault; it is the vault's ``Health``."""

    def __init__(self, index: VaultIndex, pace: Callable[[str], None] | None = None,
                 first_answer_wait: float | None = None, merges: bool = True, writes: bool = True) -> None:
        """``pace`` is called with each file a full check of the vault reaches (tests slow it down);
        ``merges``: schedule background merges (of ``serve --workers N``, only one worker does);
        ``writes``: False for a worker that leaves the writing to worker 1, which also follows the
        files for it: it runs no watcher (docs/concurrency.md)."""
        self.config = index.config  # the settings the index was made with: one source for the runtime
        first_answer_wait = self.config.first_answer_wait if first_answer_wait is None else first_answer_wait
        self.writes = writes
        self.root = index.root
        self.index = index
        self.pace = pace
        self.first_answer_wait = first_answer_wait
        self._patience_until = 0.0  # calls before this monotonic time wait for the build
        self._counted: int | None = None  # memory files on disk, counted for a build's progress
        self._counting = threading.Lock()
        self._check_after: threading.Event | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self._building = threading.Event()
        self._ready = threading.Event()
        self.report: SyncReport | None = None
        self.watcher: Watcher | None = None
        self.error: str | None = None
        self._bringing_up = threading.Lock()
        self._vault_missing = False
        self._root_id: tuple[int, int] | None = None  # the vault folder's (device, inode) at the last start
        self._stop_merging = threading.Event()
        self._merger: subprocess.Popen[bytes] | None = None
        self._merge_thread: threading.Thread | None = None
        self.merges = merges
        self._calls = 0  # tool calls in flight (``answering``)
        self._calls_changed = threading.Condition()
        self._last_call = 0.0  # monotonic time the last call ended
        self._answered = 0  # tool calls answered so far
        self._files_checked = 0
        self.gave_way = 0  # pauses the start-up check made for calls and saves (tests)
        self._walking_since = 0.0  # when the start-up check last went on after waiting for a save
        self.waited_for_calls = 0  # times the start-up check waited for a call in flight to end (tests)
        # The start-up check is due or running: from start() until its reconcile has applied what it
        # found. Notes changed while no server ran (one killed mid-write included) are only in the
        # index after it, so answers say so meanwhile (``checking``).
        self._check_due = False
        self._check_total: int | None = None  # files the check's walk listed, once it has
        self._check_done = 0  # files the check has compared so far

    @property
    def progress_path(self) -> Path:
        return self.index.dir / PROGRESS_FILE

    def indexing(self) -> dict[str, int] | None:
        """``{done, total}`` while a build runs (here or in another process), else None.

        From the build's progress file; before it has one (the child is starting) or when an
        interrupted build is being finished here, the notes indexed of the files counted on disk.
        """
        if not self._building.is_set() and self.index.state().get("complete", True):
            return None
        try:
            data = json.loads(self.progress_path.read_text(encoding="utf-8"))
            done, total = int(data["done"]), int(data["total"])
            if total:
                return {"done": min(done, total), "total": total}
        except (OSError, ValueError, KeyError, TypeError):
            pass
        total = self._files_on_disk()
        return {"done": min(self._notes_indexed(), total), "total": total}

    def checking(self) -> dict[str, int] | None:
        """``{done, total}`` while the start-up check is due or running and no build is, else None:
        the files compared with the index so far, of those on disk (until the check has listed
        them, the notes the index holds)."""
        if not self._check_due or self._building.is_set():
            return None
        total = self._check_total
        if total is None:
            total = self._notes_indexed()
        return {"done": min(self._check_done, total), "total": total}

    def _files_on_disk(self) -> int:
        with self._counting:
            if self._counted is None:
                self._counted = len(walk_vault(self.root).files)
            return self._counted

    def _notes_indexed(self) -> int:
        try:
            return note_count(self.index)
        except Exception:  # no index yet, or one being replaced: nothing to count
            return 0

    def start(self, check_after: threading.Event | None = None) -> None:
        """Start listening to the files (quick even on a large vault), then the build or reconcile
        in a background thread; returns at once. The reconcile waits for ``check_after`` when given (serve sets it once
        the MCP SDK is loaded: a walk beside that load would slow it down; the watcher listens
        and applies meanwhile, and a build child runs in its own process)."""
        self._root_id = folder_identity(self.root)
        if not self._bringing_up.acquire(blocking=False):
            return  # already on its way up
        self._check_after = check_after
        self._ready.clear()
        self._counted = None
        self._check_due, self._check_total, self._check_done = True, None, 0
        building = self.index.needs_build()
        if building:
            self._building.set()
        if building or not self.index.is_complete():
            self._patience_until = time.monotonic() + self.first_answer_wait
        try:
            self._listen(paused=building)  # before any walk of the vault: the build's or the check's
        except Exception:
            self._bringing_up.release()
            raise
        if self.merges:  # of serve --workers N, only one worker merges
            self._start_merge_scheduler()  # merges run in their own process, at low priority
        threading.Thread(target=self._bring_up, name="vault-mem-index", daemon=True).start()

    def _listen(self, paused: bool) -> None:
        """A new watcher listening from now on (before any walk), paused while a build owns the
        index. It listens before the one it replaces (a vault folder that came back, an index
        rebuilt) stops: no moment is unwatched. None in a worker that does not write: worker 1's
        watcher indexes every change, and this worker's next call sees its commit. (Each serving
        worker watching too spent its time passing along the events of worker 1's own saves:
        docs/perf/one-watcher.md.)"""
        if not self.writes:
            return
        watcher = Watcher(self.index, pace=self.pace)
        watcher.start(paused=paused)
        old, self.watcher = self.watcher, watcher
        if old is not None:
            old.stop()

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Held for the length of each tool call: the start-up check gives way to calls."""
        with self._calls_changed:
            self._calls += 1
        try:
            yield
        finally:
            with self._calls_changed:
                self._calls -= 1
                self._answered += 1
                self._last_call = time.monotonic()
                self._calls_changed.notify_all()

    def quiet_for(self, seconds: float) -> bool:
        """No tool call is running, and none ended in the last ``seconds``."""
        with self._calls_changed:
            return not self._calls and time.monotonic() - self._last_call >= seconds

    def _let_calls_go_first(self) -> None:
        """Wait until a call made since now has been answered (the session's first), or for
        ``calls_first`` seconds without a call in flight; ``calls_first_at_most`` at most. Not for
        the calls after the first: a client that keeps asking would hold the check back for good
        (issue 54), and the check gives way to calls as it walks (``_check_pace``)."""
        config = self.config
        now = time.monotonic()
        deadline = now + config.calls_first_at_most
        with self._calls_changed:
            self._last_call = max(self._last_call, now)
            answered = self._answered
            while not self._stopping and (now := time.monotonic()) < deadline:
                if self._answered > answered:
                    return
                if self._calls:
                    self.waited_for_calls += 1
                    self._calls_changed.wait(deadline - now)
                    continue
                quiet_from = self._last_call + config.calls_first
                if now >= quiet_from:
                    return
                self._calls_changed.wait(min(quiet_from, deadline) - now)

    def _check_pace(self, rel: str) -> None:
        """The start-up check's pace: the tests' hook, and now and then a pause. While the watcher
        has a save to apply, the check waits for it, no longer than it walked since its last pause
        (at most ``check_save_wait``): the save goes first and the check keeps half its pace. While
        a call is in flight, a millisecond's sleep (a thread that sleeps hands the interpreter lock
        to the call at once). Either way the check keeps moving however steadily clients call."""
        config = self.config
        if self.pace is not None:
            self.pace(rel)
        self._check_done += 1
        self._files_checked += 1
        if self._files_checked % config.check_give_way_every:
            return
        watcher = self.watcher
        if watcher is not None and watcher.applying():
            self.gave_way += 1
            walked = time.monotonic() - self._walking_since
            watcher.wait_idle(min(walked, config.check_save_wait))
            self._walking_since = time.monotonic()
        elif self._calls:
            self.gave_way += 1
            time.sleep(config.check_give_way)

    def check(self) -> None:
        """Called before each tool call: notice a vanished vault or index and recover.

        A missing vault folder raises VaultUnavailable (the answer says so) until it returns,
        then the index is reconciled; a deleted index folder is rebuilt in the background
        while answers say how far the build got.
        """
        if not self.follow_root():
            raise VaultUnavailable(f"the vault folder {self.root} is missing (moved, deleted or "
                                   "unmounted?)", advice="retry later: answers resume when it is back")
        if self._ready.is_set() and self._index_gone():
            log.warning("the index at %s is gone or damaged; rebuilding it", self.index.dir)
            self.start()
        self._wait_for_first_build()

    def follow_root(self) -> bool:
        """Whether the vault folder is there; when it came back, or another folder now stands under
        its name, start again on it (a new watcher, the reconcile). Called before each call, and
        every ``MERGE_CHECK`` seconds by the process that watches the files: worker 1 of
        ``serve --workers N`` gets no calls of its own, and its watcher would otherwise keep
        watching a folder that is gone (until the periodic check, a minute later)."""
        here = folder_identity(self.root)
        lost = self.watcher is not None and self.watcher.root_lost
        if here is None:
            if not self._vault_missing:
                log.error("the vault folder %s is gone; waiting for it to come back", self.root)
            self._vault_missing = True
            return False
        if self._vault_missing or lost or (self._root_id is not None and here != self._root_id):
            self._vault_missing = False
            log.info("the vault folder %s is back; reconciling", self.root)
            self.start()
        return True

    def _wait_for_first_build(self) -> None:
        """In the first ``first_answer_wait`` seconds of a build, wait for it to end (not longer)."""
        left = self._patience_until - time.monotonic()
        if left > 0 and not self._ready.is_set():
            self._ready.wait(left)

    def _index_gone(self) -> bool:
        """The index folder or its state file vanished (or holds another schema).

        Not ``needs_build``: that also opens the table of contents, which another process's
        commit may be replacing at that instant, and a false alarm would rebuild a good index.
        """
        return self.index.state().get("schema") != SCHEMA_VERSION

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def stop(self, grace: float = 0.0) -> None:
        """Stop the watcher, merges and any build child. A build still running gets ``grace``
        seconds to finish first (a client that leaves: its build is kept); stopped, it keeps
        every batch it committed, and the next start finishes it."""
        self._stopping = True
        if self.watcher is not None:
            self.watcher.stop()
        child = self._child
        if child is not None and child.poll() is None and grace > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=grace)
        if child is not None and child.poll() is None:
            child.terminate()  # it keeps what it committed; the next start resumes the build
        self._stop_merging.set()
        merger = self._merger
        if merger is not None and merger.poll() is None:
            merger.terminate()  # a merge stopped at any moment loses nothing
            try:
                merger.wait(timeout=self.config.merge_stop_wait)
            except subprocess.TimeoutExpired:
                merger.kill()
        unregister(self.index.root)  # the map of a stopped server is not kept for the process's life

    # -- merging off the live path -----------------------------------------------------------

    def _start_merge_scheduler(self) -> None:
        if self._merge_thread is None:
            self._merge_thread = threading.Thread(target=self._schedule_merges, name="vault-mem-merge",
                                                  daemon=True)
            self._merge_thread.start()

    def _schedule_merges(self) -> None:
        while not self._stop_merging.wait(self.config.merge_check):
            try:
                if self.writes:
                    self.follow_root()
                self.merge_if_due()
            except Exception:  # never let scheduling stop: log it, look again later
                log.exception("could not start a background merge")

    def merge_if_due(self) -> bool:
        """Start a background merge when one is due and none runs (here or in another process).

        Not while a build (or the resume of one) owns the index; otherwise from the start on, the
        start-up check included: a short session's saves would else leave one small segment each,
        never merged (a long bench left hundreds), and every search pays per segment."""
        if self._building.is_set() or not self.index.is_complete():
            return False
        if self._merger is not None and self._merger.poll() is None:
            return False
        if not merge_due(self.index.dir, self.config):
            return False
        with merge_lock(self.index.dir) as free:  # another server's merge is running: leave it be
            if not free:
                return False
        command = [sys.executable, "-m", "vault_mem.runtime.tuning", str(self.index.dir)]
        below_normal = getattr(subprocess, "BELOW_NORMAL_PRIORITY_CLASS", 0)  # Windows: the merge gives way
        self._merger = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sys.stderr.fileno(),
            creationflags=below_normal if self.config.tune_merge_priority else 0)
        return True

    def _bring_up(self) -> None:
        try:
            self.index.close()
            if self._building.is_set():
                try:
                    self._build_in_child()
                except Exception as exc:  # still watch and reconcile what is there: serve, never stall
                    if self._stopping:
                        return  # stopped with the server (Ctrl-C): the next start resumes it
                    self.error = f"{type(exc).__name__}: {exc}"
                    log.error("the index build failed (%s); reconciling instead", self.error)
            self.index.close()  # drop any searcher opened on a half-built index
            # The watcher has listened since start(): what it heard during the build is applied now,
            # beside the reconcile (a change is then seen twice, never lost; see build.reconcile).
            if self.watcher is not None:
                self.watcher.resume()
            if self._check_after is not None:
                self._check_after.wait(self.config.check_after_at_most)
                self._let_calls_go_first()
            if self._stopping:
                return  # stopped while the server was loading: nothing more to say after "stopped"
            attach_history(self.index)  # a git work tree: dates, history and HEAD's moves (docs/git.md)
            self._walking_since = time.monotonic()
            self.report = reconcile(self.index, pace=self._check_pace, listed=self._check_listed,
                                    apply_every=self.config.check_apply_every)
            if self._stopping:
                return
            log.info("index ready: %s", _ready(self.report, built=self._building.is_set() and self.error is None))
            debris = self.index.tidy()
            if debris:
                log.info("removed %d leftovers of interrupted writes from %s", len(debris), self.index.dir)
            if self.merges:
                self._start_merge_scheduler()
        except Exception as exc:  # the server keeps answering; the error is logged and shown
            self.error = f"{type(exc).__name__}: {exc}"
            if not self._stopping:  # a stop closes the index under the check: that is no failure
                log.exception("indexing failed")
        finally:
            if self.watcher is not None:
                self.watcher.resume()  # whatever went wrong above, keep following the files
            if self._building.is_set():
                self._building.clear()
                with contextlib.suppress(OSError):  # only the index belongs in the index folder
                    self.progress_path.unlink()
            self._check_due = False
            self._ready.set()
            self._bringing_up.release()

    def _check_listed(self, files: int) -> None:
        self._check_total = files

    def _build_in_child(self) -> None:
        self.index.dir.mkdir(parents=True, exist_ok=True)
        # Not --rebuild: under the build lock the child finds out whether another process has
        # built the index meanwhile, and then only reconciles. --yes: serve has checked the vault.
        command = [sys.executable, "-m", "vault_mem", "index", "--quiet",
                   "--vault", str(self.root), "--index-dir", str(self.index.dir),
                   "--progress-file", str(self.progress_path), "--yes"]
        log.debug("building the index of %s in a child process", self.root)  # serve has said it
        # Its own process group: a Ctrl-C in the terminal stops the server, which stops the child
        # (stop()); the child never dies half-started with a traceback of its own.
        group: dict[str, Any] = {"start_new_session": True}
        if sys.platform == "win32":
            group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        self._child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(),
                                       stderr=sys.stderr.fileno(), env=os.environ.copy(), **group)
        returncode = self._child.wait()
        if returncode != 0:
            raise RuntimeError(f"index build exited with status {returncode}")


def _ready(report: SyncReport, built: bool) -> str:
    """The start-up's last line: after a build, the notes it indexed (the check that follows
    finds them unchanged: "0 added, 0 updated, 0 removed, 51 unchanged" would say nothing)."""
    if not built:
        return report.summary()
    changed = report.added + report.updated + report.removed
    since = (f"; since the build began: {report.added} added, {report.updated} updated, "
             f"{report.removed} removed" if changed else "")
    return f"built the index of {report.total:,} note{'' if report.total == 1 else 's'}{since}"
