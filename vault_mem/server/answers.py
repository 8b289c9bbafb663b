"""Turning a query's answer (or error) into an MCP tool result: structured content plus a
one-line text summary. Only ``invalid`` sets ``isError`` (SPEC 4)."""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp.types as t

from vault_mem.errors import InvalidInput, VaultMemError
from vault_mem.query.context import MAX_ANSWER_CHARS

log = logging.getLogger("vault_mem.server")


def error_answer(exc: VaultMemError, renames: dict[str, str] | None = None) -> dict[str, Any]:
    """The answer for ``exc``; ``renames`` maps our parameter names to the caller's (compat tools)."""
    answer: dict[str, Any] = {"status": exc.status, "message": exc.message}
    if isinstance(exc, InvalidInput):
        param = (renames or {}).get(exc.param, exc.param)
        if param != exc.param and exc.message.startswith(exc.param):
            answer["message"] = param + exc.message[len(exc.param):]
        answer["param"] = param
    for key, value in exc.details.items():
        answer[key] = value
    return answer


def summary(tool: str, answer: dict[str, Any]) -> str:
    """One line saying what came back."""
    status = answer.get("status", "?")
    if status not in ("ok", "none"):
        return f"{tool}: {status}: {answer.get('message', '')}"
    if tool == "mem_recall" and "text" in answer:
        return str(answer["text"])
    for key in ("results", "notes", "memories", "domains"):
        if isinstance(answer.get(key), list):
            n = len(answer[key])
            more = f", more from offset {answer['next_offset']}" if "next_offset" in answer else ""
            extra = ""
            if key == "results" and "domains" in answer:
                extra = " in " + (", ".join(str(d) for d in answer["domains"]) or "nothing")
            return f"{tool}: {n} {key}{extra}{more}" + (f" ({answer['message']})" if answer.get("message") else "")
    if "permalink" in answer:
        more = f", more from offset {answer['next_offset']}" if "next_offset" in answer else ""
        return f"{tool}: {status} {answer['permalink']} (etag {answer.get('etag', '')}){more}"
    return f"{tool}: {status}" + (f": {answer['message']}" if answer.get("message") else "")


def to_result(tool: str, answer: dict[str, Any]) -> t.CallToolResult:
    size = len(json.dumps(answer, ensure_ascii=False, default=str))
    if size > MAX_ANSWER_CHARS:
        # A bug in a query module, not the caller's fault: say so rather than send it.
        log.error("%s answer of %d characters passed the bound", tool, size)
        answer = {"status": "error", "message": f"answer of {size} characters exceeded the "
                  f"{MAX_ANSWER_CHARS} bound; narrow the query or lower limit"}
    return t.CallToolResult(
        content=[t.TextContent(type="text", text=summary(tool, answer))],
        structured_content=answer,
        is_error=answer.get("status") in ("invalid", "error"),
    )
