"""Patches to Whoosh, applied once when the index layer is imported (before any writer exists).

1. Unique names. Whoosh names segments and temp files with the ``random`` module, which a
   program (or a test framework such as Hypothesis) may reseed: two writers then draw the
   same segment name and the second commit fails, or worse, overwrites a live segment.
   Names come from the operating system's randomness instead.

2. Deleting a file that is still open elsewhere. Windows refuses to delete a file another
   process holds open (a reader in the second server maps every segment it searches; a
   virus scanner or the search indexer opens new files for a moment): PermissionError.
   Whoosh deletes files while it commits (the loose files of a segment it has just packed
   into one compound ``.seg``, old segments and tables of contents, its temp folder), so
   one such error failed the commit after the new table of contents was written, and left
   the writer's lock held. Here a deletion refused that way is skipped (logged), never
   raised, and retried at a later commit: Whoosh's ``clean_files`` already retries old
   segments and tables of contents at every commit, and the loose files left beside a
   packed segment are swept there too. The commit itself never fails on cleaning up.

3. No copies of mapped segments. Whoosh wrapped each part of a memory-mapped compound
   segment in ``BytesIO``, which copies it, and every reader mapped its segment anew:
   reads go through one shared mapping per segment file instead (docs/index-and-scale.md).

4. No file-system question per posting: a missing length column is remembered too.

5. Cheaper sorting of postings. A writer sorts its postings in a pool that spills sorted runs
   to temp files when it outgrows ``limitmb``; Whoosh pickled and unpickled each posting on
   its own (about 60% of a 16,000-note build batch), and saved the last in-memory run to disk
   too before merging. Runs are pickled in chunks, and the last run is merged from memory.

6. Field lengths read once per segment. Writing a segment's postings, Whoosh asked its
   per-document reader for the document's field length once per posting (a column read and
   a byte decode each: a third of writing the postings on the Hub-shaped vault); each
   field's lengths are decoded once instead, to the same values (``None`` for a zero byte,
   as Whoosh's ``doc_field_length`` answers), so the segment written is the same.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import os
import pickle
import secrets
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import whoosh.codec.base
import whoosh.codec.whoosh3
import whoosh.filedb.compound
import whoosh.filedb.filestore
import whoosh.filedb.structfile
import whoosh.index
import whoosh.util
import whoosh.writing
from whoosh.filedb.filestore import FileStorage
from whoosh.util.numeric import byte_to_length

log = logging.getLogger("vault_mem.index")
_IDCHARS = "0123456789abcdefghijklmnopqrstuvwxyz"


def unique_name(size: int = 28) -> str:
    return "".join(secrets.choice(_IDCHARS) for _ in range(size))


for _module in (whoosh.util, whoosh.codec.base, whoosh.filedb.compound, whoosh.filedb.filestore, whoosh.writing):
    _module.random_name = unique_name


class _ViewFile:
    """A read-only file over a memoryview, without copying it (see ``_buffer_file_init``)."""

    def __init__(self, buf: memoryview) -> None:
        self._buf = buf
        self._pos = 0

    def read(self, size: int | None = -1) -> bytes:
        end = len(self._buf) if size is None or size < 0 else min(len(self._buf), self._pos + size)
        data = bytes(self._buf[self._pos:end])
        self._pos = max(self._pos, end)
        return data

    def readinto(self, target: bytearray | memoryview) -> int:
        data = self.read(len(target))
        target[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        end = len(self._buf) if size is None or size < 0 else min(len(self._buf), self._pos + size)
        found = bytes(self._buf[self._pos:end]).find(b"\n")
        return self.read(end - self._pos if found < 0 else found + 1)

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, len(self._buf))[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._buf = memoryview(b"")

    def flush(self) -> None:
        pass


def _buffer_file_init(self: Any, buf: Any, name: str | None = None, onclose: Any = None) -> None:
    # Whoosh's BufferFile wraps each sub-file of a memory-mapped compound segment (postings,
    # terms, stored fields) in ``BytesIO(buf)``, which copies it: every reader of every thread
    # then held a private copy of the whole segment (hundreds of MB). Reading through the
    # view keeps one copy, the operating system's page cache, shared by every reader.
    self._buf = buf
    self._name = name
    self.file = _ViewFile(buf if isinstance(buf, memoryview) else memoryview(buf))
    self.onclose = onclose
    self.is_real = False
    self.is_closed = False


whoosh.filedb.structfile.BufferFile.__init__ = _buffer_file_init


class _SharedCompound:
    """One reader's handle on a compound segment file mapped once for the whole process."""

    def __init__(self, key: tuple[str, str], inner: Any) -> None:
        self._key = key
        self._inner = inner
        self.is_closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> None:
        if self.is_closed:
            return
        self.is_closed = True
        with _shared_lock:
            entry = _shared.get(self._key)
            if entry is None or entry[0] is not self._inner:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del _shared[self._key]
        with contextlib.suppress(Exception):
            self._inner.close()


_shared: dict[tuple[str, str], list[Any]] = {}  # (folder, file) -> [CompoundStorage, handles open]
_shared_lock = threading.Lock()
_open_compound_file = whoosh.codec.base.Segment.open_compound_file


def _open_shared_compound_file(self: Any, storage: Any) -> Any:
    # Each SegmentReader maps its segment's file anew, and every thread has its own readers:
    # the same pages were then counted once per mapping in the server's resident memory. A
    # segment file never changes once written, so one mapping serves every reader.
    folder = getattr(storage, "folder", None)
    if not folder or not getattr(storage, "supports_mmap", False):
        return _open_compound_file(self, storage)
    key = (str(folder), self.make_filename(self.COMPOUND_EXT))
    with _shared_lock:
        entry = _shared.get(key)
        if entry is None:
            entry = _shared[key] = [_open_compound_file(self, storage), 0]
        entry[1] += 1
        return _SharedCompound(key, entry[0])


whoosh.codec.base.Segment.open_compound_file = _open_shared_compound_file


def _cached_reader(self: Any, fieldname: str, column: Any) -> Any:
    # Whoosh caches a column reader only when the column exists; for a field without one (no
    # lengths are kept for ID and KEYWORD fields) it asked the file system again on every
    # posting written: 15% of a build. Segments never change, so a miss is cached too.
    readers = self._readers
    if fieldname in readers:
        return readers[fieldname]
    reader = self.column_reader(fieldname, column) if self.has_column(fieldname) else None
    readers[fieldname] = reader
    return reader


whoosh.codec.whoosh3.W3PerDocReader._cached_reader = _cached_reader


class _DecodedLengths:
    """``doc_field_length`` of a per-document reader, each field's lengths decoded once."""

    _BYTES = [None] + [byte_to_length(b) for b in range(1, 256)]

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._fields: dict[str, list[int | None] | None] = {}

    def doc_field_length(self, docnum: int, fieldname: str, default: int = 0) -> int | None:
        if fieldname not in self._fields:
            column = self._reader._cached_reader(whoosh.codec.whoosh3._lenfield(fieldname),
                                                 whoosh.codec.whoosh3.LENGTHS_COLUMN)
            table = self._BYTES
            self._fields[fieldname] = None if column is None else [table[b] for b in column]
        lengths = self._fields[fieldname]
        return default if lengths is None else lengths[docnum]


def _flush_segment(self: Any) -> None:
    self.perdocwriter.close()
    pdr = self.per_document_reader() if self.codec.length_stats else None
    postings = self.pool.iter_postings()
    self.fieldwriter.add_postings(self.schema, _DecodedLengths(pdr) if pdr else None, postings)
    self.fieldwriter.close()
    if pdr:
        pdr.close()


WHOOSH_FLUSH_SEGMENT = whoosh.writing.SegmentWriter._flush_segment  # kept for the test that compares
whoosh.writing.SegmentWriter._flush_segment = _flush_segment

RUN_CHUNK = 8192  # postings per pickled chunk of a pool's run file


class ChunkedPostingPool(whoosh.writing.PostingPool):  # type: ignore[misc]
    """Whoosh's posting pool, with runs written as pickled chunks and the last run kept in memory."""

    runs: list[str]  # run files, set by Whoosh's pool
    current: list[Any]  # the postings not yet in a run

    def _write_run(self, f: Any, items: Iterable[Any]) -> None:
        rest = iter(items)
        while chunk := list(itertools.islice(rest, RUN_CHUNK)):
            pickle.dump(chunk, f, pickle.HIGHEST_PROTOCOL)
        f.close()

    def _read_run(self, path: str) -> Iterator[Any]:
        f = self._open_run(path)
        try:
            while True:
                try:
                    chunk = pickle.load(f)
                except EOFError:
                    return
                yield from chunk
        finally:
            f.close()
            self._remove_run(path)

    def items(self, maxfiles: int = 128) -> Any:
        runs = self.runs
        if not runs:
            return sorted(self.current)
        if len(runs) >= maxfiles:
            self.reduce_to(maxfiles - 1, maxfiles)
        self.current.sort()
        self.runs = []
        return heapq.merge(*[self._read_run(path) for path in runs], iter(self.current))


whoosh.writing.PostingPool = ChunkedPostingPool

_delete_file = FileStorage.delete_file
_clean_files = whoosh.index.clean_files


def delete_when_free(self: FileStorage, name: str) -> None:
    """Delete ``name``; a file held open elsewhere (PermissionError) stays for a later commit."""
    try:
        _delete_file(self, name)
    except FileNotFoundError:
        pass  # already gone: what was asked
    except PermissionError as exc:
        log.debug("index file %s is in use elsewhere; deleting it at a later commit (%s)", name, exc)


def destroy_when_free(self: FileStorage) -> None:
    """Remove a writer's temp folder, leaving what is held open elsewhere (swept by a later writer)."""
    self.clean(ignore=True)
    try:
        os.rmdir(self.folder)
    except OSError as exc:  # not empty (a file still in use) or gone already
        log.debug("temp folder %s not removed now (%s)", self.folder, exc)


def clean_files_and_leftovers(storage: Any, indexname: str, gen: int, segments: list[Any]) -> None:
    """Whoosh's cleanup of unused files, plus the loose files left beside a packed (compound)
    segment when deleting them was refused at the commit that packed it."""
    _clean_files(storage, indexname, gen, segments)
    packed = {s.segment_id(): s.make_filename(s.COMPOUND_EXT) for s in segments if s.is_compound()}
    if not packed:
        return
    pattern = whoosh.index.TOC._segment_pattern(indexname)
    with contextlib.suppress(OSError):
        for filename in list(storage):
            match = pattern.match(filename)
            if match and match.group(1) in packed and filename != packed[match.group(1)]:
                with contextlib.suppress(OSError):
                    storage.delete_file(filename)


FileStorage.delete_file = delete_when_free
FileStorage.destroy = destroy_when_free
whoosh.index.clean_files = clean_files_and_leftovers
