"""The tool table: each MCP tool's name, description and annotations, bound to the query
function it calls. Parameters are declared once, beside that function (``PARAMS`` tuples of
``served.params.Param``); the input schema is derived from them and stays small (no
generated titles, no ``anyOf`` null branches), so ``tools/list`` stays under 12 KB."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from vault_mem.reads import list_by_domain, mem_recall, memory_list, memory_search, read
from vault_mem.served.context import View
from vault_mem.served.params import Param, int_param, text_param
from vault_mem.settings import Settings
from vault_mem.writes import tools as writes

Handler = Callable[[View, dict[str, Any]], dict[str, Any]]

@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: tuple[Param, ...]
    handler: Handler
    read_only: bool = True
    compat: bool = False  # only with ``serve --compat``
    arg_map: tuple[tuple[str, str], ...] = ()  # compat parameter names -> ours

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def properties(self, config: Settings) -> dict[str, Any]:
        """Each parameter's schema, its bounds that are settings read from ``config``."""
        return {p.name: p.schema(config) for p in self.params}

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)

    def input_schema(self, config: Settings) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": self.properties(config)}
        if self.required:
            schema["required"] = list(self.required)
        return schema


def _compat_read(ref: Param) -> tuple[Param, ...]:
    """memory_read's parameters under a sibling server's name for the ref; ``max_chars`` is
    memory_read's own, bounds and all."""
    max_chars = next(p for p in read.READ_PARAMS if p.name == "max_chars")
    return (ref, int_param("offset", "Body offset.", default=0, minimum=0), max_chars)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_search",
        "Find notes by words, path, kind, tag or time, best match first; no query: the most recently "
        "updated (call it at session start). Digests, not bodies (memory_read reads one). Rare words and "
        "title hits weigh most, other word forms half. A chain's current version comes first, older "
        "versions folded in (older).",
        memory_search.PARAMS,
        memory_search.memory_search,
    ),
    ToolSpec(
        "list_by_domain",
        "List memories under a folder and its subfolders, newest first: the fallback when search misses. "
        "A name that is not a path matches folders inside paths ('p200' finds 'acme/x100/p200').",
        list_by_domain.PARAMS,
        list_by_domain.list_by_domain,
    ),
    ToolSpec(
        "mem_recall",
        "Recall memories created in a date range as heading chunks, newest first; filter by source "
        "path, tags, namespace or scope. Namespaces starting 'archive:' are hidden unless named.",
        mem_recall.PARAMS,
        mem_recall.mem_recall,
    ),
    ToolSpec(
        "memory_list",
        "List memories filtered by substring, metadata, tags, dates or importance, newest first. follow: "
        "'active' hides superseded ones, 'latest' gives current versions, 'full_history' whole chains.",
        memory_list.PARAMS,
        memory_list.memory_list,
    ),
    ToolSpec(
        "memory_read",
        "Read one memory in full: fields, body, links, backlinks, lineage, problems, etag; long bodies "
        "page (next_offset).",
        read.READ_PARAMS,
        read.memory_read,
    ),
    ToolSpec(
        "list_domains",
        "List every folder with counts of active and archived memories in its subtree and the newest "
        "update: the paths for list_by_domain.",
        read.DOMAINS_PARAMS,
        read.list_domains,
    ),
    ToolSpec(
        "memory_write",
        "Save a new memory as a Markdown file named after its title; never overwrites (a numeric suffix "
        "on a collision).",
        writes.WRITE_PARAMS,
        writes.memory_write,
        read_only=False,
    ),
    ToolSpec(
        "memory_edit",
        "Change a memory: content replaces the body, append adds a paragraph, set writes frontmatter keys; "
        "a stale if_etag is a conflict (with the current etag).",
        writes.EDIT_PARAMS,
        writes.memory_edit,
        read_only=False,
    ),
    ToolSpec(
        "task_close",
        "Close a task memory as completed or cancelled; this archives it.",
        writes.CLOSE_PARAMS,
        writes.task_close,
        read_only=False,
    ),
    ToolSpec(
        "memory_supersede",
        "Write a new memory replacing an old one (supersedes its uid; the old one's valid_until is set, "
        "its file kept); domain, type and tags default to the old one's.",
        writes.SUPERSEDE_PARAMS,
        writes.memory_supersede,
        read_only=False,
    ),
    ToolSpec(
        "memory_delete",
        "Move a memory's file to the vault's .trash folder (it can be moved back).",
        writes.DELETE_PARAMS,
        writes.memory_delete,
        read_only=False,
    ),
    ToolSpec(
        "get_memory",
        "Read one memory in full (MemAI name); same answer as memory_read.",
        _compat_read(text_param("uid", "The memory's uid (or any ref memory_read takes).", required=True)),
        read.memory_read,
        compat=True,
        arg_map=(("uid", "ref"),),
    ),
    ToolSpec(
        "memory_get",
        "Read one memory in full (Memora name); same answer as memory_read.",
        _compat_read(text_param("memory_id", "The memory's id (or any ref memory_read takes).", required=True)),
        read.memory_read,
        compat=True,
        arg_map=(("memory_id", "ref"),),
    ),
)
TOOLS_BY_NAME = {spec.name: spec for spec in TOOLS}


# Said only by a server with a sentence model (serve --meaning-model): without one, memory_search
# matches words as substrings and nothing else, as its description says.
MEANING_NOTE = (" This server also ranks by meaning (a local sentence model): notes holding every word "
                "exactly come first, then keyword and meaning ranks fused; a note found by meaning "
                "alone has found_by 'meaning'.")


def tools_for(compat: bool, meaning: bool = False) -> list[ToolSpec]:
    """The tools served; with ``meaning``, memory_search's description says it also ranks by meaning."""
    chosen = [t for t in TOOLS if compat or not t.compat]
    if meaning:
        chosen = [replace(t, description=t.description + MEANING_NOTE) if t.name == "memory_search" else t
                  for t in chosen]
    return chosen
