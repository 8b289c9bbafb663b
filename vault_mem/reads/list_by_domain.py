"""``list_by_domain`` (docs/tools.md): memories under a domain and its subdomains, newest first.

Domain resolution: the literal path (case-insensitive, with its subtree) wins whenever it
has rows after the filters; otherwise the name is matched as a run of whole segments
inside stored folder paths, and every branch it names counts.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from vault_mem.reads.lineage import Lineage
from vault_mem.reads.misses import Filter, closest_kinds, did_you_mean, echo, why_empty
from vault_mem.reads.rows import body_tokens, cut_message, fit_row, identity, snippet_of, task_fields
from vault_mem.reads.validity import AS_OF, Windows, as_of_param, left_out_message
from vault_mem.search.api import closest_names
from vault_mem.served.context import View, take_within
from vault_mem.served.params import OFFSET, Args, choice_param, flag_param, int_param, text_param
from vault_mem.vault.fields import fold
from vault_mem.vault.note import domain_of
from vault_mem.vault.paths import check_relative, confine

STATUSES = ("active", "archived", "all")
PARAMS = (
    text_param("domain", "Folder path or segment name; '' is the whole vault.", required=True),
    text_param("type", "One memory type; empty is every type.", default=""),
    int_param("limit", "Rows per page.", default=20, minimum=1, maximum=200),
    OFFSET,
    choice_param("status", "Which memories.", STATUSES, default="active"),
    flag_param("subtree", "False: only that exact folder.", default=True),
    AS_OF,
)


def list_by_domain(view: View, raw: dict[str, Any]) -> dict[str, Any]:
    args = Args(raw, PARAMS, view.config)
    domain = args.text("domain", required=True, max_len=1000)
    assert domain is not None
    domain = check_relative(domain.strip(), "domain")
    confine(view.vault.root, domain, "domain")  # a symlinked folder leading outside is refused
    note_type = (args.text("type", "", max_len=100) or "").strip().lower()
    limit = args.integer("limit")
    offset = args.integer("offset")
    status = args.choice("status")
    subtree = args.flag("subtree")
    as_of = as_of_param(args)

    filters: list[tuple[str, str]] = []  # (field, term) pairs every row must hold
    if note_type:
        filters.append(("type", note_type))
    if status != "all":
        filters.append(("status", status))

    resolved = [fold(domain)]
    docs = _docs_under(view, resolved, subtree, filters)
    if not docs and domain:
        resolved = inner_runs(view, fold(domain))
        docs = _docs_under(view, resolved, subtree, filters) if resolved else []
    if not docs:
        none: dict[str, Any] = {"status": "none", "results": [], "est_tokens": 0, "domains": [],
                                "message": f"no memories under domain {domain!r}; list_domains shows the paths"}
        hints = _why_none(view, domain, subtree, note_type, status)
        return none | ({"hints": hints} if hints else {})

    left_out = 0
    if as_of is not None:  # the versions current then (reads/validity.py)
        gone = Windows(view, Lineage(view)).not_current(as_of.at)
        kept = [d for d in docs if d not in gone]
        left_out, docs = len(docs) - len(kept), kept
    docs = view.snapshot.sort_newest(docs, "updated")
    page = docs[offset: offset + limit]
    rows = [_row(view, d) for d in page]
    fitted = take_within(rows, view.config.row_budget)
    rows = rows[:fitted]
    cut = [r["permalink"] for r in rows if "truncated_fields" in r]
    answer: dict[str, Any] = {
        "status": "ok",
        "results": rows,
        "est_tokens": sum(r["est_tokens"] for r in rows),
        "domains": _shown_domains(view, docs, resolved),
    }
    if offset + len(rows) < len(docs):
        answer["next_offset"] = offset + len(rows)
    messages = [left_out_message(left_out, as_of)] if left_out and as_of is not None else []
    if cut:
        messages.append(cut_message(cut, view.config.max_answer_chars))
    if messages:
        answer["message"] = "; ".join(messages)
    if not rows:
        answer["status"] = "none"
        answer["message"] = f"offset {offset} is past the last of {len(docs)} memories"
    return answer


def _why_none(view: View, domain: str, subtree: bool, note_type: str, status: str) -> list[str]:
    """The hints of an empty answer (docs/tools.md, "Hints on a miss"): a domain that names no
    folder (with the closest folder names), or the filter that emptied a folder that exists."""
    config = view.config
    if view.snapshot.doc_count() == 0:
        return ["the index holds no memories yet"]
    wanted = fold(domain)
    resolved = [wanted] if _docs_under(view, [wanted], subtree, []) else inner_runs(view, wanted) if wanted else []
    if view.snapshot.limited:  # the folder terms are everyone's: a folder with nothing the caller sees looks missing
        resolved = [r for r in resolved if _docs_under(view, [r], True, [])]
    under = _docs_under(view, resolved, subtree, []) if resolved else []
    if not under:
        folders = folder_names(view)
        if resolved and not subtree:
            return [f"domain {echo(domain, config=config)} has no memories filed directly in it; "
                    "subtree=true lists its subfolders"]
        return [f"domain: no folder is named {echo(domain, config=config)}"
                + did_you_mean(closest_names(folders, wanted, config.suggestions), config=config)]
    filters = []
    if note_type:
        filters.append(Filter(f"type {echo(note_type, config=config)}",
                              partial(_docs_under, view, resolved, subtree, [("type", note_type)]),
                              lambda: f"type: no memory under {echo(domain, config=config)} "
                                      f"is of type {echo(note_type, config=config)}"
                              + did_you_mean(closest_kinds(view, note_type), config=config)))
    if status != "all":
        other = "archived" if status == "active" else "active"
        filters.append(Filter(f"status {status!r}", partial(_docs_under, view, resolved, subtree, [("status", status)]),
                              lambda: f"status: every memory under {echo(domain, config=config)} is {other}; "
                              f"status='{other}' or 'all' lists them"))
    return why_empty(under, filters, "memories", f"domain {echo(domain, config=config)}", config=config)


def folder_names(view: View) -> list[str]:
    """Every folder path and folder name the index holds (for suggestions), of the notes this caller
    may see."""
    paths = view.snapshot.lexicon("dom_anc")
    return list(dict.fromkeys([*paths, *(p.rpartition("/")[2] for p in paths)]))


def _docs_under(view: View, domains: list[str], subtree: bool, filters: list[tuple[str, str]]) -> list[int]:
    """Live document numbers under ``domains`` holding every filter term, ascending (per-segment
    cached term masks: a Whoosh And over the status term walks every note's posting)."""
    field = "dom_anc" if subtree else "dom_exact"
    if domains == [""] and subtree:
        return view.snapshot.docs_where(filters) if filters else view.snapshot.all_docs()
    return view.snapshot.docs_where(filters, field, domains)


def inner_runs(view: View, name: str) -> list[str]:
    """The folder paths ending where ``name`` occurs as a run of whole segments inside a stored path."""
    found: set[str] = set()
    for folder in view.snapshot.terms_containing("dom_anc", name):
        padded = "/" + folder + "/"
        at = padded.find("/" + name + "/")
        while at >= 0:
            found.add(padded[1: at + len(name) + 1])
            at = padded.find("/" + name + "/", at + 1)
    return sorted(found)


def _shown_domains(view: View, docs: list[int], resolved: list[str]) -> list[str]:
    """The resolved paths that have rows, in the case the files use."""
    shown: dict[str, str] = {}
    paths = view.snapshot.column("path")
    for d in docs:
        domain = domain_of(paths[d])
        for r in resolved:
            if r not in shown and (r == "" or fold(domain) == r or fold(domain).startswith(r + "/")):
                shown[r] = domain[: len(r)]
        if len(shown) == len(resolved):
            break
    return [shown[r] for r in resolved if r in shown]


def _row(view: View, docnum: int) -> dict[str, Any]:
    rec = view.snapshot.record(docnum)
    row = identity(rec, view.permalink) | {
        "title": rec["title"],
        "type": rec["type"],
        "tags": rec["tags"],
        "created": rec["created"],
        "updated": rec["updated"],
        "status": rec["status"],
        "etag": rec["etag"],
        "snippet": snippet_of(rec, view.config.snippet_chars),
        "est_tokens": body_tokens(rec),
    }
    row |= task_fields(rec)
    fit_row(row, view.config.row_fields_budget)
    return row
