"""Text for a terminal: rows that fit its width, cut with ``…``, and counts with the right noun;
vault text made harmless to print (``visible``)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Sequence

ROOT_LABEL = "(root)"  # the vault's top folder, shown and accepted wherever a domain is

# C0 and C1 controls and DEL: ESC starts a terminal command (clear the screen, set the title,
# write the clipboard with OSC 52), and a terminal may take U+009B alone as ESC [. Bidi
# overrides, embeddings and isolates (U+202A-E, U+2066-9) reorder what follows them: a title
# ending "\u202edm.exe" shows as "exe.md". The marks (U+061C, U+200E, U+200F) only in names:
# right-to-left prose uses them.
_IN_NAMES = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u061c\u200e\u200f]")
_IN_TEXT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # keeps \t and \n
_IN_JSON = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u061c\u200e\u200f\u2028\u2029]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, lines: bool = False) -> str:
    """``text`` safe to print on a terminal: each control character shown as ``\\x1b`` and each
    bidi control as ``\\u202e``, so vault text can neither command the terminal nor reorder
    what is around it. ``lines`` (a note's body) keeps newlines, tabs and the bidi marks."""
    if lines:
        return _IN_TEXT.sub(_shown, text.replace("\r\n", "\n"))
    return _IN_NAMES.sub(_shown, text)


def json_text(text: str) -> str:
    """JSON from ``json.dumps(..., ensure_ascii=False)`` with DEL, C1 controls, bidi controls and
    line separators as ``\\u`` escapes: the same JSON value, harmless on a terminal (json.dumps
    escapes only U+0000-U+001F). They can only occur inside strings, where the escape is valid."""
    return _IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def width() -> int:
    """The terminal's columns ($COLUMNS first), at least 40; no bound (``sys.maxsize``) when stdout
    is not a terminal and $COLUMNS is not set: `vault-mem log | grep x` needs whole lines."""
    if not os.environ.get("COLUMNS", "").strip().isdigit() and not _is_terminal():
        return sys.maxsize
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def _is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # no stdout, or closed
        return False


def one_line(text: str) -> str:
    return visible(" ".join(text.split()))


def cut(text: str, room: int) -> str:
    """``text`` on one line, at most ``room`` characters, ending ``…`` when cut."""
    text = one_line(text)
    if len(text) <= room:
        return text
    return text[: max(room - 1, 0)].rstrip() + "…"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def domain_label(domain: str) -> str:
    return domain or ROOT_LABEL


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = (),
          flexible: Sequence[int] = (), room: int | None = None) -> list[str]:
    """Lines of a table under ``headers`` that fit ``room`` columns.

    ``right`` holds the indexes of right-aligned columns; the ``flexible`` ones (most flexible
    first) are cut with ``…`` until the row fits; they keep at least 8 characters.
    """
    room = room or width()
    widths = [max([len(h), *(len(one_line(r[i])) for r in rows)]) for i, h in enumerate(headers)]
    excess = sum(widths) + 2 * (len(widths) - 1) - room
    for i in flexible:
        if excess <= 0:
            break
        give = min(excess, max(widths[i] - 8, 0))
        widths[i] -= give
        excess -= give

    def line(cells: Sequence[str]) -> str:
        out = [cut(c, widths[i]).rjust(widths[i]) if i in right else cut(c, widths[i]).ljust(widths[i])
               for i, c in enumerate(cells)]
        return "  ".join(out).rstrip()

    return [line(headers), *(line(r) for r in rows)]
