"""OpenMemory's export (mem0's local memory server) as notes: ``vault-mem import openmemory``.

OpenMemory's backup (``POST /api/v1/backup/export``, or its ``backup-scripts/export_openmemory.sh``;
mem0ai/mem0 ``openmemory/api/app/routers/backup.py``, as it was when OpenMemory left the repository
at commit 540d23d6, 2026-07-29) is a zip ``memories_export_<user>.zip`` holding:

    memories.json       {"user", "apps", "categories", "memories", "memory_categories",
                         "status_history", "access_controls", "export_meta"}; a memory is
                        {id, user_id, app_id, content, metadata, state, created_at, updated_at,
                         archived_at, deleted_at, category_ids}
    memories.jsonl.gz   one memory a line: {id, content, metadata, created_at, updated_at,
                         state, app (its name), categories (their names)}

Accepted: the zip, either file alone, or ``memories.jsonl`` unpacked. From the zip
``memories.json`` is read (``memories.jsonl.gz`` holds the same memories with less). Each memory
becomes a ``fact`` titled by its first line: its categories are its tags, its app (the MCP client
that wrote it: ``claude``, ``cursor``...) its ``agent``, its own dates its dates. State
(docs/import.md): ``active`` as is; ``archived`` and ``paused`` (neither is given to apps) get
``status: archived`` and keep the state in ``openmemory_state``; ``deleted`` is skipped, named
with its id. Notes a ``mem0`` import made from the same memories are found and updated, never
made twice.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.imports.archives import gunzip, is_gzip, is_zip, member, open_zip
from vault_mem.imports.records import (
    Record,
    Skipped,
    Source,
    first_line_title,
    json_kind,
    moment,
    read_source,
    source_moment,
    string_list,
    text_or_none,
)
from vault_mem.settings import Settings

FORMAT = "openmemory"
DEFAULT_DOMAIN = "openmemory"
ACCEPTED = ("OpenMemory's export zip (memories_export_USER.zip), or the memories.json or memories.jsonl.gz "
            "inside it")
_FULL, _LINES = "memories.json", "memories.jsonl.gz"
_HIDDEN_STATES = ("archived", "paused")  # OpenMemory gives neither to apps: archived notes here


def _decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput("SOURCE", f"{what} is not UTF-8 text (bad byte at offset {exc.start}); expected "
                           f"{ACCEPTED}") from None


def _json(data: bytes, what: str) -> Any:
    try:
        return json.loads(_decode(data, what))
    except json.JSONDecodeError as exc:
        raise InvalidInput("SOURCE", f"{what} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                           f"{exc.msg}); expected {ACCEPTED}") from None
    except RecursionError:
        raise InvalidInput("SOURCE", f"{what} is nested too deeply to read") from None


def _lines(data: bytes, what: str, out: Source) -> list[tuple[str, Any]]:
    """The memories of a ``memories.jsonl``: (where, parsed line); a line that does not parse is
    skipped with its number, and the rest go on."""
    items: list[tuple[str, Any]] = []
    for number, line in enumerate(_decode(data, what).split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        out.held += 1
        try:
            items.append((f"line {number}", json.loads(line)))
        except (json.JSONDecodeError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            out.skipped.append(Skipped(f"line {number}", f"not a JSON object ({reason})"))
    return items


def _names(rows: Any) -> dict[str, str]:
    """{id: name} of the ``apps`` or ``categories`` rows of memories.json."""
    found: dict[str, str] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and text_or_none(row.get("id")) and text_or_none(row.get("name")):
            found.setdefault(str(row["id"]), " ".join(str(row["name"]).split()))
    return found


class _Payload:
    """memories.json: what a memory's ids name (its app, its categories, its user)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.apps = _names(data.get("apps"))
        self.categories = _names(data.get("categories"))
        self.linked: dict[str, list[str]] = {}
        for link in data.get("memory_categories") or []:
            if isinstance(link, dict) and text_or_none(link.get("memory_id")) and text_or_none(link.get("category_id")):
                self.linked.setdefault(str(link["memory_id"]), []).append(str(link["category_id"]))
        user = data.get("user")
        self.user = text_or_none(user.get("user_id")) if isinstance(user, dict) else None

    def app(self, item: dict[str, Any]) -> str | None:
        app_id = text_or_none(item.get("app_id"))
        return self.apps.get(app_id) if app_id else None

    def tags(self, item: dict[str, Any], memory_id: str) -> list[str]:
        ids = [str(i) for i in item.get("category_ids") or [] if isinstance(i, str | int)]
        ids += [i for i in self.linked.get(memory_id, []) if i not in ids]
        return [self.categories[i] for i in ids if i in self.categories]


def _record(item: Any, where: str, fallback: str, payload: _Payload | None, user: str | None,
            config: Settings) -> Record | Skipped:
    if not isinstance(item, dict):
        return Skipped(where, f"{json_kind(item)}, not a memory object")
    memory_id = text_or_none(item.get("id"))
    if memory_id is None:
        return Skipped(where, "a memory without an id")
    memory_id = memory_id.strip()
    state = (text_or_none(item.get("state")) or "active").strip().lower()
    if state == "deleted":
        when = moment(item.get("deleted_at"))
        return Skipped(where, f"memory {memory_id!r} was deleted in OpenMemory"
                       + (f" ({when})" if when else "") + "; not imported")
    text = text_or_none(item.get("content"))
    if text is None or not text.strip():
        return Skipped(where, f"memory {memory_id!r} has no content")
    dated = moment(item.get("created_at"))
    created = dated or fallback
    updated = moment(item.get("updated_at")) or created
    if payload is not None:
        app, tags = payload.app(item), payload.tags(item, memory_id)
    else:
        app, tags = text_or_none(item.get("app")), string_list(item.get("categories"))
    names = list(dict.fromkeys(tags))
    # A tag holds no comma (the vault reads "a, b" as two): "ai, ml & technology" is the tag
    # "ai ml & technology", and the names as OpenMemory wrote them stay in openmemory_categories.
    safe = list(dict.fromkeys(" ".join(name.replace(",", " ").split()) for name in names))
    fields: dict[str, Any] = {"type": "fact", "tags": safe, "created": created, "updated": updated}
    if safe != names:
        fields["openmemory_categories"] = names
    if app:
        fields["agent"] = " ".join(app.split())
    if state in _HIDDEN_STATES:
        fields["status"] = "archived"
    if state != "active":
        fields["openmemory_state"] = state
    archived = moment(item.get("archived_at"))
    if archived and state in _HIDDEN_STATES:
        fields["openmemory_archived_at"] = archived
    if user:
        fields["openmemory_user"] = user
    metadata = item.get("metadata")
    if isinstance(metadata, dict) and metadata:
        fields["openmemory_metadata"] = metadata
    return Record(source_id=memory_id, title=first_line_title(text, config.import_title_chars),
                  body=text.strip(), fields=fields, where=where, dated=dated is not None, also=(("mem0", memory_id),))


def _from_payload(data: Any, what: str, fallback: str, config: Settings) -> Source:
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        shape = "an object without a 'memories' list" if isinstance(data, dict) else json_kind(data)
        raise InvalidInput("SOURCE", f"{what} is {shape}; expected {ACCEPTED}")
    payload = _Payload(data)
    memories = data["memories"]
    out = Source(held=len(memories), unit="memories")
    for number, item in enumerate(memories, start=1):
        out.add(_record(item, f"memory {number}", fallback, payload, payload.user, config))
    for key, what_left in (("status_history", "state changes (status_history)"),
                           ("access_controls", "app access rules (access_controls)")):
        rows = data.get(key)
        out.leave(what_left, len(rows) if isinstance(rows, list) else 0)
    return out


def _from_lines(data: bytes, what: str, fallback: str, config: Settings) -> Source:
    out = Source(unit="memories")
    for where, item in _lines(data, what, out):
        out.add(_record(item, where, fallback, None, None, config))
    return out


def _from_zip(source: Path, fallback: str, config: Settings) -> Source:
    with open_zip(source) as zf:
        entries = {PurePosixPath(info.filename).name: info for info in zf.infolist() if not info.is_dir()}
        if _FULL in entries:
            name = f"{entries[_FULL].filename} in {source.name}"
            limit = config.import_unpacked_bytes
            return _from_payload(_json(member(zf, entries[_FULL], source, limit), name), name, fallback, config)
        if _LINES in entries:
            name = f"{entries[_LINES].filename} in {source.name}"
            limit = config.import_unpacked_bytes
            return _from_lines(gunzip(member(zf, entries[_LINES], source, limit), name, limit), name, fallback,
                               config)
    listed = ", ".join(sorted(entries)[:5]) or "nothing"
    raise InvalidInput("SOURCE", f"{source} is a zip without {_FULL} or {_LINES} (it holds {listed}); "
                       f"expected {ACCEPTED}")


def read(source: Path, config: Settings) -> Source:
    fallback = source_moment(source)
    if is_zip(source):
        return _from_zip(source, fallback, config)
    data = read_source(source, "the export zip, or memories.json inside it")
    what = str(source)
    if is_gzip(data):
        return _from_lines(gunzip(data, what, config.import_unpacked_bytes), what, fallback, config)
    try:
        parsed = json.loads(_decode(data, what))
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # more than one JSON value: memories.jsonl, unpacked
            return _from_lines(data, what, fallback, config)
        raise InvalidInput("SOURCE", f"{what} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                           f"{exc.msg}); expected {ACCEPTED}") from None
    except RecursionError:
        raise InvalidInput("SOURCE", f"{what} is nested too deeply to read") from None
    if isinstance(parsed, dict) and "memories" not in parsed and "content" in parsed:
        return _from_lines(data, what, fallback, config)  # a memories.jsonl of one line
    return _from_payload(parsed, what, fallback, config)
