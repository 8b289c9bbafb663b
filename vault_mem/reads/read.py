"""The read tools of docs/tools.md: ``memory_read`` (one whole record, body paged) and
``list_domains`` (every folder with its memory counts).

``memory_read(ref, offset=0, max_chars=20000)`` resolves ``ref`` (docs/tools.md "Words used below"; an ambiguous
ref is ``invalid`` and lists the candidates' permalinks) and reads the file as it is on
disk now, so fields, ``etag`` and ``body`` always agree with the file. The answer:

    status            "ok" (the answer's status, as in every answer)
    memory_status     the memory's own status, active or archived. List rows call it
                      ``status`` because they are nested; at the top level of a read
                      answer ``status`` is taken by the answer, hence the other name.
    uid, permalink, path, domain, title, aliases, type, tags, created, updated,
    state, progress   (tasks only), importance, namespace, scope, project, paths, agent,
    metadata          (the other frontmatter keys), supersedes, superseded_by (as declared),
    problems, etag, est_tokens (of the whole body),
    body              body[offset : offset + n], n <= max_chars; ``offset``, ``body_chars``,
    next_offset       only when more body remains,
    history           in a git work tree: the last commits that touched the note, newest
                      first, {sha, date, author, subject} (``history`` of them, 0..50, default
                      5), and ``uncommitted``: the file differs from HEAD (reads/githistory.py),
    links             outgoing links: {target, permalink, resolved, heading?, block?,
                      embed?, markdown?}; an unresolved link has permalink null and
                      resolved false (see ``links``),
    backlinks         permalinks of the notes linking here, sorted,
    lineage           {supersedes, superseded_by, latest} as permalinks (``lineage``).

Bounded: the answer's JSON stays under 40,000 characters. When the record without its
body is large (10,000 tags, huge metadata), the largest fields are cut, and
``truncated_fields`` ({field: {shown, total}}) plus ``message`` say exactly what was cut;
the file (resource ``memory://...``) holds everything. The body page then shrinks too,
and ``next_offset`` continues it.

``list_domains(offset=0)`` lists every folder that holds memories in its subtree (and
every ancestor folder), plus the vault root ``""`` first as the vault-wide total, each
with its subtree's active and archived counts and newest ``updated``. Folders are sorted
as a tree (segment by segment, case-insensitively, then by exact case) so that a folder
is followed by its subfolders. Computed from index columns; pages of at most 500.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput, NotFound
from vault_mem.reads.githistory import git_fields
from vault_mem.reads.lineage import lineage_for
from vault_mem.reads.links import LinkResolver, backlinks, outgoing
from vault_mem.reads.rows import cut_to_fit
from vault_mem.search.api import cached_while_unchanged
from vault_mem.served.context import View, json_size, settled_stamp, take_within
from vault_mem.served.params import OFFSET, REF, Args, Setting, int_param, text_param
from vault_mem.served.refs import no_note, resolve_ref
from vault_mem.settings import Settings
from vault_mem.vault.dates import from_timestamp, iso
from vault_mem.vault.fields import FIELDS, fold, layout, note_fields
from vault_mem.vault.names import ancestors
from vault_mem.vault.note import Note, est_tokens
from vault_mem.vault.reader import DateSource, read_note

# A tool's parameters are its published schema; a bound that is a setting (``Setting``) is read from the
# serving index's settings, for the schema and for each call.
READ_PARAMS = (
    REF,
    int_param("offset", "Body offset in characters.", default=0, minimum=0),
    int_param("max_chars", "Body characters per page.", default=Setting("read_default_chars"), minimum=1,
              maximum=Setting("read_max_chars")),
    int_param("history", "In a git vault: last commits shown.", default=Setting("default_history"), minimum=0,
              maximum=Setting("max_history")),
    text_param("agent", "Your agent name (clears your inbox)."),
)
DOMAINS_PARAMS = (OFFSET,)
# Fields that may be cut when the record is huge (each of the table's cuttable rows, and more);
# identity, etag and sizes never are.
CUTTABLE = layout(("tags", "aliases", "metadata", "links", "backlinks", "lineage", "problems", "paths",
                   "supersedes", "superseded_by", "title", "agent", "namespace", "scope", "project",
                   "type", "uid", "created", "updated", "history"), (row.name for row in FIELDS if row.cut))


def memory_read(view: View, raw: dict[str, Any]) -> dict[str, Any]:
    config = view.config
    args = Args(raw, READ_PARAMS, config)
    ref = args.required_str("ref", max_len=4096)
    offset = args.integer("offset")
    max_chars = args.integer("max_chars")
    history = args.integer("history")
    if args.present("agent"):
        args.agent()  # well formed; served/mailbox.py marks the note read for it

    doc = resolve_ref(view, ref)
    record = view.snapshot.record(doc)
    path = view.vault.root / record["fsrel"]
    if not path.exists() and not path.is_symlink():
        raise NotFound(f"{view.permalink(record['path'])} is indexed but its file is gone; "
                       "the index catches up shortly")
    note = _parsed(view.vault.root, record["fsrel"], view.vault.index.history, view.config)
    if not view.may_see(record["path"], None, record.get("real"), note.real):  # where its path leads now
        raise no_note(ref, view.config.shown_ref_chars)
    if offset > len(note.body):
        raise InvalidInput("offset", f"must be from 0 to {len(note.body)} (the body's length) "
                           f"for {view.permalink(note.path)}, got {offset}")

    git = git_fields(view.vault.root, view.vault.index.history, note.path, record["fsrel"], history, view.config)
    answer = _head(view, doc, note) | git
    cuts = cut_to_fit(answer, config.read_head_budget, CUTTABLE)
    notes: list[str] = []
    if cuts:
        answer["truncated_fields"] = cuts
        shown = ", ".join(f"{k} ({v['shown']} of {v['total']} {v['unit']})" for k, v in cuts.items())
        notes.append(f"cut to keep the answer under {config.max_answer_chars:,} characters: {shown}; "
                     f"the file ({view.permalink(note.path)}, also an MCP resource) holds everything")
        answer["message"] = notes[0]
    if note.size > config.max_note_bytes:
        # The body pages are the indexed text, so that body_chars, est_tokens, search and
        # the pages agree; the resource still returns the whole file.
        notes.append(f"the file is {note.size:,} bytes: its body is read and paged up to the first "
                     f"{config.max_note_bytes:,} bytes, as indexed; the resource "
                     f"{view.permalink(note.path)} returns the whole file")
        answer["message"] = "; ".join(notes)
    page, page_cut = _body_page(note.body, offset, max_chars,
                                config.max_answer_chars - json_size(answer) - config.read_envelope)
    answer["offset"] = offset
    answer["body"] = page
    if offset + len(page) < len(note.body):
        answer["next_offset"] = offset + len(page)
    if page_cut:
        notes.append(f"body page shortened to {len(page):,} characters to fit the answer bound; "
                     "continue from next_offset")
        answer["message"] = "; ".join(notes)
    return answer


def _parsed(root: Path, fsrel: str, history: DateSource | None, config: Settings) -> Note:
    """The note as read now, reusing the last parse while the file is unchanged (same inode, size
    and mtime, once it has been so for a few seconds: ``settled_stamp``): paging a 2 MiB note must
    not re-read and re-parse it for every page."""
    stamp = settled_stamp(root / fsrel, config.settled_ns)
    if stamp is None:
        return read_note(root, fsrel, history, config=config)
    return cached_while_unchanged(("note", str(root), fsrel, *stamp),
                                  lambda: (read_note(root, fsrel, history, config=config), True), _note_size)


def _note_size(note: Note) -> int:
    return 4 * len(note.body) + 512 * len(note.links) + 4096  # the body and the parsed rest, roughly


def _head(view: View, doc: int, note: Note) -> dict[str, Any]:
    """Every field of the answer except the body page."""
    head: dict[str, Any] = {"status": "ok", "uid": note.uid, "permalink": view.permalink(note.path), "path": note.path,
                            "domain": note.domain, **note_fields(note)}
    resolver = LinkResolver(view)
    head |= {
        "problems": note.problems + _shared_id_problem(view, doc, note),
        "etag": note.etag,
        "est_tokens": est_tokens(note.body),
        "body_chars": len(note.body),
        "links": outgoing(view, note, resolver),
        "backlinks": backlinks(view, doc, view.snapshot.record(doc), resolver),
        "lineage": lineage_for(view, doc).lineage_of(doc),
    }
    return head


def _shared_id_problem(view: View, doc: int, note: Note) -> list[str]:
    """docs/vault-format.md: two files with the same ``id`` is a problem memory_read shows."""
    if not note.has_id:
        return []
    others = [d for d in view.snapshot.term_docs("key_uid", [fold(note.uid)]) if d != doc]
    if not others:
        return []
    shown = sorted(view.permalink(view.snapshot.record(d)["path"]) for d in others)
    return [f"another note has the same id {note.uid!r}: {', '.join(shown[:5])}"
            + (f" (and {len(shown) - 5} more)" if len(shown) > 5 else "")]


# -- bounding ------------------------------------------------------------------------


def _body_page(body: str, offset: int, max_chars: int, budget: int) -> tuple[str, bool]:
    """The body page from ``offset``: at most ``max_chars`` code points and ``budget`` JSON characters."""
    page = body[offset: offset + max_chars]
    if _json_len(page) <= budget:
        return page, False
    lo, hi = 0, len(page)  # largest n with _json_len(page[:n]) <= budget
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _json_len(page[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    # Always move forward, even when a single escaped character is all that fits.
    return page[: max(lo, 1) if page else 0], True


def _json_len(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False))


# -- list_domains --------------------------------------------------------------------



def list_domains(view: View, raw: dict[str, Any]) -> dict[str, Any]:
    args = Args(raw, DOMAINS_PARAMS, view.config)
    offset = args.integer("offset")
    # Only a commit changes the answer: the calls in between share it (a copy each, since the
    # caller's inbox and hints are added to the answer; the rows are never changed).
    return dict(view.snapshot.cached(("list_domains", offset), lambda: _domains_page(view, offset)))


def _domains_page(view: View, offset: int) -> dict[str, Any]:
    # Each folder's own notes (the engine keeps them per segment), spread to its ancestors.
    own = view.snapshot.folder_counts()
    totals: dict[str, list[int]] = {}
    for folder, (active, arch, newest) in own.items():
        for name in ["", *ancestors(folder)]:
            entry = totals.setdefault(name, [0, 0, 0])
            entry[0] += active
            entry[1] += arch
            entry[2] = max(entry[2], newest)
    if not totals:
        return {"status": "none", "domains": [], "message": "the vault holds no memories yet"}

    names = sorted(totals, key=_tree_key)
    rows = [
        {"domain": name, "active": totals[name][0], "archived": totals[name][1],
         "updated": _updated(totals[name][2])}
        for name in names[offset: offset + view.config.domain_page]
    ]
    rows = rows[: take_within(rows, view.config.row_budget)]
    if not rows:
        return {"status": "none", "domains": [],
                "message": f"offset {offset} is past the last of {len(names)} domains"}
    answer: dict[str, Any] = {"status": "ok", "domains": rows}
    if offset + len(rows) < len(names):
        answer["next_offset"] = offset + len(rows)
    return answer


@functools.lru_cache(maxsize=1 << 16)  # the same folders, call after call: list_domains's main cost
def _tree_key(domain: str) -> tuple[tuple[str, str], ...]:
    return tuple((seg.lower(), seg) for seg in domain.split("/")) if domain else ()


@functools.lru_cache(maxsize=1 << 12)  # a folder's newest note stays the same across most commits
def _updated(timestamp: float) -> str:
    return iso(from_timestamp(timestamp))
