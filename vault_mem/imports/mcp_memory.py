"""The reference MCP memory server's knowledge graph (``memory.jsonl``) as notes.

Each line of the file is one JSON object: ``{"type": "entity", "name", "entityType",
"observations": [...]}`` or ``{"type": "relation", "from", "to", "relationType"}``. An entity
becomes a note titled by its name (its ``import_id``), typed by its entityType (lower-cased
when it is one of the vault's types, else kept as written), its observations a list and its
outgoing relations ``[[wikilinks]]`` under ``## Relations``, so backlinks work at once. The
graph carries no dates: every note is dated by the file's modification time. A line that
does not parse, or does not fit, is skipped with its line number; the rest still imports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vault_mem.imports.records import Record, Skipped, Source, json_kind, read_text, source_moment
from vault_mem.vault.note import KNOWN_TYPES
from vault_mem.vault.writer import note_filename

FORMAT = "mcp-memory"
DEFAULT_DOMAIN = "mcp-memory"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def wikilink(name: str) -> str:
    """A link to the note an entity named ``name`` becomes (its file name, shown as the name)."""
    stem = note_filename(name)[:-3]
    shown = _one_line(name).replace("]", "").replace("|", "/")
    return f"[[{stem}]]" if stem == shown else f"[[{stem}|{shown}]]"


def _entity(obj: dict[str, Any], where: str) -> tuple[str, str, list[str]] | Skipped:
    name, kind, observations = obj.get("name"), obj.get("entityType"), obj.get("observations", [])
    if not isinstance(name, str) or not name.strip():
        return Skipped(where, "an entity without a name (a non-empty string)")
    if not isinstance(kind, str) or not kind.strip():
        return Skipped(where, f"entity {name!r} has no entityType (a non-empty string)")
    if not isinstance(observations, list):
        return Skipped(where, f"entity {name!r}: observations must be a list of strings")
    return name, kind.strip(), [_one_line(str(o)) for o in observations if isinstance(o, str | int | float)
                                and _one_line(str(o))]


def read(source: Path) -> Source:
    out = Source()
    entities: dict[str, tuple[str, list[str], str]] = {}  # name -> (type, observations, where)
    relations: dict[str, list[tuple[str, str]]] = {}
    for number, line in enumerate(read_text(source).splitlines(), start=1):
        where = f"line {number}"
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            out.skipped.append(Skipped(where, f"not a JSON object ({reason})"))
            continue
        if not isinstance(obj, dict):
            out.skipped.append(Skipped(where, f"{json_kind(obj)}, not an entity or relation object"))
            continue
        kind = obj.get("type", "entity" if "entityType" in obj else "relation" if "relationType" in obj else None)
        if kind == "entity":
            entity = _entity(obj, where)
            if isinstance(entity, Skipped):
                out.skipped.append(entity)
            elif entity[0] in entities:
                out.skipped.append(Skipped(where, f"entity {entity[0]!r} came already at {entities[entity[0]][2]}; "
                                          "the first was kept"))
            else:
                entities[entity[0]] = (entity[1], entity[2], where)
        elif kind == "relation":
            ends = [obj.get(key) for key in ("from", "to", "relationType")]
            start, target, rel = (e if isinstance(e, str) and e.strip() else "" for e in ends)
            if not (start and target and rel):
                out.skipped.append(Skipped(where, "a relation needs from, to and relationType (non-empty strings)"))
                continue
            relations.setdefault(start, []).append((rel.strip(), target))
        else:
            out.skipped.append(Skipped(where, f"type {kind!r} is neither 'entity' nor 'relation'"))
    for name in relations:
        if name not in entities:
            out.skipped.append(Skipped(f"relations from {name!r}",
                                       f"{len(relations[name])} relation(s) from an entity the file does not hold"))
    stamp = source_moment(source)
    for name, (kind, observations, where) in entities.items():
        body = "\n".join(f"- {o}" for o in observations)
        links = sorted(set(relations.get(name, [])))
        if links:
            body += ("\n\n" if body else "") + "## Relations\n\n" + "\n".join(
                f"- {_one_line(rel)} {wikilink(target)}" for rel, target in links)
        note_type = kind.lower() if kind.lower() in KNOWN_TYPES else kind
        out.records.append(Record(source_id=name, title=_one_line(name), body=body,
                                  fields={"type": note_type, "created": stamp, "updated": stamp},
                                  where=where, dated=False))
    return out
