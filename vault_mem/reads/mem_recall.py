"""``mem_recall`` (docs/tools.md): memories *created* in ``[since, until)``, newest first (ties by
path ascending), as heading chunks (see ``chunks``), ``limit`` and ``offset`` counting chunks.

Decisions where docs/tools.md leaves room:

- ``source_filter`` globs follow ``fnmatch``: ``*`` crosses ``/`` (``notes/*`` matches
  ``notes/a/b.md``), matching is case-insensitive and the whole path must match, with or
  without its ``.md``. Without ``*``, ``?`` or ``[`` it is a case-insensitive substring.
- ``namespace``/``scope`` compare case-insensitively. A glob brings back ``archive:``
  namespaces only when it itself starts ``archive:`` (``*`` does not name them); the
  hidden ones are reported in ``hints``.
- Scope: when the server has a project, the ``project_*`` tiers it returns (by default or
  when asked for) are that project's only.
- ``count`` is the number of chunks in this answer; the total is never computed (that would
  chunk every matching note), ``next_offset`` says whether more follow.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.reads.chunks import Chunk, ChunkCache, chunk_body
from vault_mem.reads.dates import epoch_bounds, parse_period
from vault_mem.reads.misses import echo, range_hint, tag_hints
from vault_mem.reads.rows import bound_message, cut_message, fit_row, snippet
from vault_mem.served.context import View, json_size, take_within
from vault_mem.served.params import OFFSET, Args, choice_param, int_param, text_param
from vault_mem.vault.dates import iso
from vault_mem.vault.fields import fold, normalize_tag

FORMATS = ("compact", "structured")
PARAMS = (
    text_param("since", "Start: YYYY, YYYY-MM, YYYY-MM-DD or ISO datetime."),
    text_param("until", "Exclusive end; a partial date includes its period."),
    text_param("source_filter", "Path substring, or a glob of the whole path."),
    text_param("tag_filter", "Comma-separated tags, any of them."),
    text_param("namespace", "One namespace, a comma list, or one glob ('project:*')."),
    text_param("scope", "One scope, a comma list, or one glob."),
    int_param("limit", "Chunks per page.", default=20, minimum=1, maximum=500),
    OFFSET,
    choice_param("output_format", "compact: readable text; structured: chunk rows.", FORMATS, default="compact"),
)
ARCHIVE = "archive:"
_GLOB = re.compile(r"[*?\[]")
_CACHE = ChunkCache()


@dataclass
class Picked:
    docnum: int
    index: int
    chunk: Chunk


def mem_recall(view: View, raw: dict[str, Any]) -> dict[str, Any]:
    args = Args(raw, PARAMS, view.config)
    limit = args.integer("limit")
    offset = args.integer("offset")
    output = args.choice("output_format")
    hints: list[str] = []
    window = _created_window(args, hints)
    source = _source_matcher(args.text("source_filter", max_len=1000))
    tags = _list_param(args, "tag_filter")

    filters: list[DocSet] = []
    if tags is not None:
        tags = [normalize_tag(t) for t in tags]
        filters.append(DocSet(set(view.snapshot.term_docs("tags", tags))))
        hints += tag_hints(view, tags, "tag_filter")
    filters += _scope_filters(view, _list_param(args, "scope"), hints)
    namespace, hidden = _namespace_filter(view, _list_param(args, "namespace"), hints)

    docs = _matching(view, None, window, [*filters, namespace], source)
    if hidden:
        candidates = view.snapshot.term_docs("namespace", hidden)
        _hidden_hint(view, _matching(view, candidates, window, filters, source), hints)
    if not docs:
        hints += _why_nothing(view, window, source, args, explained=any("matched no" in h for h in hints))
        return _answer("none", output, [], hints, None)
    docs = view.snapshot.sort_newest(docs, "created")
    picked, more = _page(view, docs, offset, limit)
    if not picked:
        hints.append(f"offset {offset} is past the last chunk; start again from offset 0")
        return _answer("none", output, [], hints, None)
    rendered = [(_compact_block if output == "compact" else _row)(view, p) for p in picked]
    # Hints can echo long filter values: the rows get what the hints leave of the budget.
    fitted = take_within(rendered, view.config.row_budget - json_size(hints))
    cut = [r["chunk_id"] for r in rendered[:fitted] if isinstance(r, dict) and "truncated_fields" in r]
    if cut:
        hints.append(cut_message(cut, view.config.max_answer_chars))
    next_offset = offset + fitted if (fitted < len(picked) or more) else None
    if fitted < len(picked):
        hints.append(bound_message(f"{fitted} of {limit} chunks", next_offset, view.config.max_answer_chars))
    elif more:
        hints.append(f"limit {limit} reached: more chunks follow from offset {next_offset}")
    return _answer("ok", output, rendered[:fitted], hints, next_offset)


@dataclass
class DocSet:
    """The documents one filter admits: ``docs``, or, when ``exclude``, all but ``docs``
    (whichever side is smaller: reading 10,000 postings costs milliseconds)."""

    docs: set[int]
    exclude: bool = False

    def admits(self, docnum: int) -> bool:
        return (docnum in self.docs) != self.exclude


def _created_window(args: Args, hints: list[str]) -> tuple[int | None, int | None] | None:
    """``[lo, hi)`` in epoch seconds from since/until: a partial until ends after its period."""
    since_text = args.text("since", max_len=100)
    until_text = args.text("until", max_len=100)
    start = end = None
    if since_text is not None:
        start = parse_period(since_text, "since").start
    if until_text is not None:
        period = parse_period(until_text, "until")
        end = period.end if period.partial else period.start
        if period.partial:
            hints.append(f"until={until_text.strip()} resolved to {iso(end)} (exclusive)")
    if start is not None and end is not None and start >= end:
        raise InvalidInput("since", f"since={since_text!s} ({iso(start)}) must be before until={until_text!s} "
                           f"({iso(end)}); accepted: YYYY, YYYY-MM, YYYY-MM-DD or ISO datetime")
    if start is None and end is None:
        return None
    lo = epoch_bounds(start, start)[0] if start is not None else None
    hi = epoch_bounds(end, end)[0] if end is not None else None
    return lo, hi


def _source_matcher(text: str | None) -> Callable[[str], bool] | None:
    if text is None:
        return None
    needle = fold(text.strip())
    if not needle:
        raise InvalidInput("source_filter", "must not be empty: a path substring or a glob (*, ?, [)")
    if not _GLOB.search(needle):
        return lambda path: needle in fold(path)
    pattern = re.compile(fnmatch.translate(needle), re.DOTALL)

    def matches(path: str) -> bool:
        folded = fold(path)
        return bool(pattern.match(folded) or (folded.endswith(".md") and pattern.match(folded[:-3])))

    return matches


def _list_param(args: Args, name: str) -> list[str] | None:
    """A comma list (one value, several, or one glob); a list holding a glob is invalid."""
    text = args.text(name, max_len=2000)
    if text is None:
        return None
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise InvalidInput(name, "must name at least one value: one value, a comma list, or one glob")
    if name != "tag_filter" and len(items) > 1 and any(_GLOB.search(i) for i in items):
        raise InvalidInput(name, f"{text!r} mixes a list with a glob; accepted: one value, a comma list "
                           "of values, or one glob (such as 'project:*')")
    return items


def _field_in(view: View, field: str, values: list[str]) -> DocSet:
    """Documents whose ``field`` is one of ``values``, read from the smaller side."""
    wanted = set(values)
    others = [t for t in view.snapshot.lexicon(field) if t not in wanted]
    inside = sum(view.snapshot.doc_frequency(field, v) for v in wanted)
    outside = sum(view.snapshot.doc_frequency(field, t) for t in others)
    if not others:  # every indexed value is wanted
        return DocSet(set(), exclude=True)
    if inside <= outside:
        return DocSet(set(view.snapshot.term_docs(field, wanted)) if wanted else set())
    return DocSet(set(view.snapshot.term_docs(field, others)), exclude=True)


def _selection(view: View, field: str, items: list[str], hints: list[str]) -> tuple[list[str], bool]:
    """The indexed values ``items`` name (a glob expanded against the field's terms, with a
    hint when it names none; a value naming no memory gets a hint too), and whether it was a glob."""
    if len(items) == 1 and _GLOB.search(items[0]):
        glob = re.compile(fnmatch.translate(fold(items[0])), re.DOTALL)
        values = [t for t in view.snapshot.lexicon(field) if glob.match(t)]
        if not values:
            hints.append(f"{field} glob {items[0]!r} matched no {field}")
        return values, True
    values = list(dict.fromkeys(fold(i) for i in items))
    hints += [f"{field} {v!r} matched no memory" for v in values if not view.snapshot.has_term(field, v)]
    return values, False


def _namespace_filter(view: View, items: list[str] | None, hints: list[str]) -> tuple[DocSet, list[str]]:
    """The namespace filter, and the archive namespaces it hides (docs/tools.md: only a value or a glob
    naming them, ``archive:old`` or ``archive:*``, brings them back)."""
    if items is None:
        named = view.snapshot.lexicon("namespace")
        glob = True
    else:
        named, glob = _selection(view, "namespace", items, hints)
    if glob and not (items and fold(items[0]).startswith(ARCHIVE)):
        hidden = [n for n in named if n.startswith(ARCHIVE)]
        return _field_in(view, "namespace", [n for n in named if not n.startswith(ARCHIVE)]), hidden
    return _field_in(view, "namespace", named), []


def _scope_filters(view: View, items: list[str] | None, hints: list[str]) -> list[DocSet]:
    """Default scope: ``user`` plus, in a project, its ``project_*`` tiers; when the server has a
    project, the project tiers are that project's only, asked for or not."""
    project = fold(view.vault.project) if view.vault.project else None
    if items is None:
        scopes = ["user", "project_shared", "project_local"] if project else ["user"]
    else:
        scopes, _glob = _selection(view, "scope", items, hints)
    filters = [_field_in(view, "scope", scopes)]
    tiers = [s for s in scopes if s.startswith("project_")]
    if project and tiers:
        in_tiers = set(view.snapshot.term_docs("scope", tiers))
        theirs = in_tiers - set(view.snapshot.term_docs("project", [project]))
        filters.append(DocSet(theirs, exclude=True))
    return filters


def _matching(view: View, docs: list[int] | None, window: tuple[int | None, int | None] | None,
              filters: list[DocSet], source: Callable[[str], bool] | None) -> list[int]:
    """The documents of ``docs`` (None: every live one) the window, filters and source admit, ascending."""
    if window is not None:
        lo, hi = window
        if docs is None:  # per-segment created order, cached: a bisect, not a pass over every note
            docs = view.snapshot.docs_in_range("created", lo, hi)
        else:
            created = view.snapshot.column("created")
            docs = [d for d in docs if (lo is None or created[d] >= lo) and (hi is None or created[d] < hi)]
    elif docs is None:
        docs = view.snapshot.all_docs()
    for f in filters:
        if f.exclude and not f.docs:
            continue  # admits everything
        docs = [d for d in docs if f.admits(d)]
    if source is not None:
        paths = view.snapshot.column("path")
        docs = [d for d in docs if paths[d] and source(paths[d])]
    return docs


class _Chunker:
    """Chunks and chunk counts of one call's notes, through the module's cache.

    Counts are keyed by the note's indexed version (``Snapshot.indexed_version``), which names
    it without reading its stored record."""

    def __init__(self, view: View) -> None:
        self.view = view

    def count_key(self, docnum: int) -> tuple[Any, int]:
        return self.view.snapshot.indexed_version(docnum)

    def chunks(self, docnum: int) -> list[Chunk]:
        record = self.view.snapshot.record(docnum)
        key = (record["path"], record["etag"])
        chunks = _CACHE.get(key)
        if chunks is None:
            chunks = chunk_body(self.view.body(record), self.view.config.chunk_chars)
        _CACHE.put(key, chunks, self.count_key(docnum), self.view.config)
        return chunks

    def count(self, docnum: int) -> int:
        count = _CACHE.count(self.count_key(docnum))
        return count if count is not None else len(self.chunks(docnum))


def _page(view: View, docs: list[int], offset: int, limit: int) -> tuple[list[Picked], bool]:
    """Chunks ``[offset, offset + limit)`` of the notes in order, and whether more follow.
    Earlier notes are only counted (from the cache when seen before)."""
    chunker = _Chunker(view)
    picked: list[Picked] = []
    position = 0
    for i, d in enumerate(docs):
        n = chunker.count(d)
        if position + n <= offset:
            position += n
            continue
        chunks = chunker.chunks(d)
        for index in range(max(0, offset - position), len(chunks)):
            if len(picked) == limit:
                return picked, True
            picked.append(Picked(d, index, chunks[index]))
        position += len(chunks)
        if len(picked) == limit:
            return picked, i + 1 < len(docs)
    return picked, False


def _row(view: View, p: Picked) -> dict[str, Any]:
    rec = view.snapshot.record(p.docnum)
    row: dict[str, Any] = {
        "chunk_id": f"{rec['uid']}#{p.index}",
        "uid": rec["uid"],
        "permalink": view.permalink(rec["path"]),
        "namespace": rec["namespace"],
        "scope": rec["scope"],
        "source": rec["path"],
        "hierarchy": list(p.chunk.hierarchy),
        "content": p.chunk.content,
        "created": rec["created"],
        "tags": rec["tags"],
        "status": rec["status"],
    }
    fit_row(row, view.config.row_fields_budget)
    return row


def _compact_block(view: View, p: Picked) -> str:
    config = view.config
    rec = view.snapshot.record(p.docnum)
    where = f" | {snippet(' > '.join(p.chunk.hierarchy), config.compact_chars)}" if p.chunk.hierarchy else ""
    header = f"[{rec['created']}] {view.permalink(rec['path'])}#{p.index}{where}"
    return f"{header}\n{snippet(p.chunk.content, config.compact_chars) or '(no text)'}"


def _answer(status: str, output: str, rendered: list[Any], hints: list[str],
            next_offset: int | None) -> dict[str, Any]:
    answer: dict[str, Any] = {"status": status, "kind": "recall", "count": len(rendered)}
    if output == "compact":
        answer["text"] = "\n\n".join(rendered) if rendered else "no memories recalled"
    else:
        answer["results"] = rendered
    if hints:
        answer["hints"] = hints
    if next_offset is not None:
        answer["next_offset"] = next_offset
    return answer


def _hidden_hint(view: View, docs: list[int], hints: list[str]) -> None:
    if not docs:
        return
    per: dict[str, list[int]] = {}
    for d in docs:
        per.setdefault(view.snapshot.record(d)["namespace"], []).append(d)
    exact = len(docs) <= view.config.hidden_count_cap
    chunker = _Chunker(view)
    parts = []
    for name in sorted(per):
        notes = per[name]
        size = f"{sum(chunker.count(d) for d in notes)} chunks" if exact else f"{len(notes)} memories"
        parts.append(f"{name} ({size})")
    hints.append(f"hidden archive namespaces: {', '.join(parts)}; name them (namespace='archive:*' "
                 "or one by name) to include them")


def _why_nothing(view: View, window: tuple[int | None, int | None] | None,
                 source: Callable[[str], bool] | None, args: Args, explained: bool) -> list[str]:
    """Which filter, taken alone, matched nothing (tag, namespace and scope values that name no
    memory are reported as they are read: ``explained`` says one was)."""
    config = view.config
    out: list[str] = []
    if window is not None and not _matching(view, None, window, [], None):
        lo, hi = window
        names = [f"{n} {echo(str(args.raw[n]), config=config)}" if args.raw.get(n) is not None else "any date"
                 for n in ("since", "until")]
        out.append(range_hint(view, "created", lo, None if hi is None else hi - 1, *names))
    if source is not None and not _matching(view, None, None, [], source):
        out.append(f"source_filter {args.raw['source_filter']!r} matched no path in the vault")
    if not out and not explained:
        out.append("no memory matches all the filters together")
    return out
