"""JSON objects read strictly: a key written twice in one object is an error to report, where
Python's ``json`` keeps the last silently (a client reading the file keeps the last too, so what
the first holds is already lost). Pass ``no_duplicates`` as ``object_pairs_hook``."""

from __future__ import annotations

from typing import Any


class DuplicateKey(Exception):
    """A key met twice in one JSON object (``key``: the key)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of ``pairs``; DuplicateKey at the first key met twice."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise DuplicateKey(key)
        seen[key] = value
    return seen
