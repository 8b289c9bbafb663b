"""Pieces shared by the contracts' rows: snippets and the common row fields."""

from __future__ import annotations

from typing import Any

from vault_mem.vault.note import domain_of, permalink_of

SNIPPET_CHARS = 400


def snippet(body: str, limit: int = SNIPPET_CHARS, see: str = "memory_read") -> str:
    """The body's first ``limit`` code points, with a marker saying how much was left out."""
    if len(body) <= limit:
        return body
    return f"{body[:limit]}… [+{len(body) - limit} chars, see {see}]"


def snippet_of(record: dict[str, Any], limit: int = SNIPPET_CHARS) -> str:
    """``snippet`` of a stored record, from its stored head (which is longer than any snippet)."""
    head = record.get("head", "")
    total = int(record.get("body_chars", len(head)))
    if total <= limit:
        return str(head[:limit])
    return f"{head[:limit]}… [+{total - limit} chars, see memory_read]"


def body_tokens(record: dict[str, Any]) -> int:
    return est_tokens_of_length(int(record.get("body_chars", 0)))


def est_tokens_of_length(chars: int) -> int:
    return -(-chars // 4)


def task_fields(record: dict[str, Any]) -> dict[str, Any]:
    """``state`` and ``progress`` for tasks; nothing for other types."""
    if record.get("type") != "task":
        return {}
    return {"state": record.get("state") or "open", "progress": record.get("progress") or {"done": 0, "total": 0}}


def identity(record: dict[str, Any]) -> dict[str, Any]:
    path = record["path"]
    return {"uid": record["uid"], "permalink": permalink_of(path), "path": path, "domain": domain_of(path)}
