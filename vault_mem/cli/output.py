"""Text for a terminal: rows that fit its width, cut with ``…``, and counts with the right noun."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

ROOT_LABEL = "(root)"  # the vault's top folder, shown and accepted wherever a domain is


def width() -> int:
    """The terminal's columns ($COLUMNS first; 80 when not a terminal), at least 40."""
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def one_line(text: str) -> str:
    return " ".join(text.split())


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
