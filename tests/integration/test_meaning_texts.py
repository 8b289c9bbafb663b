"""What is embedded for a note is what a person reads as it: its title (``title`` key or first
heading) and text, its file name only where that reads as a title (docs/ranking.md, "By meaning");
vectors of texts made the old way are made again, never compared with the new ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from meaning_model import make_tiny_model

from vault_mem import settings
from vault_mem.meaning.chunks import embedded_title, reads_as_title
from vault_mem.meaning.embedder import Meaning, store_name
from vault_mem.meaning.model import load_model
from vault_mem.meaning.store import VectorStore
from vault_mem.runtime.meaning import index_notes, note_text
from vault_mem.settings import Settings


@pytest.mark.parametrize("name", ["turn-010005", "2024-05-01", "20240501", "2025-01-12 turn 01", "msg_000123",
                                  "3f2a9c1e-77aa-4b2c-9d1e", "42", "2024-05-01T10-30"])
def test_an_id_or_a_date_does_not_read_as_a_title(name: str) -> None:
    assert not reads_as_title(name)


@pytest.mark.parametrize("name", ["Sourdough", "Queue decision v3", "Windows 11", "Intel 8080", "Retro 2025-Q2",
                                  "Handoff 2025-03-14", "2024-05-01 Standup", "X11", "Untitled 3"])
def test_a_name_a_person_reads_as_a_title_is_one(name: str) -> None:
    assert reads_as_title(name)


def test_a_title_from_the_file_name_is_embedded_only_where_it_reads_as_one() -> None:
    assert embedded_title("turn-010005", "chat/turn-010005.md") == ""
    assert embedded_title("2024-05-01", "daily/2024-05-01.md") == ""
    assert embedded_title("Sourdough", "cooking/Sourdough.md") == "Sourdough"
    assert embedded_title("Stand-up of May 1", "daily/2024-05-01.md") == "Stand-up of May 1"  # a title key


def test_the_texts_read_for_embedding_leave_out_an_id_file_name(make_vault) -> None:
    vault = make_vault({
        "chat/turn-010005.md": "---\nspeaker: Ana\n---\nAna: we picked NATS for the queue.\n",
        "daily/2024-05-01.md": "Went for a run.\n",
        "daily/2024-05-02.md": "# Long run day\nTwenty kilometres.\n",
        "cooking/Sourdough.md": "Feed the starter the night before.\n",
    })
    read = note_text(vault.root, config=settings.current())
    assert read("chat/turn-010005.md") == ("", "Ana: we picked NATS for the queue.\n")
    assert read("daily/2024-05-01.md") == ("", "Went for a run.\n")
    assert read("daily/2024-05-02.md")[0] == "Long run day"
    assert read("cooking/Sourdough.md")[0] == "Sourdough"


def test_vectors_stored_before_the_texts_changed_are_made_again(make_vault, tmp_path: Path) -> None:
    vault = make_vault({"chat/turn-010005.md": "Ana: we picked NATS for the queue.\n",
                        "chat/turn-010006.md": "Ben: and the tomatoes need water.\n"})
    tiny = make_tiny_model(tmp_path / "tiny-model")
    model = load_model(tiny, config=Settings())
    notes = index_notes(vault.index)
    old = VectorStore.open(vault.index.dir, model.fingerprint, model.dim, config=Settings())  # where 0.5.2 kept them
    old.put([(path, etag, np.ones((1, model.dim), dtype=np.float32) / np.sqrt(model.dim))
             for path, etag in notes().items()])
    meaning = Meaning.open(tiny, vault.index.dir, config=vault.index.config)
    assert meaning.store.folder.name == store_name(model) != model.fingerprint
    assert len(meaning.store) == 0 and not old.folder.exists()
    assert meaning.embed_pending(notes, note_text(vault.root, config=settings.current())) == 2
