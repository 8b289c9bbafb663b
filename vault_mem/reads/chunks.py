"""Heading chunks of a note body, as ``mem_recall`` returns them (docs/tools.md).

- The text before the first heading, when it holds anything, is a chunk with an empty
  hierarchy; a note without headings is one chunk.
- Each heading starts a section running to the next heading (of any level). Its
  ``hierarchy`` is the heading path: the texts of the enclosing headings, H1 down, ending
  with its own. Headings inside code blocks are not headings.
- A heading with no text under it (only blank lines before the next heading) is not a chunk
  on its own: its line is folded into the start of the next chunk's content (so a parent
  heading such as ``# Project`` directly followed by ``## Goals`` shows in both the content
  and the hierarchy of the Goals chunk). Empty headings at the very end of a note are
  appended to the last chunk. Nothing of the body is dropped except surrounding blank lines.
- A section longer than ``CHUNK_CHARS`` splits near that size at the last paragraph break
  before it, else a line break, else a sentence end, else hard at the size. Continuation
  pieces keep the section's hierarchy and repeat its heading line, so that every chunk
  under a heading starts with that heading's line.
- A note always yields at least one chunk (an empty body gives one empty chunk), so that
  every memory created in the range is seen.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

from vault_mem.settings import Settings
from vault_mem.vault.markdown import headings

_SENTENCE_END = re.compile(r"[.!?…][\"')\]]*(?=\s)")


@dataclass(frozen=True)
class Chunk:
    hierarchy: tuple[str, ...]
    content: str


def chunk_body(body: str, size: int) -> list[Chunk]:
    """The chunks of ``body`` in reading order (see the module docstring), each at most about
    ``size`` characters (the ``chunk_chars`` setting)."""
    body = body.replace("\r\n", "\n")
    found = headings(body)
    chunks: list[Chunk] = []
    preamble = body[: found[0].start] if found else body
    if preamble.strip() or not found:
        chunks += [Chunk((), piece) for piece in split_long(preamble.strip("\n").rstrip(), "", size)]
    stack: list[tuple[int, str]] = []
    pending = ""  # heading lines with no text under them, waiting for the next chunk
    for i, h in enumerate(found):
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        stack.append((h.level, h.text))
        end = found[i + 1].start if i + 1 < len(found) else len(body)
        heading_line = body[h.start: h.end].rstrip()
        under = body[h.end: end].strip("\n").rstrip()
        if not under.strip():
            pending += heading_line + "\n\n"
            continue
        hierarchy = tuple(text for _level, text in stack)
        pieces = split_long(f"{heading_line}\n{under}", heading_line, size)
        chunks.append(Chunk(hierarchy, pending + pieces[0]))
        chunks += [Chunk(hierarchy, piece) for piece in pieces[1:]]
        pending = ""
    if pending:
        tail = pending.rstrip()
        if chunks:
            last = chunks[-1]
            chunks[-1] = Chunk(last.hierarchy, f"{last.content}\n\n{tail}" if last.content else tail)
        else:
            chunks.append(Chunk((found[0].text,), tail))
    return chunks or [Chunk((), "")]


def _min_piece(size: int) -> int:
    """A break earlier than this would make a tiny chunk: look further."""
    return size // 2


def split_long(text: str, heading_line: str, size: int) -> list[str]:
    """``text`` in pieces of at most about ``size`` characters; continuation pieces start
    with ``heading_line`` (when there is one) followed by a line break."""
    pieces: list[str] = []
    prefix = f"{heading_line}\n" if heading_line else ""
    rest = text
    while len(rest) > size:
        cut = _cut_point(rest, size)
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip("\n").lstrip(" ") if rest[cut:].strip() else ""
        if rest:
            rest = prefix + rest
            # A heading line too long to leave room for text must not loop forever.
            if len(prefix) >= size - _min_piece(size):
                prefix = ""
    if rest or not pieces:
        pieces.append(rest)
    return pieces


def _cut_point(text: str, size: int) -> int:
    """Where to end the first piece of ``text``: after the last paragraph break, line break
    or sentence end inside ``[_min_piece(size), size]``, else at ``size``."""
    least = _min_piece(size)
    window = text[: size + 1]
    para = window.rfind("\n\n", least)
    if para >= least:
        return para + 1
    line = window.rfind("\n", least)
    if line >= least:
        return line + 1
    ends = [m.end() for m in _SENTENCE_END.finditer(window, least) if m.end() <= size]
    if ends:
        return ends[-1]
    return size


class ChunkCache:
    """Chunks of recently seen notes, keyed by (path, etag), least recently used first out.

    Paging walks the chunk counts of every earlier note, so counts are kept far longer than
    the chunks themselves, under a key of the caller's choice (one that is cheaper to get than
    the etag: reading thousands of stored records costs tens of milliseconds)."""

    def __init__(self, chunks_size: int | None = None, counts_size: int | None = None) -> None:
        """The sizes not given are the ``recall_chunks_kept`` and ``recall_counts_kept`` settings of
        the ``config`` each ``put`` is given (the process's cache is made at import)."""
        self._chunks: OrderedDict[tuple[str, str], list[Chunk]] = OrderedDict()
        self._counts: OrderedDict[Hashable, int] = OrderedDict()
        self._sizes = (chunks_size, counts_size)
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> list[Chunk] | None:
        with self._lock:
            hit = self._chunks.get(key)
            if hit is not None:
                self._chunks.move_to_end(key)
            return hit

    def count(self, key: Hashable) -> int | None:
        with self._lock:
            hit = self._counts.get(key)
            if hit is not None:
                self._counts.move_to_end(key)
            return hit

    def put(self, key: tuple[str, str], chunks: list[Chunk], count_key: Hashable, config: Settings) -> None:
        with self._lock:
            self._chunks[key] = chunks
            self._counts[count_key] = len(chunks)
            chunks_size, counts_size = self._sizes
            for store, size in ((self._chunks, config.recall_chunks_kept if chunks_size is None else chunks_size),
                                (self._counts, config.recall_counts_kept if counts_size is None else counts_size)):
                while len(store) > size:
                    store.popitem(last=False)
