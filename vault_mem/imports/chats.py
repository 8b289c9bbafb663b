"""What the two chat exports share: one note per conversation, its messages as paragraphs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.imports.records import Record, Skipped, Source, json_kind, load_json, moment, read_items, text_or_none

SPEAKERS = {"user": "user", "human": "user", "assistant": "assistant"}


def transcript(messages: list[tuple[str, str]]) -> str:
    """``**user**: ...`` / ``**assistant**: ...`` paragraphs, in order."""
    return "\n\n".join(f"**{speaker}**: {text.strip()}" for speaker, text in messages)


class DateFolder:
    """The default folder of a conversation: ``<prefix>/YYYY-MM`` of the day it started."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, record: Record) -> str:
        created = str(record.fields.get("created", ""))
        return f"{self.prefix}/{created[:7]}" if len(created) >= 7 else self.prefix


def conversation(source_id: str, item: dict[str, Any], keys: tuple[str, str, str], tag: str,
                 messages: list[tuple[str, str]], where: str, fallback: str) -> Record:
    """The note of one conversation: ``keys`` name the export's (created, updated, title) fields;
    without a creation time it takes ``fallback`` (the source file's) and says it is undated."""
    created_key, updated_key, title_key = keys
    dated = moment(item.get(created_key))
    created = dated or fallback
    updated = moment(item.get(updated_key)) or created
    title = " ".join(str(text_or_none(item.get(title_key)) or "Untitled conversation").split())
    fields: dict[str, Any] = {"type": "note", "tags": [tag], "created": created, "updated": updated}
    return Record(source_id=source_id, title=title, body=transcript(messages), fields=fields, where=where,
                  dated=dated is not None)


_NAMES = {"chatgpt": "a ChatGPT export", "claude": "a Claude.ai export"}


def read_conversations(source: Path, accepted: str, record: Callable[[Any, str, str, Source], Record | Skipped],
                       mine: Callable[[Any], bool], other: tuple[str, Callable[[Any], bool]]) -> Source:
    """The conversations of an export's conversations.json, a JSON list (or an object holding one
    under ``conversations``, or one conversation alone, as exporters of a single chat write it),
    each made a record by ``record``. ``mine`` tells this format's conversation; ``other`` names
    the other chat format and tells its conversation: a file whose conversations are all the
    other format's is refused with the command that reads it."""
    data = load_json(source, accepted)
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    elif mine(data) or other[1](data):
        data = [data]
    if not isinstance(data, list):
        raise InvalidInput("SOURCE", f"{source} is {json_kind(data)}; expected {accepted}")
    if data and not any(mine(item) for item in data) and any(other[1](item) for item in data):
        raise InvalidInput("SOURCE", f"{source} looks like {_NAMES[other[0]]}, not this format's; import it with "
                           f"'vault-mem import {other[0]} {source}'")
    return read_items(source, data, "conversation", record)
