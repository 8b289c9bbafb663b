"""Turning a query's answer (or error) into an MCP tool result.

The answer object goes out twice, identical: as ``structuredContent`` and, serialized as
compact JSON, in the text content block. Many clients hand only the text blocks to the
model, so the text carries the whole answer, never a summary (docs/tools.md, "Answers").
Only ``invalid`` (the caller's input), ``forbidden`` (what this caller may not do) and
``error`` (a fault of the server or the machine) set ``isError`` (docs/tools.md, "Statuses").
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp.types as t

from vault_mem.errors import Fault, InternalError, InvalidInput, VaultMemError

log = logging.getLogger("vault_mem.mcp_server")
IS_ERROR = ("invalid", "forbidden", "error")  # the statuses that set the result's isError


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


# One for all: json.dumps with options makes an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def answer_json(answer: dict[str, Any]) -> str:
    """The answer as compact JSON, UTF-8 characters kept as they are: the text block's content."""
    return _ENCODER.encode(answer)


def answer_text(tool: str, answer: dict[str, Any], max_chars: int) -> str:
    """The text block of ``answer`` (an error answer instead when it passes ``max_chars``, the
    ``max_answer_chars`` setting)."""
    text = answer_json(answer)
    if len(text) > max_chars:
        # A bug in a query module, not the caller's fault: say so rather than send it.
        log.error("%s answer of %d characters passed the bound", tool, len(text))
        text = answer_json(error_answer(InternalError(
            f"{tool} built an answer of {len(text)} characters, over the {max_chars} bound",
            advice="this is a bug in vault-mem; a narrower query or a lower limit may pass meanwhile")))
    return text


def text_result(text: str) -> t.CallToolResult:
    """The tool result of an answer's text block (``answer_text``)."""
    # Parsed back from the text, so that both carry exactly the same object even where a value
    # only serialises through ``default=str``.
    structured = json.loads(text)
    return t.CallToolResult(
        content=[t.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=structured.get("status") in IS_ERROR,
    )


def to_result(tool: str, answer: dict[str, Any], max_chars: int) -> t.CallToolResult:
    return text_result(answer_text(tool, answer, max_chars))
