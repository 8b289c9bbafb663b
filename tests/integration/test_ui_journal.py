"""What the page's endpoints tell from the journal (docs/ui.md, "Activity" and "Agents"), without a
browser: every agent the journal names beside every agent with a key, the title each change kept,
and why a change's version is not shown, told apart: changed since by hand (or by another
program), deleted since, dropped by the journal past its limits, or missing from its folder.
tests/integration/test_ui_page.py shows the same in Chromium."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Tuned, open_vault, write_notes

from vault_mem import settings
from vault_mem.history import journal
from vault_mem.served.context import Vault
from vault_mem.served.keys import add_agent, list_agents
from vault_mem.settings import Settings
from vault_mem.ui import api

NOTES = {
    "alpha.md": "---\nid: alpha\ntitle: Alpha\n---\nThe first body.\n",
    "beta.md": "---\nid: beta\ntitle: Beta\n---\nThe second body.\n",
    "shared/open.md": "---\nid: open\ntitle: Open note\n---\nFor the helper.\n",
    "private/secret.md": "---\nid: secret\ntitle: Hidden plans\n---\nNot for the helper.\n",
}


def shown(vault: Vault, path: str, agent: str, caller: Any = None) -> dict[str, Any]:
    """The page's answer for the newest change ``agent`` made to ``path``."""
    rows = [c for c in api.activity(vault, caller)["changes"] if c["path"] == path and c["agent"] == agent]
    return api.change(vault, caller, rows[0]["id"])


@pytest.mark.anyio
async def test_a_hand_edit_after_an_agents_change_is_told_as_such_never_as_past_the_journals_limits(
        tmp_path: Path, mcp_session: Callable[[Vault], Any]) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    vault = open_vault(root)
    async with mcp_session(vault) as client:
        await client.call("memory_edit", agent="coder", ref="alpha", content="By the coder.")
        await client.call("memory_edit", agent="coder", ref="beta", content="Beta by the coder.")
        await client.call("memory_edit", agent="coder", ref="open", content="Open by the coder.")
    assert "+By the coder." in api.change(vault, None, api.activity(vault, None)["changes"][2]["id"])["diff"]
    (root / "alpha.md").write_text("---\nid: alpha\ntitle: Alpha\n---\nA person's words.\n", encoding="utf-8")
    (root / "beta.md").unlink()
    (root / "shared/open.md").write_text("---\nid: open\ntitle: Open note\n---\nBy hand.\n", encoding="utf-8")
    async with mcp_session(open_vault(root)) as client:
        await client.call("memory_edit", agent="planner", ref="open", append="The planner's line.")

    alpha = shown(vault, "alpha.md", "coder")
    assert alpha["diff"] is None
    assert alpha["diff_note"].startswith("the file was changed since by hand (or by another program), last at 20")
    assert "past its limits" not in alpha["diff_note"]
    assert alpha["undo"]["action"] == "leave"
    beta = shown(vault, "beta.md", "coder")
    assert beta["diff_note"].startswith("the file was deleted or moved since, by hand (or by another program)")
    opened = shown(vault, "shared/open.md", "coder")  # a person's edit, then the planner's journaled one
    assert opened["diff_note"].startswith("the file was changed by hand (or by another program) after this change, "
                                          "before planner's edit at 20")
    assert "+The planner's line." in shown(vault, "shared/open.md", "planner")["diff"]  # it still shows its own


@pytest.mark.anyio
async def test_past_its_limits_is_said_only_when_the_journal_dropped_a_later_change(
        tmp_path: Path, mcp_session: Callable[[Vault], Any], tuned: Tuned) -> None:
    root = write_notes(tmp_path / "v", {**NOTES, **{f"flood/n{k}.md": f"# n{k}\n" for k in range(4)}})
    vault = open_vault(root)
    async with mcp_session(vault) as client:
        await client.call("memory_edit", agent="coder", ref="alpha", content="By the coder.")
        await client.call("memory_edit", agent="flood", ref="alpha", content="By the flood.")
        for k in range(4):
            await client.call("memory_edit", agent="flood", ref=f"flood/n{k}", append="more")
    tuned(journal_max_entries=4, journal_prune_to=0.75)  # the flood's 5 changes: past 4, down to its newest 3
    assert journal.prune(vault.index.history_dir, config=settings.current()) == 2
    coder = shown(vault, "alpha.md", "coder")
    assert coder["diff"] is None
    assert coder["diff_note"].startswith("the journal no longer holds this version (past its limits): the note "
                                         "changed since, and the journal has dropped later changes (2 by flood, past "
                                         "its share of 4 changes)"), coder["diff_note"]
    _, _ = add_agent(root.resolve(), "coder", ["**"], [], False, config=Settings())
    as_coder = next(e.agent for e in list_agents(root.resolve()) if e.agent.name == "coder")
    limited = shown(vault, "alpha.md", "coder", as_coder)
    assert "past its limits" in limited["diff_note"] and "flood" not in limited["diff_note"]  # not its business


@pytest.mark.anyio
async def test_a_version_missing_from_the_history_folder_is_said_so(
        tmp_path: Path, mcp_session: Callable[[Vault], Any]) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    vault = open_vault(root)
    async with mcp_session(vault) as client:
        await client.call("memory_edit", agent="coder", ref="alpha", content="By the coder.")
        await client.call("memory_edit", agent="coder", ref="alpha", content="Again by the coder.")
    for blob in (journal.journal_dir(vault.index.history_dir) / "blobs").iterdir():
        blob.unlink()  # someone emptied the history folder's blobs
    first, second = [c for c in reversed(api.activity(vault, None)["changes"])]
    assert api.change(vault, None, first["id"])["diff_note"] == (
        "the journal's copy of the version before is missing from its history folder (removed or damaged there, "
        "not by vault-mem)")
    assert api.change(vault, None, second["id"])["diff_note"].startswith(
        "the journal's copy of the version before is missing")
    assert "past its limits" not in str(api.change(vault, None, second["id"]))


@pytest.mark.anyio
async def test_agents_lists_every_agent_the_journal_names_and_every_key(
        tmp_path: Path, mcp_session: Callable[[Vault], Any]) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    vault = open_vault(root)
    async with mcp_session(vault) as client:
        await client.call("memory_edit", agent="coder", ref="alpha", append="one")
        await client.call("memory_edit", agent="evil", ref="beta", append="two")
        await client.call("memory_write", agent="Evil", title="Evil plan", content="three")
        await client.call("memory_edit", agent="helper", ref="open", append="four")
        await client.call("memory_edit", agent="helper", ref="secret", append="five")
    beta = next(c for c in api.activity(vault, None)["changes"] if c["path"] == "beta.md")
    assert api.undo_change(vault, None, beta["id"])["restored"]  # journaled as vault-mem's own change
    add_agent(root.resolve(), "helper", ["shared/"], ["shared/"], False, config=Settings())
    add_agent(root.resolve(), "reviewer", [], [], True, config=Settings())
    rows = {row["agent"]: row for row in api.agents(vault, None)["agents"]}
    assert list(rows) == ["coder", "Evil", "helper", "reviewer", "vault-mem"]  # one evil in any case, as it last wrote
    undone = rows["vault-mem"]
    assert (undone["key"], undone["own"], undone["kinds"]) == (False, True, {"undo": 1})
    assert not any(rows[name]["own"] for name in ("coder", "Evil", "helper", "reviewer"))
    assert rows["coder"] == {"agent": "coder", "key": False, "own": False, "read": None, "write": None,
                             "read_only": None, "created": None, "changes": 1, "kinds": {"edit": 1},
                             "last_change": rows["coder"]["last_change"]}
    assert rows["coder"]["last_change"].startswith("20")
    assert (rows["Evil"]["changes"], rows["Evil"]["kinds"]) == (2, {"edit": 1, "write": 1})
    assert rows["helper"]["key"] is True and rows["helper"]["read"] == ["shared/"] and rows["helper"]["changes"] == 2
    assert rows["reviewer"]["key"] is True and rows["reviewer"]["changes"] == 0
    assert rows["reviewer"]["last_change"] is None and rows["reviewer"]["read_only"] is True
    helper = next(e.agent for e in list_agents(root.resolve()) if e.agent.name == "helper")
    mine = api.agents(vault, helper)["agents"]  # an agent's page: itself, and what it may read of its changes
    assert [(r["agent"], r["changes"]) for r in mine] == [("helper", 1)]


@pytest.mark.anyio
async def test_each_change_keeps_the_title_it_had_deleted_notes_included(
        tmp_path: Path, mcp_session: Callable[[Vault], Any]) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    vault = open_vault(root)
    async with mcp_session(vault) as client:
        await client.call("memory_edit", agent="coder", ref="alpha", append="one")
        await client.call("memory_edit", agent="coder", ref="alpha", set={"title": "Alpha, renamed"})
        await client.call("memory_delete", agent="coder", ref="beta")
    assert not (root / "beta.md").exists()
    rows = api.activity(vault, None)["changes"]
    assert [(r["kind"], r["path"], r["title"]) for r in rows] == [
        ("delete", "beta.md", "Beta"), ("edit", "alpha.md", "Alpha, renamed"), ("edit", "alpha.md", "Alpha")]
