"""A ChatGPT data export's ``conversations.json`` as notes, one per conversation.

The file is a JSON list of conversations: ``id`` (or ``conversation_id``), ``title``,
``create_time`` and ``update_time`` (POSIX seconds), ``current_node`` and ``mapping``, a tree
of ``{id: {message, parent, children}}`` nodes. The conversation as its owner last saw it is
the branch that ends at ``current_node``, followed up through the parents and read back down;
regenerated answers and edited prompts on other branches are left out and counted (without
``current_node``, the newest child is followed from the root). Files written by other
exporters differ, and are read as they are: links given only as ``parent`` (or only as
``children``) are completed from each other; a mapping with no links at all is one branch in
time order (every message kept); a ``messages`` list instead of a mapping is read in order; a
message without ``content_type`` is text when its ``parts`` are; a conversation without an id
is known by its title, start time and message ids. Only the text of user and assistant
messages is kept; system, tool and hidden messages, code, images and other content are left
out and counted in the summary.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from vault_mem.imports.chats import SPEAKERS, DateFolder, conversation, read_conversations
from vault_mem.imports.records import Record, Skipped, Source, json_kind, text_or_none
from vault_mem.settings import Settings

FORMAT = "chatgpt"
DEFAULT_DOMAIN = DateFolder("chatgpt")
ACCEPTED = "the JSON list of conversations in conversations.json from a ChatGPT data export"
_TEXT_KINDS = ("text", "multimodal_text")
OTHER_BRANCHES = "messages on other branches (regenerated answers, edited prompts)"
IMAGES = "images (a placeholder line in the note marks each)"
IMAGE_PLACEHOLDER = "an image was here; its file is not imported"


def _links(nodes: dict[str, dict[str, Any]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(parent of each node, children of each node), each completed from the other."""
    parent_of: dict[str, str] = {}
    children_of: dict[str, list[str]] = {key: [] for key in nodes}
    for key, node in nodes.items():
        parent = node.get("parent")
        if isinstance(parent, str) and parent in nodes and parent != key:
            parent_of[key] = parent
        kids = node.get("children")
        for child in kids if isinstance(kids, list) else []:
            if isinstance(child, str) and child in nodes and child != key and child not in children_of[key]:
                children_of[key].append(child)
                parent_of.setdefault(child, key)
    for child, parent in parent_of.items():
        if child not in children_of[parent]:
            children_of[parent].append(child)
    return parent_of, children_of


def _when(node: dict[str, Any]) -> float | None:
    message = node.get("message")
    value = message.get("create_time") if isinstance(message, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _in_time_order(keys: list[str], nodes: dict[str, dict[str, Any]]) -> list[str]:
    """``keys`` by their message's create_time; those without one keep their place in the file."""
    order = {key: n for n, key in enumerate(keys)}
    return sorted(keys, key=lambda k: (_when(nodes[k]) is None, _when(nodes[k]) or 0.0, order[k]))


def _branch(mapping: dict[str, Any], current: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the nodes of the branch shown, in order; the nodes on no branch shown)."""
    nodes = {key: node for key, node in mapping.items() if isinstance(node, dict)}
    parent_of, children_of = _links(nodes)
    if not parent_of:  # no links at all: one branch, in time order
        return [nodes[k] for k in _in_time_order(list(nodes), nodes)], []
    chain: list[str] = []
    if isinstance(current, str) and current in nodes:
        key: str | None = current
        while key is not None and key not in chain:
            chain.append(key)
            key = parent_of.get(key)
        chain.reverse()
    else:
        roots = [k for k in nodes if k not in parent_of and children_of[k]] or [k for k in nodes if k not in parent_of]
        key = roots[0] if roots else None
        while key is not None and key not in chain:
            chain.append(key)
            children = children_of[key]
            key = _in_time_order(children, nodes)[-1] if children else None
    on_branch = set(chain)
    return [nodes[k] for k in chain], [node for k, node in nodes.items() if k not in on_branch]


def _image(part: Any) -> str | None:
    """The placeholder line of an image part (``image_asset_pointer``), or None for another part."""
    if not isinstance(part, dict) or part.get("content_type") != "image_asset_pointer":
        return None
    pointer = part.get("asset_pointer")
    size = (f", {part['width']}×{part['height']}" if isinstance(part.get("width"), int)
            and isinstance(part.get("height"), int) else "")
    named = f": {pointer}" if isinstance(pointer, str) and pointer.strip() else ""
    return f"[image{named}{size}; {IMAGE_PLACEHOLDER}]"


def _generated_images(message: dict[str, Any], out: Source) -> tuple[str, str] | None:
    """A tool's visible message that shows images (an image conversation's answers): the
    assistant's turn, one placeholder line per image; its words, the tool's own, are counted."""
    content = message.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    lines = [line for part in parts if (line := _image(part))] if isinstance(parts, list) else []
    if not lines:
        return None
    out.leave(IMAGES, len(lines))
    if any(isinstance(p, str) and p.strip() for p in parts or []):
        out.leave("system and tool messages")
    return "assistant", "\n".join(lines)


def _message(node: dict[str, Any], out: Source) -> tuple[str, str] | None:
    """(speaker, text) of a node's message, or None (counted in ``out`` when it held something)."""
    message = node.get("message")
    if not isinstance(message, dict):
        return None
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else message.get("role")
    metadata = message.get("metadata")
    hidden = isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
    speaker = SPEAKERS.get(str(role))
    if speaker is None:
        images = _generated_images(message, out) if role == "tool" and not hidden else None
        if images is None:
            out.leave("system and tool messages")
        return images
    if hidden:
        out.leave("hidden messages")
        return None
    content = message.get("content")
    if isinstance(content, str):
        return (speaker, content) if content.strip() else None
    if not isinstance(content, dict):
        return None
    kind = content.get("content_type")
    if kind is not None and kind not in _TEXT_KINDS:
        out.leave(f"{kind} messages" if isinstance(kind, str) else "messages of an unknown content_type")
        return None
    parts = content.get("parts")
    if not isinstance(parts, list):
        text = content.get("text")
        return (speaker, text) if isinstance(text, str) and text.strip() else None
    placeholders = [line for part in parts if (line := _image(part))]
    out.leave(IMAGES, len(placeholders))
    out.leave("files and other attachments", sum(1 for p in parts if not isinstance(p, str) and not _image(p)))
    text = "\n\n".join(p if isinstance(p, str) else _image(p) or "" for p in parts
                       if (isinstance(p, str) and p.strip()) or _image(p))
    return (speaker, text) if text.strip() else None


def _derived_id(item: dict[str, Any], keys: list[str]) -> str:
    """An id for a conversation the file gives none: its title, start time and message ids."""
    seed = json.dumps([item.get("title"), item.get("create_time"), keys], ensure_ascii=False, default=str)
    return "sha256-" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _record(item: Any, where: str, fallback: str, out: Source) -> Record | Skipped:
    if not isinstance(item, dict):
        return Skipped(where, f"{json_kind(item)}, not a conversation object")
    mapping, flat = item.get("mapping"), item.get("messages")
    if isinstance(mapping, dict):
        branch, elsewhere = _branch(mapping, item.get("current_node"))
        keys = list(mapping)
    elif isinstance(flat, list):
        branch, elsewhere = [{"message": m} for m in flat], []
        keys = [str(m.get("id")) for m in flat if isinstance(m, dict)]
    else:
        name = text_or_none(item.get("title")) or "untitled"
        return Skipped(where, f"conversation {name!r} has neither a mapping (its message tree) nor a "
                       "messages list")
    source_id = text_or_none(item.get("conversation_id")) or text_or_none(item.get("id")) or _derived_id(item, keys)
    messages = [m for node in branch if (m := _message(node, out))]
    out.leave(OTHER_BRANCHES, sum(1 for node in elsewhere if _message(node, Source())))
    if not messages:
        return Skipped(where, f"conversation {source_id!r} has no user or assistant text"
                       + (" on its current branch" if elsewhere else ""))
    record = conversation(source_id, item, ("create_time", "update_time", "title"), "chatgpt", messages,
                          where, fallback)
    model = text_or_none(item.get("default_model_slug"))
    if model:
        record.fields["model"] = model
    return record


def looks_like(item: Any) -> bool:
    """Whether a JSON value is a conversation of this format (for the other chat importer to say)."""
    return isinstance(item, dict) and (isinstance(item.get("mapping"), dict) or "current_node" in item) \
        and "chat_messages" not in item


def read(source: Path, config: Settings) -> Source:
    """``config``: unused by this format (every format's reader takes it)."""
    from vault_mem.imports import claude

    return read_conversations(source, ACCEPTED, _record, looks_like, ("claude", claude.looks_like))
