"""Importing the memories people keep elsewhere, and exporting a vault (docs/import.md).

    FORMATS[name].read(source, config) -> Source   one module per format; reads, never writes
    notes.import_records(root, name, source)    the one writer: idempotent, conflict-safe
    export.export_lines(root)                   every note as a JSON line

Only ``vault/`` is below this package: an import writes files, and the index catches up as
it does with any other change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vault_mem.imports import chatgpt, claude, jsonl, mcp_memory, mem0, okf, openmemory
from vault_mem.imports.records import Record, Source
from vault_mem.settings import Settings


@dataclass(frozen=True)
class Format:
    name: str
    summary: str
    read: Callable[[Path, Settings], Source]
    default_domain: Callable[[Record], str]


def _fixed(domain: str) -> Callable[[Record], str]:
    return lambda record: domain


FORMATS = {f.name: f for f in (
    Format(mcp_memory.FORMAT, "the reference MCP memory server's memory.jsonl (entities and relations)",
           mcp_memory.read, _fixed(mcp_memory.DEFAULT_DOMAIN)),
    Format(mem0.FORMAT, "mem0 exported memories (JSON)", mem0.read, _fixed(mem0.DEFAULT_DOMAIN)),
    Format(openmemory.FORMAT, "OpenMemory's export zip (or the memories.json / memories.jsonl.gz in it)",
           openmemory.read, _fixed(openmemory.DEFAULT_DOMAIN)),
    Format(chatgpt.FORMAT, "conversations.json of a ChatGPT data export", chatgpt.read, chatgpt.DEFAULT_DOMAIN),
    Format(claude.FORMAT, "conversations.json of a Claude.ai data export", claude.read, claude.DEFAULT_DOMAIN),
    Format(jsonl.FORMAT, "one JSON object a line: text, title, date, tags, type, domain, id "
           "(and what 'vault-mem export' writes)", jsonl.read, _fixed(jsonl.DEFAULT_DOMAIN)),
    Format(okf.FORMAT, "an Open Knowledge Format bundle: a folder or zip of Markdown concepts (and what "
           "'vault-mem export --format okf' writes)", okf.read, _fixed(okf.DEFAULT_DOMAIN)),
)}

__all__ = ["FORMATS", "Format"]
