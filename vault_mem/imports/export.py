"""Every note of a vault as one JSON object a line: ``vault-mem export --format jsonl``.

Each line holds the fields ``memory_read`` answers with (docs/tools.md) that belong to the
note itself: uid, permalink, path, domain, title, aliases, type, tags, created, updated,
memory_status, state and progress (tasks), importance, namespace, scope, project, paths,
agent, metadata, supersedes, superseded_by, problems, etag, est_tokens, body_chars, the whole
body, ``mtime_ns`` and ``file``: the note's file as it is on disk (``file_base64`` for one that
is not UTF-8), from which ``import jsonl`` restores it byte for byte, with its modification
time. What the index or git computes about a note (links resolved, backlinks, lineage,
history) is left out: an import rebuilds it. Reading never changes a file. ``not_exported``
names the Markdown files of the vault's visible folders that are not notes (docs/import.md),
so that a backup leaves none out unsaid.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vault_mem.settings import Settings
from vault_mem.vault.fields import note_fields
from vault_mem.vault.note import Note, est_tokens
from vault_mem.vault.reader import read_note, read_whole
from vault_mem.vault.walk import IgnoreRules, walk_vault

NAMELESS = "files named only '.md' (no name before the extension: vault-mem reads no file whose name starts with '.')"
HIDDEN = "files whose name starts with '.' (hidden)"
IGNORED = "files the vault's ignore rules leave out (.gitignore, .vaultmemignore, Obsidian's excluded files)"


def note_record(note: Note) -> dict[str, Any]:
    """The note's line: its identity, the field table's rows as memory_read shows them
    (``note_fields``), then what it says about the file."""
    return {
        "uid": note.uid, "permalink": note.permalink, "path": note.path, "domain": note.domain,
        **note_fields(note),
        "problems": note.problems, "etag": note.etag, "est_tokens": est_tokens(note.body),
        "body_chars": len(note.body), "body": note.body, "mtime_ns": note.mtime_ns,
    }


def _file(root: Path, rel: str, config: Settings) -> dict[str, str]:
    """The file's bytes as the line carries them: ``file`` (UTF-8 text), else ``file_base64``."""
    try:
        data = read_whole(root / rel, config)
    except OSError:
        return {}  # not readable now: the line has its fields only (its ``problems`` say why)
    try:
        return {"file": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"file_base64": base64.b64encode(data).decode("ascii")}


def export_lines(root: Path, config: Settings, seen: set[str] | None = None) -> Iterator[str]:
    """One JSON line (no newline) per note, in path order; each file's path goes into ``seen``."""
    for rel in walk_vault(root).files:
        if seen is not None:
            seen.add(rel)
        yield json.dumps({**note_record(read_note(root, rel, config=config)), **_file(root, rel, config)},
                         ensure_ascii=False)


def not_exported(root: Path, exported: set[str]) -> dict[str, list[str]]:
    """The Markdown files in the vault's visible folders that are not in ``exported``, by why:
    {reason: [paths]}. Hidden folders (``.obsidian``, ``.trash``, ``.git``, the index) are no
    part of the vault's notes, and are not looked into."""
    rules = IgnoreRules(root)
    found: dict[str, list[str]] = {}
    for folder, dirs, names in os.walk(root):
        rel_dir = os.path.relpath(folder, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not name.lower().endswith(".md") or rel in exported:
                continue
            ancestors = [rel_dir.rsplit("/", n)[0] for n in range(rel_dir.count("/") + 1)] if rel_dir else []
            why = NAMELESS if name.lower() == ".md" else HIDDEN if name.startswith(".") else \
                IGNORED if rules.ignored(rel) or any(rules.ignored(d, is_dir=True) for d in ancestors) else None
            if why is not None:
                found.setdefault(why, []).append(rel)
    return found
