"""Building and reconciling the index from the files.

A full build splits the files between worker processes; each parses its share and
writes its own Whoosh segments (no documents cross a pipe), and the parent, holding
the index lock, publishes a new table of contents after every finished batch so that
searchers see the build grow. Batches start small (the first answers come quickly) and
double up to ``MAX_BATCH``, so a build ends with few segments (a dozen or so even on a
large vault) that the tiered merge policy (``search/merge.py``) leaves alone.

``state.json`` in the index folder says whether the last build finished; a build
killed half way leaves ``complete: false`` and its committed batches, and the next
start's reconcile indexes whatever is missing.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.index import TOC

from vault_mem import settings
from vault_mem.search.gitfollow import attach_history, open_history_readonly
from vault_mem.search.hold import hold_at
from vault_mem.search.lru import size_cache
from vault_mem.search.merge import tier
from vault_mem.search.progress import Progress
from vault_mem.search.schema import document_of
from vault_mem.search.store import Fingerprint, VaultIndex, same_content, stat_state
from vault_mem.search.whoosh.patches import install_from_environment
from vault_mem.search.whoosh.seam import drop_temp_folder, finish_segment, publish, unlocked_writer
from vault_mem.vault.note import Note
from vault_mem.vault.paths import display_path
from vault_mem.vault.reader import read_note
from vault_mem.vault.walk import IgnoreRules, leads_to_a_note, walk_vault

RESUMING = "resuming the interrupted build"  # the progress label of a reconcile after one


@dataclass
class SyncReport:
    """What a build or reconcile did."""

    total: int = 0  # memory files on disk
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    seconds: float = 0.0
    rebuilt: bool = False
    walk_problems: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        notes = f"{self.total:,} note{'' if self.total == 1 else 's'}"
        if self.rebuilt:
            return f"built the index of {notes} in {self.seconds:.1f} s"
        return (f"{notes}: {self.added} added, {self.updated} updated, "
                f"{self.removed} removed, {self.unchanged} unchanged ({self.seconds:.2f} s)")


def sync(index: VaultIndex, rebuild: bool = False, progress: Callable[[str, int], Progress] | None = None,
         procs: int | None = None) -> SyncReport:
    """Bring the index up to date: a full build when there is none (or asked), else a reconcile.

    The decision is taken under the index's build lock: when two processes start on a vault
    with no index, the second waits for the first build and then only reconciles.
    """
    attach_history(index)  # in a git work tree, default dates come from history (docs/git.md)
    with index.build_lock():
        if rebuild or index.needs_build():
            return build(index, progress, procs)
    return reconcile(index, progress)


def build(index: VaultIndex, progress: Callable[[str, int], Progress] | None = None,
          procs: int | None = None) -> SyncReport:
    start = time.monotonic()
    walked = walk_vault(index.root)
    index.create()
    bar = progress("indexing", len(walked.files)) if progress else Progress("indexing", 0, quiet=True)
    procs = procs or min(os.cpu_count() or 1, 4)
    if procs <= 1 or len(walked.files) < 2 * index.config.build_batch:
        _serial_build(index, walked.files, bar)
    else:
        _parallel_build(index, walked.files, bar, procs)
    bar.finish()
    index.set_state(complete=True)
    return SyncReport(total=len(walked.files), added=len(walked.files), rebuilt=True,
                      seconds=time.monotonic() - start, walk_problems=walked.problems)


def _serial_build(index: VaultIndex, files: list[str], bar: Progress) -> None:
    """Commits of SERIAL_FIRST_BATCH files, doubling up to BATCH: a build stopped early (its
    server's client left) keeps what it committed, and the first answers see notes soon."""
    config = index.config
    first, size = 0, config.build_serial_first_batch
    while first < len(files):
        with index.writer() as w:
            for rel in files[first:first + size]:
                w.add_document(**document_of(read_note(index.root, rel, index.history, config=config), rel,
                                             config.record_head_chars))
                bar.advance()
        first, size = first + size, min(size * 2, config.build_batch)
        if first < len(files):
            hold_at("build-batch")


def _parallel_build(index: VaultIndex, files: list[str], bar: Progress, procs: int) -> None:
    ctx = mp.get_context("spawn")  # no fork: the server has threads and a protocol stdout
    # One pipe per worker, batches handed out as workers finish theirs: no multiprocessing
    # queue, so no semaphores and no feeder threads that an interrupted build could leave behind.
    pending = deque(_batches(files, procs, index.config))
    expected = len(pending)
    pipes: list[Any] = []  # Connection, or PipeConnection on Windows
    ends: list[Any] = []  # the workers' ends, closed here once they are started
    workers = []
    for _ in range(procs):
        mine, theirs = ctx.Pipe()
        pipes.append(mine)
        ends.append(theirs)
        workers.append(ctx.Process(target=_worker, args=(str(index.dir), str(index.root), theirs, index.config),
                                   daemon=True))
    parent = index.acquire_writer()
    try:
        with _sigint_ignored():  # inherited: Ctrl-C stops the parent, which stops the workers
            for worker in workers:
                worker.start()
        for end in ends:  # a worker that dies now shows as the end of its pipe
            end.close()
        busy: list[Any] = []  # the pipes of workers with a batch to finish

        def hand_out(conn: Any) -> None:
            try:
                if pending:
                    conn.send(pending.popleft())
                    busy.append(conn)
                else:
                    conn.send(None)  # the worker ends; its pipe is no longer waited on
            except OSError:  # its process is gone (a pipe cut on send)
                raise RuntimeError("an index worker stopped before the build finished") from None

        for conn in pipes:
            hand_out(conn)
        segments = list(parent.segments)
        generation = parent.generation
        received = 0
        while received < expected:
            ready: list[Any] = wait(busy, timeout=index.config.build_poll)
            if not ready and not any(w.is_alive() for w in workers):
                raise RuntimeError("index workers stopped before the build finished")
            for conn in ready:
                try:
                    kind, payload, count = conn.recv()
                except (EOFError, OSError):  # its process is gone: the pipe ended, or was cut
                    raise RuntimeError("an index worker stopped before it finished its batch") from None
                if kind == "error":
                    raise RuntimeError(f"index worker failed: {payload}")
                bar.advance(count)
                if kind == "progress":
                    continue
                received += 1
                busy.remove(conn)
                hand_out(conn)
                segments.append(payload)
                # Publish what is finished so far; old TOC files are cleaned by the final commit.
                TOC(parent.schema, segments, generation).write(parent.storage, parent.indexname)
                generation += 1
                if received < expected:
                    hold_at("build-batch")
        # The final commit publishes the segments as they are: the merge is left for later.
        parent.generation = generation
        publish(parent, segments)
    except BaseException:
        parent.cancel()
        for worker in workers:  # interrupted or failed: stop at once, not after the batch
            if worker.is_alive():
                worker.terminate()
        raise
    finally:
        for worker in workers:
            worker.join(timeout=index.config.build_worker_stop_wait)
            if worker.is_alive():
                worker.kill()
        for conn in pipes:
            conn.close()


def _batches(files: list[str], procs: int, config: settings.Settings) -> list[list[str]]:
    """Batches of FIRST_BATCH files, doubling (each size once per worker) up to MAX_BATCH.

    The smallest is as large as the merge policy's lowest tier (``merge.FLOOR``): that tier is
    then left to the live commits' small segments, whose merges stay cheap.
    """
    batches: list[list[str]] = []
    size, first = config.build_first_segment, 0
    while first < len(files):
        for _ in range(procs):
            batches.append(files[first:first + size])
            first += size
            if first >= len(files):
                break
        size = min(size * 2, config.build_max_segment)
    # A last batch smaller than the lowest merge tier is folded into its neighbour: alone, it
    # would be rewritten by every merge of the saves' one-note segments.
    if len(batches) > 1 and len(batches[-1]) < config.build_first_segment:
        batches[-2].extend(batches.pop())
    # The last wave, one batch per worker, is split evenly so that the workers end together (the
    # Hub's 6,500 notes: 2,000 and 2,500 became 2,250 each), unless a batch would change tier:
    # the merge policy then still leaves the build's segments alone.
    if procs > 1 and len(batches) >= procs:
        wave = batches[-procs:]
        files_left = [rel for batch in wave for rel in batch]
        cuts = [len(files_left) * i // procs for i in range(procs + 1)]
        even = [files_left[cuts[i]:cuts[i + 1]] for i in range(procs)]
        if sorted(tier(len(b), config) for b in even) == sorted(tier(len(b), config) for b in wave):
            batches[-procs:] = even
    return batches


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the block runs (only the main thread may change signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker(index_dir: str, root: str, conn: Connection, chosen: settings.Settings) -> None:
    """A build worker: parse each batch of files it is sent and write it as one segment, reporting
    progress every ``build_report_every`` files; ``None`` ends it. ``chosen``: the parent's index's
    settings (a spawned process starts from the defaults), which the worker, a composition root,
    hands down: to the Whoosh patches, the cache, the reader and the writer."""
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    try:
        install_from_environment(chosen)  # a spawned process: the parent's patches are not inherited
        size_cache(chosen.cache_mb)
        history = open_history_readonly(Path(root), Path(index_dir), chosen)
        ix = whoosh_index.open_dir(index_dir)
        # Every writer of an index shares one temp folder ("MAIN.tmp") by default; a worker that
        # destroys it would pull it from under its sibling, so each worker gets its own (one name,
        # shared by its writer and the writer's per-document part, so that nothing is left behind).
        own_temp = f"{ix.indexname}-{os.getpid()}.tmp"
        shared_temp = ix.storage.temp_storage
        ix.storage.temp_storage = lambda name=None: shared_temp(own_temp)
        while True:
            batch = conn.recv()
            if batch is None:
                return
            writer = unlocked_writer(ix, chosen.writer_pool_mb)
            unreported = 0
            for rel in batch:
                writer.add_document(**document_of(read_note(Path(root), rel, history, config=chosen), rel,
                                                  chosen.record_head_chars))
                unreported += 1
                if unreported == chosen.build_report_every:
                    conn.send(("progress", None, unreported))
                    unreported = 0
            segment = finish_segment(writer)
            drop_temp_folder(writer)
            conn.send(("segment", segment, unreported))
    except (EOFError, BrokenPipeError):
        return  # the parent has gone (interrupted): nothing to report to
    except Exception as exc:  # reported to the parent, which stops the build
        with contextlib.suppress(OSError):
            conn.send(("error", f"{type(exc).__name__}: {exc}", 0))


def reconcile(index: VaultIndex, progress: Callable[[str, int], Progress] | None = None,
              pace: Callable[[str], None] | None = None,
              listed: Callable[[int], None] | None = None,
              apply_every: float | None = None) -> SyncReport:
    """Stat every file; re-read only those whose size or mtime changed, re-index only those whose
    content hash changed, drop what is gone. ``pace`` is called with each file the walk reaches,
    before its stat (tests make the walk slow with it); ``listed`` with the number of files the
    walk found, before the first (the server's answers count the check's progress with it).
    ``apply_every`` (the server's start-up check): the changed files found so far are read and
    committed as the walk goes, at most that many seconds after the first of them was found,
    rather than once the whole vault is walked; what is gone is dropped at the end."""
    start = time.monotonic()
    # The index first, the disk second: a note written (and indexed) while the walk runs is then
    # either seen on disk or found still there below, never dropped as deleted.
    known = index.fingerprints()
    rules = IgnoreRules(index.root)
    walked = walk_vault(index.root, rules)
    on_disk: set[str] = set()
    report = SyncReport(total=len(walked.files), walk_problems=walked.problems)
    if listed is not None:
        listed(len(walked.files))
    candidates: list[str] = []
    found_at = 0.0  # when the first candidate not yet applied was found (apply_every)
    for rel in walked.files:
        if pace is not None:
            pace(rel)
        shown = display_path(rel)
        on_disk.add(shown)
        if stat_state(index.root / rel, known.get(shown)) == "same":
            report.unchanged += 1
        else:
            if not candidates:
                found_at = time.monotonic()
            candidates.append(rel)
        if apply_every is not None and candidates and time.monotonic() - found_at >= apply_every:
            _read_changed(index, candidates, known, report, rules, None)
            candidates = []
    removed = [path for path in known if path not in on_disk and not _still_a_memory(index.root, path, rules)]
    resuming = not index.is_complete()
    bar = (progress(RESUMING if resuming else "reconciling", len(candidates))
           if progress and (resuming or len(candidates) > 200) else None)
    report.removed = len(removed)
    _read_changed(index, candidates, known, report, rules, bar, removed=removed)
    if bar:
        bar.finish()
    report.seconds = time.monotonic() - start
    index.set_state(complete=True, last_reconcile=time.time(), last_reconcile_summary=report.summary())
    return report


def _read_changed(index: VaultIndex, candidates: list[str], known: dict[str, Fingerprint], report: SyncReport,
                  rules: IgnoreRules, bar: Progress | None, removed: list[str] | None = None) -> None:
    """Read ``candidates`` (files whose size or mtime differ from the index), count them in
    ``report`` and commit those whose content changed, in commits of at most 1,000, with
    ``removed`` in the last one."""
    changed = []
    for rel in candidates:
        note = read_note(index.root, rel, index.history, config=index.config)
        seen = known.get(note.path)
        if same_content(note, seen):
            report.unchanged += 1
        else:
            changed.append((note, rel))
            if seen is None:
                report.added += 1
            else:
                report.updated += 1
        if bar:
            bar.advance()
        if len(changed) >= 1000:
            _commit_checked(index, changed, [], rules)
            changed = []
    if changed or removed:
        _commit_checked(index, changed, removed or [], rules)


def _commit_checked(index: VaultIndex, notes: list[tuple[Note, str]], removed: list[str], rules: IgnoreRules) -> None:
    """Commit what the check read, less what changed on disk since (``VaultIndex.submit``'s
    ``still_on_disk``, looked at in the batch's lock): a note saved again since it was read is the
    watcher's to index, and a path deleted since it was listed but written again is the
    watcher's to add; writing the check's older reading after theirs would put stale text back."""
    hold_at("check-commit")
    def still_on_disk(notes: list[tuple[Note, str]], removed: list[str]) -> tuple[list[tuple[Note, str]], list[str]]:
        return _still_as_read(index.root, notes), [p for p in removed if not _still_a_memory(index.root, p, rules)]

    index.apply(notes, removed, still_on_disk=still_on_disk)


def _still_as_read(root: Path, notes: list[tuple[Note, str]]) -> list[tuple[Note, str]]:
    """The notes whose file is still as it was read."""
    kept = []
    for note, rel in notes:
        state = stat_state(root / rel, (note.size, note.mtime_ns, note.etag))
        # (An unreadable file was read as size 0, time 0: nothing newer can be lost by keeping it.)
        if state == "same" or (state == "changed" and not note.mtime_ns):
            kept.append((note, rel))
    return kept


def _still_a_memory(root: Path, path: str, rules: IgnoreRules) -> bool:
    """True when ``path`` is (again) a memory file on disk, whatever the walk saw a moment ago."""
    return os.path.lexists(root / path) and not rules.ignored(path) and leads_to_a_note(root, path)
