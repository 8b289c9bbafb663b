"""What ``vault-mem tidy`` does with a cluster a person accepted (reads/tidy.py finds them): the
note to keep declares that it supersedes the others (its ``supersedes`` list grows by theirs),
so every list shows it in their place and ``memory_read`` shows the lineage. Nothing is
deleted or merged: the others' files stay as they are. Each change is journaled under the
agent ``tidy`` (history/journal.py), so ``vault-mem undo --agent tidy`` puts the notes back
byte for byte, as for any agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vault_mem.errors import Conflict, NotFound
from vault_mem.history import journal
from vault_mem.settings import Settings
from vault_mem.vault.fields import FIELD
from vault_mem.vault.names import strip_md
from vault_mem.vault.note import Note
from vault_mem.vault.paths import note_file
from vault_mem.vault.reader import file_etag, read_note, read_whole
from vault_mem.vault.writer import atomic_write, decode_for_edit, set_keys
from vault_mem.writes.landing import change

AGENT = "tidy"  # the journal's agent (and tool) for tidy's changes: what `undo --agent tidy` takes back


def reference(uid: str, has_id: bool, path: str) -> str:
    """How the note kept names one it supersedes: its declared id, else its path as a wikilink
    names it (a derived id follows the path and would say no more)."""
    return uid if has_id else strip_md(path)


def supersede_into(root: Path, history_dir: Path, keep: dict[str, Any], others: list[dict[str, Any]],
                   now: str, *, config: Settings) -> tuple[Note, str | None]:
    """Make the note ``keep`` (a cluster's member: path, fsrel, etag, supersedes) supersede
    ``others`` (each: uid, has_id, path) and journal it. Returns the note as now written, for the
    index, and a warning when the journal could not keep it. Conflict when the file changed
    since it was indexed, NotFound when it is gone: nothing is written then."""
    rel = keep["fsrel"]
    try:
        data = read_whole(note_file(root, rel), config=config)
    except FileNotFoundError:
        raise NotFound(f"{keep['path']} is gone from the vault; its cluster was left alone") from None
    if file_etag(data) != keep["etag"]:
        raise Conflict(f"{keep['path']} changed since it was indexed; its cluster was left alone")
    named = list(keep["supersedes"])
    for other in others:
        ref = reference(other["uid"], other["has_id"], other["path"])
        if ref not in named:
            named.append(ref)
    before = read_note(root, rel, None, config=config)
    updates: dict[str, Any] = {}
    if FIELD["uid"].key not in before.fields:  # as write tools do: the id and created it had stay
        updates[FIELD["uid"].key] = before.uid
    if not any(key in before.fields for key in FIELD["created"].keys):
        updates[FIELD["created"].key] = before.created
    updates |= {FIELD["supersedes"].key: named, "updated": now}
    after = set_keys(decode_for_edit(data, rel), updates, rel, config=config).encode("utf-8")
    atomic_write(note_file(root, rel), after, within=root, config=config)
    note = read_note(root, rel, None, config=config)
    warning = journal.record(history_dir, AGENT, AGENT,
                             [change(note.path, rel, note.title, note.uid, data, after, real=note.real)],
                             config=config)
    return note, warning


__all__ = ["AGENT", "reference", "supersede_into"]
