"""Bytes on disk to a Note. ``read_note`` never raises on user content.

Whatever is wrong with a file becomes a line in ``Note.problems`` and the note is
indexed as well as it can be.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from vault_mem.vault import markdown
from vault_mem.vault.dates import date_in_name, from_timestamp, iso, parse_datetime
from vault_mem.vault.frontmatter import load_yaml, split_frontmatter
from vault_mem.vault.note import KNOWN_TYPES, TASK_STATES, Note, Progress
from vault_mem.vault.paths import display_path
from vault_mem.vault.portable import O_BINARY

MAX_BYTES = 2 * 1024 * 1024
_TAG_LEAD = re.compile(r"^[#\s]+")
_CHUNK = 1 << 20
_BOM = b"\xef\xbb\xbf"
_NOT_REGULAR = "not a regular file (a FIFO, socket or device); not read"
_UNCLOSED = "frontmatter: the opening '---' is never closed"
CREATED_KEYS = ("created", "date", "created_at")
UPDATED_KEYS = ("updated", "modified", "updated_at")
_STATE_WORDS = {
    "open": "open", "todo": "open", "in_progress": "open", "in-progress": "open",
    "completed": "completed", "complete": "completed", "done": "completed", "closed": "completed",
    "cancelled": "cancelled", "canceled": "cancelled", "dropped": "cancelled",
}
# Keys that become Note fields; everything else stays in ``metadata``.
CORE_KEYS = frozenset({
    "id", "title", "aliases", "alias", "type", "kind", "tags", *CREATED_KEYS, *UPDATED_KEYS,
    "status", "state", "importance", "supersedes", "superseded_by", "namespace", "scope",
    "project", "paths", "agent",
})


def file_etag(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def read_bytes(path: Path) -> tuple[bytes, str, int, int, list[str]]:
    """(first MAX_BYTES bytes, etag of the whole file, size, mtime_ns, problems). Never raises.

    Opens without blocking so a FIFO named ``x.md`` cannot stall the indexer.
    """
    problems: list[str] = []
    try:
        fd = os.open(path, os.O_RDONLY | O_BINARY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        # A UNIX socket cannot be opened at all (ENXIO): name what it is, not the errno.
        try:
            irregular = not stat.S_ISREG(os.stat(path).st_mode)
        except OSError:
            irregular = False
        if irregular:
            return b"", "", 0, 0, [_NOT_REGULAR]
        return b"", "", 0, 0, [f"unreadable: {exc.strerror or exc}"]
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return b"", "", 0, st.st_mtime_ns, [_NOT_REGULAR]
        digest = hashlib.blake2b(digest_size=12)
        kept = bytearray()
        total = 0
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            digest.update(chunk)
            total += len(chunk)
            if len(kept) < MAX_BYTES:
                kept += chunk[: MAX_BYTES - len(kept)]
        if total > MAX_BYTES:
            problems.append(f"file is {total:,} bytes; indexed up to the first {MAX_BYTES:,}")
        return bytes(kept), digest.hexdigest(), total, st.st_mtime_ns, problems
    except OSError as exc:
        return b"", "", 0, 0, [f"unreadable: {exc.strerror or exc}"]
    finally:
        os.close(fd)


def read_whole(path: Path) -> bytes:
    """All of a note file's bytes, opened without blocking (a FIFO named ``x.md`` cannot hang).

    Raises OSError, EINVAL for anything that is not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | O_BINARY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)")
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def decode(data: bytes) -> tuple[str, list[str]]:
    """Text of a note: BOM dropped, CRLF to LF, bad UTF-8 replaced, NULs removed."""
    problems: list[str] = []
    if data.startswith(_BOM):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        truncated_tail = exc.start >= len(data) - 3 and len(data) >= MAX_BYTES - 3
        text = data.decode("utf-8", errors="replace")
        if not truncated_tail:
            problems.append(
                f"not valid UTF-8 (first bad byte at offset {exc.start}); bad bytes shown as U+FFFD"
            )
    if "\x00" in text:
        problems.append(f"contains {text.count(chr(0))} NUL byte(s); removed for indexing")
        text = text.replace("\x00", "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, problems


class DateSource(Protocol):
    """Where a note without frontmatter dates takes them from before its mtime: the vault's git
    history (``git/history.py``, docs/git.md). Passed in by the caller, never looked up."""

    def dates(self, path: str, data: bytes) -> tuple[dt.datetime, dt.datetime] | None: ...


def read_note(root: Path, rel: str, history: DateSource | None = None) -> Note:
    """Read ``rel`` (an OS path relative to ``root``) into a Note. Never raises.

    ``history``, when given, supplies the (created, updated) of a file committed as it is."""
    path = root / rel
    problems: list[str] = []
    shown = display_path(rel)
    if shown != rel.replace(os.sep, "/") and "\ufffd" in shown:
        problems.append("file name is not valid UTF-8; shown with U+FFFD")
    try:
        if path.is_symlink():
            real = path.resolve()
            real_root = root.resolve()
            if real_root not in real.parents:
                problems.append("symlink pointing outside the vault; not followed")
                return parse_text(shown, "", "", 0, 0, problems)
    except (OSError, RuntimeError):
        problems.append("symlink that cannot be resolved (a loop?); not followed")
        return parse_text(shown, "", "", 0, 0, problems)
    data, etag, size, mtime_ns, read_problems = read_bytes(path)
    problems += read_problems
    text, decode_problems = decode(data)
    problems += decode_problems
    dates = history.dates(shown, data) if history is not None and len(data) == size else None
    return parse_text(shown, text, etag, size, mtime_ns, problems, dates)


def parse_text(path: str, text: str, etag: str, size: int, mtime_ns: int, problems: list[str],
               history: tuple[dt.datetime, dt.datetime] | None = None) -> Note:
    """Build a Note from decoded text. ``path`` is the display form of the vault-relative path;
    ``history`` the (created, updated) git gives a committed file (docs/git.md), before the mtime.

    One step per field group, each appending its problems as it runs, so ``problems`` keeps
    one order: those given (reading, decoding), the frontmatter block and its YAML, git
    conflict markers, then title, id, type, tags, created, updated, state, aliases, alias,
    importance, namespace, scope, project, paths, agent. ``problems`` itself is not changed.
    """
    problems = [*problems]
    front = _frontmatter(text, size, problems)
    data, body = front.data, front.body
    excalidraw = path.lower().endswith(".excalidraw.md")
    masked = markdown.mask_code(body)
    if markdown.has_conflict_markers(text):
        problems.append("contains git merge-conflict markers")
    title = _title(path, data, body, masked, excalidraw, problems)
    uid, has_id = _uid(path, data, problems)
    note_type = _type(data, problems)
    tags = _tags(data, masked, excalidraw, problems)
    mtime = from_timestamp(mtime_ns / 1e9) if mtime_ns else from_timestamp(0)
    created = _date(data, CREATED_KEYS, created_fallback(path, mtime, history), problems)
    updated = _date(data, UPDATED_KEYS, (history[1], "the last commit that changed the file") if history
                    else (mtime, "the file's mtime"), problems)
    marks = [] if excalidraw else markdown.task_marks(masked)
    state = _state(data.get("state"), marks, problems)
    aliases = _string_list(data.get("aliases"), "aliases", problems)
    aliases += _string_list(data.get("alias"), "alias", problems)
    importance = _importance(data.get("importance"), problems)
    namespace = _text(data.get("namespace"), "namespace", problems) or "default"
    scope = _text(data.get("scope"), "scope", problems) or "user"
    project = _text(data.get("project"), "project", problems)
    code_paths = _string_list(data.get("paths"), "paths", problems)
    agent = _text(data.get("agent"), "agent", problems)
    return Note(
        path=path, uid=uid, has_id=has_id, title=title, aliases=aliases, type=note_type, tags=tags,
        created=iso(created), updated=iso(updated), status=_status(data, state), state=state,
        progress=Progress(done=sum(1 for m in marks if m in "xX"), total=len(marks)),
        importance=importance, supersedes=_refs(data.get("supersedes")),
        superseded_by=_refs(data.get("superseded_by")), namespace=namespace, scope=scope, project=project,
        paths=code_paths, agent=agent, metadata=_metadata(data), body="" if excalidraw else body,
        links=_links(data, masked, excalidraw), problems=problems, etag=etag, size=size, mtime_ns=mtime_ns,
        excalidraw=excalidraw, has_frontmatter=front.present, frontmatter_ok=front.ok, fields=front.fields,
    )


@dataclass
class _Front:
    """The frontmatter of one note: as read (``fields``), as used (``data``), and the body."""

    body: str
    present: bool  # a frontmatter block was found
    ok: bool = True  # False: the block could not be read as a mapping (the writer keeps out)
    fields: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  # ``fields`` with unquoted [[links]] as text


def _frontmatter(text: str, size: int, problems: list[str]) -> _Front:
    split = split_frontmatter(text)
    found = split.problems
    if size > MAX_BYTES:
        # The closing '---' may well lie past the cut: say that rather than "never closed".
        found = [f"frontmatter: not closed within the first {MAX_BYTES:,} bytes that are indexed; "
                 "the indexed text is read as body" if p.startswith(_UNCLOSED) else p for p in found]
    problems += found
    front = _Front(split.body, split.yaml_text is not None)
    if split.yaml_text is not None:
        loaded = load_yaml(split.yaml_text)
        front.fields, front.ok = loaded.data, loaded.parsed
        problems += loaded.problems
        front.data = {key: _unflow_wikilinks(value) for key, value in loaded.data.items()}
    return front


def _title(path: str, data: dict[str, Any], body: str, masked: str, excalidraw: bool,
           problems: list[str]) -> str:
    """The ``title`` key, else the first ``# `` heading, else the file name without ``.md``."""
    stem = path.rpartition("/")[2]
    if excalidraw:
        stem = stem[: -len(".excalidraw.md")]
    elif stem.lower().endswith(".md"):
        stem = stem[:-3]
    heading = None if excalidraw else markdown.first_h1(body, masked)
    return _text(data.get("title"), "title", problems) or heading or stem


def _uid(path: str, data: dict[str, Any], problems: list[str]) -> tuple[str, bool]:
    """The ``id`` key (and True), else an id derived from the path (and False)."""
    raw_id = data.get("id")
    uid = _text(raw_id, "id", problems) if raw_id is not None else None
    if uid:
        return uid, True
    # Case is kept: real vaults hold `Notes/A.md` and `notes/a.md` side by side.
    return "p-" + file_etag(path.encode("utf-8", "replace"))[:16], False


def _tags(data: dict[str, Any], masked: str, excalidraw: bool, problems: list[str]) -> list[str]:
    """The ``tags`` key, then the body's inline ``#tags`` (not in code; not for drawings)."""
    tags = normalize_tags(data.get("tags"), problems)
    if excalidraw:
        return tags
    return _dedupe(tags + [t.lower() for t in markdown.inline_tags(masked)])


def _metadata(data: dict[str, Any]) -> dict[str, Any]:
    """The keys that are not core fields, plus a ``status`` other than active or archived."""
    metadata = {k: v for k, v in data.items() if k not in CORE_KEYS}
    raw_status = data.get("status")
    if raw_status is not None and str(raw_status).strip().lower() not in ("active", "archived"):
        metadata["status"] = raw_status
    return metadata


def _links(data: dict[str, Any], masked: str, excalidraw: bool) -> list[dict[str, Any]]:
    """Body wikilinks, body Markdown links, then frontmatter wikilinks (links.py counts on it)."""
    links = [] if excalidraw else markdown.body_links(masked)
    links += [lk for value in data.values() for lk in _frontmatter_links(value)]
    return [_link_dict(lk) for lk in links]


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
            text = str(item).strip() if not isinstance(item, bool) else str(item).lower()
            items.extend(p.strip() for p in text.split(",")) if "," in text else items.append(text)
    elif isinstance(value, bool | int | float):
        items = [str(value).lower()]
    else:
        if problems is not None:
            problems.append("tags: a mapping is not a tag list; ignored")
        return []
    cleaned = [_TAG_LEAD.sub("", t).strip().lower() for t in items]
    return _dedupe([t for t in cleaned if t])


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _text(value: Any, key: str, problems: list[str]) -> str | None:
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


def _string_list(value: Any, key: str, problems: list[str]) -> list[str]:
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


def _type(data: dict[str, Any], problems: list[str]) -> str:
    raw = data.get("type", data.get("kind"))
    text = _text(raw, "type", problems)
    if not text:
        return "note"
    return text.lower() if text.lower() in KNOWN_TYPES else text


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


def _state(raw: Any, marks: list[str], problems: list[str]) -> str:
    if raw is not None:
        word = _STATE_WORDS.get(str(raw).strip().lower())
        if word:
            return word
        problems.append(
            f"state: {str(raw)[:40]!r} is not one of {', '.join(TASK_STATES)}; derived from checkboxes"
        )
    if not marks or any(m not in "xX-" for m in marks):
        return "open"
    if all(m == "-" for m in marks):
        return "cancelled"
    return "completed"


def _status(data: dict[str, Any], state: str) -> str:
    raw = data.get("status")
    word = str(raw).strip().lower() if raw is not None else ""
    if word == "archived":
        return "archived"
    if word == "active":
        return "active"
    note_type = str(data.get("type", data.get("kind", ""))).strip().lower()
    if note_type == "task" and state in ("completed", "cancelled"):
        return "archived"
    return "active"


def _importance(raw: Any, problems: list[str]) -> float:
    if raw is None:
        return 0.5
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        problems.append(f"importance: {str(raw)[:40]!r} is not a number between 0 and 1; using 0.5")
        return 0.5
    if not 0.0 <= value <= 1.0:
        problems.append(f"importance: {value} is outside 0..1; clamped")
        return min(1.0, max(0.0, value)) if value == value else 0.5
    return value


def _refs(raw: Any) -> list[str]:
    values = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for value in values:
        if value is None or isinstance(value, dict | list):
            continue
        text = str(value).strip()
        links = markdown.wikilinks(text)
        out.extend(lk.target for lk in links if lk.target) if links else (out.append(text) if text else None)
    return _dedupe(out)


def _unflow_wikilinks(value: Any) -> Any:
    """Turn an unquoted ``[[Note]]`` back into its text.

    YAML reads ``up: [[Note]]`` as a list holding a list holding "Note"; people write it
    that way by hand, and it means a wikilink.
    """
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], list) and len(value[0]) == 1 \
                and isinstance(value[0][0], str):
            return f"[[{value[0][0]}]]"
        return [_unflow_wikilinks(v) for v in value]
    if isinstance(value, dict):
        return {k: _unflow_wikilinks(v) for k, v in value.items()}
    return value


def _frontmatter_links(value: Any) -> list[markdown.Link]:
    if isinstance(value, str):
        return markdown.wikilinks(value)
    if isinstance(value, list):
        return [lk for v in value for lk in _frontmatter_links(v)]
    if isinstance(value, dict):
        return [lk for v in value.values() for lk in _frontmatter_links(v)]
    return []


def _link_dict(link: markdown.Link) -> dict[str, Any]:
    out: dict[str, Any] = {"target": link.target}
    for key in ("heading", "block", "alias"):
        if getattr(link, key):
            out[key] = getattr(link, key)
    if link.embed:
        out["embed"] = True
    return out
