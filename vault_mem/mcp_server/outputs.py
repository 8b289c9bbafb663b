"""Each tool's output schema: the shape of its answers (docs/tools.md), published in ``tools/list``.

One schema per tool takes every answer the tool can give. ``status`` picks the branch: an ``ok``
answer must carry the tool's own fields (``OK_REQUIRED``), with their types; ``none`` may carry any
of them (a read made while the index is being built answers only a message); an error
(``not_found``, ``invalid``, ``forbidden``, ``conflict``, ``error``) must carry ``message``. Every
field an answer may carry is typed, wherever it appears; objects stay open to fields added later,
so that a client validating with an older listing never refuses a newer answer (tests close them:
tests/conftest.py checks every answer of the suite with each object closed). No ``type`` is ever a
list (docs/tools.md, "Schemas"), no ``$ref``, no ``description``: docs/tools.md says what each means.
"""

from __future__ import annotations

import copy
from typing import Any

STATUSES = ("ok", "none", "not_found", "invalid", "forbidden", "conflict", "error")
ERRORS = ("not_found", "invalid", "forbidden", "conflict", "error")

STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
BOOL: dict[str, Any] = {"type": "boolean"}
OBJ: dict[str, Any] = {"type": "object"}  # a mapping of the note's own keys: anything a file holds


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def maybe(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null, as two single-type branches."""
    return {"anyOf": [schema, {"type": "null"}]}


def record(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


STRS = array(STR)
COUNT = record({"done": INT, "total": INT}, ("done", "total"))
CUT = {"type": "object", "additionalProperties": record({"shown": INT, "total": INT, "unit": STR})}

# The fields of a note, under the names every answer gives them (vault/fields.py).
NOTE: dict[str, Any] = {
    "uid": STR, "id": STR, "permalink": STR, "path": STR, "domain": STR, "title": STR, "aliases": STRS,
    "type": STR, "tags": STRS, "created": STR, "updated": STR, "status": STR,
    "state": STR, "progress": COUNT, "importance": NUM, "namespace": STR, "scope": STR,
    "project": maybe(STR), "paths": STRS, "agent": maybe(STR), "to": STRS, "metadata": OBJ,
    "supersedes": STRS, "superseded_by": STRS, "valid_from": maybe(STR), "valid_until": maybe(STR),
    "etag": STR, "ended": BOOL, "truncated_fields": CUT,
}


def note_row(*names: str, **more: dict[str, Any]) -> dict[str, Any]:
    return record({**{name: NOTE[name] for name in names}, **more})


# What any answer to an agent may carry (served/mailbox.py), and any answer while the index is
# built, checked or embedded (mcp_server/app.py). Only memory_search answers carry the inbox.
AROUND: dict[str, Any] = {
    "message": STR, "hints": STRS, "warnings": STRS,
    "indexing": COUNT, "checking": COUNT, "meaning": COUNT,
    "persist_error": array(record({"tool": STR, "permalink": STR, "message": STR, "time": STR})),
    "lost": array(record({"permalink": STR, "title": STR, "uid": STR, "what": {"enum": ["deleted", "moved"]},
                          "moved_to": STR}, ("permalink", "what"))),
}
INBOX: dict[str, Any] = {
    "inbox": array(record({"permalink": STR, "title": STR, "kind": STR, "updated": STR, "from": STR,
                           "excerpt": STR}, ("permalink", "title"))),
    "inbox_more": INT,
}
# What an error answer carries beside its message (mcp_server/answers.py; ``candidates``: an ambiguous
# ref's permalinks, served/refs.py); a conflict also gives
# the note's current ``etag`` and ``updated``, which every write answer has anyway.
FAULT: dict[str, Any] = {"param": STR, "retry": BOOL, "rule": STR, "candidates": STRS}

DIGEST = note_row("permalink", "title", "paths", "tags", "status", "etag", "valid_until", "ended",
                  kind=STR, updated_at=STR, excerpt=STR, score=NUM, older_count=INT, older=STRS,
                  superseded_by=STRS, similarity=NUM, found_by=STR)
DOMAIN_ROW = note_row("uid", "permalink", "path", "domain", "title", "type", "tags", "created", "updated",
                      "status", "etag", "state", "progress", "truncated_fields", snippet=STR, est_tokens=INT)
CHUNK = note_row("uid", "permalink", "namespace", "scope", "created", "tags", "status", "truncated_fields",
                 chunk_id=STR, source=STR, hierarchy=STRS, content=STR)
LIST_ROW = record({**NOTE, "content_preview": STR, "content": STR, "content_truncated": BOOL})
LINK = record({"target": STR, "permalink": maybe(STR), "resolved": BOOL, "heading": STR, "block": STR,
               "embed": BOOL, "markdown": BOOL})
READ: dict[str, Any] = {
    **{name: NOTE[name] for name in NOTE if name not in ("id", "status", "ended")},
    "memory_status": STR, "problems": STRS, "est_tokens": INT, "body_chars": INT, "links": array(LINK),
    "backlinks": STRS, "lineage": record({"supersedes": STRS, "superseded_by": STRS, "latest": STRS}),
    "offset": INT, "body": STR, "next_offset": INT, "history": maybe(array(OBJ)), "uncommitted": maybe(BOOL),
}
WRITTEN: dict[str, Any] = {
    "uid": STR, "permalink": STR, "path": STR, "updated": STR, "etag": STR,
    "similar": array(record({"permalink": STR, "title": STR, "similarity": NUM})), "deleted": BOOL,
}
WRITTEN_OK = ("uid", "permalink", "path", "updated", "etag")

# tool -> (its own fields, those an ``ok`` answer always has)
ANSWERS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "memory_search": ({"count": INT, "notes": array(DIGEST), "truncated": BOOL, **INBOX},
                      ("count", "notes", "truncated")),
    "list_by_domain": ({"results": array(DOMAIN_ROW), "est_tokens": INT, "domains": STRS, "next_offset": INT},
                       ("results", "est_tokens", "domains")),
    "mem_recall": ({"kind": {"const": "recall"}, "count": INT, "text": STR, "results": array(CHUNK),
                    "next_offset": INT}, ("kind", "count")),
    "memory_list": ({"count": INT, "memories": array(LIST_ROW), "next_offset": INT}, ("count", "memories")),
    "memory_read": (READ, ("uid", "permalink", "path", "etag", "offset", "body")),
    "list_domains": ({"domains": array(record({"domain": STR, "active": INT, "archived": INT, "updated": STR},
                                              ("domain", "active", "archived"))), "next_offset": INT},
                     ("domains",)),
    "memory_write": (WRITTEN, (*WRITTEN_OK, "similar")),
    "memory_edit": (WRITTEN, WRITTEN_OK),
    "task_close": (WRITTEN, WRITTEN_OK),
    "memory_supersede": (WRITTEN, (*WRITTEN_OK, "similar")),
    "memory_delete": (WRITTEN, (*WRITTEN_OK, "deleted")),
}
ANSWERS["get_memory"] = ANSWERS["memory_get"] = ANSWERS["memory_read"]


# With several vaults served (docs/vaults.md): what names a row's vault, and list_domains' vaults.
VAULTS = array(record({"name": STR, "notes": INT, "default": BOOL}, ("name", "notes", "default")))


def _naming_vaults(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with a ``vault`` in each row of memory_search's notes and of the inbox, and
    list_domains' ``vaults``."""
    fields = copy.deepcopy(fields)
    for key in ("notes", "inbox"):
        if key in fields:
            fields[key]["items"]["properties"]["vault"] = STR
    if "domains" in fields and "results" not in fields:
        fields["vaults"] = VAULTS
    return fields


def output_schema(tool: str, several: bool = False) -> dict[str, Any]:
    """The output schema of ``tool``'s answers (a fresh copy: the listing's own); ``several``: as a
    server of several vaults answers."""
    fields, ok = ANSWERS[tool]
    if several:
        fields = _naming_vaults({**fields, **INBOX} if tool == "memory_search" else fields)
    schema = {
        "type": "object",
        "properties": {"status": {"enum": list(STATUSES)}, **AROUND, **FAULT, **fields},
        "required": ["status"],
        "anyOf": [
            {"properties": {"status": {"const": "ok"}}, "required": list(ok)},
            {"properties": {"status": {"const": "none"}}},
            {"properties": {"status": {"enum": list(ERRORS)}}, "required": ["message"]},
        ],
    }
    return copy.deepcopy(schema)
