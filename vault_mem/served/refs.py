"""Finding a note by a name someone wrote: the one place every lookup goes through.

The names are the indexed keys ``key_uid``, ``key_path`` (vault-relative path without
``.md``), ``key_name`` (file name), ``key_title`` and ``key_alias``, each NFC-normalised
and case-folded. Two kinds of lookup share them:

- ``resolve_ref``: a *caller's* ref (every tool's ``ref``, the compat tools' ``uid`` and
  ``memory_id``, a resource URI). Stages uid, permalink/path, file name, title, alias; the
  first stage with exactly one hit wins. Several hits are ambiguous: ``invalid``, listing
  the candidates, because a caller is never handed a guess (docs/tools.md, "ref"); except
  that in a path stage (permalink/path, file name) the one hit spelled exactly as the ref,
  case included, wins: on a case-sensitive disk (or a git checkout made on one) ``Note.md``
  and ``note.md`` are two notes, and their permalinks, which differ only by case, must each
  still name one (docs/platforms.md). Titles and aliases stay ambiguous.
- ``Names.nearest``: a name written *inside a note* (a ``[[wikilink]]``, a ``supersedes``
  target) that several notes answer to. The note nearest the writing one wins, as in
  Obsidian, by one tie-break:

    1. the longest shared folder prefix (folders compared case-insensitively),
    2. then the shortest vault-relative path,
    3. then the path, ascending.

  ``LinkResolver`` (links.py) and ``Lineage`` (lineage.py) both resolve through it.
"""

from __future__ import annotations

import unicodedata

from vault_mem.errors import InvalidInput, NotFound
from vault_mem.search.api import PATH_KEY_FIELDS
from vault_mem.served.context import View
from vault_mem.vault.fields import fold
from vault_mem.vault.names import strip_md
from vault_mem.vault.note import PERMALINK_PREFIX, domain_of
from vault_mem.vault.paths import check_relative

__all__ = ["PERMALINK_PREFIX", "REF_STAGES", "Names", "resolve_ref", "without_prefix"]

# (what a message calls the stage, indexed field, compared as a path)
REF_STAGES = (
    ("uid", "key_uid", False),
    ("permalink/path", "key_path", True),
    ("file name", "key_name", True),
    ("title", "key_title", False),
    ("alias", "key_alias", False),
)


def without_prefix(text: str) -> str:
    """``text`` without a leading ``memory://`` (in any case)."""
    return text[len(PERMALINK_PREFIX):] if text.lower().startswith(PERMALINK_PREFIX) else text


class Names:
    """Name lookups against one view of the index, each (field, value) looked up once."""

    def __init__(self, view: View) -> None:
        self.view = view
        self._hits: dict[tuple[str, str], list[int]] = {}

    def hits(self, field: str, value: str) -> list[int]:
        """The notes whose ``field`` key equals ``value`` (already folded); [] for ''."""
        key = (field, value)
        found = self._hits.get(key)
        if found is None:
            if not value:
                found = []
            elif field in PATH_KEY_FIELDS:  # a dict per segment, derived from the path column
                found = self.view.snapshot.path_key_docs(field, value)
            else:  # one hash lookup per segment, no query machinery (search/columns.py)
                found = self.view.snapshot.term_docs(field, [value])
            self._hits[key] = found
        return found

    def path(self, doc: int) -> str:
        return str(self.view.snapshot.column("path")[doc] or "")

    def nearest(self, docs: list[int], from_path: str) -> int:
        """The one of ``docs`` nearest the note at ``from_path`` (the tie-break above)."""
        if len(docs) == 1:
            return docs[0]
        here = _folders(domain_of(from_path))

        def shared(doc: int) -> int:
            there = _folders(domain_of(self.path(doc)))
            n = 0
            while n < min(len(here), len(there)) and here[n] == there[n]:
                n += 1
            return n

        return min(docs, key=lambda d: (-shared(d), len(self.path(d)), self.path(d)))


def _folders(folder: str) -> list[str]:
    return fold(folder).split("/") if folder else []


def resolve_ref(view: View, ref: str, param: str = "ref") -> int:
    """The document number of the one note ``ref`` names.

    Raises InvalidInput (bad or ambiguous ref, listing the candidates) or NotFound.
    """
    text = ref.strip()
    if not text:
        raise InvalidInput(param, "must not be empty: pass a uid, permalink, path, file name or title")
    as_path = without_prefix(text)
    if as_path is not text and view.vault.named:  # a permalink naming this vault (docs/vaults.md)
        head, sep, rest = as_path.partition("/")
        if sep and head == view.vault.name:
            as_path = rest
    check_relative(as_path, param)
    keys = {False: fold(text), True: fold(strip_md(as_path.strip("/")))}
    names = Names(view)
    chars = view.config.shown_ref_chars
    for stage, field, is_path in REF_STAGES:
        hits = names.hits(field, keys[is_path])
        if len(hits) > 1 and is_path:
            hits = _spelled_as_given(names, hits, stage, strip_md(as_path.strip("/"))) or hits
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            candidates = sorted(view.permalink(names.path(d)) for d in hits)
            shown = ", ".join(candidates[:10]) + (f" (and {len(candidates) - 10} more)" if len(candidates) > 10 else "")
            raise InvalidInput(
                param,
                f"{_shown(ref, chars)} is ambiguous: {len(hits)} notes match by {stage}: {shown}; "
                "pass one of these permalinks",
                candidates=candidates,
            )
    raise no_note(ref, chars)


def no_note(ref: str, shown_chars: int) -> NotFound:
    """What a ref that names no note the caller may see answers (a hidden one answers the same);
    ``shown_chars``: the characters of ``ref`` it repeats (``shown_ref_chars``)."""
    return NotFound(f"no note matches {_shown(ref, shown_chars)} (tried uid, permalink, path, file name, title and "
                    "alias)")


def _spelled_as_given(names: Names, hits: list[int], stage: str, path: str) -> list[int]:
    """The one hit of an ambiguous path stage whose path is spelled exactly as ``path`` (after NFC)."""
    wanted = unicodedata.normalize("NFC", path)

    def spelled(doc: int) -> str:
        stem = unicodedata.normalize("NFC", strip_md(names.path(doc)))
        return stem if stage == "permalink/path" else stem.rpartition("/")[2]

    exact = [d for d in hits if spelled(d) == wanted]
    return exact if len(exact) == 1 else []


def _shown(ref: str, chars: int) -> str:
    """``ref`` for a message, cut to ``chars`` characters so that the answer stays small whatever was passed."""
    if len(ref) <= chars:
        return repr(ref)
    return f"{ref[:chars]!r}... ({len(ref):,} characters)"
