"""What an agent did, and undo it (docs/sharing.md): the journal of write tools, ``vault-mem log``
and ``vault-mem undo``, after changes made through a real MCP session, with and without git."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import open_vault, write_notes
from git_helpers import commit_all, git, git_env, new_repo
from mcp import Client

from vault_mem import settings
from vault_mem.cli import main
from vault_mem.history import journal
from vault_mem.mcp_server.app import build_server
from vault_mem.served.context import Vault

pytestmark = pytest.mark.anyio
__all__ = ["git_env"]  # a fixture, used by name

NOTES = {
    "edited.md": "---\nid: edited\ntitle: Edited\n---\nThe original body.\r\nWith a CRLF line.\n",
    "deleted.md": "---\nid: deleted\ntitle: Deleted\n---\nKeep me.\n",
    "old.md": "---\nid: old\ntitle: Old\n---\nThe old way.\n",
    "person.md": "---\nid: person\ntitle: Person\n---\nBefore.\n",
    "other.md": "---\nid: other\ntitle: Other\n---\nUntouched by the coder.\n",
    "task.md": "---\nid: task\ntitle: Task\ntype: task\n---\n- [ ] do it\n",
}


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    answer = result.structured_content
    assert isinstance(answer, dict) and answer["status"] == "ok", answer
    return answer


async def damage(vault: Vault) -> dict[str, Any]:
    """What the coder (and a reviewer) do through a real session; the supersede's answer."""
    async with Client(build_server(vault), mode="legacy") as client:
        await call(client, "memory_edit", agent="coder", ref="edited", content="Overwritten by the coder.")
        await call(client, "memory_edit", agent="coder", ref="edited", append="And again.")
        await call(client, "memory_delete", agent="coder", ref="deleted")
        new = await call(client, "memory_supersede", agent="coder", ref="old", title="New", content="The new way.")
        await call(client, "memory_edit", agent="coder", ref="person", append="coder was here")
        await call(client, "task_close", agent="coder", ref="task")
        await call(client, "memory_edit", agent="reviewer", ref="other", append="reviewed")
        await call(client, "memory_write", agent="coder", title="Scratch", content="temporary")
    return new


def cli(capsys: pytest.CaptureFixture[str], vault: Vault, *args: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    code = main([*args, "--vault", str(vault.root), "--index-dir", str(vault.index.dir)])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if "--json" in args and out else out), err


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}


async def test_log_lists_every_change_newest_first_and_filters_by_agent_and_time(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = open_vault(write_notes(tmp_path / "v", NOTES))
    before = dt.datetime.now(dt.UTC)
    await damage(vault)
    code, answer, _ = cli(capsys, vault, "log", "--json")
    assert code == 0
    kinds = [(row["agent"], row["kind"], row["path"]) for row in answer["changes"]]
    assert kinds == [("coder", "write", "Scratch.md"), ("reviewer", "edit", "other.md"),
                     ("coder", "close", "task.md"), ("coder", "edit", "person.md"),
                     ("coder", "supersede", "old.md"),  # the old note's valid_until (docs/vault-format.md)
                     ("coder", "supersede", "New.md"), ("coder", "delete", "deleted.md"),
                     ("coder", "edit", "edited.md"), ("coder", "edit", "edited.md")]
    assert answer["changes"][6]["trash"] == ".trash/deleted.md"
    times = [row["time"] for row in answer["changes"]]
    assert times == sorted(times, reverse=True)
    _, mine, _ = cli(capsys, vault, "log", "--agent", "Reviewer", "--json")
    assert [row["path"] for row in mine["changes"]] == ["other.md"]
    for since in ("2h", before.isoformat(), before.date().isoformat()):
        assert cli(capsys, vault, "log", "--since", since, "--json")[1]["count"] == 9
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M")
    assert cli(capsys, vault, "log", "--since", later, "--json")[1]["count"] == 0
    code, text, _ = cli(capsys, vault, "log", "--agent", "coder")
    assert code == 0 and "supersede" in text and "deleted.md -> .trash/deleted.md" in text
    code, _, err = cli(capsys, vault, "log", "--since", "yesterday-ish")
    assert code == 1 and "--since: 'yesterday-ish' is not a moment" in err and "3d" in err


async def test_undo_puts_back_each_note_the_agent_changed_and_leaves_a_later_edit_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = open_vault(write_notes(tmp_path / "v", NOTES))
    original = files(vault.root)
    await damage(vault)
    (vault.root / "person.md").write_bytes(b"---\nid: person\n---\nA person rewrote it after the agent.\n")
    damaged = files(vault.root)

    code, shown, _ = cli(capsys, vault, "undo", "--agent", "coder", "--since", "1h", "--json")
    assert code == 0 and shown["applied"] is False
    assert {(s["path"], s["action"]) for s in shown["would_restore"]} == {
        ("edited.md", "restore"), ("deleted.md", "untrash"), ("New.md", "trash"), ("task.md", "restore"),
        ("Scratch.md", "trash"), ("old.md", "restore")}
    assert [(s["path"], s["reason"]) for s in shown["left"]] == [
        ("person.md", "changed after the agent by someone else (a person, an editor or git); left alone")]
    assert files(vault.root) == damaged  # showing changes nothing

    code, done, _ = cli(capsys, vault, "undo", "--agent", "coder", "--since", "1h", "--apply", "--json")
    assert code == 0 and len(done["restored"]) == 6 and done["warnings"] == []
    now = files(vault.root)
    for rel in ("edited.md", "deleted.md", "old.md", "task.md"):
        assert now[rel] == original[rel], rel  # byte for byte, CRLF included
    assert now["person.md"] == damaged["person.md"]  # the person's later edit stays
    assert now["other.md"] == damaged["other.md"]  # another agent's change is not the coder's
    assert "New.md" not in now and "Scratch.md" not in now
    assert now[".trash/New.md"] == damaged["New.md"] and ".trash/deleted.md" not in now

    async with Client(build_server(vault), mode="legacy") as client:  # the index follows the undo
        assert (await call(client, "memory_read", ref="deleted"))["body"] == "Keep me.\n"
        assert (await client.call_tool("memory_read", {"ref": "New"})).structured_content["status"] == "not_found"
        missed = await client.call_tool("memory_search", {"agent": "x", "query": "overwritten"})
        assert missed.structured_content["status"] == "none"

    _, log, _ = cli(capsys, vault, "log", "--agent", "vault-mem", "--json")
    assert {row["path"] for row in log["changes"]} == {"edited.md", "deleted.md", "New.md", "task.md", "Scratch.md",
                                                       "old.md"}
    assert {row["kind"] for row in log["changes"]} == {"undo"}
    _, again, _ = cli(capsys, vault, "undo", "--agent", "coder", "--since", "1h", "--json")
    assert again["would_restore"] == []  # nothing left to put back
    assert {s["path"]: s["reason"] for s in again["left"]}["edited.md"] == (
        "already as it was before the agent's change")
    code, _, _ = cli(capsys, vault, "undo", "--agent", "vault-mem", "--since", "1h", "--apply", "--json")
    visible = {rel: data for rel, data in files(vault.root).items() if not rel.startswith(".trash/")}
    assert code == 0 and visible == {rel: data for rel, data in damaged.items() if not rel.startswith(".trash/")}


async def test_undo_restores_the_state_before_the_agents_first_change_in_the_window(tmp_path: Path, capsys) -> None:
    vault = open_vault(write_notes(tmp_path / "v", NOTES))
    async with Client(build_server(vault), mode="legacy") as client:
        await call(client, "memory_edit", agent="coder", ref="edited", content="First change.")
        kept = (vault.root / "edited.md").read_bytes()
        since = dt.datetime.now(dt.UTC)
        await call(client, "memory_edit", agent="coder", ref="edited", content="Second change.")
    code, _, err = cli(capsys, vault, "undo", "--agent", "coder", "--since", since.isoformat(), "--apply")
    assert code == 0 and "put back 1 note, left 0 notes alone" in err
    assert (vault.root / "edited.md").read_bytes() == kept


@pytest.mark.usefixtures("git_env")
async def test_undo_with_git_commit_is_one_commit(tmp_path: Path, capsys) -> None:
    root = new_repo(tmp_path / "v", NOTES)
    commit_all(root, "notes")
    vault = open_vault(root)
    vault.git_commit = True  # serve --git-commit: each write its own commit
    await damage(vault)
    commits = git(root, "rev-list", "--count", "HEAD")
    code, done, _ = cli(capsys, vault, "undo", "--agent", "coder", "--since", "1d", "--apply", "--git-commit",
                        "--json")
    assert code == 0 and done["commit"] and done["warnings"] == []
    assert int(git(root, "rev-list", "--count", "HEAD")) == int(commits) + 1
    assert git(root, "log", "-1", "--format=%an|%s").strip().startswith("vault-mem|undo: 7 note(s) changed by coder")
    changed = set(git(root, "show", "--name-only", "--format=", "HEAD").split())
    assert changed == {"edited.md", "deleted.md", "New.md", "task.md", "Scratch.md", "person.md", "old.md"}
    assert (root / "edited.md").read_bytes() == NOTES["edited.md"].encode()
    assert git(root, "status", "--porcelain", "--", "edited.md", "deleted.md", "task.md") == ""  # as committed
    code, _, err = cli(capsys, vault, "undo", "--agent", "coder", "--since", "1d", "--git-commit")
    assert code == 1 and "--git-commit: only with --apply" in err


def test_the_journal_is_bounded_by_age_and_size_and_kept_through_a_rebuild(tmp_path: Path, tuned) -> None:
    vault = open_vault(write_notes(tmp_path / "v", {"a.md": "# A\n"}))
    index_dir = vault.index.history_dir
    change = {"path": "a.md", "fsrel": "a.md", "title": "A", "uid": "a", "after": b"new"}
    assert journal.record(index_dir, "coder", "memory_edit", [change | {"before": b"x" * 1000}],
        config=settings.current()) is None
    assert journal.record(index_dir, "coder", "memory_edit", [change | {"before": b"y" * 1000}],
        config=settings.current()) is None
    vault.index.create()  # a rebuild empties the index folder, but not the journal
    assert [e.before for e in journal.entries(index_dir)] == [journal.digest(b"x" * 1000), journal.digest(b"y" * 1000)]
    tuned(journal_max_bytes=1500)  # room for one earlier content
    assert journal.prune(index_dir, config=settings.current()) == 1
    [kept] = journal.entries(index_dir)
    assert journal.blob(index_dir, kept.before or "") == b"y" * 1000
    assert journal.blob(index_dir, journal.digest(b"x" * 1000)) is None  # its content went with it
    assert journal.prune(index_dir, now=time.time() + (settings.current().journal_max_age_days + 1) * 86400,
        config=settings.current()) == 1
    assert journal.entries(index_dir) == [] and not list((index_dir / "journal" / "blobs").iterdir())


def test_the_journal_is_pruned_only_past_a_limit_and_then_to_a_tenth_under_it(tmp_path: Path, tuned) -> None:
    index_dir = tmp_path / "ix"
    tuned(journal_max_entries=10)
    tuned(journal_prune_every=0.0)  # every record looks at the limits
    entries_file = journal.journal_dir(index_dir) / journal.ENTRIES
    counts, rewrites, last = [], 0, None
    for i in range(14):
        change = {"path": f"n{i}.md", "fsrel": f"n{i}.md", "before": f"before {i}".encode(), "after": b"x"}
        assert journal.record(index_dir, "coder", "memory_write", [change], config=settings.current()) is None
        counts.append(len(journal.entries(index_dir)))
        inode = entries_file.stat().st_ino
        rewrites += last is not None and inode != last
        last = inode
    # Appended up to the limit untouched, cut to 9 once past it, then appended again up to it.
    assert counts == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 9, 10, 9, 10]
    assert rewrites == 2
    assert [e.path for e in journal.entries(index_dir)] == [f"n{i}.md" for i in range(4, 14)]
    named = {e.before for e in journal.entries(index_dir)}
    assert {p.name for p in (index_dir / "journal" / "blobs").iterdir()} == named  # the dropped contents went


def test_a_torn_last_line_does_not_swallow_the_next_entry(tmp_path: Path) -> None:
    index_dir = tmp_path / "ix"
    change = {"path": "a.md", "fsrel": "a.md", "before": None, "after": b"x"}
    assert journal.record(index_dir, "coder", "memory_write", [change], config=settings.current()) is None
    with open(index_dir / "journal" / "entries.jsonl", "ab") as out:
        out.write(b'{"t": 1, "agent": "cod')  # a crash in the middle of a line
    assert journal.record(index_dir, "coder", "memory_write", [change], config=settings.current()) is None
    assert [e.tool for e in journal.entries(index_dir)] == ["memory_write", "memory_write"]


def test_a_change_is_journaled_while_another_waits_for_its_fsync(tmp_path: Path, monkeypatch) -> None:
    """The journal's lock covers the append, not the fsync (history/journal.py): a second change is
    appended while the first one's fsync is still under way, and each call returns only after an
    fsync of its own, made after its line was written."""
    index_dir = tmp_path / "ix"
    entries_file = journal.journal_dir(index_dir) / journal.ENTRIES
    real_fsync = os.fsync
    first_in_fsync, let_go = threading.Event(), threading.Event()
    synced_lines: list[int] = []
    calls = 0

    def fsync(fd: int) -> None:
        nonlocal calls
        calls += 1
        lines = entries_file.read_bytes().count(b"\n")
        if calls == 1:
            first_in_fsync.set()
            assert let_go.wait(60)
        real_fsync(fd)
        synced_lines.append(lines)

    monkeypatch.setattr(journal.os, "fsync", fsync)
    change = {"path": "a.md", "fsrel": "a.md", "before": None, "after": b"x"}
    first = threading.Thread(target=journal.record, args=(index_dir, "coder", "memory_write", [change]),
                             kwargs={"config": settings.current()})
    first.start()
    try:
        assert first_in_fsync.wait(60)
        # The first call is inside its fsync: the second appends and syncs without waiting for it.
        second = threading.Thread(target=journal.record, args=(index_dir, "coder", "memory_edit", [change]),
                                  kwargs={"config": settings.current()})
        second.start()
        second.join(30)
        assert not second.is_alive(), "the second change waited for the first one's fsync"
        assert [e.tool for e in journal.entries(index_dir)] == ["memory_write", "memory_edit"]
    finally:
        let_go.set()
        first.join(60)
    assert not first.is_alive()
    assert sorted(synced_lines) == [1, 2]  # each fsync came after its own line was there
