"""What of a note is embedded: its title with its text, one chunk a heading section when the note
is long, so that a long note's one relevant section counts (docs/ranking.md, "By meaning").

A note whose title and body fit ``chunk_chars`` is one chunk. A longer one is cut at its headings
(outside code): the text before the first heading, then each section to the next heading; short
neighbouring sections are joined while they fit, a section longer than ``chunk_chars`` is cut at
paragraph breaks (or hard, when a paragraph alone is longer). Every chunk starts with the note's
title and its section's heading, so a section is understood in its note's terms. At most
``max_chunks`` chunks a note: the rest of a huge note is not embedded (its words still are indexed).
"""

from __future__ import annotations

from vault_mem import settings
from vault_mem.vault.markdown import headings


def note_chunks(title: str, body: str, chunk_chars: int | None = None, max_chunks: int | None = None) -> list[str]:
    """The texts to embed for one note (none when it holds no text at all); the bounds not given
    are the ``meaning_chunk_chars`` and ``meaning_max_chunks`` settings."""
    config = settings.current()
    chunk_chars = config.meaning_chunk_chars if chunk_chars is None else chunk_chars
    max_chunks = config.meaning_max_chunks if max_chunks is None else max_chunks
    title, body = title.strip(), body.strip()
    if len(title) + len(body) + 1 <= chunk_chars:
        whole = f"{title}\n{body}".strip()
        return [whole] if whole else []
    sections: list[tuple[str, str]] = []  # (heading, text under it)
    found = headings(body)
    start, heading = 0, ""
    for h in found:
        sections.append((heading, body[start:h.start]))
        start, heading = h.end, h.text
    sections.append((heading, body[start:]))
    pieces: list[tuple[str, str]] = []
    for head, text in sections:
        text = text.strip()
        if not text:
            continue
        for part in _cut(text, max(chunk_chars - len(title) - len(head) - 2, chunk_chars // 4)):
            pieces.append((head, part))
    chunks: list[str] = []
    current = ""
    for head, part in pieces:
        text = f"{head}\n{part}" if head else part
        if current and len(current) + len(text) + 1 <= chunk_chars - len(title) - 1:
            current += "\n" + text
            continue
        if current:
            chunks.append(f"{title}\n{current}")
        current = text
    if current:
        chunks.append(f"{title}\n{current}")
    return chunks[:max_chunks] or ([title] if title else [])


def _cut(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, at paragraph breaks where it can."""
    if len(text) <= size:
        return [text]
    out: list[str] = []
    current = ""
    for para in text.split("\n\n"):
        para = para.strip()
        while len(para) > size:
            if current:
                out.append(current)
                current = ""
            out.append(para[:size])
            para = para[size:]
        if current and len(current) + len(para) + 2 > size:
            out.append(current)
            current = ""
        current = f"{current}\n\n{para}" if current else para
    if current:
        out.append(current)
    return out
