"""The versioned Whoosh schema and the mapping from a Note to an index document.

Text fields use one analyzer: maximal runs of word characters, lower-cased, no stop
words, no stemming, no length limits. That makes a one-word substring search exact:
a word-only needle occurs in a text exactly when it occurs inside one of its tokens,
so expanding it against the field's lexicon (see ``substring``) finds what a plain
scan would.
"""

from __future__ import annotations

from typing import Any

from whoosh.analysis import LowercaseFilter, RegexTokenizer
from whoosh.fields import ID, NUMERIC, STORED, TEXT, Schema
from whoosh.fields import KEYWORD as _KEYWORD

from vault_mem.search.whoosh import seam as _seam  # noqa: F401  (the installed Whoosh checked before any index is opened)
from vault_mem.vault.dates import parse_datetime
from vault_mem.vault.fields import FIELDS, fold, plain
from vault_mem.vault.fields import tag_keys as tag_keys
from vault_mem.vault.names import ancestors, path_prefixes, strip_md
from vault_mem.vault.note import PERMALINK_PREFIX, Note, domain_of, permalink_of

SCHEMA_VERSION = 8  # 3: `created` from a date in the file name (daily notes); 4: sup_keys, and text
# fields keep frequencies, not positions (no phrase queries); 5: one term per number; 6: `agent` and `to`
# as terms (the inbox: served/mailbox.py); 7: `real`, the file a symlinked note is (search/masked.py);
# 8: `lineage` also marks a note stating valid_from or valid_until
SEP = "\x1f"  # separates the values of multi-valued exact fields

WORDS = RegexTokenizer(r"\w+") | LowercaseFilter()
_VALUES = RegexTokenizer(r"[^\x1f]+")
TEXT_FIELDS = ("title", "perm", "tagtext", "body")
# Index fields that are no field table row's (vault/fields.py): the file's own, and the body's.
FILE_FIELDS = ("path", "key_path", "key_name", "dom_exact", "dom_anc", "perm", "body", "link_keys",
               "size", "mtime_ns", "etag", "record", "real")
EXACT = tuple(row for row in FIELDS if row.exact is not None)  # rows held as exact terms


def make_schema() -> Schema:
    def multi() -> _KEYWORD:
        return _KEYWORD(analyzer=_VALUES)

    return Schema(
        path=ID(stored=True, unique=True, sortable=True),
        key_uid=ID(),
        key_path=ID(),  # lower-cased path without '.md'
        key_name=ID(),  # lower-cased file name without '.md'
        key_title=ID(),
        key_alias=multi(),
        dom_exact=ID(),
        dom_anc=multi(),  # the note's folder and every ancestor folder, lower-cased
        title=TEXT(analyzer=WORDS, phrase=False),
        perm=TEXT(analyzer=WORDS, phrase=False),
        tagtext=TEXT(analyzer=WORDS, phrase=False),
        body=TEXT(analyzer=WORDS, phrase=False),
        # type, status, state, namespace, scope, project, agent, to, and tags (each tag and its nested parents)
        **{row.name: multi() if row.exact.multi else ID() for row in EXACT if row.exact is not None},
        lineage=ID(),  # "y" when the note declares a supersession edge or a validity bound
        sup_keys=multi(),  # "s:"/"b:" + each supersedes/superseded_by target's lookup keys
        paths_pre=multi(),  # every '/'-prefix of every code path
        link_keys=multi(),  # lower-cased wikilink targets, for backlinks
        real=ID(),  # a symlinked note's own file (``Note.real``), as it is spelled: who may read it
        # Whoosh's float columns cannot be sorted on (a struct error), so: whole seconds,
        # and importance in thousandths. Numbers are read from their columns, never searched
        # by range (a range query walks the index, docs/perf/date-columns.md): one term each
        # (``shift_step=0``), not Whoosh's 16 per 64-bit value, which were most postings written.
        created=_number(bits=64),
        updated=_number(bits=64),
        importance=_number(),
        # What the start-up reconcile compares, readable without loading any stored record.
        size=_number(bits=64),
        mtime_ns=_number(bits=64),
        etag=ID(sortable=True),
        record=STORED(),
    )


def _number(bits: int = 32) -> NUMERIC:
    return NUMERIC(int, bits=bits, signed=True, sortable=True, shift_step=0)


def supersession_keys(target: str) -> list[str]:
    """The keys a supersession target may be resolved by (uid, title or alias; path or file name),
    as ``reads/lineage.py`` compares them; indexed so that the notes naming a note are found by
    term (``lineage_for``)."""
    text = target.strip()
    if text.lower().startswith("memory://"):
        text = text[len("memory://"):]
    path = fold(strip_md(text.strip("/")))
    # The last segment too: a wikilink-style target may name a note by a path's tail, or
    # relative to the declaring note's folder ("../b/note"), and both end in the file name.
    keys = [fold(text), path, path.rpartition("/")[2]]
    return [k for k in dict.fromkeys(keys) if k]


def epoch(iso_text: str) -> int:
    moment = parse_datetime(iso_text)
    return int(moment.timestamp()) if moment else 0


def record_of(note: Note, fsrel: str, head_chars: int) -> dict[str, Any]:
    """What the index stores for a note: every field of the table, and everything else a row needs
    except the full body (its first ``head_chars`` characters: the ``record_head_chars`` setting)."""
    return {
        "has_id": note.has_id,
        "path": note.path,
        "fsrel": fsrel,  # the OS path relative to the vault (may hold surrogates)
        **{row.name: plain(note.value(row.name)) for row in FIELDS},
        "links": note.links,
        "problems": note.problems,
        "etag": note.etag,
        "size": note.size,
        "mtime_ns": note.mtime_ns,
        "head": note.body[:head_chars],
        "body_chars": len(note.body),
        "excalidraw": note.excalidraw,
    }


def document_of(note: Note, fsrel: str, head_chars: int) -> dict[str, Any]:
    """The Whoosh document for a note; its stored record keeps ``head_chars`` characters of the body
    (the index's ``record_head_chars`` setting)."""
    path = note.path
    domain = domain_of(path)
    name = strip_md(path.rpartition("/")[2])
    exact: dict[str, str] = {}
    for row in EXACT:
        assert row.exact is not None
        terms = row.exact.terms(note.value(row.name))
        exact[row.name] = SEP.join(terms) if row.exact.multi else terms[0]
    return {
        "path": path,
        "key_uid": fold(note.uid),
        "key_path": fold(strip_md(path)),
        "key_name": fold(name),
        "key_title": fold(note.title),
        "key_alias": SEP.join(fold(a) for a in note.aliases),
        "dom_exact": fold(domain),
        "dom_anc": SEP.join(fold(a) for a in ancestors(domain)),
        "title": " ".join([note.title, *note.aliases]),
        "perm": permalink_of(path)[len(PERMALINK_PREFIX):],
        "tagtext": " ".join(note.tags),
        "body": note.body,
        **exact,
        "lineage": "y" if note.supersedes or note.superseded_by or note.value("valid_from")
        or note.value("valid_until") else "n",
        "sup_keys": SEP.join(["s:" + k for t in note.supersedes for k in supersession_keys(t)]
                             + ["b:" + k for t in note.superseded_by for k in supersession_keys(t)]),
        "paths_pre": SEP.join(p for cp in note.paths for p in path_prefixes(cp)),
        "link_keys": SEP.join(fold(lk["target"]) for lk in note.links if lk.get("target")),
        "created": epoch(note.created),
        "updated": epoch(note.updated),
        "importance": round(note.importance * 1000),
        "size": note.size,
        "mtime_ns": note.mtime_ns,
        "etag": note.etag,
        "record": record_of(note, fsrel, head_chars),
        **({"real": note.real} if note.real is not None else {}),
    }
