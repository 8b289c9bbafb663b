"""The field table: every field a note takes from its frontmatter (or, for ``progress`` and
``metadata``, from the rest of the file), one row each, and what each part does with it.

A row says:

    name      the Note attribute, the index record's key and the answers' key
    keys      the frontmatter keys it is read from (its aliases), in order of precedence
    parse     how it is read: ``parse(source, field)`` returns the value, appending any
              problem to ``source.problems``; it never raises
    exact     how the index holds it as exact terms (``Exact``), so that ``memory_list``'s
              ``metadata_filters`` on it is one term query; None: not held as a term
    indexed   the other index fields made from it (``search/schema.py`` builds them)
    row       ``memory_list`` rows show it (and its ``fields`` projection accepts it)
    filter    ``metadata_filters`` compares it under its name and its keys
    cut       a huge value may be cut in rows and in ``memory_read`` (``reads/rows.py``)
    first     where a new note's frontmatter puts it among the keys it starts with (1 first;
              0: not one of them; ``vault/yamlstyle.py``)
    tasks     ``memory_read`` shows it for tasks only

Everything else derives from the table: the reader's core keys (the rest of the
frontmatter is ``metadata``), the index schema and record, the read answer's fields, the
rows, the filters and the CLI's record view. Where an answer has always shown the fields
in an order of its own, it keeps it (``layout``), and a new row comes after them. Adding a field is one row
plus its parser; ``tests/unit/test_fields.py`` fails when a part knows a field the table does not.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, is_dataclass
from typing import Any

from vault_mem.vault import markdown
from vault_mem.vault.dates import date_in_name, iso, parse_datetime
from vault_mem.vault.note import KNOWN_TYPES, TASK_STATES, Progress, addressees

_TAG_LEAD = re.compile(r"^[#\s]+")
_STATE_WORDS = {
    "open": "open", "todo": "open", "in_progress": "open", "in-progress": "open",
    "completed": "completed", "complete": "completed", "done": "completed", "closed": "completed",
    "cancelled": "cancelled", "canceled": "cancelled", "dropped": "cancelled",
}


def fold(text: str) -> str:
    """The comparison form of a ref, title, path or term: NFC, lower-case."""
    return unicodedata.normalize("NFC", text).lower()


def normalize_tag(text: str) -> str:
    """The tag a caller means by ``text``, as every tool compares it with the index: leading
    ``#`` and spaces dropped, ``/`` trimmed at both ends (``project/`` is ``project``), NFC,
    lower-case. ``""`` when nothing is left."""
    return fold(_TAG_LEAD.sub("", text).strip().strip("/").strip())


def tag_keys(tags: list[str]) -> list[str]:
    """Each tag and its nested parents (``a/b`` -> ``a``, ``a/b``): the terms a note is found by."""
    keys: list[str] = []
    for tag in tags:
        parts = tag.split("/")
        keys += ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return list(dict.fromkeys(keys))


@dataclass
class Source:
    """What the parsers read for one note, and the values parsed so far."""

    path: str  # the display form of the vault-relative path
    data: dict[str, Any]  # the frontmatter, unquoted [[links]] as text
    body: str
    masked: str  # the body with code masked (markdown.mask_code)
    excalidraw: bool
    mtime: dt.datetime
    history: tuple[dt.datetime, dt.datetime] | None  # (created, updated) from git, docs/git.md
    marks: list[str]  # the body's task checkbox marks
    problems: list[str]
    values: dict[str, Any] = field(default_factory=dict)
    has_id: bool = False  # the frontmatter gave the uid (else it is derived from the path)

    def value(self, name: str) -> Any:
        """The value of field ``name``, parsed now if it has not been yet (a parser may need another's)."""
        if name not in self.values:
            row = FIELD[name]
            self.values[name] = row.parse(self, row)
        return self.values[name]


Parser = Callable[[Source, "Field"], Any]


@dataclass(frozen=True)
class Exact:
    """A field the index holds as exact terms (one per value; several for ``multi``)."""

    terms: Callable[[Any], list[str]]  # the terms a note's value makes
    query: Callable[[str], str] = lambda text: fold(text.strip())  # the term a filter value asks for
    multi: bool = False
    only: tuple[str, ...] = ()  # when set, the only values held: a filter for another looks at the record


@dataclass(frozen=True)
class Field:
    name: str
    keys: tuple[str, ...]
    parse: Parser
    exact: Exact | None = None
    indexed: tuple[str, ...] = ()
    row: bool = False
    filter: bool = True
    cut: bool = True
    first: int = 0
    tasks: bool = False

    @property
    def key(self) -> str:
        """The frontmatter key it is written under."""
        return self.keys[0] if self.keys else self.name


# -- parsers ------------------------------------------------------------------------


def text(value: Any, key: str, problems: list[str]) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict | list):
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str | int | float):
            return str(value[0]).strip() or None
        problems.append(f"{key}: expected a single value, got a {type(value).__name__}; ignored")
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return str(value).strip() or None


def string_list(value: Any, key: str, problems: list[str]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        items = (str(v).strip() for v in value if v is not None and not isinstance(v, dict | list))
        return [item for item in items if item]
    if isinstance(value, dict):
        problems.append(f"{key}: a mapping is not a list; ignored")
        return []
    return [str(value)]


def normalize_tags(value: Any, problems: list[str] | None = None) -> list[str]:
    """Tags from a list, a comma/space separated string, a list holding nulls, or null.

    Returns lower-case strings without '#', in first-seen order, without duplicates.
    """
    items: list[str] = []
    if value is None:
        return []
    if isinstance(value, str):
        items = value.replace(",", " ").split()
    elif isinstance(value, list):
        for item in value:
            if item is None or isinstance(item, dict | list):
                continue
            shown = str(item).strip() if not isinstance(item, bool) else str(item).lower()
            items.extend(p.strip() for p in shown.split(",")) if "," in shown else items.append(shown)
    elif isinstance(value, bool | int | float):
        items = [str(value).lower()]
    else:
        if problems is not None:
            problems.append("tags: a mapping is not a tag list; ignored")
        return []
    cleaned = [_TAG_LEAD.sub("", t).strip().lower() for t in items]
    return dedupe([t for t in cleaned if t])


def dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def created_fallback(path: str, mtime: dt.datetime,
                     history: tuple[dt.datetime, dt.datetime] | None = None) -> tuple[dt.datetime, str]:
    """``created`` for a note whose frontmatter gives none, and where it came from (docs/git.md for git).

    The one place for the fallback chain, tried in order:
    1. a ``YYYY-MM-DD`` date in the file name (daily notes: ``2022-01-02.md``);
    2. in a git work tree, the commit that added the file, when the file is committed as it
       is (``history``: git/history.py; a checkout sets every mtime to its own moment);
    3. the file's mtime.
    """
    named = date_in_name(path)
    if named is not None:
        return named, "the date in the file name"
    if history is not None:
        return history[0], "the commit that added the file"
    return mtime, "the file's mtime"


def _date(data: dict[str, Any], keys: tuple[str, ...], fallback: tuple[dt.datetime, str],
          problems: list[str]) -> dt.datetime:
    """The first of ``keys`` that is set, else ``fallback`` (a moment and where it came from)."""
    for key in keys:
        if key in data and data[key] is not None:
            moment = parse_datetime(data[key])
            if moment is None:
                problems.append(f"{key}: {str(data[key])[:60]!r} is not a date; using {fallback[1]}")
                return fallback[0]
            return moment
    return fallback[0]


def _parse_text(src: Source, row: Field) -> str | None:
    """The first of the row's keys that is set, as one string."""
    key = next((k for k in row.keys if src.data.get(k) is not None), row.key)
    return text(src.data.get(key), key, src.problems)


def _parse_list(src: Source, row: Field) -> list[str]:
    return [item for key in row.keys for item in string_list(src.data.get(key), key, src.problems)]


def _parse_uid(src: Source, row: Field) -> str:
    """The ``id`` key, else an id derived from the path (``src.has_id`` says which)."""
    raw = src.data.get(row.key)
    uid = text(raw, row.key, src.problems) if raw is not None else None
    src.has_id = bool(uid)
    if uid:
        return uid
    # Case is kept: real vaults hold `Notes/A.md` and `notes/a.md` side by side.
    return "p-" + hashlib.blake2b(src.path.encode("utf-8", "replace"), digest_size=12).hexdigest()[:16]


def _parse_title(src: Source, row: Field) -> str:
    """The ``title`` key, else the first ``# `` heading, else the file name without ``.md``."""
    stem = src.path.rpartition("/")[2]
    if src.excalidraw:
        stem = stem[: -len(".excalidraw.md")]
    elif stem.lower().endswith(".md"):
        stem = stem[:-3]
    heading = None if src.excalidraw else markdown.first_h1(src.body, src.masked)
    return text(src.data.get(row.key), row.key, src.problems) or heading or stem


def _parse_type(src: Source, row: Field) -> str:
    raw = src.data.get(row.keys[0], src.data.get(row.keys[1]))
    found = text(raw, row.key, src.problems)
    if not found:
        return "note"
    return found.lower() if found.lower() in KNOWN_TYPES else found


def _parse_tags(src: Source, row: Field) -> list[str]:
    """The ``tags`` key, then the body's inline ``#tags`` (not in code; not for drawings)."""
    tags = normalize_tags(src.data.get(row.key), src.problems)
    if src.excalidraw:
        return tags
    return dedupe(tags + [t.lower() for t in markdown.inline_tags(src.masked)])


def _parse_created(src: Source, row: Field) -> dt.datetime:
    return _date(src.data, row.keys, created_fallback(src.path, src.mtime, src.history), src.problems)


def _parse_updated(src: Source, row: Field) -> dt.datetime:
    fallback = (src.history[1], "the last commit that changed the file") if src.history \
        else (src.mtime, "the file's mtime")
    return _date(src.data, row.keys, fallback, src.problems)


def _parse_state(src: Source, row: Field) -> str:
    raw = src.data.get(row.key)
    if raw is not None:
        word = _STATE_WORDS.get(str(raw).strip().lower())
        if word:
            return word
        src.problems.append(
            f"state: {str(raw)[:40]!r} is not one of {', '.join(TASK_STATES)}; derived from checkboxes"
        )
    marks = src.marks
    if not marks or any(m not in "xX-" for m in marks):
        return "open"
    if all(m == "-" for m in marks):
        return "cancelled"
    return "completed"


def _parse_status(src: Source, row: Field) -> str:
    """active | archived; another ``status`` value stays in ``metadata`` too (``_parse_metadata``)."""
    state = src.value("state")
    raw = src.data.get(row.key)
    word = str(raw).strip().lower() if raw is not None else ""
    if word in ("archived", "active"):
        return word
    kind, other = FIELD["type"].keys
    note_type = str(src.data.get(kind, src.data.get(other, ""))).strip().lower()
    if note_type == "task" and state in ("completed", "cancelled"):
        return "archived"
    return "active"


def _parse_progress(src: Source, row: Field) -> Progress:
    return Progress(done=sum(1 for m in src.marks if m in "xX"), total=len(src.marks))


def _parse_importance(src: Source, row: Field) -> float:
    raw = src.data.get(row.key)
    if raw is None:
        return 0.5
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        src.problems.append(f"importance: {str(raw)[:40]!r} is not a number between 0 and 1; using 0.5")
        return 0.5
    if not 0.0 <= value <= 1.0:
        src.problems.append(f"importance: {value} is outside 0..1; clamped")
        return min(1.0, max(0.0, value)) if value == value else 0.5
    return value


def _parse_default(default: str) -> Parser:
    def parse(src: Source, row: Field) -> str:
        return _parse_text(src, row) or default

    return parse


def _parse_refs(src: Source, row: Field) -> list[str]:
    """Supersession targets: ids, titles or paths, a ``[[link]]`` read as its target."""
    raw = src.data.get(row.key)
    values = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for value in values:
        if value is None or isinstance(value, dict | list):
            continue
        shown = str(value).strip()
        links = markdown.wikilinks(shown)
        out.extend(lk.target for lk in links if lk.target) if links else (out.append(shown) if shown else None)
    return dedupe(out)


def _parse_validity(src: Source, row: Field) -> str | None:
    """A validity bound (docs/vault-format.md): a plain date stays ``YYYY-MM-DD`` (the whole day), a
    datetime becomes ISO UTC; anything else is a problem and no bound."""
    raw = src.data.get(row.key)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, dt.date) and not isinstance(raw, dt.datetime):
        return raw.isoformat()
    if isinstance(raw, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw.strip()):
        try:
            return dt.date.fromisoformat(raw.strip()).isoformat()
        except ValueError:
            pass
    else:
        moment = parse_datetime(raw)
        if moment is not None:
            return iso(moment)
    src.problems.append(f"{row.key}: {str(raw)[:60]!r} is not a date or datetime; ignored")
    return None


def _parse_to(src: Source, row: Field) -> list[str]:
    """The agents a note is addressed to: a name, a list, names separated by commas, ``@name``
    or ``[[name]]`` (``vault.note.addressees``)."""
    return addressees(src.data.get(row.key))


def _parse_metadata(src: Source, row: Field) -> dict[str, Any]:
    """The keys no row reads, plus a ``status`` other than active or archived."""
    metadata = {k: v for k, v in src.data.items() if k not in CORE_KEYS}
    raw_status = src.data.get("status")
    if raw_status is not None and str(raw_status).strip().lower() not in ("active", "archived"):
        metadata["status"] = raw_status
    return metadata


def _single(make: Callable[[Any], str]) -> Callable[[Any], list[str]]:
    return lambda value: [make(value)]


# -- the table ------------------------------------------------------------------------

CREATED_KEYS = ("created", "date", "created_at")
UPDATED_KEYS = ("updated", "modified", "updated_at")

# In the order they are parsed, which is the order of their problems (tests/corpus/every_field_wrong).
FIELDS: tuple[Field, ...] = (
    Field("title", ("title",), _parse_title, indexed=("key_title", "title"), row=True, first=2),
    Field("uid", ("id",), _parse_uid, indexed=("key_uid",), row=True, cut=False, first=1),
    Field("type", ("type", "kind"), _parse_type, Exact(_single(str.lower)), row=True, first=3),
    Field("tags", ("tags",), _parse_tags, Exact(tag_keys, normalize_tag, multi=True), indexed=("tagtext",),
          row=True, first=4),
    Field("created", CREATED_KEYS, _parse_created, indexed=("created",), row=True, cut=False, first=5),
    Field("updated", UPDATED_KEYS, _parse_updated, indexed=("updated",), row=True, cut=False, first=6),
    Field("state", ("state",), _parse_state, Exact(_single(lambda v: v or "")), cut=False, tasks=True),
    Field("status", ("status",), _parse_status, Exact(_single(str), only=("active", "archived")), row=True,
          cut=False),
    Field("progress", (), _parse_progress, filter=False, cut=False, tasks=True),
    Field("aliases", ("aliases", "alias"), _parse_list, indexed=("key_alias", "title")),
    Field("importance", ("importance",), _parse_importance, indexed=("importance",), row=True, cut=False),
    Field("namespace", ("namespace",), _parse_default("default"), Exact(_single(lambda v: fold(v or "")))),
    Field("scope", ("scope",), _parse_default("user"), Exact(_single(lambda v: fold(v or "")))),
    Field("project", ("project",), _parse_text, Exact(_single(lambda v: fold(v or "")))),
    Field("paths", ("paths",), _parse_list, indexed=("paths_pre",)),
    # agent and to: who wrote it and whom it is handed to, as terms (served/mailbox.py: the inbox, lost)
    Field("agent", ("agent",), _parse_text, Exact(_single(lambda v: fold(v or "")))),
    Field("to", ("to",), _parse_to, Exact(lambda names: [fold(n) for n in names], multi=True)),
    Field("metadata", (), _parse_metadata, row=True, filter=False),
    Field("supersedes", ("supersedes",), _parse_refs, indexed=("lineage", "sup_keys"), row=True),
    Field("superseded_by", ("superseded_by",), _parse_refs, indexed=("lineage", "sup_keys"), row=True),
    # when the note starts and stops being true (reads/validity.py); lineage: as_of reads these notes' records
    Field("valid_from", ("valid_from",), _parse_validity, indexed=("lineage",), row=True, cut=False),
    Field("valid_until", ("valid_until",), _parse_validity, indexed=("lineage",), row=True, cut=False),
)
FIELD = {row.name: row for row in FIELDS}
# The frontmatter keys some row reads; every other key is the note's ``metadata``.
CORE_KEYS = frozenset(key for row in FIELDS for key in row.keys)


def leading_keys() -> tuple[str, ...]:
    """The frontmatter keys a note written by a tool starts with, in order."""
    return tuple(row.key for row in sorted((r for r in FIELDS if r.first), key=lambda r: r.first))


def parse_fields(src: Source) -> dict[str, Any]:
    """Every row's value, parsed in table order (so ``problems`` follows that order)."""
    values = src.values
    for row in FIELDS:
        if row.name not in values:
            values[row.name] = row.parse(src, row)
    return values


def filter_names() -> dict[str, str]:
    """``metadata_filters`` key (lower-case) -> the field it names."""
    return {name.lower(): row.name for row in FIELDS if row.filter for name in (row.name, *row.keys)}


# The rows as memory_read (and the jsonl export) show them, in the order they always have; a
# new row follows them. ``status`` is ``memory_status`` there: the answer's own status has the name.
READ_LAYOUT: tuple[str, ...] = ()  # set below, once ``layout`` is defined
ANSWER_NAMES = {"status": "memory_status"}


def note_fields(note: Any) -> dict[str, Any]:
    """A Note's rows as memory_read shows them: READ_LAYOUT order, answer names, tasks-only rows
    only for tasks, values as JSON."""
    return {ANSWER_NAMES.get(name, name): plain(note.value(name)) for name in READ_LAYOUT
            if not FIELD[name].tasks or note.type == "task"}


def plain(value: Any) -> Any:
    """A field value as JSON: a (flat) dataclass such as ``Progress`` as its dict."""
    return dict(vars(value)) if is_dataclass(value) and not isinstance(value, type) else value


def layout(before: Iterable[str], wanted: Iterable[str], after: Iterable[str] = ()) -> tuple[str, ...]:
    """An answer's keys: ``before`` (the order answers have always had; it may name keys that are
    not fields), then the ``wanted`` fields it does not name yet, in table order, then ``after``."""
    head = tuple(before)
    tail = tuple(after)
    return (*head, *(name for name in wanted if name not in head and name not in tail), *tail)


READ_LAYOUT = layout(("title", "aliases", "type", "tags", "created", "updated", "status", "state", "progress",
                      "importance", "namespace", "scope", "project", "paths", "agent", "metadata", "supersedes",
                      "superseded_by"), (row.name for row in FIELDS if row.name != "uid"))
