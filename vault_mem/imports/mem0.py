"""mem0 and OpenMemory exported memories as notes.

Accepted: a JSON list of memories, or an object holding one under ``results`` (mem0's
``get_all`` answer) or ``memories`` (OpenMemory's ``memories.json``). A memory is an object
with ``id``, its text in ``memory`` (mem0) or ``content`` (OpenMemory), and optionally
``metadata``, ``categories``, ``created_at``, ``updated_at``, ``user_id``, ``agent_id``,
``run_id``, ``app_id``/``app_name`` and ``state``. Each becomes a ``fact`` titled by its first
line, tagged with its categories, dated by its own dates; memories whose state is
``deleted`` are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.imports.records import (
    Record,
    Skipped,
    Source,
    first_line_title,
    json_kind,
    load_json,
    moment,
    read_items,
    string_list,
    text_or_none,
)

FORMAT = "mem0"
DEFAULT_DOMAIN = "mem0"
ACCEPTED = "a JSON list of memories, or an object with 'results' or 'memories' holding one"
_IDS = ("user_id", "agent_id", "run_id", "app_id", "app_name", "hash")


def _memories(data: Any) -> list[Any] | None:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                return list(data[key])
    return None


def _record(item: Any, where: str, fallback: str) -> Record | Skipped:
    if not isinstance(item, dict):
        return Skipped(where, f"{json_kind(item)}, not a memory object")
    source_id = text_or_none(item.get("id"))
    if source_id is None:
        return Skipped(where, "a memory without an id")
    text = text_or_none(item.get("memory")) or text_or_none(item.get("content")) or text_or_none(item.get("text"))
    if text is None:
        return Skipped(where, f"memory {source_id!r} has no text (memory or content)")
    if str(item.get("state", "")).lower() == "deleted":
        return Skipped(where, f"memory {source_id!r} was deleted in the source")
    dated = moment(item.get("created_at"))
    created = dated or fallback
    updated = moment(item.get("updated_at")) or created
    categories = string_list(item.get("categories"))
    fields: dict[str, Any] = {"type": "fact", "tags": categories, "created": created, "updated": updated}
    for key in _IDS:
        value = text_or_none(item.get(key))
        if value is not None:
            fields[f"mem0_{key}"] = value.strip()
    metadata = item.get("metadata")
    if isinstance(metadata, dict) and metadata:
        fields["mem0_metadata"] = metadata
    return Record(source_id=source_id.strip(), title=first_line_title(text), body=text.strip(), fields=fields,
                  where=where, dated=dated is not None)


def read(source: Path) -> Source:
    memories = _memories(load_json(source, ACCEPTED))
    if memories is None:
        raise InvalidInput("SOURCE", f"{source} holds no memories: expected {ACCEPTED}")
    return read_items(source, memories, "memory", _record)
