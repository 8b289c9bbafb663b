"""A Claude.ai data export's ``conversations.json`` as notes, one per conversation.

The file is a JSON list of conversations: ``uuid``, ``name``, ``created_at``, ``updated_at``
(ISO) and ``chat_messages``, in order, each with ``sender`` (``human`` or ``assistant``), the
message's ``text`` and its ``content`` blocks (``text``, ``thinking``, ``tool_use``,
``tool_result``, ...). A message's words are its ``text`` blocks: in real exports the ``text``
field of an assistant message holds its thinking followed by the answer, so it is read only
when the message has no content blocks (older exports). Thinking, tool use and results,
attachments and files are left out, and counted in the summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vault_mem.imports.chats import SPEAKERS, DateFolder, conversation, read_conversations
from vault_mem.imports.records import Record, Skipped, Source, json_kind, text_or_none
from vault_mem.settings import Settings

FORMAT = "claude"
DEFAULT_DOMAIN = DateFolder("claude")
ACCEPTED = "the JSON list of conversations in conversations.json from a Claude.ai data export"
_LEFT_OUT = {"thinking": "thinking blocks", "redacted_thinking": "thinking blocks", "tool_use": "tool calls",
             "tool_result": "tool results"}


def _message(item: Any, out: Source) -> tuple[str, str] | None:
    if not isinstance(item, dict):
        return None
    speaker = SPEAKERS.get(str(item.get("sender")))
    if speaker is None:
        return None
    for key, what in (("attachments", "attachments"), ("files", "files (images and uploads)")):
        if isinstance(item.get(key), list):
            out.leave(what, len(item[key]))
    blocks = [b for b in item.get("content") or [] if isinstance(b, dict) and isinstance(b.get("type"), str)] \
        if isinstance(item.get("content"), list) else []
    if blocks:
        texts = []
        for block in blocks:
            if block["type"] == "text":
                if isinstance(block.get("text"), str) and block["text"].strip():
                    texts.append(block["text"])
            else:
                out.leave(_LEFT_OUT.get(block["type"], f"{block['type']} blocks"))
        text = "\n\n".join(texts)
    else:
        text = item["text"] if isinstance(item.get("text"), str) else ""
    return (speaker, text) if text.strip() else None


def _record(item: Any, where: str, fallback: str, out: Source) -> Record | Skipped:
    if not isinstance(item, dict):
        return Skipped(where, f"{json_kind(item)}, not a conversation object")
    source_id = text_or_none(item.get("uuid"))
    if source_id is None:
        return Skipped(where, "a conversation without a uuid")
    chat = item.get("chat_messages")
    if not isinstance(chat, list):
        return Skipped(where, f"conversation {source_id!r} has no chat_messages list")
    messages = [m for message in chat if (m := _message(message, out))]
    if not messages:
        return Skipped(where, f"conversation {source_id!r} has no human or assistant text")
    return conversation(source_id, item, ("created_at", "updated_at", "name"), "claude", messages, where, fallback)


def looks_like(item: Any) -> bool:
    """Whether a JSON value is a conversation of this format (for the other chat importer to say)."""
    return isinstance(item, dict) and isinstance(item.get("chat_messages"), list) and "mapping" not in item


def read(source: Path, config: Settings) -> Source:
    """``config``: unused by this format (every format's reader takes it)."""
    from vault_mem.imports import chatgpt

    return read_conversations(source, ACCEPTED, _record, looks_like, ("chatgpt", chatgpt.looks_like))
