"""The other half of the Whoosh seam (``whoosh_seam.py``, which checks the private names read
here): a whoosh3 segment's lexicon and postings read straight off its mapped files, where
Whoosh's own readers cost a call, a seek or a pickle load per term or per block."""

from __future__ import annotations

import io
import itertools
import pickle
import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC
from whoosh.reading import TermNotFound
from whoosh.system import unpack_int

from vault_mem.search.whoosh import seam as whoosh_seam  # noqa: F401  (patch 3 maps the files read here)

_LENGTHS = struct.Struct("!ii")  # Whoosh's hash-file record header: key length, value length


def field_terms(reader: Any, field: str) -> list[str]:
    """Every term of ``field`` in one segment, in order.

    Whoosh's ``lexicon()`` decodes each term through generic code (a big lexicon: seconds); here
    the terms file is read off the mapped file when it can be (``_term_records``)."""
    mapped = _term_records(reader, field)
    if mapped is None:
        return [t.decode("utf-8") for t in reader.lexicon(field)]
    return [term for term, _value in mapped[1]]


def field_doc_frequencies(reader: Any, field: str) -> dict[str, int]:
    """How many documents of one segment hold each term of ``field`` (deleted ones too): the
    document count of every term info, read in one walk of the terms file."""
    mapped = _term_records(reader, field)
    if mapped is None:
        try:
            return {t.decode("utf-8"): int(info.doc_frequency()) for t, info in reader.iter_field(field)}
        except TermNotFound:  # a field no document of this segment holds
            return {}
    buf, records = mapped
    unpack = _DOC_FREQUENCY.unpack_from
    return {term: unpack(buf, value)[0] for term, value in records}


# A whoosh3 term info begins with flags (one byte) and the total weight (a float), then the
# document count.
_DOC_FREQUENCY = struct.Struct("!5xI")


def _term_records(reader: Any, field: str) -> tuple[memoryview, Iterator[tuple[str, int]]] | None:
    """The mapped terms file of one segment and (term, where its term info starts in it) for every
    term of ``field``, in order; None for a reader whose terms file is not a mapped whoosh3 one.

    The terms file is one sorted run of records (header, key = field number + term, value), read
    here off the mapped file (``_buf``: set by patch 3)."""
    try:
        terms_reader = reader._terms
        tindex = terms_reader._tindex
        fieldnum = terms_reader._fieldmap[field]
        buf = tindex.dbfile._buf
        start = tindex.closest_key_pos(struct.pack("!H", fieldnum))
        end = tindex.endofdata
        if not isinstance(buf, memoryview):
            raise TypeError("not a mapped file")
    except (AttributeError, KeyError, TypeError):
        return None
    return buf, _walk_terms(buf, start, end, fieldnum)


def _walk_terms(buf: memoryview, start: int | None, end: int, fieldnum: int) -> Iterator[tuple[str, int]]:
    if start is None:
        return
    high, low = fieldnum >> 8, fieldnum & 0xFF
    unpack = _LENGTHS.unpack_from
    pos = start
    while pos < end:
        keylen, datalen = unpack(buf, pos)
        key = pos + 8
        if buf[key] != high or buf[key + 1] != low:
            break
        yield str(buf[key + 2:key + keylen], "utf-8"), key + keylen
        pos = key + keylen + datalen


def postings(reader: Any, field: str, term: str) -> Iterable[tuple[int, float]]:
    """(segment document number, term frequency) for every posting of ``term``, deleted ones too."""
    decoded = _decoded_postings(reader, field, term)
    return decoded if decoded is not None else _matcher_postings(reader, field, term)


def _decoded_postings(reader: Any, field: str, term: str) -> list[tuple[int, float]] | None:
    """The postings of ``term`` read in one piece from a whoosh3 segment, or None elsewhere.

    A broad needle expands to hundreds of rare terms, and a matcher costs a read, a seek and a
    pickle load per block of each. Here one read of the extent, decoded as whoosh3 writes it: a
    magic tag, then blocks of (int length, negative for the last; pickled block info; pickled,
    maybe zlib-compressed, (delta-coded ids, weights, values)); a term in one document needs no
    read. Any other layout answers None (the matcher reads it).
    """
    try:
        terms = reader._terms
        info = terms.term_info(field, term.encode("utf-8"))
        if info.is_inlined():
            ids, weights, _values = info.inlined_postings()
            return list(zip(ids, weights, strict=True))
        if info.doc_frequency() == 1 and info.min_id() is not None:
            # the long tail of a lexicon: the term info already holds its one posting
            return [(info.min_id(), info.weight())]
        offset, length = info.extent()
        if isinstance(length, tuple):  # whoosh-reloaded 2.7.5 decodes it as a 1-tuple
            length = length[0]
        buf = terms._postfile.get(offset, length)
        if buf[:4] != WHOOSH3_HEADER_MAGIC:
            return None
        stream = io.BytesIO(buf)
        pos = 4
        found: list[tuple[int, float]] = []
        while True:
            (size,) = unpack_int(buf[pos:pos + 4])
            end = pos + 4 + abs(size)
            stream.seek(pos + 4)
            count, _maxid, _maxweight, compression, _minlen, _maxlen = pickle.load(stream)
            data = buf[stream.tell():end]
            ids, weights = pickle.loads(zlib.decompress(data) if compression else data)[:2]
            if weights is None or isinstance(weights, float):
                weights = [1.0 if weights is None else weights] * count
            found.extend(zip(itertools.accumulate(ids), weights, strict=True))
            if size < 0 or end >= len(buf):
                return found
            pos = end
    except Exception:  # not this codec, or not this layout: the matcher reads it instead
        return None


def _matcher_postings(reader: Any, field: str, term: str) -> Iterator[tuple[int, float]]:
    """``postings`` through the segment's raw matcher (deleted documents too), one at a time."""
    try:
        matcher = reader._terms.matcher(field, term.encode("utf-8"), reader.schema[field].format, scorer=None)
    except Exception:  # not a segment reader of the whoosh3 codec: the public way
        matcher = reader.postings(field, term)
    while matcher.is_active():
        yield matcher.id(), matcher.weight()
        matcher.next()
