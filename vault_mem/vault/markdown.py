"""Markdown structure the parser needs: code masking, headings, inline tags, tasks, links.

Every function takes the body text and never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

# Any indentation: Obsidian notes put fenced blocks inside list items, indented 4+ spaces.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:.+?)\1", re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
# Inside blockquotes and callouts too; the box must be followed by a space or the line's end,
# so that a list item starting with a link ("- [1](url)") is not a task.
# Each repetition must consume a '>', so a long run of blanks cannot backtrack quadratically.
_TASK = re.compile(r"^[ \t]*(?:>[ \t]*)*(?:[-*+]|\d+[.)])[ \t]+\[(.)\](?=[ \t]|$)", re.MULTILINE)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]*?)\]\]")
# ``[text](note.md#h)`` or, with spaces in the path, ``[text](<my note.md#h>)``. No part may run
# over a bracket or parenthesis: a line of thousands of "[a](" must not backtrack quadratically.
_MDLINK = re.compile(
    r"\[[^\[\]\n]*\]\((?:<([^<>\[\]()\n]+?\.md)(#[^<>\n]*)?>|([^()\[\]\s<>]+?\.md)(#[^()\s]*)?)"
    r"(?:\s+\"[^\"\n]*\")?\)",
    re.IGNORECASE,
)
_LINK_TARGET = re.compile(r"\]\([^()\[\]\n]*\)")
_INLINE_TAG = re.compile(r"(?<![\w/#&\]\)\"'`])#([^\W\d_][\w/-]*|\d+[^\W\d][\w/-]*|_[\w/-]+)")
_CONFLICT = re.compile(r"^(<{7} |={7}$|>{7} )", re.MULTILINE)


def mask_code(body: str) -> str:
    """The body with fenced code blocks and inline code spans blanked out.

    Positions and line breaks are kept, so offsets into the result are offsets into the body.
    """
    out: list[str] = []
    fence: str | None = None
    for line in body.splitlines(keepends=True):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                out.append(_blank(line))
                continue
            out.append(_INLINE_CODE.sub(lambda mm: _blank(mm.group(0)), line))
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(
                    m.group(1)):].strip():
                fence = None
            out.append(_blank(line))
    return "".join(out)


def _blank(text: str) -> str:
    return re.sub(r"[^\n\r]", " ", text)


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    start: int  # offset of the heading line in the body
    end: int  # offset just after the heading line (including its line break)


def headings(body: str, masked: str | None = None) -> list[Heading]:
    """ATX headings outside code, in reading order."""
    masked = mask_code(body) if masked is None else masked
    found: list[Heading] = []
    pos = 0
    for line in masked.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        if stripped.startswith("#"):
            m = _HEADING.match(body[pos : pos + len(stripped)])
            if m:
                found.append(Heading(len(m.group(1)), m.group(2).strip(), pos, pos + len(line)))
        pos += len(line)
    return found


def heading_spans(body: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each of ``headings(body)``, found without masking the body.

    The same lines as ``headings``: a line outside fenced code that starts with ``#`` and is
    an ATX heading (inline code cannot start a line with ``#``, so it need not be blanked).
    One subtlety of masking is kept: a fenced line blanked together with a line break other
    than CR or LF (VT, FF, NEL, U+2028...) runs into the next line, which then cannot start a
    heading. Excerpts ask for this on every search row; it costs a fraction of ``headings``.
    """
    if "#" not in body:
        return []
    fenced = "```" in body or "~~~" in body
    found: list[tuple[int, int]] = []
    fence: str | None = None
    glued = False  # this line continues a blanked line whose break was blanked too
    pos = 0
    for line in body.splitlines(keepends=True):
        m = _FENCE.match(line) if fenced else None
        blanked = fence is not None or m is not None
        if fence is None:
            if m:
                fence = m.group(1)
            elif not glued and line.startswith("#") and _HEADING.match(line.rstrip("\r\n")):
                found.append((pos, pos + len(line)))
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(
                m.group(1)):].strip():
            fence = None
        glued = blanked and not line.endswith(("\n", "\r"))
        pos += len(line)
    return found


def first_h1(body: str, masked: str | None = None) -> str | None:
    for h in headings(body, masked):
        if h.level == 1 and h.text:
            return h.text
    return None


def inline_tags(masked: str) -> list[str]:
    """`#tags` in text already masked of code; links are blanked first so anchors are not tags."""
    text = _WIKILINK.sub(lambda m: _blank(m.group(0)), masked)
    text = _LINK_TARGET.sub(lambda m: _blank(m.group(0)), text)
    text = re.sub(r"https?://\S+", lambda m: _blank(m.group(0)), text)
    out: list[str] = []
    for m in _INLINE_TAG.finditer(text):
        tag = m.group(1).rstrip("/-")
        if tag:
            out.append(tag)
    return out


def task_marks(masked: str) -> list[str]:
    """The character inside each checkbox list item, in order."""
    return [m.group(1) for m in _TASK.finditer(masked)]


@dataclass(frozen=True)
class Link:
    """An outgoing link. ``target`` is the note part (may be empty for a same-note anchor)."""

    target: str
    heading: str | None = None
    block: str | None = None
    alias: str | None = None
    embed: bool = False
    markdown: bool = False


def parse_wikilink(inner: str, embed: bool = False) -> Link:
    """Split the text inside ``[[...]]`` into target, ``#heading``, ``^block`` and ``|alias``."""
    alias = None
    if "|" in inner:
        inner, alias = inner.split("|", 1)
    heading = block = None
    if "#" in inner:
        inner, anchor = inner.split("#", 1)
        if anchor.startswith("^"):
            block = anchor[1:]
        elif "#^" in anchor:
            heading, block = anchor.split("#^", 1)
        else:
            heading = anchor
    elif "^" in inner and inner.rfind("^") > inner.rfind("/"):
        inner, block = inner.split("^", 1)
    return Link(inner.strip(), heading or None, block or None, alias, embed)


def wikilinks(text: str) -> list[Link]:
    return [parse_wikilink(m.group(2), bool(m.group(1))) for m in _WIKILINK.finditer(text)]


def body_links(masked_body: str) -> list[Link]:
    """Wikilinks and Markdown links to `.md` files, outside code."""
    links = wikilinks(masked_body)
    for m in _MDLINK.finditer(masked_body):
        target = unquote(m.group(1) or m.group(3))
        if "://" in target:
            continue
        anchor = m.group(2) or m.group(4)
        heading = unquote(anchor[1:]) if anchor else None
        links.append(Link(target, heading or None, None, None, False, True))
    return links


def has_conflict_markers(body: str) -> bool:
    return bool(_CONFLICT.search(body))
