"""mem0 exported memories as notes.

Accepted: a JSON list of memories, or an object holding one under ``results`` (mem0's
``get_all`` answer) or ``memories``. OpenMemory's export (its zip, or its ``memories.json``
with ``export_meta``...) is refused, naming the command that reads it: ``import openmemory``.
A memory is an object with ``id``, its text in ``memory`` (mem0) or ``content``, and optionally
``metadata``, ``categories``, ``created_at``, ``updated_at``, ``user_id``, ``agent_id``,
``run_id``, ``app_id``/``app_name`` and ``state``. Each becomes a ``fact`` titled by its first
line, tagged with its categories, dated by its own dates; memories whose state is
``deleted`` are skipped. Graph memory's ``relations`` (``{source, source_type, relationship,
target}``; ``destination`` in older versions) become one note per source entity whose
``## Relations`` lines link to the targets.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.imports.archives import is_zip
from vault_mem.imports.mcp_memory import wikilink
from vault_mem.imports.records import (
    Merged,
    Record,
    Skipped,
    Source,
    first_line_title,
    json_kind,
    load_json,
    moment,
    read_items,
    source_moment,
    string_list,
    text_or_none,
)
from vault_mem.settings import Settings
from vault_mem.vault.note import KNOWN_TYPES

FORMAT = "mem0"
DEFAULT_DOMAIN = "mem0"
ACCEPTED = ("a JSON list of memories, or an object with 'results' or 'memories' holding one (and graph "
            "memory's 'relations')")
_IDS = ("user_id", "agent_id", "run_id", "app_id", "app_name", "hash")


def _memories(data: Any) -> list[Any] | None:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                return list(data[key])
    return None


def _record(item: Any, where: str, fallback: str, out: Source, config: Settings) -> Record | Skipped:
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
    return Record(source_id=source_id.strip(), title=first_line_title(text, config.import_title_chars),
                  body=text.strip(), fields=fields, where=where, dated=dated is not None)


def _relations(items: list[Any], out: Source, fallback: str, config: Settings) -> None:
    """Graph memory's ``relations`` as one note per source entity, its relations as links under
    ``## Relations`` (as the MCP memory graph's are), so each target's backlinks show them."""
    by_source: dict[str, tuple[str, set[tuple[str, str]], str]] = {}  # name -> (type, links, where)
    out.held += len(items)
    for number, item in enumerate(items, start=1):
        where = f"relation {number}"
        ends = [item.get(k) if isinstance(item, dict) else None for k in ("source", "relationship", "target")]
        if isinstance(item, dict) and not isinstance(ends[2], str):
            ends[2] = item.get("destination")
        if isinstance(item, dict) and not isinstance(ends[1], str):
            ends[1] = item.get("relation")
        start, rel, target = (e.strip() if isinstance(e, str) else "" for e in ends)
        if not (start and rel and target):
            out.skipped.append(Skipped(where, "a relation needs source, relationship and target (or destination), "
                                       "non-empty strings"))
            continue
        kind = text_or_none(item.get("source_type")) if isinstance(item, dict) else None
        entry = by_source.setdefault(start, ((kind or "note").strip(), set(), where))
        entry[1].add((rel, target))
        if entry[2] != where:  # the first relation of an entity carries its note; the others go into it
            link = wikilink(target, config)
            out.merged.append(Merged(where, start, f"a relation: '- {' '.join(rel.split())} {link}' in its note"))
    for name, (kind, links, where) in by_source.items():
        body = "## Relations\n\n" + "\n".join(f"- {' '.join(rel.split())} {wikilink(target, config)}"
                                                for rel, target in sorted(links))
        note_type = kind.lower() if kind.lower() in KNOWN_TYPES else kind
        out.records.append(Record(source_id=f"entity:{name}", title=" ".join(name.split()), body=body,
                                  fields={"type": note_type, "created": fallback, "updated": fallback},
                                  where=where, dated=False))


_BACKUP_KEYS = ("export_meta", "memory_categories", "status_history", "access_controls")


def _openmemory_backup(source: Path) -> InvalidInput:
    return InvalidInput("SOURCE", f"{source} looks like OpenMemory's export, not mem0's; import it with "
                        f"'vault-mem import openmemory {source.name}' (its categories, apps and states are kept)")


def read(source: Path, config: Settings) -> Source:
    if is_zip(source):
        raise _openmemory_backup(source)
    data = load_json(source, ACCEPTED)
    if isinstance(data, dict) and any(key in data for key in _BACKUP_KEYS):
        raise _openmemory_backup(source)
    memories = _memories(data)
    relations = data.get("relations") if isinstance(data, dict) else None
    if memories is None and not isinstance(relations, list):
        raise InvalidInput("SOURCE", f"{source} holds no memories: expected {ACCEPTED}")
    out = read_items(source, memories or [], "memory", partial(_record, config=config), unit="memories")
    if isinstance(relations, list):
        out.unit = "entries (memories and relations)"
        _relations(relations, out, source_moment(source), config)
    return out
