"""A Claude.ai data export's ``conversations.json`` as notes, one per conversation.

The file is a JSON list of conversations: ``uuid``, ``name``, ``created_at``, ``updated_at``
(ISO) and ``chat_messages``, in order, each with ``sender`` (``human`` or ``assistant``), the
message's ``text`` and its ``content`` blocks (``{"type": "text", "text"}``, tool use and
results). A message's text is its ``text``, else its text blocks joined; tool blocks and
attachments are not kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.imports.chats import SPEAKERS, DateFolder, conversation
from vault_mem.imports.records import Record, Skipped, Source, json_kind, load_json, read_items, text_or_none

FORMAT = "claude"
DEFAULT_DOMAIN = DateFolder("claude")
ACCEPTED = "the JSON list of conversations in conversations.json from a Claude.ai data export"


def _message(item: Any) -> tuple[str, str] | None:
    if not isinstance(item, dict):
        return None
    speaker = SPEAKERS.get(str(item.get("sender")))
    if speaker is None:
        return None
    text = item["text"] if isinstance(item.get("text"), str) else ""
    if not text.strip() and isinstance(item.get("content"), list):
        text = "\n\n".join(block["text"] for block in item["content"]
                           if isinstance(block, dict) and block.get("type") == "text"
                           and isinstance(block.get("text"), str) and block["text"].strip())
    return (speaker, text) if text.strip() else None


def _record(item: Any, where: str, fallback: str) -> Record | Skipped:
    if not isinstance(item, dict):
        return Skipped(where, f"{json_kind(item)}, not a conversation object")
    source_id = text_or_none(item.get("uuid"))
    if source_id is None:
        return Skipped(where, "a conversation without a uuid")
    chat = item.get("chat_messages")
    if not isinstance(chat, list):
        return Skipped(where, f"conversation {source_id!r} has no chat_messages list")
    messages = [m for message in chat if (m := _message(message))]
    if not messages:
        return Skipped(where, f"conversation {source_id!r} has no human or assistant text")
    return conversation(source_id, item, ("created_at", "updated_at", "name"), "claude", messages, where, fallback)


def read(source: Path) -> Source:
    data = load_json(source, ACCEPTED)
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    if not isinstance(data, list):
        raise InvalidInput("SOURCE", f"{source} is {json_kind(data)}; expected {ACCEPTED}")
    return read_items(source, data, "conversation", _record)
