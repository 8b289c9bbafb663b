"""Merging index segments off the live path.

Live commits (watcher, write tools, reconcile) only ever add small segments and merge
nothing but the tiny ones earlier live commits left (``store.fold_tiny``), so a save is
visible after one small commit whatever the index size. Segments are merged here instead,
by one background process at a time (a
``merge.lock`` file taken with ``filelock``), at low priority:

1. Read the table of contents (TOC) without any lock and pick the segments to merge
   with a tiered policy (``plan``): segments are put in tiers by document count
   (``tier_size``: under ``merge_floor`` documents, then each tier ``merge_factor`` times larger); a merge takes
   the ``merge_factor`` smallest segments of the lowest tier that holds that many.
   So a segment is rewritten about once per tier it climbs, and the biggest one only
   when ``merge_factor`` segments of its size have piled up.
2. Write the merged segment into the hidden work folder ``.merging/`` (Whoosh's own
   clean-up deletes any segment file in the index folder that no TOC names, and live
   commits keep happening meanwhile).
3. Take Whoosh's write lock only for the swap: re-read the TOC, carry over onto the
   merged segment every deletion made in the merged segments meanwhile (an update is a
   deletion plus a new document), move the segment file in and write the new TOC.

A merge killed at any moment loses nothing: until the TOC is written (an atomic
rename) the old segments are the index; an orphan file is removed by the next swap's
clean-up, the work folder by the next merge. Queries keep using the segments their
searcher opened and pick up the merged one on their next renewal.

Run as ``python -m vault_mem.runtime.tuning INDEX_DIR`` (what ``runtime/lifecycle.py``
starts); it merges until the policy is satisfied and exits at once when another
process holds the merge lock.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from whoosh import index as whoosh_index
from whoosh.filedb.filestore import FileStorage
from whoosh.index import TOC
from whoosh.reading import SegmentReader

from vault_mem.search.commits import clean_debris, tiny_segments, write_lock
from vault_mem.search.hold import hold_at
from vault_mem.search.lru import size_cache
from vault_mem.search.whoosh.patches import install_from_environment
from vault_mem.search.whoosh.seam import (
    DEFAULT_INDEX_NAME,
    TocTarget,
    finish_segment,
    read_toc,
    release,
    unlocked_writer,
)
from vault_mem.settings import Settings

log = logging.getLogger("vault_mem.merge")
MERGE_LOCK = "merge.lock"
WORK_DIR = ".merging"


def tier(docs: int, config: Settings) -> int:
    """The merge tier of a segment of ``docs`` documents (``merge_floor``, ``merge_factor``)."""
    return 0 if docs < config.merge_floor else 1 + int(math.log(docs / config.merge_floor, config.merge_factor))


def tier_size(segment: Any) -> int:
    """What puts a segment in its tier: all its documents, deleted ones included, so that a few
    edits do not drop a segment of the cold build into the tier below, to be rewritten there;
    its live count once more than half are deleted, so that its dead documents get merged away."""
    everything, live = int(segment.doc_count_all()), int(segment.doc_count())
    return live if 2 * live < everything else everything


def plan(segments: list[Any], config: Settings) -> list[Any]:
    """The segments the next merge should combine (empty when none is due).

    The tiny segments are the live commits' to fold (``commits.fold_tiny``) while there are no more
    than a fold takes: a merge that took them as well lost the race for them to the next commit
    nearly every time under steady saves (the segment it read was gone by its swap), and the
    segments piled up to 40 between merges instead of about 12. More of them than that means no live
    commit folds them (another version's process, a test): then they are the merge's."""
    tiny = set(tiny_segments(segments, config.tiny_segment))  # segments compare by their id
    if len(tiny) <= config.tiny_fold:
        segments = [segment for segment in segments if segment not in tiny]
    tiers: dict[int, list[Any]] = {}
    for segment in segments:
        tiers.setdefault(tier(tier_size(segment), config), []).append(segment)
    for level in sorted(tiers):
        group = tiers[level]
        if len(group) >= config.merge_factor:
            # All of them when more piled up while a merge ran: one merge, not several rounds.
            return sorted(group, key=lambda s: (s.doc_count(), s.segment_id()))[:config.merge_max_at_once]
    return []


def merge_due(index_dir: Path, config: Settings) -> bool:
    """True when the index's current segments call for a merge (no lock taken)."""
    try:
        storage = FileStorage(str(index_dir))
        return bool(plan(TOC.read(storage, DEFAULT_INDEX_NAME).segments, config))
    except Exception:  # no index yet, or a TOC being replaced: ask again later
        return False


@contextlib.contextmanager
def merge_lock(index_dir: Path, timeout: float = 0.0) -> Iterator[bool]:
    """The cross-process merge lock: yields True when held, False when another process has it."""
    lock = FileLock(str(index_dir / MERGE_LOCK))
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


@dataclass
class MergeResult:
    merged: int  # segments combined
    docs: int  # live documents in the new segment
    carried: int  # deletions made during the merge and applied to the new segment
    seconds: float


def merge_once(index_dir: Path, config: Settings, before_swap: Callable[[], None] | None = None) -> MergeResult | None:
    """Do the next merge the policy asks for (the caller holds the merge lock). None when none is due,
    or when the segments changed under it in a way that voids the merge (a rebuild)."""
    start = time.monotonic()
    ix = whoosh_index.open_dir(str(index_dir))
    toc = read_toc(ix)
    chosen = plan(toc.segments, config)
    if not chosen:
        return None
    work = _fresh_work_dir(index_dir)
    storage = FileStorage(str(work))
    deleted_before = {s.segment_id(): set(s.deleted_docs()) for s in chosen}
    # New document numbers: the live documents of each chosen segment in order, one after another.
    docmap: dict[str, dict[int, int]] = {}
    merged: Any = None  # stays None when every document of the chosen segments is deleted
    if any(s.doc_count() for s in chosen):
        writer = unlocked_writer(TocTarget(storage, ix.indexname, toc.schema), config.writer_pool_mb)
        try:
            for segment in chosen:
                gone = deleted_before[segment.segment_id()]
                base = writer.docnum
                live = [d for d in range(segment.doc_count_all()) if d not in gone]
                docmap[segment.segment_id()] = {old: base + i for i, old in enumerate(live)}
                reader = SegmentReader(ix.storage, toc.schema, segment, generation=toc.generation)
                try:
                    writer.add_reader(reader)
                finally:
                    reader.close()
                if segment is chosen[0]:
                    hold_at("merge-writing")
            merged = finish_segment(writer)
        except BaseException:
            with contextlib.suppress(Exception):
                writer.cancel()
            shutil.rmtree(work, ignore_errors=True)
            raise
        release(writer)
    hold_at("merge-swap")
    if before_swap is not None:
        before_swap()
    carried = _swap(ix, chosen, merged, docmap, deleted_before, storage, config)
    shutil.rmtree(work, ignore_errors=True)
    if carried is None:
        return None
    return MergeResult(len(chosen), merged.doc_count() if merged is not None else 0, carried,
                       time.monotonic() - start)


def _swap(ix: Any, chosen: list[Any], merged: Any, docmap: dict[str, dict[int, int]],
          deleted_before: dict[str, set[int]], work: FileStorage, config: Settings) -> int | None:
    """Under Whoosh's write lock: publish ``merged`` in place of ``chosen``. Returns how many
    deletions were carried over, or None when a chosen segment is no longer in the index."""
    with write_lock(ix, config.lock_first_retry, config.swap_max_retry, config.merge_swap_wait):
        toc = read_toc(ix)
        current = {s.segment_id(): s for s in toc.segments}
        ids = [s.segment_id() for s in chosen]
        if any(i not in current for i in ids):
            return None
        carried = 0
        if merged is not None:
            for segid in ids:
                for docnum in set(current[segid].deleted_docs()) - deleted_before[segid]:
                    # Deleted since the merge read it: the new copy of that document goes too.
                    merged.delete_document(docmap[segid][docnum])
                    carried += 1
            for name in work.list():
                if name.startswith(merged.segment_id() + "."):
                    os.replace(os.path.join(work.folder, name), os.path.join(ix.storage.folder, name))
            hold_at("merge-publish")
        first = min(i for i, s in enumerate(toc.segments) if s.segment_id() in ids)
        kept = [s for s in toc.segments if s.segment_id() not in ids]
        segments = kept[:first] + ([merged] if merged is not None else []) + kept[first:]
        generation = toc.generation + 1
        TOC(toc.schema, segments, generation).write(ix.storage, ix.indexname)
        whoosh_index.clean_files(ix.storage, ix.indexname, generation, segments)  # looked up now: patched
        clean_debris(Path(ix.storage.folder), config.debris_stale)
        return carried


def _fresh_work_dir(index_dir: Path) -> Path:
    work = index_dir / WORK_DIR
    shutil.rmtree(work, ignore_errors=True)  # what a killed merge left
    work.mkdir(parents=True, exist_ok=True)
    return work


def merge_all(index_dir: Path, config: Settings,
              before_swap: Callable[[], None] | None = None) -> list[MergeResult] | None:
    """Merge until the policy is satisfied. None when another process holds the merge lock."""
    with merge_lock(index_dir) as held:
        if not held:
            return None
        results = []
        try:
            while True:
                result = merge_once(index_dir, config, before_swap)
                if result is None:
                    break
                results.append(result)
                log.info("merged %d segments into one of %d notes in %.1f s (%d deletions carried over)",
                         result.merged, result.docs, result.seconds, result.carried)
        finally:
            shutil.rmtree(index_dir / WORK_DIR, ignore_errors=True)
        return results


def main(config: Settings, argv: list[str] | None = None) -> int:
    """The background merge process, with its settings (``runtime/tuning.py:merge_process``, its
    composition root, builds them): the Whoosh patches and the cache set up by them, then every
    merge due."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m vault_mem.runtime.tuning INDEX_DIR", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="vault-mem merge: %(message)s")
    try:
        install_from_environment(config)
        size_cache(config.cache_mb)
        results = merge_all(Path(args[0]), config)
    except Exception as exc:  # the index is unchanged; the server tries again later
        log.error("merge failed: %s: %s", type(exc).__name__, exc)
        return 1
    if results is None:
        log.info("another process is merging this index")
    return 0
