"""Resolving a ref to one note (SPEC 3): uid, permalink, path (with or without .md), file
name, title, alias; each stage compares NFC-normalised and case-insensitively, and the
first stage with exactly one hit wins. A stage with several hits is ambiguous."""

from __future__ import annotations

from whoosh.query import Term

from vault_mem.errors import InvalidInput, NotFound
from vault_mem.index.schema import fold, strip_md
from vault_mem.served.context import View
from vault_mem.vault.note import permalink_of
from vault_mem.vault.paths import check_relative

PERMALINK_PREFIX = "memory://"
SHOWN_REF_CHARS = 100  # a ref echoed in a message; repr() may spell a character in 10


def resolve_ref(view: View, ref: str, param: str = "ref") -> int:
    """The document number of the one note ``ref`` names.

    Raises InvalidInput (bad or ambiguous ref, listing the candidates) or NotFound.
    """
    text = ref.strip()
    if not text:
        raise InvalidInput(param, "must not be empty: pass a uid, permalink, path, file name or title")
    as_path = text[len(PERMALINK_PREFIX):] if text.lower().startswith(PERMALINK_PREFIX) else text
    check_relative(as_path, param)
    key = fold(text)
    path_key = fold(strip_md(as_path.strip("/")))
    stages = (
        ("uid", Term("key_uid", key)),
        ("permalink/path", Term("key_path", path_key)),
        ("file name", Term("key_name", path_key)),
        ("title", Term("key_title", key)),
        ("alias", Term("key_alias", key)),
    )
    for stage, query in stages:
        hits = view.docs(query)
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            candidates = sorted(permalink_of(view.record(d)["path"]) for d in hits)
            shown = ", ".join(candidates[:10]) + (f" (and {len(candidates) - 10} more)" if len(candidates) > 10 else "")
            raise InvalidInput(
                param,
                f"{_shown(ref)} is ambiguous: {len(hits)} notes match by {stage}: {shown}; "
                "pass one of these permalinks",
                candidates=candidates,
            )
    raise NotFound(f"no note matches {_shown(ref)} (tried uid, permalink, path, file name, title and alias)")


def _shown(ref: str) -> str:
    """``ref`` for a message, cut so that the answer stays small whatever was passed."""
    if len(ref) <= SHOWN_REF_CHARS:
        return repr(ref)
    return f"{ref[:SHOWN_REF_CHARS]!r}... ({len(ref):,} characters)"
