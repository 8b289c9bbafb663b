"""The tool table: names, descriptions, hand-written input schemas and the query function
each tool calls. Schemas are written by hand to stay small (no generated titles, no
``anyOf`` null branches): the whole ``tools/list`` answer stays under 12 KB."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Handler = Callable[..., dict[str, Any]]

STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"status": {"type": "string"}},
    "required": ["status"],
}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    target: str  # "module:function" in vault_mem.query
    read_only: bool = True
    compat: bool = False  # only with ``serve --compat``
    arg_map: tuple[tuple[str, str], ...] = ()  # compat parameter names -> ours

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": self.properties}
        if self.required:
            schema["required"] = list(self.required)
        return schema

    def handler(self) -> Handler:
        module, _, func = self.target.partition(":")
        fn: Handler = getattr(importlib.import_module(f"vault_mem.query.{module}"), func)
        return fn


def _s(desc: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": desc, **extra}


def _i(desc: str, **extra: Any) -> dict[str, Any]:
    return {"type": "integer", "description": desc, **extra}


def _b(desc: str, **extra: Any) -> dict[str, Any]:
    return {"type": "boolean", "description": desc, **extra}


def _sa(desc: str) -> dict[str, Any]:
    return {"type": ["array", "string"], "items": {"type": "string"}, "description": desc}


_AGENT = _s("Your stable agent name (letters, digits, . _ -).")
_REF = _s("uid, permalink, path, file name or title.")

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_search",
        "Find memory notes by free text, path, kind, tag or time, best match first; with no query it "
        "lists the most recently updated (call it when a session starts). Rows are digests with an "
        "excerpt and a score, never bodies: read one with memory_read. Terms match as substrings; "
        "truncated is true when limit hid matches.",
        {
            "agent": _AGENT,
            "query": _s("Free text. Omit for recent activity."),
            "tag": _s("Only notes with this tag."),
            "kind": _s("Only notes of this kind (type)."),
            "path": _s("Only notes whose code paths overlap it."),
            "limit": _i("How many to return. Default 10, max 50."),
            "since": _s("RFC 3339; notes updated at or after it."),
        },
        ("agent",),
        "memory_search:memory_search",
    ),
    ToolSpec(
        "list_by_domain",
        "List memories under a domain (folder path) and its subdomains, newest first: the fallback when "
        "search misses. Rows carry a snippet, est_tokens of the full record and, for tasks, state and "
        "progress. A name that is not a path matches segments inside paths ('p200' finds "
        "'acme/x100/p200'); `domains` says what was covered.",
        {
            "domain": _s("Folder path or segment name; '' is the whole vault."),
            "type": _s("One memory type; empty is every type."),
            "limit": _i("1-200, default 20."),
            "offset": _i("Pass next_offset for the next page."),
            "status": _s("active (default), archived or all."),
            "subtree": _b("False: only that exact folder."),
        },
        ("domain",),
        "list_by_domain:list_by_domain",
    ),
    ToolSpec(
        "mem_recall",
        "Recall memories created in a date range as heading chunks, newest first; filter by source "
        "path, tags, namespace or scope. compact (default) returns readable text; structured returns "
        "chunk rows. Namespaces starting 'archive:' are hidden unless named.",
        {
            "since": _s("Start: YYYY, YYYY-MM, YYYY-MM-DD or ISO datetime."),
            "until": _s("Exclusive end; a partial date includes its period."),
            "source_filter": _s("Path substring, or a glob of the whole path."),
            "tag_filter": _s("Comma-separated tags, any of them."),
            "namespace": _s("One namespace, a comma list, or one glob ('project:*')."),
            "scope": _s("One scope, a comma list, or one glob."),
            "limit": _i("Chunks, 1-500, default 20."),
            "offset": _i("Pass next_offset for the next page."),
            "output_format": _s("compact (default) or structured."),
        },
        (),
        "mem_recall:mem_recall",
    ),
    ToolSpec(
        "memory_list",
        "List memories filtered by substring query, metadata, tags, dates or importance, newest first. "
        "Compact previews by default; content_mode='full' for whole bodies. follow: 'active' (default) "
        "hides superseded memories, 'latest' resolves to current versions, 'full_history' expands "
        "chains, 'all' is unfiltered.",
        {
            "query": _s("Substring of title or body."),
            "metadata_filters": {"type": ["object", "string"],
                                 "description": "Frontmatter key -> value (list: any of)."},
            "limit": _i("Default 20; -1: no limit."),
            "offset": _i("Pass next_offset for the next page."),
            "date_from": _s("Created from: date (partial ok) or 7d, 2w, 1m, 1y."),
            "date_to": _s("Created until, inclusive."),
            "tags_any": _sa("Any of these."),
            "tags_all": _sa("All of these."),
            "tags_none": _sa("None of these."),
            "sort_by_importance": _b("Most important first."),
            "content_mode": _s("preview (default) or full."),
            "preview_chars": _i("1-2000, default 120."),
            "fields": _sa("Fields to return."),
            "follow": _s("active, latest, full_history or all."),
        },
        (),
        "memory_list:memory_list",
    ),
    ToolSpec(
        "memory_read",
        "Read one memory in full: frontmatter fields, body, links, backlinks, lineage, problems and "
        "etag. Huge bodies page with offset and next_offset.",
        {
            "ref": _REF,
            "offset": _i("Body offset in characters, default 0."),
            "max_chars": _i("Body characters per page, 1-30000, default 20000."),
            "history": _i("In a git vault: last commits shown, 0-50, default 5."),
        },
        ("ref",),
        "read:memory_read",
    ),
    ToolSpec(
        "list_domains",
        "List every domain (folder) with counts of active and archived memories in its subtree and the "
        "newest update: the way to see the paths before list_by_domain.",
        {"offset": _i("Pass next_offset for the next page.")},
        (),
        "read:list_domains",
    ),
    ToolSpec(
        "memory_write",
        "Save a new memory as a Markdown file named after its title in a domain folder; never overwrites "
        "(a numeric suffix on a name collision).",
        {
            "agent": _AGENT,
            "title": _s("Title; also the file name."),
            "content": _s("The Markdown body."),
            "domain": _s("Folder path like 'acme/x100'; default the vault root."),
            "type": _s("note, fact, lesson, gotcha, decision, task, ..."),
            "tags": _sa("Tags."),
            "importance": {"type": "number", "description": "0..1, default 0.5."},
            "namespace": _s("Default 'default'."),
            "scope": _s("user, project_shared or project_local."),
            "project": _s("Project, for project scopes."),
            "paths": _sa("Code paths it is about."),
        },
        ("agent", "title", "content"),
        "write:memory_write",
        read_only=False,
    ),
    ToolSpec(
        "memory_edit",
        "Change a memory: content replaces the body, append adds a paragraph, set writes frontmatter keys. "
        "Pass if_etag (from a read) to refuse a stale edit: status conflict returns the current etag.",
        {
            "agent": _AGENT,
            "ref": _REF,
            "if_etag": _s("The etag you read."),
            "if_updated": _s("The updated value you read."),
            "content": _s("New body."),
            "append": _s("A paragraph to add at the end."),
            "set": {"type": ["object", "string"], "description": "Frontmatter keys to write."},
        },
        ("agent", "ref"),
        "write:memory_edit",
        read_only=False,
    ),
    ToolSpec(
        "task_close",
        "Close a task memory as completed or cancelled; this archives it.",
        {"agent": _AGENT, "ref": _REF, "state": _s("completed (default) or cancelled."),
         "if_etag": _s("The etag you read.")},
        ("agent", "ref"),
        "write:task_close",
        read_only=False,
    ),
    ToolSpec(
        "memory_supersede",
        "Write a new memory that replaces an old one (supersedes its uid); domain, type and tags default to "
        "the old one's. The old file is kept; memory_list hides superseded memories by default.",
        {"agent": _AGENT, "ref": _REF, "title": _s("Title of the new memory."), "content": _s("Its body."),
         "type": _s("Type; default the old one's."), "tags": _sa("Tags; default the old one's."),
         "domain": _s("Folder; default the old one's.")},
        ("agent", "ref", "title", "content"),
        "write:memory_supersede",
        read_only=False,
    ),
    ToolSpec(
        "memory_delete",
        "Move a memory's file to the vault's .trash folder (recoverable by moving it back).",
        {"agent": _AGENT, "ref": _REF, "if_etag": _s("The etag you read.")},
        ("agent", "ref"),
        "write:memory_delete",
        read_only=False,
    ),
    ToolSpec(
        "get_memory",
        "Read one memory in full (MemAI name); same answer as memory_read.",
        {"uid": _s("The memory's uid (or any ref memory_read takes)."),
         "offset": _i("Body offset."), "max_chars": _i("Body characters per page, 1-30000.")},
        ("uid",),
        "read:memory_read",
        compat=True,
        arg_map=(("uid", "ref"),),
    ),
    ToolSpec(
        "memory_get",
        "Read one memory in full (Memora name); same answer as memory_read.",
        {"memory_id": _s("The memory's id (or any ref memory_read takes)."),
         "offset": _i("Body offset."), "max_chars": _i("Body characters per page, 1-30000.")},
        ("memory_id",),
        "read:memory_read",
        compat=True,
        arg_map=(("memory_id", "ref"),),
    ),
)


def tools_for(compat: bool) -> list[ToolSpec]:
    return [t for t in TOOLS if compat or not t.compat]
