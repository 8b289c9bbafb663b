"""Bytes on disk to a Note. ``read_note`` never raises on user content.

Whatever is wrong with a file becomes a line in ``Note.problems`` and the note is
indexed as well as it can be.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from vault_mem.settings import Settings
from vault_mem.vault import markdown
from vault_mem.vault.dates import from_timestamp, iso
from vault_mem.vault.fields import (
    CORE_KEYS,
    CREATED_KEYS,
    UPDATED_KEYS,
    Source,
    created_fallback,
    normalize_tags,
    parse_fields,
)
from vault_mem.vault.frontmatter import load_yaml, split_frontmatter
from vault_mem.vault.note import NOTE_ATTRIBUTES, Note
from vault_mem.vault.paths import NotANote, display_path, link_target
from vault_mem.vault.portable import O_BINARY

_BOM = b"\xef\xbb\xbf"
_NOT_REGULAR = "not a regular file (a FIFO, socket or device); not read"
_UNCLOSED = "frontmatter: the opening '---' is never closed"


def file_etag(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


VersionKey = tuple[int, int, int, int]  # (mtime_ns, size, inode, device)


def version_key(path: os.PathLike[str] | str) -> VersionKey | None:
    """What tells one version of a file or folder from the next, from one stat (None: there is
    none): a file replaced whole has another inode, a folder's mtime moves when a name in it is
    made, removed or renamed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


__all__ = [
    "CORE_KEYS",
    "CREATED_KEYS",
    "UPDATED_KEYS",
    "DateSource",
    "VersionKey",
    "created_fallback",
    "decode",
    "file_etag",
    "normalize_tags",
    "parse_text",
    "read_agreeing",
    "read_bytes",
    "read_linked",
    "read_note",
    "read_whole",
    "read_whole_linked",
    "version_key",
]



def read_bytes(path: Path, config: Settings) -> tuple[bytes, str, int, int, list[str]]:
    """(first ``max_note_bytes`` bytes, etag of the whole file, size, mtime_ns, problems). Never raises.

    Opens without blocking so a FIFO named ``x.md`` cannot stall the indexer.
    """
    return _read_bytes(path, config)[0]


Read = tuple[bytes, str, int, int, list[str]]  # what read_bytes gives


def _read_bytes(path: Path, config: Settings) -> tuple[Read, tuple[int, int] | None]:
    """``read_bytes``, and the (device, inode) of the file read (None: none was opened)."""
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
            return (b"", "", 0, 0, [_NOT_REGULAR]), None
        return (b"", "", 0, 0, [f"unreadable: {exc.strerror or exc}"]), None
    try:
        st = os.fstat(fd)
        identity = (st.st_dev, st.st_ino)
        if not stat.S_ISREG(st.st_mode):
            return (b"", "", 0, st.st_mtime_ns, [_NOT_REGULAR]), identity
        digest = hashlib.blake2b(digest_size=12)
        kept = bytearray()
        total = 0
        while True:
            chunk = os.read(fd, config.read_chunk)
            if not chunk:
                break
            digest.update(chunk)
            total += len(chunk)
            if len(kept) < config.max_note_bytes:
                kept += chunk[: config.max_note_bytes - len(kept)]
        if total > config.max_note_bytes:
            problems.append(f"file is {total:,} bytes; indexed up to the first {config.max_note_bytes:,}")
        return (bytes(kept), digest.hexdigest(), total, st.st_mtime_ns, problems), identity
    except OSError as exc:
        return (b"", "", 0, 0, [f"unreadable: {exc.strerror or exc}"]), None
    finally:
        os.close(fd)


def read_linked(root: Path, rel: str, config: Settings) -> tuple[Read, str | None]:
    """``read_bytes`` of the note at ``rel`` (an OS path under ``root``) and the file a symlink makes
    it (``link_target``: None when none does), the two agreeing (``read_agreeing``). Raises NotANote
    when the path leads to no note (outside the vault, into a hidden folder...)."""
    unsure: Read = (b"", "", 0, 0, ["unreadable: it changed while it was read (a symlink swapped?)"])
    chosen = config
    return read_agreeing(root, rel, lambda path: _read_bytes(path, chosen), unsure)


T = TypeVar("T")


def read_agreeing(root: Path, rel: str, read: Callable[[Path], tuple[T, tuple[int, int] | None]],
                  unsure: T) -> tuple[T, str | None]:
    """What ``read`` gives for the file at ``rel`` (with the device and inode it read) and where the
    path leads (``link_target``), the two agreeing: the bytes come from the file that the path leads
    to when it is looked at, after the read, so a link swapped meanwhile never passes one file's
    bytes off as another's. When they disagree the file is read again, once; a second disagreement
    gives ``unsure`` and None. Raises NotANote."""
    for _ in range(2):
        found, identity = read(root / rel)
        real = link_target(root, rel)
        if identity is None or identity[1] == 0:  # nothing opened, or a file system without inodes
            return found, real
        try:
            st = os.lstat(root / (real if real is not None else rel))
            if (st.st_dev, st.st_ino) == identity:
                return found, real
        except OSError:
            pass
    return unsure, None


def read_whole_linked(root: Path, rel: str, config: Settings) -> tuple[bytes, str | None]:
    """``read_whole`` of the note at ``rel`` and where its path leads, agreeing (``read_agreeing``).
    Raises OSError (EAGAIN when a link kept changing while it was read) or NotANote."""
    chunk = config.read_chunk
    found, real = read_agreeing(root, rel, lambda path: _read_whole(path, chunk), None)
    if found is None:
        raise OSError(errno.EAGAIN, "it changed while it was read (a symlink swapped?)")
    return found, real


def read_whole(path: Path, config: Settings) -> bytes:
    """All of a note file's bytes, opened without blocking (a FIFO named ``x.md`` cannot hang).

    Raises OSError, EINVAL for anything that is not a regular file.
    """
    return _read_whole(path, config.read_chunk)[0]


def _read_whole(path: Path, read_chunk: int) -> tuple[bytes, tuple[int, int]]:
    fd = os.open(path, os.O_RDONLY | O_BINARY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)")
        chunks = []
        while chunk := os.read(fd, read_chunk):
            chunks.append(chunk)
        return b"".join(chunks), (st.st_dev, st.st_ino)
    finally:
        os.close(fd)


def decode(data: bytes, config: Settings) -> tuple[str, list[str]]:
    """Text of a note: BOM dropped, CRLF to LF, bad UTF-8 replaced, NULs removed (a character cut at
    the ``max_note_bytes`` read is no problem)."""
    problems: list[str] = []
    if data.startswith(_BOM):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        truncated_tail = exc.start >= len(data) - 3 and len(data) >= config.max_note_bytes - 3
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


def read_note(root: Path, rel: str, history: DateSource | None = None, *, config: Settings) -> Note:
    """Read ``rel`` (an OS path relative to ``root``) into a Note, within the bounds of ``config``.
    Never raises.

    ``history``, when given, supplies the (created, updated) of a file committed as it is."""
    config = config
    problems: list[str] = []
    shown = display_path(rel)
    if shown != rel.replace(os.sep, "/") and "\ufffd" in shown:
        problems.append("file name is not valid UTF-8; shown with U+FFFD")
    try:
        (data, etag, size, mtime_ns, read_problems), real = read_linked(root, rel, config)
    except NotANote as exc:
        problems.append(f"the path {exc}")
        return parse_text(shown, "", "", 0, 0, problems, config=config)
    problems += read_problems
    text, decode_problems = decode(data, config)
    problems += decode_problems
    dates = history.dates(shown, data) if history is not None and len(data) == size else None
    note = parse_text(shown, text, etag, size, mtime_ns, problems, dates, config=config)
    if real is not None:
        note.real = real
    return note


def parse_text(path: str, text: str, etag: str, size: int, mtime_ns: int, problems: list[str],
               history: tuple[dt.datetime, dt.datetime] | None = None, *, config: Settings) -> Note:
    """Build a Note from decoded text. ``path`` is the display form of the vault-relative path;
    ``history`` the (created, updated) git gives a committed file (docs/git.md), before the mtime.

    The fields are those of the field table (``vault/fields.py``), each parsed by its row's
    parser, appending its problems as it runs, so ``problems`` keeps one order: those given
    (reading, decoding), the frontmatter block and its YAML, git conflict markers, then the
    table's rows in order (title, id, type, tags, created, updated, state, aliases, alias,
    importance, namespace, scope, project, paths, agent). ``problems`` itself is not changed.
    """
    problems = [*problems]
    front = _frontmatter(text, size, problems, config)
    data, body = front.data, front.body
    excalidraw = path.lower().endswith(".excalidraw.md")
    masked = markdown.mask_code(body)
    if markdown.has_conflict_markers(text):
        problems.append("contains git merge-conflict markers")
    mtime = from_timestamp(mtime_ns / 1e9) if mtime_ns else from_timestamp(0)
    marks = [] if excalidraw else markdown.task_marks(masked)
    source = Source(path, data, body, masked, excalidraw, mtime, history, marks, problems)
    values = parse_fields(source)
    declared = {name: value for name, value in values.items() if name in NOTE_ATTRIBUTES}
    declared["created"], declared["updated"] = iso(values["created"]), iso(values["updated"])
    return Note(
        path=path, has_id=source.has_id, **declared, body="" if excalidraw else body,
        links=_links(data, masked, excalidraw), problems=problems, etag=etag, size=size, mtime_ns=mtime_ns,
        excalidraw=excalidraw, has_frontmatter=front.present, frontmatter_ok=front.ok, fields=front.fields,
        more={name: value for name, value in values.items() if name not in NOTE_ATTRIBUTES},
    )


@dataclass
class _Front:
    """The frontmatter of one note: as read (``fields``), as used (``data``), and the body."""

    body: str
    present: bool  # a frontmatter block was found
    ok: bool = True  # False: the block could not be read as a mapping (the writer keeps out)
    fields: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  # ``fields`` with unquoted [[links]] as text


def _frontmatter(text: str, size: int, problems: list[str], config: Settings) -> _Front:
    split = split_frontmatter(text)
    found = split.problems
    if size > config.max_note_bytes:
        # The closing '---' may well lie past the cut: say that rather than "never closed".
        found = [f"frontmatter: not closed within the first {config.max_note_bytes:,} bytes that are indexed; "
                 "the indexed text is read as body" if p.startswith(_UNCLOSED) else p for p in found]
    problems += found
    front = _Front(split.body, split.yaml_text is not None)
    if split.yaml_text is not None:
        loaded = load_yaml(split.yaml_text, config)
        front.fields, front.ok = loaded.data, loaded.parsed
        problems += loaded.problems
        front.data = {key: _unflow_wikilinks(value) for key, value in loaded.data.items()}
    return front


def _links(data: dict[str, Any], masked: str, excalidraw: bool) -> list[dict[str, Any]]:
    """Body wikilinks, body Markdown links, then frontmatter wikilinks (links.py counts on it)."""
    links = [] if excalidraw else markdown.body_links(masked)
    links += [lk for value in data.values() for lk in _frontmatter_links(value)]
    return [_link_dict(lk) for lk in links]


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
