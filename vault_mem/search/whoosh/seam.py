"""Whoosh behind one seam: every patch to Whoosh and every private Whoosh name vault-mem uses,
written for one release pinned exactly in pyproject.toml (``whoosh-reloaded==2.7.5``), as pip
pins what it vendors. At import it checks that version and the shape (signature, attributes)
of each target and stops with ``WhooshMismatch`` naming what differs: an upgrade shows what it
breaks instead of turning a patch into a silent no-op. ``tests/unit/test_whoosh_seam.py`` tests each
patch's behaviour and that no other module touches a private Whoosh name.

The patches, applied when this module is first imported (before any writer exists):

1. Unique names. Whoosh names segments, run files and temp files with the ``random`` module,
   which a program (or a test framework such as Hypothesis) may reseed: two writers then
   draw the same segment name and the second commit fails, or worse, overwrites a live
   segment. Names come from the operating system's randomness instead (``random_name`` in
   each module that imported it).

2. Deleting a file still open elsewhere. Windows refuses to delete a file another process
   holds open (PermissionError), and Whoosh deletes files while it commits: one refusal failed
   the commit after the new table of contents was written and left the lock held. Such a
   deletion is skipped (logged) and retried at a later commit, where ``clean_files`` also sweeps
   loose files left beside a packed segment (``FileStorage.delete_file``, ``destroy``, ``clean_files``).

3. No copies of mapped segments. Whoosh wrapped each part of a memory-mapped compound
   segment in ``BytesIO``, which copies it, and every reader mapped its segment anew:
   reads go through one shared mapping per segment file instead (docs/index-and-scale.md).
   (``BufferFile.__init__``, ``Segment.open_compound_file``.)

4. No file-system question per posting: a missing length column is remembered too.
   (``W3PerDocReader._cached_reader``.)

5. Cheaper sorting of postings. A writer sorts its postings in a pool that spills sorted runs
   to temp files when it outgrows ``limitmb``; Whoosh pickled and unpickled each posting on
   its own (most of a big build batch), and saved the last in-memory run to disk
   too before merging. Runs are pickled in chunks, and the last run is merged from memory
   (``whoosh.writing.PostingPool``: the pool of patch 7).

6. Field lengths read once per segment. Writing a segment's postings, Whoosh asked its
   per-document reader for a document's field length once per posting (a column read and a
   byte decode each: a large share of writing the postings); each field's
   lengths are decoded once, to the same values (``SegmentWriter._flush_segment``).

7. Documents to postings without a Token per word or a sorted tuple per posting
   (``search/whoosh/postings.py``): the terms of the schema's text, keyword and id fields come from one
   ``findall`` and a ``Counter``, and the pool keeps each term's postings together, so a
   segment's postings are written term by term after sorting the terms, not every posting:
   the same terms, postings and lengths (``SegmentWriter.add_document``, ``PostingPool``; most
   of a build worker's time before).

8. A terms file's directory of 256 hash tables is read in one read, not one read per table: most
   of opening a segment, which each thread's searcher does after every commit (``HashReader``).

9. A term of at most ``INLINE_POSTINGS`` postings keeps them in its term info, as whoosh3's
   readers read them, instead of in a block of its own in the postings file (a pickle, zlib and a
   header per term: most of writing a live commit's small segment, where nearly every term has
   one posting). Whoosh's writer never does this, though its codec has the option: it calls a
   ``set_inline`` that its ``W3TermInfo`` lacks (``whoosh_parts.inline_term``, called by patch 7's pool).

10. A live commit's segment is made in memory, then written as its one packed file. Whoosh
   created each part (terms, postings, every column: 17 files for a note) in the index folder,
   then copied them into the packed file and deleted them: each file made on disk cost system
   time, a sizeable share of a small commit's CPU. The writers
   made inside ``parts_in_memory`` (``VaultIndex.acquire_writer``) put their parts in a
   ``RamStorage`` instead (``W3Codec.per_document_writer``, ``field_writer`` and their readers,
   ``Segment.create_compound_file``; ``whoosh_parts.py``). A build's or a merge's big segments are
   left on disk.

11. A table of contents read once per generation, and its schema pickled once. After every
   commit each searcher of every process read the new table of contents (its renewal, a
   writer's opening) and unpickled its segments, and the commit pickled the unchanged schema
   again, a noticeable share of the writing worker under load. ``TOC.read`` keeps what it read
   while the file's (inode, size, mtime) stay, and its readers share the segments; a writer,
   which marks its deletions in them, gets copies of its own (``SegmentWriter.__init__``).
   ``TOC.write`` writes the same bytes with the schema's pickle made once (``whoosh_parts.py``).

12. No reference cycle per writer. Whoosh's ``temp_storage`` kept a caught FileExistsError, whose
   frames held the writer: each commit's writer, postings and readers (about 1,000 objects) were
   left to the garbage collector, whose young collections then held the interpreter lock 10-100
   ms in the writing worker. It checks for the folder instead (``FileStorage``, ``RamStorage``),
   and a writer's lent searcher no longer holds itself through ``_orig_close`` (``lend_searcher``).

The private names read (``PRIVATE_NAMES``, ``ATTRIBUTES``), each behind a function at the end:
writers that do not lock, finish a segment or commit given segments; the table of contents; a
reader's folder; a reader remade around new deletions; a searcher renewed after a commit that
reuses the readers of unchanged segments; the id of the segment a writer is making. A segment's
lexicon and postings read off the mapped whoosh3 files are the seam's second module,
``whoosh_files.py``; how a segment's parts are written (patches 9 and 10), its third, ``whoosh_parts.py``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import logging
import os
import secrets
from importlib import metadata
from typing import Any

import whoosh
import whoosh.codec.base
import whoosh.codec.whoosh3
import whoosh.filedb.compound
import whoosh.filedb.filestore
import whoosh.filedb.filetables
import whoosh.filedb.structfile
import whoosh.index
import whoosh.reading
import whoosh.util
import whoosh.writing
from whoosh.codec.whoosh3 import W3FieldWriter
from whoosh.filedb.filestore import FileStorage, RamStorage
from whoosh.index import FileIndex
from whoosh.reading import EmptyReader, MultiReader, SegmentReader
from whoosh.searching import Searcher
from whoosh.util.numeric import byte_to_length

from vault_mem.search.whoosh import parts as whoosh_parts
from vault_mem.search.whoosh.mapping import SharedFiles, ViewFile
from vault_mem.search.whoosh.postings import TermPool

PINNED = "2.7.5"  # the whoosh-reloaded release everything below was written against


class WhooshMismatch(ImportError):
    """The installed Whoosh is not the one this seam was written for (raised at import)."""


def check_version(found: str) -> None:
    """Raise WhooshMismatch unless ``found`` is the pinned whoosh-reloaded version."""
    if found != PINNED:
        raise WhooshMismatch(
            f"vault-mem needs whoosh-reloaded {PINNED} exactly (its patches in vault_mem/search/whoosh/seam.py "
            f"were written against that release), but {found} is installed; "
            f"run: pip install 'whoosh-reloaded=={PINNED}'")


def _installed_version() -> str:
    try:
        return metadata.version("whoosh-reloaded")
    except metadata.PackageNotFoundError:  # another distribution owns the whoosh/ folder
        return f"{whoosh.versionstring()} (not whoosh-reloaded)"


# Every Whoosh target patched or read here, as (owner, name, the parameters it must take, or
# the attributes ``self.<name>`` its methods must still use): what upstream must still look like.
PATCHED: tuple[tuple[Any, str, tuple[str, ...]], ...] = (
    *((m, "random_name", ("size",)) for m in (whoosh.util, whoosh.codec.base, whoosh.filedb.compound,
                                             whoosh.filedb.filestore, whoosh.writing)),
    (whoosh.filedb.structfile.BufferFile, "__init__", ("self", "buf", "name", "onclose")),
    (whoosh.codec.base.Segment, "open_compound_file", ("self", "storage")),
    *((whoosh.codec.whoosh3.W3Codec, n, ("self", "storage", "segment"))  # patch 10, and the one below
      for n in ("per_document_writer", "field_writer", "per_document_reader", "terms_reader")),
    (whoosh.codec.base.Segment, "create_compound_file", ("self", "storage")),
    (whoosh.codec.whoosh3.W3PerDocReader, "_cached_reader", ("self", "fieldname", "column")),
    (whoosh.writing, "PostingPool", ("tempstore", "segment", "limitmb", "kwargs")),
    (whoosh.writing.PostingPool, "_write_run", ("self", "f", "items")),
    (whoosh.writing.PostingPool, "_read_run", ("self", "path")),
    (whoosh.writing.PostingPool, "items", ("self", "maxfiles")),
    (whoosh.writing.SegmentWriter, "_flush_segment", ("self",)),
    (whoosh.writing.SegmentWriter, "add_document", ("self", "fields")),  # patch 7
    (whoosh.filedb.filetables.HashReader, "__init__", ("self", "dbfile", "length", "magic", "startoffset")),
    (FileStorage, "delete_file", ("self", "name")),
    (FileStorage, "destroy", ("self",)),
    (whoosh.index, "clean_files", ("storage", "indexname", "gen", "segments")),
    (whoosh.index.TOC, "read", ("storage", "indexname", "gen", "schema")),  # patch 11
    (whoosh.index.TOC, "write", ("self", "storage", "indexname")),
    *((cls, "temp_storage", ("self", "name")) for cls in (FileStorage, RamStorage)),  # patch 12
)
PRIVATE_NAMES: tuple[tuple[Any, str, tuple[str, ...]], ...] = (
    (whoosh.writing.SegmentWriter, "__init__", ("self", "ix", "poolclass", "timeout", "delay", "_lk", "limitmb")),
    (whoosh.writing.SegmentWriter, "_finalize_segment", ("self",)),
    (whoosh.writing.SegmentWriter, "_close_segment", ("self",)),
    (whoosh.writing.SegmentWriter, "_commit_toc", ("self", "segments")),
    (whoosh.writing.SegmentWriter, "_finish", ("self",)),
    (whoosh.index.FileIndex, "_read_toc", ("self",)),
    (whoosh.index.TOC, "_segment_pattern", ("indexname",)),
    *((whoosh.writing.PostingPool, n, ("self", "path")) for n in ("_open_run", "_remove_run")),  # patch 5
    (whoosh.codec.whoosh3.W3TermsReader, "matcher", ("self", "fieldname", "tbytes", "format_", "scorer")),
    (whoosh.codec.whoosh3, "_lenfield", ("fieldname",)),  # patch 6
    (whoosh.writing.SegmentWriter, "_check_state", ("self",)),  # patch 7, and the three below
    (whoosh.writing.SegmentWriter, "_doc_boost", ("self", "fields")),
    (whoosh.writing.SegmentWriter, "_field_boost", ("self", "fields", "fieldname")),
    (whoosh.writing.SegmentWriter, "_check_fields", ("self", "schema", "fieldnames")),
    (whoosh.filedb.filetables.HashReader, "_read_extras", ("self",)),  # patch 8
    (whoosh.index.TOC, "_latest_generation", ("storage", "indexname")),  # patch 11
    (whoosh.index.TOC, "_filename", ("indexname", "gen")),
)
ATTRIBUTES: tuple[tuple[type, tuple[str, ...]], ...] = (
    (whoosh.writing.SegmentWriter, ("_tempstorage", "perdocwriter", "fieldwriter", "pool", "docnum", "_added")),
    (whoosh.reading.SegmentReader, ("_storage", "_terms")),
    (whoosh.codec.whoosh3.W3TermsReader, ("_tindex", "_fieldmap", "_postfile")),
    (whoosh.codec.whoosh3.W3PerDocReader, ("_readers",)),  # patch 4
    (whoosh.writing.PostingPool, ("runs", "current")),  # patch 5 (set by its base, SortingPool)
    (whoosh.writing.SegmentWriter, ("_searcher", "_orig_close")),  # whoosh_parts.lend_searcher
    (whoosh.codec.whoosh3.W3Segment, ("_deleted",)),  # frozen_segment
    (whoosh.reading.SegmentReader, ("_segment", "_perdoc")),  # with_deletions
    (whoosh.codec.whoosh3.W3PerDocReader, ("_segment",)),
    (whoosh.writing.SegmentWriter, ("newsegment",)),  # new_segment_id
    (whoosh.codec.whoosh3.W3FieldWriter, ("_tindex", "_fieldid", "_format")),  # whoosh_parts.inline_term
)


def shape_problems() -> list[str]:
    """What differs from the Whoosh this seam was written for (empty: every target as expected)."""
    problems = []
    for owner, name, params in (*PATCHED, *PRIVATE_NAMES):
        where = f"{getattr(owner, '__name__', owner)}.{name}"
        target = getattr(owner, name, None)
        if target is None:
            problems.append(f"{where} is missing")
            continue
        try:
            found = tuple(inspect.signature(target).parameters)
        except (TypeError, ValueError):
            problems.append(f"{where} has no signature")
            continue
        if found[:len(params)] != params:
            problems.append(f"{where} takes ({', '.join(found)}), expected ({', '.join(params)}, ...)")
    for cls, names in ATTRIBUTES:  # the names its methods' code uses (reading source is slow)
        used = {name for c in cls.__mro__ if c.__module__.startswith("whoosh.") for f in vars(c).values()
                if inspect.isfunction(f) for name in f.__code__.co_names}
        problems += [f"{cls.__name__} no longer uses self.{n}" for n in names if n not in used]
    if getattr(whoosh.index, "_DEF_INDEX_NAME", None) != "MAIN":
        problems.append("whoosh.index._DEF_INDEX_NAME is not 'MAIN'")
    if getattr(whoosh.index, "_CURRENT_TOC_VERSION", None) != -111:  # patch 11 writes this format
        problems.append("whoosh.index._CURRENT_TOC_VERSION is not -111")
    tables = whoosh.filedb.filetables  # patch 8 reads the hash file's layout
    if (getattr(getattr(tables, "_dir_entry", None), "format", None), getattr(tables, "_directory_size", None),
            len(getattr(tables, "_hash_functions", ()))) != ("!qi", 256 * 12, 3):
        problems.append("whoosh.filedb.filetables no longer has 3 hash functions and 256 (position, slots) tables")
    if getattr(getattr(whoosh.codec.whoosh3.W3TermInfo, "_struct", None), "format", None) != "!BfIBBfII":
        problems.append("whoosh3's term info is no longer packed as !BfIBBfII (whoosh_parts.inline_info)")
    return problems


def check_shapes(problems: list[str]) -> None:
    """Raise WhooshMismatch listing ``problems`` when there are any."""
    if problems:
        raise WhooshMismatch("the installed Whoosh differs from the one vault_mem/search/whoosh/seam.py "
                             f"was written for ({PINNED}): " + "; ".join(problems))


check_version(_installed_version())
check_shapes(shape_problems())  # before any patch (patches.py) replaces a target

log = logging.getLogger("vault_mem.search")
_IDCHARS = "0123456789abcdefghijklmnopqrstuvwxyz"


def unique_name(size: int = 28) -> str:
    return "".join(secrets.choice(_IDCHARS) for _ in range(size))


def buffer_file_init(self: Any, buf: Any, name: str | None = None, onclose: Any = None) -> None:
    # Whoosh's BufferFile wraps each sub-file of a memory-mapped compound segment (postings,
    # terms, stored fields) in ``BytesIO(buf)``, which copies it: every reader of every thread
    # then held a private copy of the whole segment (hundreds of MB). Reading through the
    # view keeps one copy, the operating system's page cache, shared by every reader.
    self._buf = buf
    self._name = name
    self.file = ViewFile(buf if isinstance(buf, memoryview) else memoryview(buf))
    self.onclose = onclose
    self.is_real = False
    self.is_closed = False


_shared = SharedFiles()  # each compound segment file mapped once for the whole process
_open_compound_file = whoosh.codec.base.Segment.open_compound_file


def open_shared_compound_file(self: Any, storage: Any) -> Any:
    # Each SegmentReader maps its segment's file anew, and every thread has its own readers:
    # the same pages were then counted once per mapping in the server's resident memory. A
    # segment file never changes once written, so one mapping serves every reader.
    folder = getattr(storage, "folder", None)
    if not folder or not getattr(storage, "supports_mmap", False):
        return _open_compound_file(self, storage)
    key = (str(folder), self.make_filename(self.COMPOUND_EXT))
    return _shared.open(key, lambda: _open_compound_file(self, storage))


def cached_reader(self: Any, fieldname: str, column: Any) -> Any:
    # Whoosh caches a column reader only when the column exists; for a field without one (no
    # lengths are kept for ID and KEYWORD fields) it asked the file system again on every
    # posting written, a share of every build. Segments never change, so a miss is cached too.
    readers = self._readers
    if fieldname in readers:
        return readers[fieldname]
    reader = self.column_reader(fieldname, column) if self.has_column(fieldname) else None
    readers[fieldname] = reader
    return reader


class _DecodedLengths:
    """``doc_field_length`` of a per-document reader, each field's lengths decoded once (patch 6)."""

    _BYTES = [None] + [byte_to_length(b) for b in range(1, 256)]

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.fields: dict[str, list[int | None] | None] = {}

    def doc_field_length(self, docnum: int, fieldname: str, default: int = 0) -> int | None:
        lengths = self.field_lengths(fieldname)
        return default if lengths is None else lengths[docnum]

    def field_lengths(self, fieldname: str) -> list[int | None] | None:
        """Every document's length of ``fieldname`` (None: the field keeps none, read as 0)."""
        if fieldname not in self.fields:
            column = self.reader._cached_reader(whoosh.codec.whoosh3._lenfield(fieldname),
                                                whoosh.codec.whoosh3.LENGTHS_COLUMN)
            table = self._BYTES
            self.fields[fieldname] = None if column is None else [table[b] for b in column]
        return self.fields[fieldname]


def flush_segment(self: Any) -> None:
    self.perdocwriter.close()
    pdr = self.per_document_reader() if self.codec.length_stats else None
    lengths = _DecodedLengths(pdr) if pdr else None
    if isinstance(self.pool, TermPool):
        fieldwriter = self.fieldwriter
        w3 = type(fieldwriter) is W3FieldWriter
        inline = functools.partial(whoosh_parts.inline_term, fieldwriter) if w3 else None
        self.pool.write_postings(fieldwriter, self.schema, lengths, inline)
    else:
        self.fieldwriter.add_postings(self.schema, lengths, self.pool.iter_postings())
    self.fieldwriter.close()
    if pdr:
        pdr.close()


WHOOSH_FLUSH_SEGMENT = whoosh.writing.SegmentWriter._flush_segment  # Whoosh's own, for the test that compares
WHOOSH_HASH_READER_INIT = whoosh.filedb.filetables.HashReader.__init__  # the same

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


# -- the private names read elsewhere, one function each ----------------------------------

DEFAULT_INDEX_NAME: str = whoosh.index._DEF_INDEX_NAME  # the name every index here has ("MAIN")


def unlocked_writer(target: Any, limitmb: int) -> whoosh.writing.SegmentWriter:
    """A segment writer that does not take the lock (a build worker, a merge: ``publish`` comes
    later), holding ``limitmb`` megabytes of postings (the ``writer_pool_mb`` setting) before it
    sorts them to a run file."""
    return whoosh.writing.SegmentWriter(target, _lk=False, limitmb=limitmb)


def finish_segment(writer: whoosh.writing.SegmentWriter) -> Any:
    """Write ``writer``'s documents out as a segment, without committing it; returns the segment."""
    return writer._finalize_segment()


def drop_temp_folder(writer: whoosh.writing.SegmentWriter) -> None:
    """Remove the temp folder a finished writer sorted its postings in."""
    writer._tempstorage.destroy()


def release(writer: whoosh.writing.SegmentWriter) -> None:
    """Close ``writer`` after ``finish_segment`` (and let go of its lock, if it took one)."""
    writer._finish()


def publish(writer: whoosh.writing.SegmentWriter, segments: list[Any]) -> None:
    """Commit exactly ``segments`` through ``writer`` (which holds the lock), then close it."""
    writer._close_segment()
    writer._commit_toc(segments)
    writer._finish()


def with_deletions(reader: Any, segment: Any) -> Any:
    """A reader of ``segment`` made from ``reader`` of the same segment, which has fewer deletions
    (a segment's files never change; its deletions live in the table of contents): it shares
    ``reader``'s open files and parsed tables, so ``reader`` must be neither used nor closed again."""
    twin = copy.copy(reader)
    twin.__dict__.pop("deleted_docs_set", None)  # Whoosh's cached_property of the old deletions
    twin._segment = segment
    twin._perdoc = copy.copy(reader._perdoc)
    twin._perdoc._segment = segment
    return twin


def read_toc(ix: whoosh.index.FileIndex) -> whoosh.index.TOC:
    """The index's current table of contents (schema, segments, generation)."""
    return ix._read_toc()


class TocTarget:
    """What a segment writer needs from an index, pointing at another folder (a merge's work folder)."""

    def __init__(self, storage: FileStorage, indexname: str, schema: Any) -> None:
        self.storage = storage
        self.indexname = indexname
        self.schema = schema

    def _read_toc(self) -> whoosh.index.TOC:  # what SegmentWriter asks of an index
        return whoosh.index.TOC(self.schema, [], 0)


def reader_folder(reader: Any) -> str | None:
    """The folder of the index a segment reader reads (None for another kind of reader)."""
    storage = getattr(reader, "_storage", None)
    return getattr(getattr(storage, "b", storage), "folder", None)  # .b: an overlay over the folder


def renewed_searcher(ix: FileIndex, stale: Searcher | None) -> Searcher:
    """A searcher on the latest commit that reuses ``stale``'s readers of unchanged segments.

    Opening every segment again, after every commit, costs as much as the vault is big. Whoosh's own
    ``refresh()`` is not used: it reuses a segment's reader even when the segment gained
    deletions (its cached deletion set then hides nothing new). Here one is reused while its
    segment's deletion count (it only grows) stays, else remade on its files (``with_deletions``)."""
    if stale is None:
        return whoosh_parts.LeanSearcher(ix.reader(), fromindex=ix)
    reusable = {reader.segment().segment_id(): reader for reader, _ in stale.reader().leaf_readers()
                if reader.segment() is not None and not reader.is_closed}
    readers = []
    try:
        toc = read_toc(ix)
        for segment in toc.segments:
            reader = reusable.pop(segment.segment_id(), None)
            if reader is None:
                reader = SegmentReader(ix.storage, toc.schema, segment, generation=toc.generation)
            elif reader.segment().deleted_count() != segment.deleted_count():
                reader = with_deletions(reader, segment)  # the old one's files are the twin's now
            readers.append(reader)
    except Exception:  # a commit raced the table of contents: open everything the plain way
        for reader in readers:
            with contextlib.suppress(Exception):
                reader.close()
        with contextlib.suppress(Exception):
            stale.close()
        return whoosh_parts.LeanSearcher(ix.reader(), fromindex=ix)
    for reader in reusable.values():  # segments merged away or with new deletions
        with contextlib.suppress(Exception):
            reader.close()
    combined = MultiReader(readers, generation=toc.generation) if readers else EmptyReader(toc.schema)
    return whoosh_parts.LeanSearcher(combined, fromindex=ix)


def new_segment_id(writer: Any) -> str:
    """The id of the segment ``writer`` is making (named when the writer was opened)."""
    return str(writer.newsegment.segment_id())
