"""Substring matching on Whoosh by expanding the needle against a field's lexicon.

A ``*term*`` wildcard walks every term with a regex (about 55 ms on 10k notes) and an
n-gram field makes the build five times slower. Instead, each segment's lexicon is
joined once into one string (segments never change, so the cache lives as long as the
segment), ``str.find`` locates the needle in it, and the terms that contain it are OR-ed.

For a needle made only of word characters this is exact: the fields are tokenised into
maximal runs of word characters, so the needle occurs in a text exactly where it occurs
inside one of its tokens. ``hit_counts`` goes further and counts the occurrences a plain
``text.lower().count(needle)`` would.
"""

from __future__ import annotations

import io
import pickle
import re
import struct
import zlib
from collections.abc import Iterable, Iterator
from itertools import accumulate
from typing import Any

from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC
from whoosh.query import NullQuery, Or, Query, Term
from whoosh.searching import Searcher
from whoosh.system import unpack_int

from vault_mem.index.columns import segment_key
from vault_mem.index.lru import CACHE

_WORD_RUN = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The lower-cased word runs of ``text``, as the index tokenises it."""
    return _WORD_RUN.findall(text.lower())


def is_word(needle: str) -> bool:
    return bool(needle) and _WORD_RUN.fullmatch(needle) is not None


def _joined_lexicon(reader: Any, field: str) -> str:
    """Every term of ``field`` in one segment, each followed by a newline."""

    def join() -> str:
        try:
            terms = _field_terms(reader, field)
        except Exception:  # a field with no terms in this segment
            terms = []
        return "\n".join(terms) + "\n" if terms else ""

    return CACHE.get_or_make(("lexicon", segment_key(reader), field), join)


_LENGTHS = struct.Struct("!ii")  # Whoosh's hash-file record header: key length, value length


def _field_terms(reader: Any, field: str) -> list[str]:
    """Every term of ``field`` in one segment, in order.

    Whoosh's ``lexicon()`` costs ~5 us a term in Python (half a million terms: seconds, on the
    first search after a start). The terms file is one sorted run of records (header, key
    = field number + term, value), so the field's terms are read off the mapped file directly;
    any other kind of reader goes the public way.
    """
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
        return [t.decode("utf-8") for t in reader.lexicon(field)]
    if start is None:
        return []
    high, low = fieldnum >> 8, fieldnum & 0xFF
    unpack = _LENGTHS.unpack_from
    found: list[str] = []
    pos = start
    while pos < end:
        keylen, datalen = unpack(buf, pos)
        key = pos + 8
        if buf[key] != high or buf[key + 1] != low:
            break
        found.append(str(buf[key + 2:key + keylen], "utf-8"))
        pos = key + keylen + datalen
    return found


def segment_terms_containing(reader: Any, field: str, needle: str) -> list[str]:
    """The terms of one segment's ``field`` that contain ``needle`` (lower-case, no newline)."""
    joined = _joined_lexicon(reader, field)
    found: list[str] = []
    pos = joined.find(needle)
    while pos >= 0:
        start = joined.rfind("\n", 0, pos) + 1
        end = joined.find("\n", pos)
        found.append(joined[start:end])
        pos = joined.find(needle, end + 1)
    return found


def terms_containing(searcher: Searcher, field: str, needle: str) -> list[str]:
    """The terms of ``field`` across all segments that contain ``needle``."""
    terms: dict[str, None] = {}
    for reader, _offset in searcher.reader().leaf_readers():
        terms.update(dict.fromkeys(segment_terms_containing(reader, field, needle)))
    return list(terms)


def substring_query(searcher: Searcher, fields: tuple[str, ...], needle: str) -> Query:
    """A query matching documents where any of ``fields`` contains the word-only ``needle``."""
    needle = needle.lower()
    subqueries: list[Query] = [
        Term(field, term) for field in fields for term in terms_containing(searcher, field, needle)
    ]
    if not subqueries:
        return NullQuery
    return Or(subqueries)


def hit_counts(searcher: Searcher, field: str, needle: str, cap: int | None = None) -> dict[int, int]:
    """For each document whose ``field`` contains the word-only ``needle``: how many times.

    Keys are the searcher's document numbers; counts are capped at ``cap`` when given.
    """
    needle = needle.lower()
    counts: dict[int, int] = {}
    get = counts.get
    for reader, offset in searcher.reader().leaf_readers():
        deleted = reader.deleted_docs_set if reader.has_deletions() else frozenset()
        for term in segment_terms_containing(reader, field, needle):
            per_token = term.count(needle)
            for docid, freq in _postings(reader, field, term):
                if docid not in deleted:
                    docnum = docid + offset
                    counts[docnum] = get(docnum, 0) + per_token * int(freq)
    if cap is not None:
        return {doc: min(n, cap) for doc, n in counts.items()}
    return counts


def form_hit_counts(searcher: Searcher, field: str, term: str,
                    stem: str | None = None) -> tuple[dict[int, int], dict[int, int]]:
    """Hits of a word-only ``term`` and of its other word form ``stem`` in ``field``.

    Returns two maps from the searcher's document numbers: how many times ``term`` occurs
    (as ``hit_counts`` counts it), and how many times ``stem`` occurs outside the
    occurrences of ``term`` (a stem that is part of the term, as ``support`` is of
    ``supported``, is not counted again where the term itself stands). A document appears
    in at least one map when its field contains either form; the second map is empty
    without a ``stem``. Each posting list is read once, however many forms it holds.
    """
    term = term.lower()
    stem = stem.lower() if stem and stem.lower() != term else None
    inside = term.count(stem) if stem else 0  # occurrences of the stem inside one of the term
    exact: dict[int, int] = {}
    alone: dict[int, int] = {}
    for reader, offset in searcher.reader().leaf_readers():
        deleted = reader.deleted_docs_set if reader.has_deletions() else frozenset()
        tokens = segment_terms_containing(reader, field, stem if stem and inside else term)
        if stem and not inside:
            tokens = list(dict.fromkeys([*tokens, *segment_terms_containing(reader, field, stem)]))
        for token in tokens:
            n_exact = token.count(term)
            n_alone = max(0, token.count(stem) - inside * n_exact) if stem else 0
            if n_exact and n_alone:
                for docid, freq in _postings(reader, field, token):
                    if docid not in deleted:
                        docnum = docid + offset
                        exact[docnum] = exact.get(docnum, 0) + n_exact * int(freq)
                        alone[docnum] = alone.get(docnum, 0) + n_alone * int(freq)
                continue
            counts, n = (exact, n_exact) if n_exact else (alone, n_alone)
            get = counts.get
            for docid, freq in _postings(reader, field, token):
                if docid not in deleted:
                    docnum = docid + offset
                    counts[docnum] = get(docnum, 0) + n * int(freq)
    return exact, alone


def _postings(reader: Any, field: str, term: str) -> Iterable[tuple[int, float]]:
    """(segment document number, term frequency) for every posting of ``term``, deleted ones too."""
    decoded = _decoded_postings(reader, field, term)
    return decoded if decoded is not None else _matcher_postings(reader, field, term)


def _decoded_postings(reader: Any, field: str, term: str) -> list[tuple[int, float]] | None:
    """The postings of ``term`` read in one piece from a whoosh3 segment, or None elsewhere.

    A broad needle or stem expands to hundreds of rare terms; through the matcher API each
    costs a header read, a seek and a pickle load per block before any posting comes out.
    A term found in one document needs no read at all (its term info holds the document
    and the frequency); otherwise the whole extent is one read, decoded as the whoosh3
    codec writes it: a
    magic tag, then blocks of (int length, negative for the last; pickled block info;
    pickled, maybe zlib-compressed, (delta-coded ids, weights, values)). Anything else
    (another codec, a layout this does not recognise) answers None: the caller falls back
    to the matcher.
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
            found.extend(zip(accumulate(ids), weights, strict=True))
            if size < 0 or end >= len(buf):
                return found
            pos = end
    except Exception:  # not this codec, or not this layout: the matcher reads it instead
        return None


def _matcher_postings(reader: Any, field: str, term: str) -> Iterator[tuple[int, float]]:
    """``_postings`` through Whoosh's matchers, a block at a time where they allow."""
    try:
        matcher = reader._terms.matcher(field, term.encode("utf-8"), reader.schema[field].format, scorer=None)
    except Exception:  # not a segment reader of the whoosh3 codec: the public, slower way
        matcher = reader.postings(field, term)
        while matcher.is_active():
            yield matcher.id(), matcher.weight()
            matcher.next()
        return
    if not all(hasattr(matcher, name) for name in ("_read_ids", "_read_weights", "_next_block", "_i")):
        while matcher.is_active():
            yield matcher.id(), matcher.weight()
            matcher.next()
        return
    while matcher.is_active():
        if matcher._ids is None:
            matcher._read_ids()
        if matcher._weights is None:
            matcher._read_weights()
        start = matcher._i
        yield from zip(matcher._ids[start:], matcher._weights[start:], strict=True)
        matcher._next_block()
