"""The engine's side of handoffs between agents (tests/integration/test_handoffs.py): a write that
meets an index another writer holds, and the notes indexed as an agent's own (``lost``) through
every kind of commit, fold and merge."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import open_vault, write_notes
from test_handoffs import in_process

from vault_mem.search.commits import write_lock
from vault_mem.served.agents import Agent

pytestmark = pytest.mark.anyio


async def test_a_write_that_did_not_fully_land_is_a_persist_error_on_the_next_call_once(make_vault) -> None:
    vault = make_vault({"a.md": "# A\n"})
    vault.index.write_timeout = 0.2
    async with in_process(vault) as session:
        with write_lock(vault.index.open(), 0.005, 0.02):  # another writer holds the index
            busy = await session.call("memory_write", agent="coder", title="Saved", content="on disk")
        assert busy["status"] == "error" and busy["retry"] is False
        assert (vault.root / "Saved.md").exists()
        later = await session.call("memory_search", agent="coder")
        [error] = later["persist_error"]
        assert error["tool"] == "memory_write" and error["permalink"] == "memory://Saved"
        assert "not indexed" in error["message"]
        assert "persist_error" not in await session.call("memory_search", agent="coder")
        assert "persist_error" not in await session.call("memory_search", agent="other")
        vault.git_commit = True  # --git-commit on a folder that is no git work tree: git refuses
        committed = await session.call("memory_write", agent="coder", title="Uncommitted", content="x")
        assert committed["status"] == "ok" and "not committed" in committed["warnings"][0]
        [error] = (await session.call("memory_read", agent="coder", ref="a"))["persist_error"]
        assert error["tool"] == "memory_write" and "not committed" in error["message"]


def test_the_notes_an_agent_wrote_that_are_still_there_follow_every_commit(tmp_path: Path) -> None:
    """``lost`` compares what an agent wrote with the notes indexed as its own (kept per segment
    and per index state): after saves in new segments, edits that delete an old copy, deletions,
    folds and merges, that set is always exactly the live notes the index holds for the agent,
    and for a limited caller only those it may see."""
    from conftest import commit_note, commit_removal

    from vault_mem.search.merge import merge_all
    from vault_mem.served.context import view_of

    def note(i: int, agent: str, extra: str = "") -> str:
        return f"---\nagent: {agent}\n---\nNote {i} {extra}\n"

    root = write_notes(tmp_path / "v", {f"{'a' if i % 2 else 'b'}/n{i}.md": note(i, "coder") for i in range(30)})
    vault = open_vault(root)
    index = vault.index
    limited = Agent("limited", read=("a/",), write=())

    def check() -> None:
        for caller in (None, limited):
            with view_of(vault, caller) as view:
                snapshot = view.snapshot
                expected = {snapshot.record(d)["path"] for d in snapshot.all_docs()
                            if snapshot.record(d).get("agent") == "coder"}
                assert snapshot.written_by("coder") == expected
                assert snapshot.written_by("coder") is snapshot.written_by("coder")  # kept while nothing changes

    check()
    for i in range(30, 42):  # new notes, each in a segment of its own (and folds of them)
        commit_note(index, f"a/n{i}.md", note(i, "coder" if i % 3 else "other"))
        check()
    commit_note(index, "a/n1.md", note(1, "other", "now someone else's"))  # an edit deletes the old copy
    commit_note(index, "b/n0.md", note(0, "coder", "edited"))
    commit_removal(index, "a/n3.md")
    commit_removal(index, "a/n31.md")
    check()
    index.close()
    assert merge_all(index.dir, index.config) is not None
    check()
