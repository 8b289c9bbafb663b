"""What of a note is embedded: its title with its text, one chunk a heading section when the note
is long, so that a long note's one relevant section counts (docs/ranking.md, "By meaning").

A note whose title and body fit ``chunk_chars`` is one chunk. A longer one is cut at its headings
(outside code): the text before the first heading, then each section to the next heading; short
neighbouring sections are joined while they fit, a section longer than ``chunk_chars`` is cut at
paragraph breaks (or hard, when a paragraph alone is longer). Every chunk starts with the note's
title and its section's heading, so a section is understood in its note's terms. At most
``max_chunks`` chunks a note: the rest of a huge note is not embedded (its words still are indexed).

The title is what a person reads as the note's title (``embedded_title``): its ``title`` key or
first heading, and its file name only where that reads as a title, not an id (``turn-010005``,
a hash) or a date (``2024-05-01``). ``TEXTS`` names this way of making the texts; the vector store
is keyed by it with the model (meaning/embedder.py), so vectors made another way are embedded again.
"""

from __future__ import annotations

import re

from vault_mem.vault.markdown import headings

# The version of what is embedded for a note: bumped whenever the texts change (2: an id-like
# or date file name is no longer embedded as the title), so that stored vectors made the old
# way are made again rather than compared with the new ones.
TEXTS = 2

_DATE = re.compile(r"(?<!\d)(?:\d{4}[-_.]?\d{2}[-_.]?\d{2}|\d{1,2}[-_.]\d{1,2}[-_.]\d{2,4})"
                   r"(?:[T _-]?\d{2}[-:.h]?\d{2}(?:[-:.]?\d{2})?)?(?!\d)")
_HASH = re.compile(r"(?=[^\W_]*\d)[0-9a-f]{8,}(?:-[0-9a-f]{4,})*", re.IGNORECASE)
_SERIAL = re.compile(r"[^\W\d_]+[\W_]+(\d[\d\W_]*)")


def reads_as_title(name: str) -> bool:
    """Whether a file name (without ``.md``) reads as a title: with its dates and hashes taken
    out, it holds a letter, and it is not one word and a serial number
    (``turn-010005``, ``msg_0012``: a number with a leading zero or of five digits or more;
    ``Windows 11`` and ``Intel 8080`` read as titles)."""
    rest = _HASH.sub(" ", _DATE.sub(" ", name)).strip(" -_.")
    if not re.search(r"[^\W\d_]", rest):
        return False
    serial = _SERIAL.fullmatch(rest)
    if serial:
        digits = re.sub(r"\D", "", serial.group(1))
        return not (digits.startswith("0") or len(digits) >= 5)
    return True


def embedded_title(title: str, path: str) -> str:
    """The title to embed for the note at ``path`` whose title (``title`` key, first heading, else
    its file name) is ``title``: the same, unless it is the file name and that reads as an id or a
    date (then none)."""
    stem = path.rpartition("/")[2]
    for suffix in (".excalidraw.md", ".md"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    if title.strip() == stem.strip() and not reads_as_title(stem):
        return ""
    return title


def note_chunks(title: str, body: str, chunk_chars: int, max_chunks: int) -> list[str]:
    """The texts to embed for one note (none when it holds no text at all), each of at most
    ``chunk_chars`` characters, ``max_chunks`` at most (the ``meaning_chunk_chars`` and
    ``meaning_max_chunks`` settings)."""
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
