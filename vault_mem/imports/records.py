"""What every importer produces: records to become notes, and the entries it had to skip.

A format module reads its source whole (``read(source) -> Source``) and never writes; the
shared ``imports.notes`` turns the records into notes. Reading never raises on the source's
contents: a line or an entry that does not fit is a ``Skipped`` naming where it was and why.
Only a source that cannot be read at all (missing, not JSON, not the expected shape) is an
InvalidInput naming SOURCE and what the format accepts.

Every entry of the source has one outcome (docs/import.md, "Every record accounted for"): it
is a ``Record`` (a note), ``Merged`` into another entry's note (a second line of the same
entity, a relation), or ``Skipped`` with its reason; ``Source.held`` counts the entries, and
``records + merged + skipped == held``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.vault.dates import from_timestamp, iso, parse_datetime


@dataclass
class Record:
    """One note to be: its source id, the frontmatter the import writes, and its body."""

    source_id: str
    title: str
    body: str
    fields: dict[str, Any]  # type, tags, created, updated and any format-specific keys; no id
    domain: str | None = None  # None: the import's --domain or the format's default folder
    path: str | None = None  # a vault-relative path to use as is (the jsonl form of an export)
    uid: str | None = None  # the note id to keep (an export's uid); None: a new one
    where: str = ""  # "line 12", "conversation 3": for messages
    dated: bool = True  # False: created/updated are the source file's time, not the record's own
    # (imported_from, import_id, import_hash) a note carried before it was exported: an export moved
    # into a new vault keeps its notes' import identity, so a re-import of the first source still matches
    origin: tuple[str, str, str | None] | None = None
    # The whole file to write as it is (a line of ``vault-mem export``): a backup restored byte for byte
    raw: bytes | None = None
    mtime_ns: int | None = None  # the restored file's modification time (what dates a note without dates)
    # Other (imported_from, import_id) a note of this record may carry from an earlier import of the same
    # source by another format (an OpenMemory memory once imported with ``mem0``): found, it is updated
    also: tuple[tuple[str, str], ...] = ()
    # ``path``'s folders are kept below ``--domain`` (an OKF bundle's tree) instead of being dropped
    tree: bool = False


@dataclass
class Skipped:
    where: str
    reason: str


@dataclass
class Merged:
    """An entry whose content went into another entry's note (``into``: that note's title)."""

    where: str
    into: str
    what: str  # "the same entity again", "a relation", ...


@dataclass
class Source:
    records: list[Record] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    merged: list[Merged] = field(default_factory=list)
    held: int = 0  # the entries the source holds: each one a record, merged or skipped
    unit: str = "entries"  # what an entry is, for the summary: "lines", "conversations", ...
    # What the notes hold of the entries' parts, as (in the source, in the notes), for the summary
    # to show that they add up: {"observations": (313, 313)}
    parts: dict[str, tuple[int, int]] = field(default_factory=dict)
    # What the format's notes do not hold by design (thinking, tool calls, other branches...), counted
    # so that the summary names it: {"thinking blocks": 12, ...}
    left_out: dict[str, int] = field(default_factory=dict)

    def leave(self, what: str, count: int = 1) -> None:
        if count:
            self.left_out[what] = self.left_out.get(what, 0) + count

    def add(self, item: Record | Skipped) -> None:
        if isinstance(item, Skipped):
            self.skipped.append(item)
        else:
            self.records.append(item)


def read_source(source: Path, inside: str = "the file inside it (conversations.json, memory.jsonl, ...)") -> bytes:
    """The source file's bytes; InvalidInput("SOURCE") when it cannot be read (``inside``: what to
    pass instead when it is a folder)."""
    try:
        return source.read_bytes()
    except FileNotFoundError:
        raise InvalidInput("SOURCE", f"{source} does not exist; pass the export file to import") from None
    except IsADirectoryError:
        raise InvalidInput("SOURCE", f"{source} is a folder; pass {inside}") from None
    except OSError as exc:
        raise InvalidInput("SOURCE", f"{source} cannot be read: {exc.strerror or exc}") from None


def read_text(source: Path) -> str:
    """The source file's text; InvalidInput("SOURCE") when it cannot be read as UTF-8."""
    data = read_source(source)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput("SOURCE", f"{source} is not UTF-8 text (bad byte at offset {exc.start}); "
                           "is it the unzipped export file?") from None


def load_json(source: Path, accepted: str) -> Any:
    """The whole source parsed as JSON; InvalidInput naming the line and column where it breaks."""
    text = read_text(source)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput("SOURCE", f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                           f"{exc.msg}); expected {accepted}") from None
    except RecursionError:
        raise InvalidInput("SOURCE", f"{source} is nested too deeply to read") from None


def source_moment(source: Path) -> str:
    """The source file's modification time, for formats that carry no dates of their own."""
    try:
        return iso(from_timestamp(os.stat(source).st_mtime))
    except OSError:
        return iso(dt.datetime.now(dt.UTC))


def moment(value: Any) -> str | None:
    """A source date (ISO text or a POSIX timestamp) as the vault's one date form; None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if not 0 < value < 253402300800:  # up to 9999-12-31
            return None
        return iso(from_timestamp(float(value)))
    parsed = parse_datetime(value)
    return iso(parsed) if parsed else None


def first_line_title(text: str, limit: int) -> str:
    """A title from the first non-empty line of ``text``, cut at a word near ``limit`` characters
    (the ``import_title_chars`` setting)."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = line.lstrip("#>-* ").strip() or line
    if len(line) <= limit:
        return line or "Untitled"
    cut = line[:limit].rsplit(" ", 1)[0] or line[:limit]
    return cut.rstrip(" ,.;:") + "…"


def json_kind(value: Any) -> str:
    """What a JSON value is, as a person would say it: an object, a list, a string, a number, null."""
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false"}.get(
        type(value), "a number")


def text_or_none(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def string_list(value: Any) -> list[str]:
    """Tags or categories: a list of strings, or one comma-separated string."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(item).strip() for item in value if isinstance(item, str | int) and str(item).strip()]
    return []


def json_lines(source: Path, out: Source) -> Iterator[tuple[str, Any]]:
    """Each non-blank line of ``source`` parsed as JSON, with where it is (``line N``); a line
    that does not parse is added to ``out.skipped`` with its reason, and the rest go on. Lines end
    at LF only: U+2028, U+0085 and the other breaks ``str.splitlines`` knows may stand inside a
    JSON string as they are (``json.dumps(ensure_ascii=False)`` leaves them)."""
    out.unit = "lines"
    for number, line in enumerate(read_text(source).split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        out.held += 1
        where = f"line {number}"
        try:
            yield where, json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            out.skipped.append(Skipped(where, f"not a JSON object ({reason})"))


def read_items(source: Path, items: list[Any], noun: str,
               record: Callable[[Any, str, str, Source], Record | Skipped], unit: str = "") -> Source:
    """The records of a source that holds a list: ``record(item, where, fallback, out)`` for each
    item, ``where`` being ``NOUN N``, ``fallback`` the source file's time (for undated items) and
    ``out`` the Source, to count what the notes leave out (``out.leave``)."""
    out = Source(held=len(items), unit=unit or f"{noun}s")
    fallback = source_moment(source)
    for number, item in enumerate(items, start=1):
        out.add(record(item, f"{noun} {number}", fallback, out))
    return out
