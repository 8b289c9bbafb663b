"""The Whoosh seam's third module: how a segment's parts are written (whoosh_seam.py, patches 9
and 10): terms of few postings inlined in their term info, and a live commit's part files made in
memory, then written as the one packed segment file; and ``LeanSearcher``, the searcher opened
after every commit."""

from __future__ import annotations

import contextlib
import pickle
import threading
import weakref
from array import array
from collections.abc import Iterator
from typing import Any

import whoosh.codec.base
import whoosh.codec.whoosh3
from whoosh.codec.whoosh3 import W3FieldWriter, W3TermInfo
from whoosh.filedb.compound import CompoundStorage
from whoosh.filedb.filestore import RamStorage
from whoosh.searching import Searcher
from whoosh.system import pack_ushort
from whoosh.util.numeric import length_to_byte

INLINE_POSTINGS = 4  # a term with at most this many postings keeps them in its term info (patch 9)
_TERM_INFO = W3TermInfo._struct  # inlined, weight, doc frequency, min and max length, max weight, first and last id


def inline_term(fieldwriter: W3FieldWriter, tbytes: bytes, postings: list[Any], field_lengths: Any) -> bool:
    """Write the term info of ``tbytes`` with its few postings (``postings``: docnum, weight, value
    bytes, repeated) kept in it instead of in a block of the postings file: what whoosh3 calls
    inlined postings, which its readers read (``postings_reader`` answers a ``ListMatcher``) but its
    writer never makes (it calls ``set_inline``, a name ``W3TermInfo`` lacks, so its default limit
    of 1 keeps every term out). A block is a pickle, zlib and a header per term; most terms of a
    live commit's segment have one posting. Values as the block reader gives them: None for a
    format without values. False (nothing written) for a term of more postings."""
    if len(postings) > 3 * INLINE_POSTINGS:
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


def _parts_writer(make: Any) -> Any:
    def writer(self: Any, storage: Any, segment: Any) -> Any:
        if getattr(_in_memory, "on", False):
            parts = _parts.get(segment)
            if parts is None:  # the segment's first part (its terms and its columns share one)
                parts = _parts[segment] = RamStorage()
            storage = parts
        return make(self, storage, segment)
    return writer


def _parts_reader(make: Any) -> Any:
    def reader(self: Any, storage: Any, segment: Any) -> Any:
        return make(self, _parts.get(segment, storage), segment)
    return reader


_create_compound_file = whoosh.codec.base.Segment.create_compound_file  # taken before install()


def _assemble_parts(self: Any, storage: Any) -> None:
    parts = _parts.pop(self, None)
    if parts is None:
        _create_compound_file(self, storage)
        return
    CompoundStorage.assemble(self.create_file(storage, self.COMPOUND_EXT), parts, parts.list())
    self.compound = True


def install() -> None:
    """Patch 10 (whoosh_seam.py applies it once its shape check passed)."""
    codec = whoosh.codec.whoosh3.W3Codec
    for name in ("per_document_writer", "field_writer"):
        setattr(codec, name, _parts_writer(getattr(codec, name)))
    for name in ("per_document_reader", "terms_reader"):
        setattr(codec, name, _parts_reader(getattr(codec, name)))
    whoosh.codec.base.Segment.create_compound_file = _assemble_parts


class LeanSearcher(Searcher):  # type: ignore[misc]  # Whoosh has no types
    """Whoosh's ``Searcher``, with its per-segment sub-searchers made when first asked for.

    Whoosh makes one in ``__init__`` for every segment, each a ``Searcher`` copying 13 of its
    reader's methods. The searchers opened after every commit (each thread's renewal, the one a
    writer is lent) are never asked for them by this code, and making them was a quarter of a
    renewal and a twentieth of a commit in the process that writes (py-spy). Whoosh's own
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
