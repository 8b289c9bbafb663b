"""Excerpts for search digests: a short window of a note's text around the first match.

``excerpt_around(body, terms)`` takes the body (frontmatter already split off), keeps its
text lines (ATX headings outside code are left out), collapses whitespace, and returns at
most ``EXCERPT_CHARS`` code points of that text, centred on the first case-insensitive
occurrence of any term, with ``...`` added at each end where the text was cut (the markers
come on top of the limit, docs/tools.md "Rules every tool follows"). With no match, the window starts at the
beginning of the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from vault_mem.vault.markdown import heading_spans

CUT = "..."


def text_lines(body: str) -> str:
    """The body's non-heading lines joined into one whitespace-collapsed string."""
    skipped = heading_spans(body)
    if not skipped:
        return " ".join(body.split())
    kept: list[str] = []
    pos = 0
    for start, end in skipped:
        kept.append(body[pos:start])
        pos = end
    kept.append(body[pos:])
    return " ".join(" ".join(kept).split())


def first_match(text: str, terms: Sequence[str]) -> tuple[int, int] | None:
    """(start, end) of the earliest case-insensitive occurrence of any of ``terms``."""
    best: tuple[int, int] | None = None
    for term in terms:
        if not term:
            continue
        m = re.search(re.escape(term), text, re.IGNORECASE)
        if m and (best is None or m.start() < best[0] or (m.start() == best[0] and m.end() > best[1])):
            best = (m.start(), m.end())
    return best


def excerpt_around(body: str, terms: Sequence[str], limit: int, snap: int) -> str:
    """At most ``limit`` characters of the body's text, centred on the first match of ``terms``,
    its cuts moved up to ``snap`` characters to fall between words (the ``excerpt_chars`` and
    ``excerpt_snap`` settings)."""
    text = text_lines(body)
    if len(text) <= limit:
        return text
    match = first_match(text, terms)
    if match is None:
        start, end = 0, limit
    else:
        centre = (match[0] + match[1]) // 2
        start = max(0, centre - limit // 2)
        end = min(len(text), start + limit)
        start = max(0, end - limit)
    start, end = _snap_to_words(text, start, end, match, snap)
    piece = text[start:end].strip()
    return (CUT if start > 0 else "") + piece + (CUT if end < len(text) else "")


def _snap_to_words(text: str, start: int, end: int, match: tuple[int, int] | None, snap: int) -> tuple[int, int]:
    """Move the cuts inward, ``snap`` characters at most, so that they fall between words, never
    off the match."""
    if start > 0 and not text[start - 1].isspace() and not text[start].isspace():
        space = text.find(" ", start, start + snap)
        if space >= 0 and (match is None or space < match[0]):
            start = space + 1
    if end < len(text) and not text[end].isspace() and not text[end - 1].isspace():
        space = text.rfind(" ", max(start, end - snap), end)
        if space > start and (match is None or space >= match[1]):
            end = space
    return start, end
