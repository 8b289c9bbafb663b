"""The generic form: one JSON object per line, for everything that has no importer of its own.

    {"text": "...", "title": "...", "date": "2024-05-01", "tags": ["a"], "type": "fact",
     "domain": "work/acme", "id": "source-id-42"}

``text`` (or ``body``) is the note's body and the only key required; ``title`` defaults to
its first line, ``date`` (or ``created``, ``created_at``, ``timestamp``, ``ts``: ISO text or
POSIX seconds) to the file's modification time, ``type`` to
``note``, ``domain`` to the import's ``--domain`` or the vault's top. ``id`` is the record's
id in its source, what makes a second import update rather than duplicate; without one the
title, date and text stand for it. The lines ``vault-mem export`` writes are accepted as they
are (``uid``, ``path``, ``updated``, ``aliases``, ``importance``, ``metadata``... are kept),
so that exporting a vault and importing the file into an empty one gives back equal notes;
a note's ``imported_from``, ``import_id`` and ``import_hash`` travel with it, so a re-import of
its first source into the new vault still finds it. ``path`` is cleaned and confined as a
write tool's title and domain are (imports.notes).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Any

from vault_mem.imports.notes import IMPORT_HASH, IMPORT_ID, IMPORTED_FROM
from vault_mem.imports.records import (
    Record,
    Skipped,
    Source,
    first_line_title,
    json_kind,
    json_lines,
    moment,
    source_moment,
    string_list,
    text_or_none,
)
from vault_mem.settings import Settings
from vault_mem.vault.reader import CORE_KEYS

FORMAT = "jsonl"
DEFAULT_DOMAIN = ""
_DEFAULTS = {"importance": 0.5, "namespace": "default", "scope": "user"}
_LISTS = ("aliases", "paths", "supersedes", "superseded_by")
_IMPORT_KEYS = (IMPORTED_FROM, IMPORT_ID, IMPORT_HASH)
_CREATED = ("created", "date", "created_at", "timestamp", "ts")  # the first that is a date dates the note
_UPDATED = ("updated", "updated_at")


def _fields(obj: dict[str, Any], created: str, updated: str) -> dict[str, Any]:
    note_type = text_or_none(obj.get("type")) or "note"
    fields: dict[str, Any] = {"type": note_type.strip(), "tags": string_list(obj.get("tags")),
                              "created": created, "updated": updated}
    for key in _LISTS:
        fields[key] = string_list(obj.get(key))
    for key, default in _DEFAULTS.items():
        value = obj.get(key)
        if value is not None and value != default and not isinstance(value, bool | dict | list):
            fields[key] = value
    for key in ("project", "agent"):
        value = text_or_none(obj.get(key))
        if value is not None:
            fields[key] = value
    if str(obj.get("memory_status", obj.get("status", ""))) == "archived":
        fields["status"] = "archived"
    if note_type == "task" and text_or_none(obj.get("state")):
        fields["state"] = obj["state"]
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        for key, value in metadata.items():
            if key not in CORE_KEYS and key not in _IMPORT_KEYS and key not in fields:
                fields[str(key)] = value
    return fields


def _file(obj: dict[str, Any], where: str) -> Record | Skipped | None:
    """The line of ``vault-mem export`` (``path``, ``etag`` and ``file`` or ``file_base64``) as the
    file to restore byte for byte; None for any other line."""
    text, packed, path = obj.get("file"), obj.get("file_base64"), obj.get("path")
    if not (isinstance(obj.get("etag"), str) and isinstance(path, str) and (isinstance(text, str)
                                                                         or isinstance(packed, str))):
        return None
    if isinstance(text, str):
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:
            return Skipped(where, "'file' holds text that is not UTF-8 (a lone surrogate)")
    else:
        try:
            raw = base64.b64decode(str(packed), validate=True)
        except (binascii.Error, ValueError):
            return Skipped(where, "'file_base64' is not base64")
    title = text_or_none(obj.get("title")) or PurePosixPath(path).stem or "Untitled"
    uid = text_or_none(obj.get("uid"))
    mtime = obj.get("mtime_ns")
    return Record(source_id=path, title=" ".join(title.split()), body="", fields={}, path=path, where=where,
                  uid=uid.strip() if uid else None, raw=raw,
                  mtime_ns=mtime if isinstance(mtime, int) and not isinstance(mtime, bool) and mtime > 0 else None)


def _record(obj: Any, where: str, fallback: str, config: Settings) -> Record | Skipped:
    if not isinstance(obj, dict):
        return Skipped(where, f"{json_kind(obj)}, not an object with 'text'")
    restored = _file(obj, where)
    if restored is not None:
        return restored
    text = obj.get("text", obj.get("body"))
    if not isinstance(text, str):
        return Skipped(where, "no text: each line needs 'text' (or 'body'), a string")
    title = text_or_none(obj.get("title"))
    if title is None and not text.strip():
        return Skipped(where, "empty: neither text nor a title")
    title = " ".join((title or first_line_title(text, config.import_title_chars)).split())
    dated = next((m for key in _CREATED if key in obj and (m := moment(obj[key]))), None)
    created = dated or fallback
    updated = next((m for key in _UPDATED if key in obj and (m := moment(obj[key]))), None) or created
    uid = text_or_none(obj.get("uid"))
    source_id = text_or_none(obj.get("id")) or uid
    if source_id is None:
        seed = json.dumps([title, dated, text], ensure_ascii=False)
        source_id = "sha256-" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    domain = text_or_none(obj.get("domain"))
    path = text_or_none(obj.get("path"))
    return Record(source_id=source_id.strip(), title=title, body=text, fields=_fields(obj, created, updated),
                  domain=domain.strip() if domain else ("" if "domain" in obj else None),
                  path=path, uid=uid.strip() if uid else None, where=where, dated=dated is not None,
                  origin=_origin(obj))


def _origin(obj: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """The import identity an exported note carried (its metadata's imported_from, import_id and
    import_hash), kept so that a moved vault still knows where each note came from."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return None
    fmt, source_id = text_or_none(metadata.get(IMPORTED_FROM)), text_or_none(metadata.get(IMPORT_ID))
    if fmt is None or source_id is None:
        return None
    return fmt.strip(), source_id, text_or_none(metadata.get(IMPORT_HASH))


def read(source: Path, config: Settings) -> Source:
    out = Source()
    fallback = source_moment(source)
    for where, obj in json_lines(source, out):
        out.add(_record(obj, where, fallback, config))
    return out
