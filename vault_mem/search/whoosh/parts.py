"""The Whoosh seam's third module: how a segment's parts are written (whoosh_seam.py, patches 9
and 10): terms of few postings inlined in their term info, and a live commit's part files made in
memory, then written as the one packed segment file; the table of contents read once per
generation and its schema pickled once (patch 11); temp storages made without an exception
(patch 12); and ``LeanSearcher``, the searcher opened after every commit, and the one lent to a
writer (``lend_searcher``)."""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import tempfile
import threading
import time
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import whoosh
import whoosh.codec.base
import whoosh.codec.whoosh3
import whoosh.filedb.filestore
import whoosh.index
import whoosh.writing
from whoosh.codec.whoosh3 import W3FieldWriter, W3TermInfo
from whoosh.fields import ensure_schema
from whoosh.filedb.compound import CompoundStorage
from whoosh.filedb.filestore import FileStorage, RamStorage
from whoosh.searching import Searcher
from whoosh.system import _FLOAT_SIZE, _INT_SIZE, _LONG_SIZE, pack_ushort
from whoosh.util.numeric import length_to_byte

from vault_mem.settings import Settings


@dataclass(frozen=True)
class Sizes:
    """The sizes patches 9 and 11 work by: the ``inline_postings`` and ``tocs_kept`` settings.

    They are the process's, not an index's: Whoosh calls the patches with no index at hand, and the
    patches are installed once per process, so ``patches.install`` sets ``SIZES`` from the settings
    its caller gives, the process's composition root (docs/settings.md, "Where settings are read").
    """

    inline_postings: int
    tocs_kept: int

    @classmethod
    def of(cls, config: Settings) -> Sizes:
        return cls(config.inline_postings, config.tocs_kept)


SIZES = Sizes.of(Settings())  # the defaults until the patches are installed


_TERM_INFO = W3TermInfo._struct  # inlined, weight, doc frequency, min and max length, max weight, first and last id


def inline_term(fieldwriter: W3FieldWriter, tbytes: bytes, postings: list[Any], field_lengths: Any) -> bool:
    """Write the term info of ``tbytes`` with its few postings (``postings``: docnum, weight, value
    bytes, repeated) kept in it instead of in a block of the postings file: what whoosh3 calls
    inlined postings, which its readers read (``postings_reader`` answers a ``ListMatcher``) but its
    writer never makes (it calls ``set_inline``, a name ``W3TermInfo`` lacks, so its default limit
    of 1 keeps every term out). A block is a pickle, zlib and a header per term; most terms of a
    live commit's segment have one posting. Values as the block reader gives them: None for a
    format without values. False (nothing written) for a term of more postings."""
    if len(postings) > 3 * SIZES.inline_postings:
        return False
    ids = postings[0::3]
    values = ((None,) * len(ids) if fieldwriter._format.fixed_value_size() == 0
              else tuple(b"" if v is None else v for v in postings[2::3]))
    lengths = [] if field_lengths is None else [n for n in (field_lengths[d] for d in ids) if n]
    fieldwriter._tindex.add(pack_ushort(fieldwriter._fieldid) + tbytes,
                            inline_info(ids, tuple(array("f", postings[1::3])), values, lengths))
    return True


def inline_info(ids: list[int], weights: tuple[float, ...], values: tuple[Any, ...], lengths: list[int]) -> bytes:
    """The bytes of a ``W3TermInfo`` holding these postings inline, made directly: what its
    ``add_block`` of them, ``set_inlined`` and ``to_bytes`` make (a test compares the two), in
    half the time, which counted in every commit of a busy server (most terms of a live
    segment have one posting). ``weights`` as a block keeps them (32-bit floats); ``lengths``
    the documents' field lengths above 0."""
    head: bytes = _TERM_INFO.pack(1, sum(weights), len(ids), length_to_byte(min(lengths)) if lengths else 0,
                                  length_to_byte(max(lengths, default=0)), max(0.0, *weights), ids[0], ids[-1])
    return head + pickle.dumps((tuple(ids), weights, values), 2)


_in_memory = threading.local()
_parts: weakref.WeakKeyDictionary[Any, RamStorage] = weakref.WeakKeyDictionary()  # segment -> its part files


@contextlib.contextmanager
def parts_in_memory() -> Iterator[None]:
    """Segments whose writer this thread makes meanwhile write their part files in memory (patch 10)."""
    _in_memory.on = True
    try:
        yield
    finally:
        _in_memory.on = False


def parts_writer(make: Any) -> Any:
    def writer(self: Any, storage: Any, segment: Any) -> Any:
        if getattr(_in_memory, "on", False):
            parts = _parts.get(segment)
            if parts is None:  # the segment's first part (its terms and its columns share one)
                parts = _parts[segment] = RamStorage()
            storage = parts
        return make(self, storage, segment)
    return writer


def parts_reader(make: Any) -> Any:
    def reader(self: Any, storage: Any, segment: Any) -> Any:
        return make(self, _parts.get(segment, storage), segment)
    return reader


_create_compound_file = whoosh.codec.base.Segment.create_compound_file  # Whoosh's own (patches.py installs later)


def assemble_parts(self: Any, storage: Any) -> None:
    parts = _parts.pop(self, None)
    if parts is None:
        _create_compound_file(self, storage)
        return
    CompoundStorage.assemble(self.create_file(storage, self.COMPOUND_EXT), parts, parts.list())
    self.compound = True


def frozen_segment(segment: Any) -> Any:
    """A copy of ``segment`` for a reader to keep: a writer's later deletions (made in its own copy) do not touch it."""
    twin = object.__new__(type(segment))
    twin.__dict__.update(segment.__dict__)  # copy.copy's result, without its generic machinery
    deleted = segment._deleted
    twin._deleted = None if deleted is None else set(deleted)
    return twin


# Patch 11. Every commit made each searcher of every process read the new table of contents
# again (a thread's renewal, a writer opening), and unpickle its segments; and each commit
# pickled the schema again to write it, for the same bytes (docs/perf/whoosh-patches.md). A table
# of contents is now read once per
# generation in a process, and kept while its file's (inode, size, mtime) stay: a rebuild that
# starts the generations again writes new files. Its segments are shared by every reader, which
# only reads them; a writer, which records its deletions in them, gets copies of its own.
_read_toc_file = whoosh.index.TOC.read.__func__  # Whoosh's own (patches.py installs later)
_whoosh_write_toc = whoosh.index.TOC.write  # the same (tests compare the bytes each writes)
_tocs: OrderedDict[tuple[str, str, int], tuple[tuple[int, int, int], Any]] = OrderedDict()
_tocs_lock = threading.Lock()
# id(schema) -> (the schema, its field names, its pickle), for the latest schemas written
_schema_pickles: OrderedDict[int, tuple[Any, tuple[str, ...], bytes]] = OrderedDict()


def _keep_latest(kept: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    """Put ``key`` last in ``kept``, dropping the oldest past ``tocs_kept`` (under ``_tocs_lock``)."""
    with _tocs_lock:
        kept[key] = value
        kept.move_to_end(key)
        while len(kept) > SIZES.tocs_kept:
            kept.popitem(last=False)


def read_toc(cls: Any, storage: Any, indexname: str, gen: int | None = None, schema: Any = None) -> Any:
    folder = getattr(storage, "folder", None)
    if schema is None or type(storage) is not FileStorage or not isinstance(folder, str):
        return _read_toc_file(cls, storage, indexname, gen, schema)  # a schema read from the file: not kept
    if gen is None:
        gen = cls._latest_generation(storage, indexname)
    try:
        st = os.stat(os.path.join(folder, cls._filename(indexname, gen)))
    except (OSError, ValueError):  # none (yet): Whoosh's own reading says so
        return _read_toc_file(cls, storage, indexname, gen, schema)
    key, stamp = (folder, indexname, gen), (st.st_ino, st.st_size, st.st_mtime_ns)
    with _tocs_lock:
        kept = _tocs.get(key)
    if kept is None or kept[0] != stamp or kept[1].schema is not schema:
        toc = _read_toc_file(cls, storage, indexname, gen, schema)
        kept = (stamp, toc)
        _keep_latest(_tocs, key, kept)
    toc = kept[1]
    return cls(toc.schema, list(toc.segments), toc.generation, toc.version, toc.release)


_whoosh_writer_init = whoosh.writing.SegmentWriter.__init__  # Whoosh's own (patches.py installs later)


@functools.wraps(_whoosh_writer_init)
def writer_init(self: Any, ix: Any, *args: Any, **kwargs: Any) -> None:
    _whoosh_writer_init(self, ix, *args, **kwargs)
    self.segments = [frozen_segment(s) for s in self.segments]  # its deletions stay its own


def _schema_pickle(schema: Any) -> bytes:
    """``pickle.dumps(schema, 2)``, made once per schema while its field names stay (vault-mem
    never changes a field of an open index's schema in place)."""
    names = tuple(schema.names())
    kept = _schema_pickles.get(id(schema))
    if kept is not None and kept[0] is schema and kept[1] == names:
        return kept[2]
    pickled = pickle.dumps(schema, 2)
    _keep_latest(_schema_pickles, id(schema), (schema, names, pickled))  # a rebuilt index brings its own
    return pickled


def write_toc(self: Any, storage: Any, indexname: str) -> None:
    """``TOC.write``: the same bytes, with the schema's pickle made once (``_schema_pickle``)."""
    schema = ensure_schema(self.schema)
    schema.clean()
    tocfilename = self._filename(indexname, self.generation)
    tempfilename = f"{tocfilename}.{time.time()}"  # Whoosh's temp name (clean_debris knows it)
    stream = storage.create_file(tempfilename)
    for size in (_INT_SIZE, _LONG_SIZE, _FLOAT_SIZE):
        stream.write_varint(size)
    stream.write_int(-12345)
    stream.write_int(whoosh.index._CURRENT_TOC_VERSION)
    for num in whoosh.__version__[:3]:
        stream.write_varint(num)
    stream.write_string(_schema_pickle(schema))
    stream.write_int(self.generation)
    stream.write_int(0)  # unused
    stream.write_pickle(self.segments)
    stream.close()
    storage.rename_file(tempfilename, tocfilename, safe=True)


def folder_temp_storage(self: Any, name: str | None = None) -> FileStorage:
    return _temp_storage(self.folder, name)


def ram_temp_storage(self: Any, name: str | None = None) -> FileStorage:
    return _temp_storage(tempfile.gettempdir(), name)  # where Whoosh's RamStorage puts it


def _temp_storage(folder: str, name: str | None) -> FileStorage:
    """Whoosh's ``temp_storage``: a ``FileStorage`` of ``folder/name``, made when missing. Whoosh's
    own lets ``os.makedirs`` raise FileExistsError (every writer asks for folders that exist) and
    keeps it in a local: a cycle through the frames up to the writer's ``__init__`` (patch 12)."""
    path = os.path.join(folder, name or f"{whoosh.filedb.filestore.random_name()}.tmp")
    if not os.path.isdir(path):
        os.makedirs(path, exist_ok=True)
    return FileStorage(path)


def _keep_open() -> None:
    pass


def lend_searcher(writer: Any, searcher: Any) -> None:
    """Have ``writer`` find what it replaces through ``searcher`` (of exactly its segments), not a
    reader of every segment opened anew; the writer never closes it (its owner does)."""
    # What SegmentWriter._finish and delete_by_query call; Whoosh's own ``_orig_close = close`` (a
    # bound method kept on its searcher) is a reference cycle: a lent one held readers until a collection.
    searcher._orig_close = searcher.close = _keep_open
    writer._searcher = searcher


class LeanSearcher(Searcher):  # type: ignore[misc]  # Whoosh has no types
    """Whoosh's ``Searcher``, with its per-segment sub-searchers made when first asked for.

    Whoosh makes one in ``__init__`` for every segment, each a ``Searcher`` copying 13 of its
    reader's methods. The searchers opened after every commit (each thread's renewal, the one a
    writer is lent) are never asked for them by this code, and making them was a large share
    of a renewal in the process that writes. Whoosh's own
    searching (collectors, sorting) reads ``subsearchers`` and gets them made then."""

    def __init__(self, reader: Any, **kwargs: Any) -> None:
        self._deferring = True
        try:
            super().__init__(reader, **kwargs)
        finally:
            self._deferring = False

    def _subsearcher(self, reader: Any) -> Any:
        return None if self._deferring else super()._subsearcher(reader)

    @property
    def subsearchers(self) -> list[tuple[Searcher, int]] | None:
        made = self.__dict__.get("_subsearchers")
        if made is None and self.leafreaders is not None:
            made = self.__dict__["_subsearchers"] = [(self._subsearcher(r), offset) for r, offset in self.leafreaders]
        return made

    @subsearchers.setter
    def subsearchers(self, value: list[tuple[Searcher, int]] | None) -> None:
        # Whoosh's __init__ sets None, then one placeholder per segment: both mean "not made yet".
        self.__dict__["_subsearchers"] = None if self._deferring else value
