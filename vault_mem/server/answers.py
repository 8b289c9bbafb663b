"""Turning a query's answer (or error) into an MCP tool result: structured content plus a
one-line text summary. Only ``invalid`` (the caller's input) and ``error`` (a fault of the
server or the machine) set ``isError`` (docs/tools.md, "Statuses")."""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp.types as t

from vault_mem.errors import Fault, InternalError, InvalidInput, VaultMemError
from vault_mem.query.context import MAX_ANSWER_CHARS

log = logging.getLogger("vault_mem.server")
IS_ERROR = ("invalid", "error")  # the statuses that set the result's isError


def error_answer(exc: VaultMemError, renames: dict[str, str] | None = None) -> dict[str, Any]:
    """The answer for ``exc``; ``renames`` maps our parameter names to the caller's (compat tools)."""
    answer: dict[str, Any] = {"status": exc.status, "message": exc.message}
    if isinstance(exc, InvalidInput):
        param = (renames or {}).get(exc.param, exc.param)
        if param != exc.param and exc.message.startswith(exc.param):
            answer["message"] = param + exc.message[len(exc.param):]
        answer["param"] = param
    if isinstance(exc, Fault):
        answer["retry"] = exc.retry
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
        answer = error_answer(InternalError(f"{tool} built an answer of {size} characters, over the "
                                            f"{MAX_ANSWER_CHARS} bound", advice="this is a bug in vault-mem; "
                                            "a narrower query or a lower limit may pass meanwhile"))
    return t.CallToolResult(
        content=[t.TextContent(type="text", text=summary(tool, answer))],
        structured_content=answer,
        is_error=answer.get("status") in IS_ERROR,
    )
