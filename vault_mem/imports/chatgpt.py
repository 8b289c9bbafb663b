"""A ChatGPT data export's ``conversations.json`` as notes, one per conversation.

The file is a JSON list of conversations: ``id`` (or ``conversation_id``), ``title``,
``create_time`` and ``update_time`` (POSIX seconds), ``current_node`` and ``mapping``, a tree
of ``{id: {message, parent, children}}`` nodes. The conversation as its owner last saw it is
the branch that ends at ``current_node``, followed up through the parents and read back down;
regenerated answers and edited prompts on other branches are left out (when ``current_node``
is missing, the newest child is followed from the root). Only the text of user and
assistant messages is kept (``text`` and ``multimodal_text`` parts that are strings); system,
tool and hidden messages, code and images are not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.imports.chats import SPEAKERS, DateFolder, conversation
from vault_mem.imports.records import Record, Skipped, Source, json_kind, load_json, read_items, text_or_none

FORMAT = "chatgpt"
DEFAULT_DOMAIN = DateFolder("chatgpt")
ACCEPTED = "the JSON list of conversations in conversations.json from a ChatGPT data export"
_TEXT_KINDS = ("text", "multimodal_text")


def _branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes from the root to ``current`` (or along the newest children), in order."""
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    if isinstance(current, str) and isinstance(mapping.get(current), dict):
        node_id: Any = current
        while isinstance(node_id, str) and node_id not in seen and isinstance(mapping.get(node_id), dict):
            seen.add(node_id)
            chain.append(mapping[node_id])
            node_id = mapping[node_id].get("parent")
        return chain[::-1]
    roots = [n for n in mapping.values() if isinstance(n, dict) and not n.get("parent")]
    node = roots[0] if roots else None
    visited: set[int] = set()
    while isinstance(node, dict) and id(node) not in visited:
        visited.add(id(node))
        chain.append(node)
        children = [c for c in node.get("children") or [] if isinstance(c, str) and c in mapping]
        node = mapping[children[-1]] if children else None
    return chain


def _message(node: dict[str, Any]) -> tuple[str, str] | None:
    message = node.get("message")
    if not isinstance(message, dict):
        return None
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    speaker = SPEAKERS.get(str(role))
    metadata = message.get("metadata")
    if speaker is None or (isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")):
        return None
    content = message.get("content")
    if not isinstance(content, dict) or content.get("content_type") not in _TEXT_KINDS:
        return None
    parts = content.get("parts")
    text = "\n\n".join(p for p in parts if isinstance(p, str) and p.strip()) if isinstance(parts, list) else ""
    return (speaker, text) if text.strip() else None


def _record(item: Any, where: str, fallback: str) -> Record | Skipped:
    if not isinstance(item, dict):
        return Skipped(where, f"{json_kind(item)}, not a conversation object")
    source_id = text_or_none(item.get("conversation_id")) or text_or_none(item.get("id"))
    if source_id is None:
        return Skipped(where, "a conversation without an id (id or conversation_id)")
    mapping = item.get("mapping")
    if not isinstance(mapping, dict):
        return Skipped(where, f"conversation {source_id!r} has no mapping (its message tree)")
    messages = [m for node in _branch(mapping, item.get("current_node")) if (m := _message(node))]
    if not messages:
        return Skipped(where, f"conversation {source_id!r} has no user or assistant text on its current branch")
    record = conversation(source_id, item, ("create_time", "update_time", "title"), "chatgpt", messages,
                          where, fallback)
    model = text_or_none(item.get("default_model_slug"))
    if model:
        record.fields["model"] = model
    return record


def read(source: Path) -> Source:
    data = load_json(source, ACCEPTED)
    if not isinstance(data, list):
        raise InvalidInput("SOURCE", f"{source} is {json_kind(data)}; expected {ACCEPTED}")
    return read_items(source, data, "conversation", _record)
