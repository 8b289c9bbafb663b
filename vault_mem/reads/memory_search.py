"""``memory_search`` (docs/tools.md): notes by free text, kind, tag, code path and time, as digests.

Terms are the query's word runs, matched as case-insensitive substrings of the title (and
aliases), the permalink's path (``memory://`` itself is not searched: every note has it),
the tags and the body, by the term itself or its English stem. Best match first: the score
(``ranking``: each word form's rarity times its field-weighted hits, +10 for every term, exact first) is
computed from the index's lexicons and postings, only for the notes that can reach the page
(``topk``: the same page as scoring every match), so records are loaded only for the page,
and bodies are read from disk only for the page's excerpts; ties go to the most recently
updated note, then the path. With no query the most recently updated notes come back,
score 0.

Answer: ``{status, count, notes:[digest], truncated, message?}``; ``count`` is the number of
digests in the answer, ``truncated`` says that more notes matched than were returned
(the limit, or the 40,000-character bound, hid them), and ``message`` says why whenever
something was clamped, dropped or shortened. The server adds the calling agent's ``inbox``
and ``inbox_more`` (``served/mailbox.py``).
"""

from __future__ import annotations

import datetime as dt
import heapq
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.reads.chains import Row, regroup
from vault_mem.reads.excerpts import excerpt_around
from vault_mem.reads.lineage import FOLLOWS, Lineage
from vault_mem.reads.misses import (
    Filter,
    did_you_mean,
    echo,
    newest_value,
    present_kinds,
    search_term_hints,
    tag_hints,
    why_empty,
)
from vault_mem.reads.rows import bound_message
from vault_mem.reads.validity import AS_OF, AsOf, Windows, as_of_param, left_out_message
from vault_mem.search.api import (
    Fused,
    Ranked,
    best_notes,
    fused_notes,
    match_forms,
    ranked_newest_key,
    score_notes,
    scores_of,
    search_terms,
)
from vault_mem.served.context import View, json_size, take_within
from vault_mem.served.params import AGENT, Args, Setting, choice_param, int_param, text_param
from vault_mem.settings import Settings
from vault_mem.vault.fields import normalize_tag
from vault_mem.vault.names import path_prefixes
from vault_mem.vault.note import KNOWN_TYPES

# A tool's parameters are its published schema; a bound that is a setting (``Setting``) is read from the
# serving index's settings, for the schema and for each call.
PARAMS = (
    AGENT,
    text_param("query", "Free text. Omit for recent activity."),
    text_param("tag", "Only notes with this tag."),
    text_param("kind", "Only notes of this kind (type)."),
    text_param("path", "Only notes whose code paths overlap it."),
    int_param("limit", "Above 50 means 50.", default=Setting("search_default_limit"), minimum=1),
    text_param("since", "RFC 3339; notes updated at or after it."),
    choice_param("follow", "Lineage mode.", FOLLOWS, default="active"),
    AS_OF,
)
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def memory_search(view: View, raw: dict[str, Any]) -> dict[str, Any]:
    """Search notes; see the module docstring. Bad input raises InvalidInput (-> ``invalid``).

    Five steps: the parameters (``_parse``), the filters and search terms (``_plan``), the
    candidates and their scores (``_matches``), the page in rank order (``_page``), and the
    answer of digests (``_answer``)."""
    request = _parse(Args(raw, PARAMS, view.config), view.config)
    messages = list(request.messages)
    plan = _plan(view, request, messages)
    if plan is None:
        return _none([*messages, f"query {request.query[:60]!r} holds no letters or digits to search for"])
    whole = lineage = Lineage(view)
    windows = Windows(view, lineage)
    if request.as_of is not None:  # the versions current then: the others, and their edges, are out
        plan = Plan(plan.filters, plan.terms, windows.not_current(request.as_of.at))
        lineage = whole.without(plan.gone)
    matches = _matches(view, request, plan)
    hints = search_term_hints(view, plan.terms) if plan.terms else []  # a whole-token lookup per term when held
    page, truncated = _page(view, request, matches)
    if not page:  # a pruned page scored only what could reach it: the hints need every match
        scores = matches.scores if matches.ranked is None else score_notes(view.snapshot, plan.terms)
        found = set(scores) if request.query else None
        if plan.gone and found:
            messages.append(left_out_message(len(found & plan.gone), request.as_of))  # type: ignore[arg-type]
        return _none(messages, hints + _why_no_notes(view, request, found))
    # Whatever stages made the order (words alone, or fused with meaning), the lineage rules apply
    # to it: current versions first, older ones folded (docs/ranking.md).
    rows, truncated, matches = _chained(view, request, plan, matches, lineage, whole, page, truncated)
    if plan.gone and request.as_of is not None:
        left_out = _left_out(view, request, plan)
        if left_out:
            messages.append(left_out_message(left_out, request.as_of))
    answer = _answer(view, rows, truncated, plan.terms, messages, hints, whole, windows, matches.excerpts)
    if isinstance(matches.ranked, Fused):
        _mark_meaning(view, answer["notes"], [r.doc for r in rows], matches.ranked)
    return answer


@dataclass(frozen=True)
class Request:
    """memory_search's parameters, validated (``messages``: what was clamped)."""

    query: str
    tag: str
    kind: str
    path: str
    since_text: str  # as given, for the hints to echo
    since: int | None  # epoch seconds
    limit: int
    messages: tuple[str, ...]
    follow: str = "active"
    as_of: AsOf | None = None


@dataclass(frozen=True)
class Plan:
    """The index terms every note must hold, the search terms (none: the newest notes), and the
    notes ``as_of`` leaves out."""

    filters: list[tuple[str, str]]  # (field, term)
    terms: list[str]
    gone: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Matches:
    """The candidates (with their scores) or, with no query, the first ``limit + 1`` newest."""

    candidates: list[int]
    scores: dict[int, float]
    newest: list[int] | None  # set when the newest answered directly (one more: whether more follow)
    ranked: Ranked | None = None  # set when only what can reach the page was scored (search/topk.py)
    excerpts: dict[int, str] = field(default_factory=dict)  # made while the query was embedded


def _parse(args: Args, config: Settings) -> Request:
    args.agent()
    query = (args.text("query", "") or "").strip()
    tag = _tag(args.text("tag", "", max_len=1000) or "")
    kind = (args.text("kind", "", max_len=200) or "").strip().lower()
    path = _code_path(args.text("path", "", max_len=4000) or "")
    since_text = (args.text("since", "", max_len=100) or "").strip()
    since = _since(since_text)
    limit = args.integer("limit", accepted=f"from 1 to {config.search_max_limit}")
    messages: tuple[str, ...] = ()
    if limit > config.search_max_limit:
        messages = (f"limit {limit} is above the maximum; clamped to {config.search_max_limit}",)
        limit = config.search_max_limit
    return Request(query, tag, kind, path, since_text, since, limit, messages, args.choice("follow"),
                   as_of_param(args))


def _plan(view: View, request: Request, messages: list[str]) -> Plan | None:
    """The plan, or None when the query holds nothing to search for."""
    filters: list[tuple[str, str]] = []  # every one required
    if request.kind:
        _check_kind(view, request.kind)
        filters.append(("type", request.kind))
    if request.tag:
        filters.append(("tags", request.tag))
    terms: list[str] = []
    if request.query:
        terms, dropped = search_terms(request.query, view.config)
        if not terms:
            return None
        if dropped:
            messages.append("ignored short or common words: " + ", ".join(dropped[:20]))
    return Plan(filters, terms)


def _matches(view: View, request: Request, plan: Plan) -> Matches:
    filters = plan.filters
    scores: dict[int, float] = {}
    newest: list[int] | None = None
    if plan.terms:
        if not request.path:  # only what can reach the page is scored (search/topk.py)
            allowed = _allowed(view, filters, request.since)
            if plan.gone:
                allowed = (set(view.snapshot.all_docs()) if allowed is None else allowed) - plan.gone
            meaning = view.vault.meaning
            if meaning is not None:  # a model is loaded: fused with the nearest by meaning (search/fusion.py)
                excerpts: dict[int, str] = {}
                forms = match_forms(plan.terms, view.config)

                def meanwhile(docs: list[int]) -> None:
                    excerpts.update((d, _excerpt(view, d, forms)) for d in docs)

                fused = fused_notes(view.snapshot, meaning, request.query, plan.terms, request.limit, allowed,
                                    meanwhile=meanwhile)
                return Matches([], fused.scores, None, fused, excerpts)
            ranked = best_notes(view.snapshot, plan.terms, request.limit, allowed)
            return Matches([], ranked.scores, None, ranked)
        scores = score_notes(view.snapshot, plan.terms)  # overlap is checked on records, in rank order
        candidates = list(scores)
    else:
        scope = view.snapshot.docs_where(filters) if filters else None  # None: every live note
        filters = []
        if not request.path:  # read from each segment's cached date order, not by ranking every note
            keep = None if scope is None else set(scope).__contains__
            if plan.gone:
                gone, inner = plan.gone, keep
                keep = (lambda d: d not in gone) if inner is None else (lambda d: d not in gone and inner(d))
            newest = view.snapshot.newest("updated", request.limit + 1, keep, request.since)
        # Ranked later only when that did not answer (a path, or fewer notes than limit + 1).
        candidates = [] if newest is not None else view.snapshot.all_docs() if scope is None else scope
    if filters and candidates:
        allowed = set(view.snapshot.docs_where(filters))
        candidates = [d for d in candidates if d in allowed]
    if plan.gone:
        candidates = [d for d in candidates if d not in plan.gone]
    if request.since is not None:  # the column, not a NumericRange query (docs/perf/date-columns.md)
        updated, since = view.snapshot.cells("updated"), request.since
        candidates = [d for d in candidates if updated[d] is not None and updated[d] >= since]
    return Matches(candidates, scores, newest)


def _rank(view: View, scores: dict[int, float], ranked: Ranked | None = None) -> Callable[[int], tuple[Any, ...]]:
    """The rank order: score, then newest first; for a fused page (``ranked``), its order first
    (the notes off the page after it, by score). From cells, not whole columns: a query's
    candidates are often a handful, and the first search after a start (or a commit) would
    otherwise read two columns of every note."""
    by_score = ranked_newest_key(scores, view.snapshot.cells("updated"), view.snapshot.cells("path"))
    if not isinstance(ranked, Fused):
        return by_score
    place = {d: i for i, d in enumerate(ranked.page)}
    off_page = len(place)
    return lambda d: (place.get(d, off_page), *by_score(d))


def _page(view: View, request: Request, matches: Matches) -> tuple[list[int], bool]:
    """The first ``limit`` matches in rank order, and whether more matched."""
    limit, candidates, scores = request.limit, matches.candidates, matches.scores
    if matches.ranked is not None:
        return matches.ranked.page, matches.ranked.truncated
    if matches.newest is not None:
        return matches.newest[:limit], len(matches.newest) > limit
    rank = _rank(view, scores)
    if request.path and candidates:
        return _overlapping_page(view, candidates, request.path, rank, limit)
    page = heapq.nsmallest(limit, _contenders(candidates, scores, limit), key=rank)
    return page, len(candidates) > len(page)


def _left_out(view: View, request: Request, plan: Plan) -> int:
    """How many notes the search would match but ``as_of`` leaves out (the answer says so)."""
    allowed = _allowed(view, plan.filters, request.since)
    gone = [d for d in plan.gone if allowed is None or d in allowed]
    return len(scores_of(view.snapshot, plan.terms, gone)) if plan.terms else len(gone)


def _chained(view: View, request: Request, plan: Plan, matches: Matches, lineage: Lineage, whole: Lineage,
             page: list[int], truncated: bool) -> tuple[list[Row], bool, Matches]:
    """The page as rows by chain (``reads/chains.py``), whether more follow, and the matches last
    read. Rows fold matches, so more matches are read (twice as many each time) until ``limit``
    rows and one more are known or every match is: the page is the start of one row sequence,
    whatever was read."""
    limit, scores = request.limit, matches.scores
    if request.follow == "all" or not whole.has_edges():
        return [Row(d, scores.get(d, 0.0)) for d in page], truncated, matches
    rank = _rank(view, scores, matches.ranked)
    snapshot = view.snapshot
    newest = ranked_newest_key({}, snapshot.cells("updated"), snapshot.cells("path"))  # no score: newest first
    allowed = _allowed(view, plan.filters, request.since)

    def matching(chain: list[int]) -> dict[int, float]:
        members = [d for d in chain if d not in plan.gone and (allowed is None or d in allowed)]
        if not plan.terms:
            return dict.fromkeys(members, 0.0)
        return scores_of(view.snapshot, plan.terms, members)

    def demoted(doc: int) -> bool:
        rec = view.snapshot.record(doc)
        return rec.get("status") == "archived" or bool(rec.get("valid_until") and Windows(view, lineage).marks(doc))

    reach = limit
    while True:
        rows = regroup(page, scores, lineage, request.follow, matching, demoted, rank, newest, whole)
        if len(rows) > limit or not truncated:
            return rows[:limit], len(rows) > limit, matches
        reach *= 2
        wider = replace(request, limit=reach)
        matches = _matches(view, wider, plan)
        page, truncated = _page(view, wider, matches)
        scores = {**scores, **matches.scores}
        rank = _rank(view, scores, matches.ranked)


def _answer(view: View, rows: list[Row], truncated: bool, terms: list[str], messages: list[str],
            hints: list[str], lineage: Lineage, windows: Windows, excerpts: dict[int, str]) -> dict[str, Any]:
    """The page's digests, as many as the size bound leaves room for beside the hints, and what
    was cut or shortened (``excerpts``: those already made, by document)."""
    shortened: dict[str, list[str]] = {"title": [], "tags": [], "paths": []}
    forms = match_forms(terms, view.config)
    notes = [_digest(view, r.doc, r.score, forms, shortened, excerpts.get(r.doc))
             | _lineage_marks(view, r, lineage, windows) for r in rows]
    fitted = take_within(notes, view.config.row_budget - json_size(hints))
    if fitted < len(notes):
        messages.append(bound_message(f"{fitted} of {len(notes)} notes", None, view.config.max_answer_chars))
        notes = notes[:fitted]
        truncated = True
    shown = {n["permalink"] for n in notes}
    cut = [_cut_report(name, [p for p in links if p in shown]) for name, links in shortened.items()]
    if any(cut):
        messages.append("shortened for size (memory_read shows all): " + "; ".join(c for c in cut if c))
    answer: dict[str, Any] = {"status": "ok", "count": len(notes), "notes": notes, "truncated": truncated}
    if messages:
        answer["message"] = "; ".join(messages)
    if hints:
        answer["hints"] = hints
    return answer


def _lineage_marks(view: View, row: Row, lineage: Lineage, windows: Windows) -> dict[str, Any]:
    """What a digest says of its note's versions: the older ones folded into it (how many, and the
    first few), what superseded it, and whether its validity has ended (docs/tools.md)."""
    marks: dict[str, Any] = {}
    shown = view.config.search_older_shown
    if row.older:
        marks["older_count"] = len(row.older)
        marks["older"] = [view.permalink(view.snapshot.record(d)["path"]) for d in row.older[:shown]]
    later = [view.permalink(view.snapshot.record(d)["path"]) for d in lineage.superseders(row.doc)[:shown]]
    # A note of another served vault that supersedes it (memory_supersede across vaults), as written.
    later += [t for t in lineage.dangling(row.doc, "superseded_by") if view.elsewhere(t)][:shown - len(later)]
    if later:
        marks["superseded_by"] = later
    return marks | windows.marks(row.doc)
def _mark_meaning(view: View, notes: list[dict[str, Any]], page: list[int], fused: Fused) -> None:
    """Each row's similarity to the query, and ``found_by: "meaning"`` on a note no word of the
    query is in (its excerpt is the body's start: no word to centre on)."""
    for row, doc in zip(notes, page, strict=False):
        if doc in fused.similarity:
            row["similarity"] = round(fused.similarity[doc], 4)
        if doc in fused.meaning_only:
            row["found_by"] = "meaning"


def _why_no_notes(view: View, request: Request, found: set[int] | None) -> list[str]:
    """The hints of an empty answer: which filter admits no note, or how they exclude the
    query's matches together (docs/tools.md, "Hints on a miss")."""
    config = view.config
    if view.snapshot.doc_count() == 0:
        return ["the index holds no notes yet"]
    kind, tag, path, since, since_text = request.kind, request.tag, request.path, request.since, request.since_text
    filters: list[Filter] = []
    if kind:
        def no_kind() -> str:
            return f"kind: no note is of kind {echo(kind, config=config)} (kinds present: {present_kinds(view)})"
        filters.append(Filter(f"kind {echo(kind, config=config)}", lambda: view.snapshot.term_docs("type", [kind]),
                              no_kind))
    if tag:
        filters.append(Filter(f"tag {echo(tag, config=config)}", lambda: view.snapshot.term_docs("tags", [tag]),
                              lambda: tag_hints(view, [tag], "tag")[0]))
    if path:
        def overlapping() -> list[int]:
            everything = view.snapshot.all_docs()
            return _overlapping_page(view, everything, path, _rank(view, {}), len(everything))[0]
        filters.append(Filter(f"path {echo(path, config=config)}", overlapping,
                              lambda: f"path: no note's code paths overlap {echo(path, config=config)}"
                              + did_you_mean(view.snapshot.closest_words(("paths_pre",), path), config=config)))
    if since is not None:
        updated = view.snapshot.column("updated")
        filters.append(Filter(
            f"since {echo(since_text, config=config)}",
            lambda: [d for d in view.snapshot.all_docs() if updated[d] is not None and updated[d] >= since],
            lambda: f"since: {echo(since_text, config=config)} is after the newest note "
                    f"(updated {newest_value(view, 'updated')})"))
    return why_empty(found, filters, config=config)


def _allowed(view: View, filters: list[tuple[str, str]], since: int | None) -> set[int] | None:
    """The notes that the kind and tag filters and ``since`` admit (None: every note)."""
    allowed = set(view.snapshot.docs_where(filters)) if filters else None
    if since is not None:  # from each segment's cached date order, not by a look at every note
        recent = view.snapshot.docs_in_range("updated", since, None)
        allowed = set(recent) if allowed is None else allowed.intersection(recent)
    return allowed


def _contenders(candidates: list[int], scores: dict[int, float], limit: int) -> list[int]:
    """The candidates that can be among the best ``limit`` by rank: a score at least the
    ``limit``-th best (rank puts the score first), so the full key is built for few of them."""
    if not scores or len(candidates) <= 4 * limit:
        return candidates
    get = scores.get
    cut = heapq.nlargest(limit, [get(d, 0) for d in candidates])[-1]
    return [d for d in candidates if get(d, 0) >= cut]


def _overlapping_page(view: View, candidates: list[int], path: str,
                      rank: Callable[[int], tuple[Any, int, str]], limit: int) -> tuple[list[int], bool]:
    """The first ``limit`` candidates, in rank order, whose code paths overlap ``path``, and
    whether more overlap.

    A note overlaps when one of its code paths has ``path`` as a prefix, or is a prefix of
    ``path``, on '/' boundaries. ``paths_pre`` holds every prefix of every code path, so the
    first kind is one term. A note holding one of ``path``'s shorter prefixes may have it as
    a whole code path (a match) or only as the start of a longer one: those candidates are
    checked against the record's ``paths``, in rank order, and only until the page is full.
    """
    extends = set(view.snapshot.term_docs("paths_pre", [path]))
    shorter = path_prefixes(path)[:-1]
    maybe: set[int] = set()
    if shorter:
        maybe = set(view.snapshot.term_docs("paths_pre", shorter)) - extends
    candidates = [d for d in candidates if d in extends or d in maybe]
    if not any(d in maybe for d in candidates):
        page = heapq.nsmallest(limit, candidates, key=rank)
        return page, len(candidates) > len(page)
    wanted = set(shorter)
    page = []
    for doc in sorted(candidates, key=rank):
        if doc in extends or any("/".join(path_prefixes(p)[-1:]) in wanted
                                 for p in view.snapshot.record(doc).get("paths") or []):
            page.append(doc)
            if len(page) > limit:
                return page[:limit], True
    return page, False


def _excerpt(view: View, doc: int, forms: list[str]) -> str:
    config = view.config
    return excerpt_around(view.body(view.snapshot.record(doc)), forms, config.excerpt_chars, config.excerpt_snap)


def _digest(view: View, doc: int, score: float, terms: list[str],
            shortened: dict[str, list[str]], excerpt: str | None) -> dict[str, Any]:
    """The digest of one note (``excerpt``: made already, else None); the permalinks of notes
    whose title, tags or paths had to be cut to keep a digest small are added to ``shortened``."""
    config = view.config
    rec = view.snapshot.record(doc)
    permalink = view.permalink(rec["path"])
    title = str(rec.get("title", ""))
    if len(title) > config.digest_title_chars:
        title = f"{title[:config.digest_title_chars]}… [+{len(title) - config.digest_title_chars} chars]"
        shortened["title"].append(permalink)
    tags = _fit_list(rec.get("tags") or [], config.digest_list_budget)
    code_paths = _fit_list(rec.get("paths") or [], config.digest_list_budget)
    if len(tags) < len(rec.get("tags") or []):
        shortened["tags"].append(permalink)
    if len(code_paths) < len(rec.get("paths") or []):
        shortened["paths"].append(permalink)
    return {
        "permalink": permalink,
        "title": title,
        "kind": rec.get("type", "note"),
        "paths": code_paths,
        "tags": tags,
        "updated_at": rec.get("updated"),
        "excerpt": _excerpt(view, doc, terms) if excerpt is None else excerpt,
        "score": float(score),
        "status": rec.get("status", "active"),
        "etag": rec.get("etag"),
    }


def _fit_list(values: list[str], budget: int) -> list[str]:
    """As many leading ``values`` as fit ``budget`` characters of JSON (``digest_list_budget``)."""
    used = 2
    for i, value in enumerate(values):
        used += json_size(value) + 2
        if used > budget:
            return values[:i]
    return values


def _cut_report(name: str, permalinks: list[str]) -> str:
    if not permalinks:
        return ""
    named = ", ".join(p if len(p) <= 120 else p[:117] + "..." for p in permalinks[:3])
    more = f" and {len(permalinks) - 3} more" if len(permalinks) > 3 else ""
    return f"{name} of {named}{more}"


def _check_kind(view: View, kind: str) -> None:
    present = set(view.snapshot.lexicon("type"))
    if kind in KNOWN_TYPES or kind in present:
        return
    valid = list(KNOWN_TYPES) + sorted(present - set(KNOWN_TYPES) - {""})
    shown = ", ".join(valid[:60]) + (f" and {len(valid) - 60} more" if len(valid) > 60 else "")
    raise InvalidInput("kind", f"{kind[:60]!r} is neither a known kind nor one present in the vault; "
                       f"valid kinds: {shown}")


def _tag(raw: str) -> str:
    if not raw.strip():
        return ""
    tag = normalize_tag(raw)
    if not tag:
        raise InvalidInput("tag", f"{raw[:60]!r} names no tag; give a tag like 'project' or 'project/api'")
    return tag


def _code_path(raw: str) -> str:
    if not raw.strip():
        return ""
    parts = path_prefixes(raw.strip())
    if not parts:
        raise InvalidInput("path", f"{raw[:60]!r} names no path; give a code path like 'src/app' or 'src/app.py'")
    return parts[-1]


def _since(raw: str) -> int | None:
    """The first whole epoch second at or after an RFC 3339 timestamp (offset or Z required)."""
    text = raw.strip()
    if not text:
        return None
    accepted = "an RFC 3339 timestamp with an offset or Z, like '2025-03-01T09:30:00Z' or '2025-03-01T10:30:00+01:00'"
    m = _RFC3339.fullmatch(text)
    if not m:
        raise InvalidInput("since", f"must be {accepted}; got {text[:60]!r}")
    normal = text[:10] + "T" + text[11:].upper()
    if m.group(1) and len(m.group(1)) > 7:  # fromisoformat takes at most microseconds
        normal = normal.replace(m.group(1), m.group(1)[:7])
    try:
        moment = dt.datetime.fromisoformat(normal.replace("Z", "+00:00"))
        return math.ceil(moment.timestamp())
    except (ValueError, OverflowError):
        raise InvalidInput("since", f"{text[:60]!r} is not a real moment; must be {accepted}") from None


def _none(messages: list[str], hints: list[str] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"status": "none", "count": 0, "notes": [], "truncated": False}
    if messages:
        answer["message"] = "; ".join(messages)
    if hints:
        answer["hints"] = hints
    return answer
