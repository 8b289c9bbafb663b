"""The undo history survives (docs/index-and-sync.md, "The history"; docs/sharing.md): it lives
apart from the disposable index, one agent's flood drops only its own oldest changes (and log
says so), and a crafted journal cannot make undo touch what no write tool may. Through real
MCP sessions, the real CLI (``python -m vault_mem``) and real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Tuned, open_vault, write_notes
from mcp import Client
from test_undo import call

from vault_mem import settings
from vault_mem.history import agentstate, journal, location
from vault_mem.mcp_server.app import build_server
from vault_mem.search.api import VaultIndex, sync
from vault_mem.served.context import Vault
from vault_mem.vault.walk import walk_vault

pytestmark = pytest.mark.anyio

NOTES = {
    "plan.md": "---\nid: plan\ntitle: Plan\n---\nThe plan as the team wrote it.\n",
    "big.md": "---\nid: big\ntitle: Big\n---\nA note the flooder rewrites.\n",
    "memo.md": "---\nid: memo\ntitle: Memo\nto: reviewer\n---\nFor the reviewer.\n",
}


def vault_mem(*args: str, vault: Path, index_dir: Path | None = None) -> tuple[int, Any, str]:
    """Run ``python -m vault_mem ARGS --vault VAULT [--index-dir DIR]``: (exit status, stdout as
    JSON when --json was given, stderr)."""
    where = ["--vault", str(vault)] + (["--index-dir", str(index_dir)] if index_dir else [])
    done = subprocess.run([sys.executable, "-m", "vault_mem", *args, *where],
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout) if "--json" in args and done.stdout else done.stdout, done.stderr


def default_vault(root: Path) -> Vault:
    """A vault with its index where a user's is: ``<vault>/.vault-mem``."""
    index = VaultIndex(root, config=settings.current())
    sync(index, procs=1)
    return Vault(root, index)


# -- the history lives apart from the index ------------------------------------------------

async def test_deleting_or_rebuilding_the_index_keeps_the_undo_history_and_what_agents_read(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    vault = default_vault(root)
    async with Client(build_server(vault), mode="legacy") as client:
        await call(client, "memory_edit", agent="coder", ref="plan", content="Vandalised.")
        await call(client, "memory_read", agent="reviewer", ref="memo")  # no longer in its inbox
    vault.index.close()

    code, _, err = vault_mem("index", "--rebuild", "--quiet", vault=root)  # the documented way
    assert code == 0, err
    shutil.rmtree(root / ".vault-mem")  # and the way docs/index-and-sync.md says is always safe

    code, log, _ = vault_mem("log", "--json", vault=root)
    assert code == 0 and [(c["agent"], c["path"]) for c in log["changes"]] == [("coder", "plan.md")]
    code, inbox, _ = vault_mem("inbox", "reviewer", "--json", vault=root)
    assert code == 0 and inbox["inbox"] == []
    code, undone, _ = vault_mem("undo", "--agent", "coder", "--since", "1h", "--apply", "--json", vault=root)
    assert code == 0 and [s["path"] for s in undone["restored"]] == ["plan.md"]
    assert (root / "plan.md").read_text(encoding="utf-8") == NOTES["plan.md"]

    history = root / ".vault-mem-history"
    assert (history / ".gitignore").read_text(encoding="utf-8") == "*\n"  # git status stays clean
    assert "cannot be rebuilt" in (history / location.README).read_text(encoding="utf-8")
    (history / "stray.md").write_text("# not a memory\n", encoding="utf-8")
    assert walk_vault(root).files == sorted(NOTES)  # never indexed


def test_an_index_dir_elsewhere_keeps_its_history_beside_it_and_refuses_the_history_as_an_index(
        tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    index_dir = tmp_path / "elsewhere" / "ix"
    index = VaultIndex(root, index_dir, config=settings.current())
    assert index.history_dir == tmp_path / "elsewhere" / "ix-history"
    assert journal.record(index.history_dir, "coder", "memory_edit",
                          [{"path": "plan.md", "fsrel": "plan.md", "before": b"a", "after": b"b"}],
                              config=settings.current()) is None
    code, _, err = vault_mem("log", vault=root, index_dir=index.history_dir)
    assert code == 1 and "is vault-mem's history (the undo journal), not an index folder" in err
    assert [e.agent for e in journal.entries(index.history_dir)] == ["coder"]  # untouched
    assert not (root / ".vault-mem-history").exists()  # nothing written into the vault


def test_an_older_versions_history_in_the_index_folder_is_moved_out_on_first_start(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    index_dir = root / ".vault-mem"
    # Where versions before 0.4.22 kept them: the same files, in journal/ and agents/ of the index folder.
    made = tmp_path / "made"
    old = {"path": "plan.md", "fsrel": "plan.md", "before": b"old content", "after": NOTES["plan.md"].encode()}
    assert journal.record(made, "coder", "memory_edit", [old], config=settings.current()) is None
    agentstate.change(made, "reviewer", lambda s: s.put("read", "memo", "2026-01-01T00:00:00Z"),
        config=settings.current())
    agentstate.change(made, "coder", lambda s: s.put("read", "plan", "2026-01-01T00:00:00Z"), config=settings.current())
    index_dir.mkdir()
    for name in ("journal", "agents"):
        shutil.move(made / name, index_dir / name)
    # A newer server already journaled one change and marked one read in the new place.
    history = root / ".vault-mem-history"
    new = {"path": "big.md", "fsrel": "big.md", "before": b"big before", "after": NOTES["big.md"].encode()}
    assert journal.record(history, "coder", "memory_edit", [new], config=settings.current()) is None
    agentstate.change(history, "coder", lambda s: s.put("read", "big", "2026-02-01T00:00:00Z"),
        config=settings.current())

    code, log, err = vault_mem("log", "--json", vault=root)
    assert code == 0, err
    assert [c["path"] for c in log["changes"]] == ["big.md", "plan.md"]  # both, newest first
    assert journal.blob(history, journal.digest(b"old content")) == b"old content"
    assert set(agentstate.load(history, "coder")["read"]) == {"plan", "big"}
    assert set(agentstate.load(history, "reviewer")["read"]) == {"memo"}
    assert not (index_dir / "journal").exists() and not (index_dir / "agents").exists()
    code, again, _ = vault_mem("log", "--json", vault=root)  # moved once: nothing twice
    assert again["changes"] == log["changes"]
    code, undone, _ = vault_mem("undo", "--agent", "coder", "--since", "1h", "--json", vault=root)
    assert {s["path"] for s in undone["would_restore"]} == {"plan.md", "big.md"}


# -- a share per agent -----------------------------------------------------------------------

async def test_one_agents_flood_drops_only_its_own_oldest_changes_and_log_says_so(
        tmp_path: Path, tuned: Tuned) -> None:
    # The limits scaled down a thousandfold, so that a flood takes a second instead of minutes.
    tuned(journal_max_bytes=64 * 1024, journal_prune_every=0.0)
    vault = open_vault(write_notes(tmp_path / "v", NOTES))
    filler = "flood " * 2000  # 12 KB a version
    async with Client(build_server(vault), mode="legacy") as client:
        await call(client, "memory_edit", agent="coder", ref="plan", content="Vandalised by the coder.")
        for i in range(12):
            await call(client, "memory_edit", agent="flooder", ref="big", content=f"{i} {filler}")
    index_dir = vault.index.dir
    vault.index.close()

    code, log, _ = vault_mem("log", "--json", vault=vault.root, index_dir=index_dir)
    assert code == 0
    coder = [c for c in log["changes"] if c["agent"] == "coder"]
    flooder = [c for c in log["changes"] if c["agent"] == "flooder"]
    assert len(coder) == 1 and 0 < len(flooder) < 12  # only the flooder's own oldest went
    [gone] = log["dropped"]
    assert gone["agent"] == "flooder" and gone["changes"] == 12 - len(flooder)
    assert gone["why"] == "past its share of 0.0625 MiB of earlier contents"
    code, _, err = vault_mem("log", vault=vault.root, index_dir=index_dir)
    assert f"history dropped: {gone['changes']} older changes of agent flooder, up to" in err
    code, mine, err = vault_mem("log", "--agent", "coder", "--json", vault=vault.root, index_dir=index_dir)
    assert mine["dropped"] == []  # nothing of the coder's was dropped

    code, undone, err = vault_mem("undo", "--agent", "coder", "--since", "1h", "--apply", "--json",
                                  vault=vault.root, index_dir=index_dir)
    assert code == 0 and [s["path"] for s in undone["restored"]] == ["plan.md"], err
    assert (vault.root / "plan.md").read_text(encoding="utf-8") == NOTES["plan.md"]
    code, undone, err = vault_mem("undo", "--agent", "flooder", "--since", "1h", "--json",
                                  vault=vault.root, index_dir=index_dir)
    assert undone["dropped"] == [gone] and "history dropped" not in err  # JSON: in the answer
    code, _, err = vault_mem("undo", "--agent", "flooder", "--since", "1h", vault=vault.root, index_dir=index_dir)
    assert "history dropped: " in err and "of agent flooder" in err


def test_past_the_journals_total_the_agents_holding_the_most_give_up_their_oldest(
        tmp_path: Path, tuned: Tuned) -> None:
    """A flood under many names (each within its own share) cuts the biggest holders to one
    level; an agent holding less than that level keeps everything."""
    tuned(journal_total_bytes=10_000, journal_prune_every=3600.0)  # pruned below, by hand
    history = tmp_path / "h"

    def edit(agent: str, i: int, size: int) -> None:
        change = {"path": "a.md", "fsrel": "a.md", "before": f"{agent} {i} ".encode().ljust(size, b"x"), "after": b"y"}
        assert journal.record(history, agent, "memory_edit", [change], config=settings.current()) is None

    edit("quiet", 0, 500)
    for i in range(4):
        for name in ("flood-a", "flood-b"):
            edit(name, i, 2000)
    assert journal.prune(history, config=settings.current()) > 0
    left = [e.agent for e in journal.entries(history)]
    assert left.count("quiet") == 1 and left.count("flood-a") == left.count("flood-b") < 4
    assert {d.agent for d in journal.dropped(history)} == {"flood-a", "flood-b"}
    kept_bytes = sum(journal._blob_sizes(journal.journal_dir(history)).values())
    assert kept_bytes <= 10_000 * settings.current().journal_prune_to


# -- a crafted journal -----------------------------------------------------------------------

def test_a_crafted_journal_cannot_make_undo_touch_what_no_write_tool_may(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {**NOTES, ".obsidian/app.json": '{"theme": "mine"}\n'})
    (tmp_path / "outside").mkdir()
    vault = open_vault(root)
    history = vault.index.history_dir
    app_json = (root / ".obsidian" / "app.json").read_bytes()

    def entry(agent: str, tool: str, path: str, before: bytes | None, after: bytes | None,
              trash: str | None = None, fsrel: str | None = None) -> None:
        change = {"path": path, "fsrel": fsrel or path, "before": before, "after": after, "trash": trash}
        assert journal.record(history, agent, tool, [change], config=settings.current()) is None

    # What someone who can append to the journal (a synced folder) could put there:
    entry("coder", "memory_delete", ".obsidian/plugins/p/main.js", b"alert('owned')", None)
    entry("coder", "memory_delete", "stolen.md", app_json, None, trash=".obsidian/app.json")
    entry("coder", "memory_delete", "../../outside.md", b"escaped", None)
    entry("coder", "memory_delete", str(tmp_path / "abs.md"), b"absolute", None)
    entry("coder", "memory_delete", "run.sh", b"#!/bin/sh\n", None)
    entry("coder", "memory_delete", "innocent.md", b"shown innocent", None, fsrel=".hidden.md")
    entry("coder", "memory_delete", "back.md", b"from elsewhere", None, trash=".trash/../plan.md")
    links = hasattr(os, "symlink") and sys.platform != "win32"
    if links:
        (root / "linked").symlink_to(tmp_path / "outside", target_is_directory=True)
        entry("coder", "memory_delete", "linked/out.md", b"through a link", None)
    # ... and one honest change, which undo still puts back.
    entry("coder", "memory_edit", "plan.md", NOTES["plan.md"].encode(), b"vandalised")
    (root / "plan.md").write_bytes(b"vandalised")

    def files() -> dict[Path, bytes]:
        return {p: p.read_bytes() for p in tmp_path.rglob("*")
                if p.is_file() and history not in p.parents and vault.index.dir not in p.parents}

    before = files()

    code, shown, _ = vault_mem("undo", "--agent", "coder", "--since", "1h", "--json", vault=root,
                               index_dir=vault.index.dir)
    assert code == 0 and shown["would_restore"] == [{"path": "plan.md", "action": "restore", "reason": shown[
        "would_restore"][0]["reason"]}]
    refused = {s["path"]: s["reason"] for s in shown["refused"]}
    assert set(refused) == {".obsidian/plugins/p/main.js", "stolen.md", "../../outside.md", str(tmp_path / "abs.md"),
                            "run.sh", ".hidden.md", "back.md"} | ({"linked/out.md"} if links else set())
    assert all(r.startswith("refused: the journal names a path no write tool may touch") for r in refused.values())
    assert "hidden folders or files ('.obsidian')" in refused[".obsidian/plugins/p/main.js"]
    assert "only .md files" in refused["run.sh"]
    assert shown["left"] == []
    code, text, err = vault_mem("undo", "--agent", "coder", "--since", "1h", vault=root, index_dir=vault.index.dir)
    assert "refused  ../../outside.md" in text and f"refused {len(refused)} paths the journal names" in err

    code, done, _ = vault_mem("undo", "--agent", "coder", "--since", "1h", "--apply", "--json", vault=root,
                              index_dir=vault.index.dir)
    assert code == 0 and done["restored"] == shown["would_restore"]  # exactly what the dry run showed
    assert done["refused"] == shown["refused"] and done["left"] == []
    after = files()
    assert after.pop(root / "plan.md") == NOTES["plan.md"].encode()
    before.pop(root / "plan.md")
    assert after == before  # nothing else created, moved or changed, inside the vault or out
