"""``memory_read``'s git fields (docs/git.md): ``history``, the last commits that touched the note
(following renames), and ``uncommitted``, when the file differs from HEAD. Both come from the
vault's history map (git/history.py), which runs git only when HEAD moved since the last
look; outside a git work tree the answer has neither field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vault_mem.git.history import History
from vault_mem.settings import Settings
from vault_mem.vault.reader import read_whole


def git_fields(root: Path, history: History | None, path: str, fsrel: str, count: int,
               config: Settings) -> dict[str, Any]:
    """``{history, uncommitted}`` for the note at vault-relative ``path``; ``{}`` outside git
    (``history`` None)."""
    if history is None:
        return {}
    history.refresh()
    try:
        data = read_whole(root / fsrel, config)
    except OSError:
        return {}
    return {"history": history.history_of(path, count), "uncommitted": history.uncommitted(path, data)}
