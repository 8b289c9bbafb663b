"""How a note's path and a text are cut into the names the index keys and a query is split by:
plain string rules, shared by the engine (which indexes with them) and the read tools (which
compare what a caller asks with them). Case folding is ``vault/fields.py:fold``."""

from __future__ import annotations

import re

_WORD_RUN = re.compile(r"\w+")  # the index's tokenizer cuts the same runs (search/schema.py ``WORDS``)


def strip_md(path: str) -> str:
    """``path`` without its ``.md`` suffix (any case): the note's name as a permalink shows it."""
    return path[:-3] if path.lower().endswith(".md") else path


def ancestors(domain: str) -> list[str]:
    """Each folder of ``domain`` from the top, itself last: ``a/b`` -> ``a``, ``a/b``."""
    parts = domain.split("/") if domain else []
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def path_prefixes(path: str) -> list[str]:
    """Each leading run of ``path``'s parts, slashes at the ends and empty parts dropped."""
    parts = [p for p in path.strip("/").split("/") if p]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def words(text: str) -> list[str]:
    """The lower-cased word runs of ``text``, as the index tokenises it."""
    return _WORD_RUN.findall(text.lower())


def is_word(needle: str) -> bool:
    """Whether ``needle`` is one word run (a word-only substring search can look it up in the terms)."""
    return bool(needle) and _WORD_RUN.fullmatch(needle) is not None
