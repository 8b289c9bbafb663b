"""Documents to postings without Whoosh's per-token and per-posting objects: the same terms.

Whoosh turns a document into postings through generic machinery: a Token object per word
passed through a chain of generators, a frequency format counting into dictionaries, one
``(field, term, docnum, weight, value)`` tuple per posting checked and sized on its own,
then one sort of all those tuples (spilled to disk past the writer's memory limit) before
the segment's postings are written. That was most of a build worker's time, text analysis
and the pool's sort about evenly (docs/perf/whoosh-patches.md).

Here, applied by ``whoosh_seam`` (patch 7) to every writer:

- ``terms_of(field)`` recognises the field kinds this schema uses (words of a regex,
  optionally lower-cased, counted; a whole value as one term) and gives the same
  ``(term bytes, frequency, weight, value bytes)`` items, in the same order, as Whoosh's
  ``field.index(value)``, from one ``findall`` and a ``Counter``. Any other field (or a
  value that is not a string) goes through Whoosh's own ``index``.
- ``add_document`` is Whoosh's ``SegmentWriter.add_document`` with those items handed to
  the pool a field at a time.
- ``TermPool`` collects postings per field and term, each term's postings in document
  order as they arrive, so a segment's postings come out sorted by sorting the terms, not
  every posting. Past its memory limit it writes a sorted run, like Whoosh's pool, and the
  runs are merged with what is left in memory.

The segment written is the one Whoosh writes: the same terms, postings, weights, values and
lengths (``tests/unit/test_postings.py`` compares them on generated documents). The Whoosh names
used here, none of them public, are used only on ``self`` and checked by the seam:
``SegmentWriter``'s ``_check_state``, ``_doc_boost``, ``_check_fields``, ``_field_boost``,
``perdocwriter``, ``pool``, ``docnum`` and ``_added``; ``PostingPool``'s run files
(``_new_run``, ``_open_run``, ``_remove_run``, ``runs``, ``reduce_to``); and the codec's
field writer calls (``start_field``, ``start_term``, ``add``, ``finish_term``,
``finish_field``).
"""

from __future__ import annotations

import heapq
import itertools
import pickle
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import whoosh.writing
from whoosh.analysis import CompositeAnalyzer, IDTokenizer, LowercaseFilter, RegexTokenizer
from whoosh.fields import FieldType
from whoosh.formats import Existence, Frequency
from whoosh.system import pack_uint

from vault_mem.settings import Settings

Item = tuple[bytes, int, float, bytes]  # (term bytes, frequency, weight, value bytes), as field.index
TermsOf = Callable[[str], list[Item]]
# (term bytes, postings as docnum, weight, value bytes repeated, the field's lengths) -> written
Inline = Callable[[bytes, list[Any], Any], bool]

_SMALL = 256  # frequencies whose weight and value bytes are made once
_FLOATS = [float(n) for n in range(_SMALL)]
_PACKED = [pack_uint(n) for n in range(_SMALL)]
# Bytes a pool counts against its limit (roughly what Python holds): a posting is three list
# slots (the document number, weight and value objects are shared), a new term its bytes, its
# list and its dictionary entry.
POSTING_BYTES = 3 * 8
TERM_BYTES = 33 + 56 + 100
MERGED_POSTING_BYTES = POSTING_BYTES + 24 + 33  # a posting read from a segment: its own weight and value


def terms_of(field: Any) -> TermsOf | None:
    """A fast equivalent of ``field.index`` for a string value, or None for a field kind not
    known here (it then goes through Whoosh)."""
    if type(field).index is not FieldType.index or field.format is None:
        return None
    fmt, analyzer = field.format, field.analyzer
    if type(fmt) is Existence and type(analyzer) is IDTokenizer:
        boost = fmt.field_boost
        return lambda value: [(value.encode("utf-8"), 1, boost, b"")]
    if type(fmt) is not Frequency:
        return None
    chain = analyzer.items if type(analyzer) is CompositeAnalyzer else [analyzer]
    tokenizer, filters = chain[0], chain[1:]
    if type(tokenizer) is not RegexTokenizer or tokenizer.gaps or tokenizer.expression.groups:
        return None
    if filters and (len(filters) > 1 or type(filters[0]) is not LowercaseFilter):
        return None
    return _counted_words(tokenizer.expression, bool(filters), fmt.field_boost)


def _counted_words(pattern: re.Pattern[str], lower: bool, boost: float) -> TermsOf:
    findall = pattern.findall
    # Lower-casing ASCII text first moves no boundary of a run of word characters (elsewhere it
    # may: U+0130 becomes "i" and a combining dot, which is not a word character).
    ascii_first = lower and pattern.pattern == r"\w+"

    def index(value: str) -> list[Item]:
        if not lower:
            words = findall(value)
        elif ascii_first and value.isascii():
            words = findall(value.lower())
        else:
            words = [word.lower() for word in findall(value)]
        items = []
        for word, freq in Counter(words).items():
            if freq < _SMALL:
                items.append((word.encode("utf-8"), freq, _FLOATS[freq] * boost, _PACKED[freq]))
            else:
                items.append((word.encode("utf-8"), freq, float(freq) * boost, pack_uint(freq)))
        return items

    return index


def plan_of(schema: Any) -> dict[str, TermsOf | None] | None:
    """Each field's fast terms (None: Whoosh's ``index``); None for a schema with spelling or
    term vectors, whose documents go through Whoosh's ``add_document`` as a whole."""
    fields = list(schema.items())
    if any(field.separate_spelling() or field.vector for _, field in fields):
        return None
    return {name: terms_of(field) for name, field in fields}


def add_document(self: Any, **fields: Any) -> None:
    """Whoosh's ``SegmentWriter.add_document``, with the terms of known field kinds made here
    and handed to the pool a field at a time."""
    self._check_state()
    pool = self.pool
    if not isinstance(pool, TermPool):
        return WHOOSH_ADD_DOCUMENT(self, **fields)  # type: ignore[no-any-return]
    if not pool.planned:
        pool.plan, pool.planned = plan_of(self.schema), True
    plan = pool.plan
    if plan is None:
        return WHOOSH_ADD_DOCUMENT(self, **fields)  # type: ignore[no-any-return]
    perdocwriter = self.perdocwriter
    schema = self.schema
    docnum = self.docnum
    docboost = self._doc_boost(fields)
    fieldnames = sorted([name for name in fields if not name.startswith("_")])
    self._check_fields(schema, fieldnames)
    perdocwriter.start_doc(docnum)
    try:
        for fieldname in fieldnames:
            value = fields.get(fieldname)
            if value is None:
                continue
            field = schema[fieldname]
            length = 0
            if field.indexed:
                fieldboost = self._field_boost(fields, fieldname, docboost)
                fast = plan[fieldname]
                items = fast(value) if fast is not None and type(value) is str else field.index(value)
                length = pool.add_terms(fieldname, docnum, items, fieldboost, field.scorable)
            customval = fields.get(f"_stored_{fieldname}", value)
            perdocwriter.add_field(fieldname, field, customval if field.stored else None, length)
            column = field.column_type
            if column and customval is not None:
                perdocwriter.add_column_value(fieldname, column, field.to_column_value(customval))
    except Exception:
        perdocwriter.cancel_doc()
        raise
    perdocwriter.finish_doc()
    self._added = True
    self.docnum += 1
    return None


class TermPool(whoosh.writing.PostingPool):  # type: ignore[misc]
    """A posting pool that keeps each field's terms with their postings in arrival order."""

    runs: list[str]  # run files, as Whoosh's pool keeps them
    limit: int  # bytes, from the writer's ``limitmb``
    fieldnames: set[str]
    # Postings per pickled chunk of a run file: the ``run_chunk`` setting. The process's, not an
    # index's: Whoosh's writer makes its pool, with no index at hand, so ``patches.install`` sets
    # this from the settings its caller, the process's composition root, gives.
    run_chunk: int = Settings().run_chunk

    def __init__(self, tempstore: Any, segment: Any, limitmb: float = 128, **kwargs: Any) -> None:
        super().__init__(tempstore, segment, limitmb=limitmb, **kwargs)
        # field -> term bytes -> flat [docnum, weight, value, docnum, weight, value, ...]
        self.terms: dict[str, dict[bytes, list[Any]]] = {}
        self.size = 0
        self.last_doc = -1
        # Every term's postings arrived in document order, no document twice: they are then
        # already in the order Whoosh's sort of the tuples gives.
        self.in_order = True
        self.plan: dict[str, TermsOf | None] | None = None  # plan_of(the writer's schema), once
        self.planned = False

    def _field(self, fieldname: str, docnum: int) -> dict[bytes, list[Any]]:
        if docnum < self.last_doc:
            self.in_order = False
        self.last_doc = docnum
        terms = self.terms.get(fieldname)
        if terms is None:
            terms = self.terms[fieldname] = {}
            self.fieldnames.add(fieldname)
        return terms

    def add_terms(self, fieldname: str, docnum: int, items: Iterable[Item], boost: float, scorable: bool) -> int:
        """Add one field's terms of one document (each term once, as ``field.index`` gives them);
        returns the field's length (0 if it is not scorable)."""
        terms = self._field(fieldname, docnum)
        length = postings_added = new_bytes = 0
        for tbytes, freq, weight, vbytes in items:
            if boost != 1.0 or type(weight) is not float:
                weight *= boost  # as Whoosh's add_document does (an int weight becomes a float)
            if scorable:
                length += freq
            postings = terms.get(tbytes)
            if postings is None:
                terms[tbytes] = [docnum, weight, vbytes]
                new_bytes += TERM_BYTES + len(tbytes)
            else:
                postings += (docnum, weight, vbytes)
            postings_added += 1
        self.size += postings_added * POSTING_BYTES + new_bytes
        if self.size > self.limit:
            self.save()
        return length

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        """One posting, as Whoosh's writers add them (``add_reader`` in merges)."""
        fieldname, tbytes, docnum, weight, vbytes = item
        terms = self._field(fieldname, docnum)
        if docnum < 0:
            self.in_order = False  # Whoosh's mark of a word that is not a posting: its own code skips it
        postings = terms.get(tbytes)
        if postings is None:
            terms[tbytes] = [docnum, weight, vbytes]
            self.size += TERM_BYTES + len(tbytes)
        else:
            if postings[-3] == docnum:
                self.in_order = False  # the same term twice in one document: sorted by weight, value
            postings += (docnum, weight, vbytes)
        self.size += MERGED_POSTING_BYTES + len(vbytes or b"")
        if self.size > self.limit:
            self.save()

    def _sorted(self) -> Iterator[tuple[str, Iterator[tuple[bytes, list[Any]]]]]:
        """Each field in order with its terms in order, each term's flat postings in order."""
        for fieldname in sorted(self.terms):
            terms = self.terms[fieldname]
            yield fieldname, ((tbytes, self._ordered(terms[tbytes])) for tbytes in sorted(terms))

    def _ordered(self, postings: list[Any]) -> list[Any]:
        if self.in_order:
            return postings
        triples = sorted(zip(postings[::3], postings[1::3], postings[2::3], strict=True))
        return [x for triple in triples for x in triple]

    def _tuples(self) -> Iterator[tuple[str, bytes, int, float, bytes | None]]:
        for fieldname, terms in self._sorted():
            for tbytes, postings in terms:
                for i in range(0, len(postings), 3):
                    yield fieldname, tbytes, postings[i], postings[i + 1], postings[i + 2]

    def save(self) -> None:
        """Write what is in memory as one sorted run file, and start afresh."""
        if not self.terms:
            return
        path, f = self._new_run()
        self._write_run(f, self._tuples())
        self.runs.append(path)
        self.terms = {}
        self.size = 0
        self.last_doc = -1
        self.in_order = True

    def _write_run(self, f: Any, items: Iterable[Any]) -> None:
        rest = iter(items)
        while chunk := list(itertools.islice(rest, self.run_chunk)):
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
        """Every posting tuple, sorted (Whoosh's interface)."""
        if not self.runs:
            return self._tuples()
        if len(self.runs) >= maxfiles:
            self.reduce_to(maxfiles - 1, maxfiles)
        runs, self.runs = self.runs, []
        return heapq.merge(*[self._read_run(path) for path in runs], self._tuples())

    def write_postings(self, fieldwriter: Any, schema: Any, lengths: Any, inline: Inline | None = None) -> None:
        """Write the segment's postings to the codec's field writer: what Whoosh's
        ``FieldWriter.add_postings`` does with the sorted tuples, term by term when every
        posting is still in memory and in order. ``inline`` writes a term of few postings
        itself (True) or leaves it to the field writer (False)."""
        if self.runs or not self.in_order:
            fieldwriter.add_postings(schema, lengths, self.items())
            return
        add = fieldwriter.add
        for fieldname, terms in self._sorted():
            fieldwriter.start_field(fieldname, schema[fieldname])
            field_lengths = lengths.field_lengths(fieldname) if lengths is not None else None
            for tbytes, postings in terms:
                if inline is not None and inline(tbytes, postings, field_lengths):
                    continue
                fieldwriter.start_term(tbytes)
                for i in range(0, len(postings), 3):
                    docnum, weight, vbytes = postings[i], postings[i + 1], postings[i + 2]
                    add(docnum, weight, b"" if vbytes is None else vbytes,
                        0 if field_lengths is None else field_lengths[docnum])
                fieldwriter.finish_term()
            fieldwriter.finish_field()


WHOOSH_ADD_DOCUMENT = whoosh.writing.SegmentWriter.add_document  # kept for the tests that compare
WHOOSH_POSTING_POOL = whoosh.writing.PostingPool
