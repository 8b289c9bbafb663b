"""Answers say ``meaning: {done, total}`` until every note is embedded, from the moment a server
has a model: before the embedder starts and while its first pass counts, a client that waits for
the field to go never takes a keyword-only answer for the final one (docs/ranking.md, "By
meaning"). The embedder is held at each step by an event; the answers come over a real MCP
client session."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import commit_note, eventually
from meaning_model import make_tiny_model

from vault_mem import settings
from vault_mem.meaning.embedder import Meaning
from vault_mem.runtime.meaning import index_notes, note_text, start_embedding

pytestmark = pytest.mark.anyio

NOTES = {
    "decisions/queue-v3.md": "---\ntitle: Queue decision v3: NATS JetStream\n---\nWe chose NATS JetStream.\n",
    "garden/tomatoes.md": "---\ntitle: Tomatoes\n---\nWater the tomatoes and the soil.\n",
    "travel/paris.md": "---\ntitle: Paris trip\n---\nTrain ticket to Paris.\n",
}
QUESTION = "which message broker did we pick?"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return make_tiny_model(tmp_path / "tiny-model")


def found(answer: dict[str, Any]) -> list[str]:
    return [n["permalink"].removeprefix("memory://") for n in answer["notes"]]


async def test_answers_say_meaning_before_the_embedder_has_started(make_vault, mcp_session, tiny: Path) -> None:
    vault = make_vault(NOTES)
    vault.meaning = meaning = Meaning.open(tiny, vault.index.dir, config=vault.index.config)
    ready = threading.Event()  # what the server's "keyword index ready" would be; held by the test
    start_embedding(meaning, vault.root, vault.index, lambda: ready.wait(60))
    try:
        async with mcp_session(vault) as c:
            first = await c.call("memory_search", agent="t", query=QUESTION)
            listed = await c.call("memory_list", agent="t", domain="garden")
            assert first["meaning"] == {"done": 0, "total": len(NOTES)}, first
            assert listed["meaning"] == {"done": 0, "total": len(NOTES)}, listed  # every answer, not only a search
            assert meaning.embedder is None  # the embedder has not begun
            ready.set()
            eventually(lambda: meaning.progress() is None, timeout=60, what="every note embedded")
            final = await c.call("memory_search", agent="t", query=QUESTION)
        assert "meaning" not in final and "decisions/queue-v3" in found(final), final
    finally:
        ready.set()
        meaning.stop()


async def test_answers_say_meaning_while_the_first_pass_counts_the_notes(make_vault, mcp_session, tiny: Path) -> None:
    vault = make_vault(NOTES)
    vault.meaning = meaning = Meaning.open(tiny, vault.index.dir, config=vault.index.config)
    counting, go_on = threading.Event(), threading.Event()
    notes = index_notes(vault.index)

    def held_notes() -> dict[str, str]:  # the embedder's first look at the index, held mid-way
        counting.set()
        assert go_on.wait(60), "the test never let the embedder go on"
        return notes()

    meaning.expect(lambda: len(notes()))  # as start_embedding does, with the index's count
    meaning.start(held_notes, note_text(vault.root, config=settings.current()), idle_seconds=0.05)
    try:
        assert counting.wait(60)
        async with mcp_session(vault) as c:
            answer = await c.call("memory_search", agent="t", query=QUESTION)
            assert answer["meaning"] == {"done": 0, "total": len(NOTES)}, answer
            go_on.set()
            eventually(lambda: meaning.progress() is None, timeout=60, what="every note embedded")
            final = await c.call("memory_search", agent="t", query=QUESTION)
        assert "meaning" not in final, final
    finally:
        go_on.set()
        meaning.stop()


async def test_after_a_restart_answers_say_meaning_until_the_stored_vectors_are_checked(make_vault, mcp_session,
                                                                                      tiny: Path) -> None:
    vault = make_vault(NOTES)
    Meaning.open(tiny, vault.index.dir, config=vault.index.config).embed_pending(index_notes(vault.index),
                                                                              note_text(vault.root,
                                                                                  config=settings.current()))
    (vault.root / "travel" / "paris.md").write_text("---\ntitle: Paris trip\n---\nThe train to Paris.\n",
                                                    encoding="utf-8")
    commit_note(vault.index, "travel/paris.md", (vault.root / "travel" / "paris.md").read_text(encoding="utf-8"))
    # a new server: every note has vectors, one stale
    vault.meaning = meaning = Meaning.open(tiny, vault.index.dir, config=vault.index.config)
    ready = threading.Event()
    start_embedding(meaning, vault.root, vault.index, lambda: ready.wait(60))
    try:
        async with mcp_session(vault) as c:
            first = await c.call("memory_search", agent="t", query=QUESTION)
            # Not yet compared with the index: said so, not taken for done.
            assert first["meaning"] == {"done": len(NOTES), "total": len(NOTES)}, first
            ready.set()
            eventually(lambda: meaning.progress() is None, timeout=60, what="the stale note embedded again")
            final = await c.call("memory_search", agent="t", query=QUESTION)
        assert "meaning" not in final
        assert meaning.store.etags() == index_notes(vault.index)()
    finally:
        ready.set()
        meaning.stop()

