"""The meaning stage while serving: once the keyword index is ready, a background thread embeds
the notes the index holds and follows its changes (meaning/embedder.py; docs/ranking.md, "By
meaning"). Answers never wait for it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from vault_mem.meaning.chunks import embedded_title
from vault_mem.meaning.embedder import Meaning
from vault_mem.search.api import VaultIndex, note_count
from vault_mem.settings import Settings
from vault_mem.vault.reader import read_note


def index_notes(index: VaultIndex) -> Callable[[], dict[str, str]]:
    """path -> etag of every note the index holds, read from its columns."""
    def notes() -> dict[str, str]:
        return {path: etag for path, (_, _, etag) in index.fingerprints().items()}
    return notes


def note_text(root: Path, config: Settings) -> Callable[[str], tuple[str, str] | None]:
    """path -> (title, body) to embed of a note as it is on disk (None when it cannot be read): its
    title unless that is a file name reading as an id or a date (meaning/chunks.py)."""
    def read(path: str) -> tuple[str, str] | None:
        note = read_note(root, path, config=config)  # never raises: a file gone reads as an empty note
        return embedded_title(note.title, path), note.body
    return read


def notes_indexed(index: VaultIndex) -> Callable[[], int]:
    """How many notes the index holds now (0 while there is none yet)."""
    def count() -> int:
        try:
            return note_count(index)
        except Exception:  # no index yet, or one being replaced: nothing to count
            return 0
    return count


def start_embedding(meaning: Meaning, root: Path, index: VaultIndex, wait_ready: Callable[[], object],
                    idle_seconds: float | None = None) -> threading.Thread:
    """Start ``meaning``'s embedder once ``wait_ready()`` returns; it looks for changed notes when
    the index's generation moves (checked every ``idle_seconds``: the ``meaning_idle`` setting when None).
    From this call on, answers say ``meaning: {done, total}`` until every note is embedded."""
    meaning.expect(notes_indexed(index))

    def run() -> None:
        wait_ready()
        meaning.start(index_notes(index), note_text(root, index.config), idle_seconds=idle_seconds,
                      version=index.generation)

    thread = threading.Thread(target=run, name="vault-mem-meaning-start", daemon=True)
    thread.start()
    return thread
