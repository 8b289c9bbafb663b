"""The reference MCP memory server's knowledge graph (``memory.jsonl``) as notes.

Each line of the file is one JSON object: ``{"type": "entity", "name", "entityType",
"observations": [...]}`` or ``{"type": "relation", "from", "to", "relationType"}``. Servers
built on the same file write it in other shapes too, all read here (docs/import.md):

- an observation is a string, or an object holding it under ``text`` (``{"text", "timestamp",
  "version"}``); an object without text is kept as its JSON, so that no observation is lost;
- one entity may take several lines (appends, or two tools writing the file): its lines are
  merged into one note, in file order, each later line counted as merged;
- an entity's ``createdAt``/``updatedAt`` (POSIX seconds or ISO), else its observations'
  timestamps, date the note; without any, the file's modification time does;
- a relation's ends may be ``from_entity``/``to_entity`` (or ``source``/``target``);
- the kind may be missing (``entityType`` or ``relationType`` tells it) or spelled ``_type``.

An entity becomes a note titled by its name (its ``import_id``), typed by its first entityType
(lower-cased when it is one of the vault's types, else kept as written; the others of a merged
entity become tags), its observations a list and its outgoing relations ``[[wikilinks]]``
under ``## Relations``, so backlinks work at once. Keys of its own beyond these are kept in the
frontmatter as ``mcp_KEY``. Every line has one outcome: the note of its entity, merged into it,
or skipped with its line number and why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_mem.imports.records import (
    Merged,
    Record,
    Skipped,
    Source,
    json_kind,
    json_lines,
    moment,
    source_moment,
)
from vault_mem.settings import Settings
from vault_mem.vault.note import KNOWN_TYPES
from vault_mem.vault.writer import note_filename

FORMAT = "mcp-memory"
DEFAULT_DOMAIN = "mcp-memory"
_CREATED = ("createdAt", "created_at")
_UPDATED = ("updatedAt", "updated_at", "_savedAt")
_OWN = {"type", "_type", "name", "entityType", "observations", *_CREATED, *_UPDATED}
_FROM, _TO, _REL = ("from", "from_entity", "source"), ("to", "to_entity", "target"), \
    ("relationType", "relation_type", "relation")
_OBSERVATION_TEXT = ("text", "content", "observation", "value")
_OBSERVATION_TIME = ("timestamp", "createdAt", "created_at", "time")
OBSERVATION_DETAILS = "observation details beyond its text and time (version, ...)"
RELATION_DETAILS = "relation details beyond its two ends and type (createdAt, createdBy, ...)"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def wikilink(name: str, config: Settings) -> str:
    """A link to the note an entity named ``name`` becomes (its file name, shown as the name)."""
    stem = note_filename(name, config)[:-3]
    shown = _one_line(name).replace("]", "").replace("|", "/")
    return f"[[{stem}]]" if stem == shown else f"[[{stem}|{shown}]]"


def _list_item(text: str) -> str:
    """An observation as one list item: its lines after the first indented under it."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return "\n".join(["- " + lines[0], *("  " + line if line else "" for line in lines[1:])])


def _observation(item: Any) -> tuple[str | None, str | None]:
    """(the text of one observation, its time): a string, or an object's ``text``; any other
    value is kept as its JSON. (None, None) for an empty one."""
    when = None
    if isinstance(item, dict):
        text = next((item[k] for k in _OBSERVATION_TEXT if isinstance(item.get(k), str)), None)
        when = next((m for k in _OBSERVATION_TIME if k in item and (m := moment(item[k]))), None)
        if text is None:
            text = json.dumps(item, ensure_ascii=False, default=str)
    elif isinstance(item, str):
        text = item
    elif item is None:
        text = None
    else:
        text = json.dumps(item, ensure_ascii=False, default=str)
    return (text, when) if text and text.strip() else (None, None)


@dataclass
class _Entity:
    name: str
    kind: str
    where: str
    observations: list[str] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # the other entityTypes of its later lines
    extra: dict[str, Any] = field(default_factory=dict)


def _entity_line(obj: dict[str, Any], where: str, entities: dict[str, _Entity], out: Source) -> None:
    name, kind, observations = obj.get("name"), obj.get("entityType"), obj.get("observations", [])
    if not isinstance(name, str) or not name.strip():
        out.skipped.append(Skipped(where, "an entity without a name (a non-empty string)"))
        return
    if not isinstance(kind, str) or not kind.strip():
        out.skipped.append(Skipped(where, f"entity {name!r} has no entityType (a non-empty string)"))
        return
    if not isinstance(observations, list):
        out.skipped.append(Skipped(where, f"entity {name!r}: observations must be a list"))
        return
    entity = entities.get(name)
    notes: list[str] = []
    if entity is None:
        entity = entities[name] = _Entity(name, kind.strip(), where)
    else:
        if kind.strip() != entity.kind and kind.strip() not in entity.kinds:
            entity.kinds.append(kind.strip())
            notes.append(f"its entityType {kind.strip()!r} is kept as a tag")
    written = 0
    for item in observations:
        text, when = _observation(item)
        if text is None:
            out.leave("empty observations")
            continue
        entity.observations.append(text)
        written += 1
        if isinstance(item, dict) and any(isinstance(item.get(k), str) for k in _OBSERVATION_TEXT) \
                and set(item) - {*_OBSERVATION_TEXT, *_OBSERVATION_TIME}:
            out.leave(OBSERVATION_DETAILS)
        if when:
            entity.times.append(when)
    entity.created += [m for k in _CREATED if k in obj and (m := moment(obj[k]))][:1]
    entity.updated += [m for k in _UPDATED if k in obj and (m := moment(obj[k]))][:1]
    for key, value in obj.items():
        if key in _OWN:
            continue
        if key not in entity.extra:
            entity.extra[key] = value
        elif entity.extra[key] != value:
            notes.append(f"its {key} {value!r} differs from the first line's {entity.extra[key]!r}, which is kept")
    if entity.where != where:
        out.merged.append(Merged(where, entity.name, "the same entity again: "
                                 + "; ".join([f"{written} observation(s) added to its note", *notes])))
    out.parts["observations"] = (out.parts.get("observations", (0, 0))[0] + len(observations),
                                 out.parts.get("observations", (0, 0))[1] + written)


def _end(obj: dict[str, Any], keys: tuple[str, ...]) -> str:
    value = next((obj[k] for k in keys if k in obj), None)
    return value if isinstance(value, str) and value.strip() else ""


def _frontmatter_value(value: Any) -> Any:
    """A key of the source's own as frontmatter: scalars and lists of scalars as they are, the
    rest as its JSON text."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def read(source: Path, config: Settings) -> Source:
    out = Source()
    entities: dict[str, _Entity] = {}
    relations: dict[str, list[tuple[str, str, str]]] = {}  # from -> [(relationType, to, where)]
    for where, obj in json_lines(source, out):
        if not isinstance(obj, dict):
            out.skipped.append(Skipped(where, f"{json_kind(obj)}, not an entity or relation object"))
            continue
        kind = obj.get("type", obj.get("_type"))
        if kind is None:
            kind = "entity" if "entityType" in obj else "relation" if any(k in obj for k in _REL) else None
        if kind == "entity":
            _entity_line(obj, where, entities, out)
        elif kind == "relation":
            start, target, rel = _end(obj, _FROM), _end(obj, _TO), _end(obj, _REL)
            if not (start and target and rel):
                out.skipped.append(Skipped(where, "a relation needs from (or from_entity), to (or to_entity) and "
                                          "relationType, non-empty strings"))
                continue
            relations.setdefault(start, []).append((rel.strip(), target, where))
            if set(obj) - {"type", "_type", *_FROM, *_TO, *_REL}:
                out.leave(RELATION_DETAILS)
        else:
            out.skipped.append(Skipped(where, f"type {kind!r} is neither 'entity' nor 'relation'"))
    for name, outgoing in relations.items():
        for rel, target, where in outgoing:
            if name in entities:
                out.merged.append(Merged(where, name, f"a relation: '- {rel} {wikilink(target, config)}' in its note"))
            else:
                out.skipped.append(Skipped(where, f"a relation from {name!r}, an entity the file does not hold"))
    stamp = source_moment(source)
    for name, entity in entities.items():
        body = "\n".join(_list_item(o) for o in entity.observations)
        links = sorted({(rel, target) for rel, target, _ in relations.get(name, [])})
        if links:
            body += ("\n\n" if body else "") + "## Relations\n\n" + "\n".join(
                f"- {_one_line(rel)} {wikilink(target, config)}" for rel, target in links)
        note_type = entity.kind.lower() if entity.kind.lower() in KNOWN_TYPES else entity.kind
        known = entity.created + entity.updated + entity.times
        created = min(entity.created or known) if known else stamp
        updated = max([created, *entity.updated, *entity.times])
        fields: dict[str, Any] = {"type": note_type, "tags": entity.kinds, "created": created, "updated": updated}
        for key, value in entity.extra.items():
            fields[f"mcp_{key}"] = _frontmatter_value(value)
        out.records.append(Record(source_id=name, title=_one_line(name), body=body, fields=fields,
                                  where=entity.where, dated=bool(known)))
    return out
