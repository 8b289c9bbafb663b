"""Every note of a vault as one JSON object a line: ``vault-mem export --format jsonl``.

Each line holds the fields ``memory_read`` answers with (docs/tools.md) that belong to the
note itself: uid, permalink, path, domain, title, aliases, type, tags, created, updated,
memory_status, state and progress (tasks), importance, namespace, scope, project, paths,
agent, metadata, supersedes, superseded_by, problems, etag, est_tokens, body_chars and the
whole body. What the index or git computes about a note (links resolved, backlinks,
lineage, history) is left out: an import rebuilds it. Reading never changes a file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vault_mem.vault.fields import note_fields
from vault_mem.vault.note import Note, est_tokens
from vault_mem.vault.reader import read_note
from vault_mem.vault.walk import walk_vault


def note_record(note: Note) -> dict[str, Any]:
    """The note's line: its identity, the field table's rows as memory_read shows them
    (``note_fields``), then what it says about the file."""
    return {
        "uid": note.uid, "permalink": note.permalink, "path": note.path, "domain": note.domain,
        **note_fields(note),
        "problems": note.problems, "etag": note.etag, "est_tokens": est_tokens(note.body),
        "body_chars": len(note.body), "body": note.body,
    }


def export_lines(root: Path) -> Iterator[str]:
    """One JSON line (no newline) per note, in path order."""
    for rel in walk_vault(root).files:
        yield json.dumps(note_record(read_note(root, rel)), ensure_ascii=False)
