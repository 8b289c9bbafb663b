"""Whoosh names segments and temp files with the ``random`` module, which a program (or a
test framework such as Hypothesis) may reseed: two writers then draw the same segment name
and the second commit fails, or worse, overwrites a live segment. Names must be unique, so
they come from the operating system's randomness instead. Imported by the index layer
before any writer exists.
"""

from __future__ import annotations

import secrets

import whoosh.codec.base
import whoosh.filedb.compound
import whoosh.filedb.filestore
import whoosh.util
import whoosh.writing

_IDCHARS = "0123456789abcdefghijklmnopqrstuvwxyz"


def unique_name(size: int = 28) -> str:
    return "".join(secrets.choice(_IDCHARS) for _ in range(size))


for _module in (whoosh.util, whoosh.codec.base, whoosh.filedb.compound, whoosh.filedb.filestore, whoosh.writing):
    _module.random_name = unique_name
