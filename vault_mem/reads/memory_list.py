"""``memory_list`` (docs/tools.md): memories filtered by text, metadata, tags and dates, newest
``created`` first (or by importance), with supersession lineage applied by ``follow``.

Filters run as index lookups where the index can answer them (substring candidates, tags,
indexed core keys: the view's term documents), ``created`` bounds on the cached column; what the index cannot
check (a query holding non-word characters, metadata values) runs lazily on the sorted
candidates, only as far as the page needs, and only the page's rows are built. Rows are
added until the answer's size bound; a full body that alone passes it is cut, and
``warnings`` says where ``memory_read`` continues.

``metadata_filters`` compares case-insensitively: strings after stripping and
lower-casing, numbers by value (``"0.8"`` equals ``0.8``), booleans as true/false, null
as a missing key. A key is looked up among the fields of the field table
(``vault/fields.py``: id, title, type, tags, created, status, importance, supersedes, ...,
under any of their frontmatter keys), the path, and the other frontmatter keys; a
list-valued field matches when any element does. Tags are compared as ``normalize_tag``
gives them (``#project/`` is ``project``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.reads.dates import epoch_bounds, parse_period
from vault_mem.reads.lineage import FOLLOWS, Lineage
from vault_mem.reads.list_misses import ListMiss, why_no_memories
from vault_mem.reads.list_page import page_rows
from vault_mem.reads.rows import bound_message
from vault_mem.reads.validity import AS_OF, AsOf, Windows, as_of_param, left_out_message
from vault_mem.served.context import View
from vault_mem.served.params import (
    OFFSET,
    Args,
    choice_param,
    flag_param,
    int_param,
    mapping_param,
    strings_param,
    text_param,
)
from vault_mem.vault.fields import FIELD, FIELDS, filter_names, layout, normalize_tag
from vault_mem.vault.names import is_word, words

MODES = ("preview", "full")
PARAMS = (
    text_param("query", "Substring of title or body."),
    mapping_param("metadata_filters", "Frontmatter key -> value (list: any of)."),
    int_param("limit", "-1: no limit.", default=20, minimum=-1),
    OFFSET,
    text_param("date_from", "Created from: date (partial ok) or 7d, 2w, 1m, 1y."),
    text_param("date_to", "Created until, inclusive."),
    strings_param("tags_any", "Any of these."),
    strings_param("tags_all", "All of these."),
    strings_param("tags_none", "None of these."),
    flag_param("sort_by_importance", "Most important first.", default=False),
    choice_param("content_mode", "full: whole bodies.", MODES, default="preview"),
    int_param("preview_chars", "Preview length.", default=120, minimum=1, maximum=2000),
    strings_param("fields", "Fields to return."),
    choice_param("follow", "Lineage mode.", FOLLOWS, default="active"),
    AS_OF,
)
ROW_NAMES = {"uid": "id"}  # a row's name for a field of the table (vault/fields.py)
# The rows' fields in the order they have always had; a new row of the field table follows them.
ROW_FIELDS = layout(("id", "title", "type", "tags", "metadata", "created", "updated", "importance",
                     "permalink", "path", "status", "etag", "supersedes", "superseded_by"),
                    (ROW_NAMES.get(row.name, row.name) for row in FIELDS if row.row), ("content_preview", "content"))
# metadata_filters keys that name a field of the table (its name or a frontmatter key of it), or
# the path: key -> record key. A field held as exact terms is filtered by a Term query, no record loads.
CORE_KEYS = {**filter_names(), "path": "path"}


def memory_list(view: View, raw: dict[str, Any]) -> dict[str, Any]:
    """List memories; see the module docstring. Bad input raises InvalidInput (-> ``invalid``).

    Five steps: the parameters (``_parse``), what the index answers and what each record is
    checked for (``_plan``), the matches in listing order (``_matching_in_order``), the lineage
    mode and the page (``_follow``, ``list_page.page_rows``), and the answer (``_answer``)."""
    request = _parse(Args(raw, PARAMS, view.config))
    plan = _plan(request)
    matching = _matching_in_order(view, request, plan)
    lineage = Lineage(view)
    windows = Windows(view, lineage)
    warnings: list[str] = []
    passes, ordered, followed = _record_check(view, plan), matching.ordered, lineage
    if request.as_of is not None:  # the versions current then: the others, and their edges, are out
        gone = windows.not_current(request.as_of.at)
        among = None if matching.docs is None else set(matching.docs)
        left_out = sum(1 for d in gone if (among is None or d in among) and passes(d))
        if left_out:
            warnings.append(left_out_message(left_out, request.as_of))
        ordered = (d for d in matching.ordered if d not in gone)
        docs = None if matching.docs is None else [d for d in matching.docs if d not in gone]
        matching = Matching(matching.candidates, docs, ordered, matching.key)
        followed = lineage.without(gone)
    hits = _follow(followed, matching.ordered, matching.docs, passes, request.follow, matching.key, warnings)
    rows, more, cut = page_rows(view, lineage, hits, request.offset, request.limit, request.fields,
                                request.preview_chars, lambda d: _ended(windows, d))
    return _answer(request, rows, more, warnings + cut,
                   lambda: why_no_memories(view, _miss(view, request, plan, matching.candidates)),
                   view.config.max_answer_chars)


@dataclass(frozen=True)
class Request:
    """memory_list's parameters, validated."""

    query: str
    filters: dict[str, list[Any]]  # metadata_filters: key -> values (any of)
    limit: int  # -1: no limit
    offset: int
    created: tuple[int, int] | None  # inclusive epoch-second bounds
    tags_any: list[str]
    tags_all: list[str]
    tags_none: list[str]
    by_importance: bool
    preview_chars: int
    fields: tuple[str, ...]
    follow: str
    as_of: AsOf | None
    raw: dict[str, Any]  # the arguments as given, for the hints to echo


@dataclass(frozen=True)
class Plan:
    """How a request is answered: ``parts`` and ``tags_none`` by the index (each part requires
    any of its terms), ``query`` by its substring candidates, ``created`` by the column; then
    ``needle`` (a query with non-word characters) and ``record_filters`` on each record."""

    query: str
    parts: list[tuple[str, list[str]]]
    tags_none: list[str]
    created: tuple[int, int] | None
    needle: str | None
    record_filters: dict[str, list[Any]]
    indexed_filters: dict[str, tuple[str, list[str]]]  # the metadata filters among ``parts``, by key


def _parse(args: Args) -> Request:
    query = args.text("query", "", max_len=1000) or ""
    filters = _metadata_filters(args.mapping("metadata_filters"))
    limit = args.integer("limit", accepted="-1 for no limit, or at least 1")
    if limit == 0:
        raise InvalidInput("limit", "must be -1 for no limit, or at least 1; got 0")
    offset = args.integer("offset")
    created = _created_range(args)
    tags_any, tags_all, tags_none = (_tags(args, name) for name in ("tags_any", "tags_all", "tags_none"))
    by_importance = args.flag("sort_by_importance")
    mode = args.choice("content_mode")
    preview_chars = args.integer("preview_chars")
    fields = _fields(args.str_list("fields"), mode)
    follow = args.choice("follow")
    return Request(query, filters, limit, offset, created, tags_any, tags_all, tags_none, by_importance,
                   preview_chars, fields, follow, as_of_param(args), args.raw)


def _ended(windows: Windows, doc: int) -> dict[str, Any]:
    """``ended: true`` on the row of a note no longer true now (docs/vault-format.md, "Validity")."""
    return {"ended": True} if windows.marks(doc) else {}


def _plan(request: Request) -> Plan:
    parts: list[tuple[str, list[str]]] = []
    if request.tags_any:
        parts.append(("tags", request.tags_any))
    parts += [("tags", [t]) for t in request.tags_all]
    record_filters: dict[str, list[Any]] = {}
    indexed_filters: dict[str, tuple[str, list[str]]] = {}
    for key, values in request.filters.items():
        indexed = _indexed_filter(key, values)
        if indexed is not None:
            parts.append(indexed)
            indexed_filters[key] = indexed
        else:
            record_filters[key] = values
    query = request.query
    needle = query.lower() if query.strip() and not is_word(query) else None
    return Plan(query, parts, request.tags_none, request.created, needle, record_filters, indexed_filters)


@dataclass(frozen=True)
class Matching:
    """The documents the index admits: ``docs`` (None: every live note) and ``ordered``, the same
    in listing order (lazy: read as far as the page, or whole by a lineage mode that needs every
    hit), by ``key``; ``candidates``: what the query's words matched (None without a query)."""

    candidates: set[int] | None
    docs: list[int] | None
    ordered: Iterable[int]
    key: Callable[[int], tuple[Any, ...]]


def _matching_in_order(view: View, request: Request, plan: Plan) -> Matching:
    candidates = _query_candidates(view, plan.query) if plan.query.strip() else None
    docs: list[int] | None = None  # None: every live note
    if plan.parts or plan.tags_none:
        docs = _docs_matching(view, plan.parts, plan.tags_none)
        if candidates is not None:
            docs = [d for d in docs if d in candidates]
    elif candidates is not None:
        docs = sorted(candidates)
    if plan.created is not None:
        # the cached column, not a NumericRange query, which walks the index (docs/perf/date-columns.md)
        column, (lo, hi) = view.snapshot.column("created"), plan.created
        docs = [d for d in (view.snapshot.all_docs() if docs is None else docs)
                if column[d] is not None and lo <= column[d] <= hi]
    order_key = view.snapshot.listing_key(request.by_importance)
    if docs is None:  # every live note: each segment's cached order, merged as far as it is read
        return Matching(candidates, None, view.snapshot.every_in_listing_order(request.by_importance), order_key)
    return Matching(candidates, docs, view.snapshot.in_listing_order(docs, request.by_importance), order_key)


def _record_check(view: View, plan: Plan) -> Callable[[int], bool]:
    """The checks the index cannot make, run lazily, in order, only as far as the page."""
    needle, record_filters = plan.needle, plan.record_filters

    def passes(doc: int) -> bool:
        if needle is not None and not _contains(view, doc, needle):
            return False
        return not record_filters or _matches(view.snapshot.record(doc), record_filters)

    return passes


def _answer(request: Request, rows: list[dict[str, Any]], more: bool, warnings: list[str],
            why_none: Callable[[], list[str]], bound: int) -> dict[str, Any]:
    """The answer; ``why_none`` gives the hints of an empty one (docs/tools.md, "Hints on a miss");
    ``bound``: the ``max_answer_chars`` setting."""
    answer: dict[str, Any] = {"status": "ok" if rows else "none", "count": len(rows), "memories": rows}
    if more:
        end = request.offset + len(rows)
        answer["next_offset"] = end
        if request.limit == -1 or len(rows) < request.limit:
            warnings.append(bound_message(f"{len(rows)} memories", end, bound))
    if not rows:
        answer["message"] = (f"offset {request.offset} is past the last memory matching these filters"
                             if request.offset else "no memory matches these filters")
        hints = [] if request.offset else why_none()
        if hints:
            answer["hints"] = hints
    if warnings:
        answer["warnings"] = warnings
    return answer


def _miss(view: View, request: Request, plan: Plan, candidates: set[int] | None) -> ListMiss:
    """What an empty call was asked, for its hints."""
    record_filters = plan.record_filters
    return ListMiss(request.query, plan.needle, candidates, request.tags_any, request.tags_all, request.tags_none,
                    request.filters, plan.indexed_filters, request.created, request.raw,
                    lambda d, n: _contains(view, d, n),
                    lambda d: _matches(view.snapshot.record(d), record_filters) if record_filters else True)


# -- parameters ---------------------------------------------------------------------


def _metadata_filters(raw: dict[str, Any] | None) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for key, value in (raw or {}).items():
        if not isinstance(key, str) or not key.strip():
            raise InvalidInput("metadata_filters", "keys must be non-empty frontmatter key names")
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, dict | list):
                raise InvalidInput("metadata_filters", f"the value of {key[:60]!r} must be a scalar "
                                   "(must equal) or a list of scalars (any of), not a nested object or list")
        out[key.strip()] = values
    return out


def _created_range(args: Args) -> tuple[int, int] | None:
    """Inclusive epoch-second bounds on ``created`` from date_from and date_to."""
    texts = {name: args.text(name, max_len=100) for name in ("date_from", "date_to")}
    if texts["date_from"] is None and texts["date_to"] is None:
        return None
    lo, hi = -(2**63), 2**63 - 1
    if texts["date_from"] is not None:
        start = parse_period(texts["date_from"], "date_from", relative=True)
        lo = epoch_bounds(start.start, start.end)[0]
    if texts["date_to"] is not None:
        end = parse_period(texts["date_to"], "date_to", relative=True)
        hi = epoch_bounds(end.start, end.end)[1] - 1  # the period's end is exclusive
    if lo > hi:
        raise InvalidInput("date_from", f"{texts['date_from']!r} is after date_to {texts['date_to']!r}: "
                           "date_from must not be later than date_to")
    return lo, hi


def _tags(args: Args, name: str) -> list[str]:
    values = args.str_list(name) or []
    return [t for t in (normalize_tag(v) for v in values) if t]


def _fields(requested: list[str] | None, mode: str) -> tuple[str, ...]:
    other = "content_preview" if mode == "full" else "content"
    if requested is None:
        return tuple(f for f in ROW_FIELDS if f != other)
    wanted = [f.strip() for f in requested if f.strip()]
    unknown = [f for f in wanted if f not in ROW_FIELDS]
    if unknown:
        raise InvalidInput("fields", f"unknown field {unknown[0][:60]!r}; accepted: {', '.join(ROW_FIELDS)}")
    if other in wanted:
        raise InvalidInput("fields", f"{other!r} does not come with content_mode={mode!r}: "
                           "content_preview comes with 'preview', content with 'full'")
    return tuple(dict.fromkeys(["id", *wanted]))


# -- filtering ----------------------------------------------------------------------


def _query_candidates(view: View, query: str) -> set[int] | None:
    """Documents that may hold ``query`` in title or body (exact when it is one word); None
    when it has no word characters (every note is then checked on its text).

    Each word's expansions are looked up term by term (``term_docs``): a Whoosh union of
    hundreds of expanded terms walks every segment in blocks whether or not they occur there.
    """
    needles = [query] if is_word(query) else list(dict.fromkeys(words(query)))
    if not needles:
        return None
    found: set[int] | None = None
    for needle in needles:
        needle = needle.lower()
        docs: set[int] = set()
        for field in ("title", "body"):
            docs.update(view.snapshot.docs_containing(field, needle))
        found = docs if found is None else found & docs
        if not found:
            break
    return found


def _contains(view: View, doc: int, needle: str) -> bool:
    rec = view.snapshot.record(doc)
    if any(needle in t.lower() for t in [rec["title"], *rec.get("aliases", [])]):
        return True
    head = str(rec.get("head", ""))
    # the stored head is the whole body when the body is short: no need to open the file
    body = head if int(rec.get("body_chars", 0)) <= len(head) else view.body(rec)
    return needle in body.lower()


def _docs_matching(view: View, parts: list[tuple[str, list[str]]], tags_none: list[str]) -> list[int]:
    """The live documents holding a term of every part and none of the ``tags_none``, ascending."""
    found: set[int] | None = None
    for field, terms in parts:
        docs = set(view.snapshot.term_docs(field, terms))
        found = docs if found is None else found & docs
    excluded = set(view.snapshot.term_docs("tags", tags_none)) if tags_none else set()
    if found is None:
        return [d for d in view.snapshot.all_docs() if d not in excluded]
    return sorted(found - excluded)


def _indexed_filter(key: str, values: list[Any]) -> tuple[str, list[str]] | None:
    """The (field, terms) part a metadata filter is, when the index holds its field exactly."""
    field = CORE_KEYS.get(key.lower())
    exact = FIELD[field].exact if field is not None and field in FIELD else None
    if field is None or exact is None or not all(isinstance(v, str) for v in values):
        return None
    terms = [exact.query(v) for v in values]
    if exact.only and not all(t in exact.only for t in terms):
        return None  # a value the index does not hold (a status kept in metadata): the record decides
    return field, terms


def _matches(record: dict[str, Any], filters: dict[str, list[Any]]) -> bool:
    for key, values in filters.items():
        wanted = {_norm(v) for v in values}
        field = CORE_KEYS.get(key.lower())
        candidates: list[Any] = []
        if field is not None:
            candidates.append(record.get(field))
        metadata = record.get("metadata") or {}
        candidates += [v for k, v in metadata.items() if k == key or k.lower() == key.lower()]
        if field is None and not candidates:
            candidates.append(None)
        if not any(_norm(item) in wanted for value in candidates for item in _items(value)):
            return False
    return True


def _items(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value or [None]
    return [value]


def _norm(value: Any) -> str | float | None:
    """The comparison form of a filter or frontmatter value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip().lower()
    try:
        number = float(text)
    except ValueError:
        return text if text not in ("", "null", "~") else None
    return number if math.isfinite(number) else text


# -- order and lineage --------------------------------------------------------------


def _follow(lineage: Lineage, ordered: Iterable[int], docs: list[int] | None, passes: Callable[[int], bool],
            follow: str, key: Callable[[int], tuple[Any, ...]], warnings: list[str]) -> Iterator[int]:
    """The hits in answer order, after the lineage mode; lazy where the mode allows. ``ordered``
    is the matches in listing order; ``docs`` the same as a list, or None when every live note
    matches (then only the modes ``all`` and ``active`` are asked for)."""
    if follow == "all" or not lineage.has_edges():
        return (d for d in ordered if passes(d))
    if follow == "active":
        superseded = lineage.superseded_docs()
        if docs is not None:
            superseded &= set(docs)
        hidden = {d for d in superseded if passes(d)}
        if hidden:
            warnings.append(f"{len(hidden)} superseded memories hidden; "
                            "follow='latest' gives their current versions, follow='all' shows them")
        return (d for d in ordered if d not in hidden and passes(d))
    hits = [d for d in ordered if passes(d)]
    if follow == "latest":
        return iter(sorted({v for d in hits for v in lineage.latest(d)}, key=key))
    seen: set[int] = set()  # full_history: each hit's chain, oldest first, at its first hit
    out: list[int] = []
    for d in hits:
        if d in seen:
            continue
        for member in lineage.history(d):
            if member not in seen:
                seen.add(member)
                out.append(member)
    return iter(out)
