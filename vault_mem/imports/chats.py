"""What the two chat exports share: one note per conversation, its messages as paragraphs."""

from __future__ import annotations

from vault_mem.imports.records import Record

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
