"""Git vaults (docs/git.md), on one machine: memory_read's history, dates taken from history,
attribution of agents' writes (serve --git-commit), and vaults that are not git work trees.
Real git in temp folders, real MCP sessions; the machine's own git config is never used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from git_helpers import MACHINE, commit_all, git, git_env, new_repo

from vault_mem import cli, settings
from vault_mem.search.api import VaultIndex, sync
from vault_mem.served.context import Vault

pytestmark = pytest.mark.anyio
__all__ = ["git_env"]  # a fixture, used by name


def serve(root: Path, **options: Any) -> Vault:
    index = VaultIndex(root,
        config=settings.current())  # the default index folder inside the vault: git must never see it
    sync(index, procs=1)
    return Vault(root, index, **options)


def plain(title: str, body: str) -> str:
    return f"# {title}\n\n{body}\n"


async def test_memory_read_shows_the_history_of_a_note_following_renames(git_env, tmp_path, mcp_session) -> None:
    root = new_repo(tmp_path / "vault", {"old name.md": plain("Queue", "first")})
    commit_all(root, "add the queue note", "2022-03-04T05:06:07Z", ("Ada", "ada@example.org"))
    git(root, "mv", "old name.md", "queue.md")
    commit_all(root, "rename it", "2023-01-02T00:00:00Z", ("Bob", "bob@example.org"))
    (root / "queue.md").write_text(plain("Queue", "second"), encoding="utf-8")
    commit_all(root, "say more", "2024-05-06T07:08:09Z")
    vault = serve(root)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_read", ref="queue")
        assert [h["subject"] for h in answer["history"]] == ["say more", "rename it", "add the queue note"]
        assert [h["author"] for h in answer["history"]] == [MACHINE[0], "Bob", "Ada"]
        assert answer["history"][2]["date"] == "2022-03-04T05:06:07+00:00"
        assert all(len(h["sha"]) >= 7 for h in answer["history"])
        assert answer["uncommitted"] is False
        assert len((await c.call("memory_read", ref="queue", history=1))["history"]) == 1
        assert (await c.call("memory_read", ref="queue", history=0))["history"] == []
        bad = await c.call("memory_read", ref="queue", history=51)
        assert bad["status"] == "invalid" and bad["param"] == "history"

        (root / "queue.md").write_text(plain("Queue", "third, not committed"), encoding="utf-8")
        assert (await c.call("memory_read", ref="queue"))["uncommitted"] is True
        (root / "new.md").write_text(plain("New", "never committed"), encoding="utf-8")
        sync(vault.index)
        fresh = await c.call("memory_read", ref="new")
        assert fresh["history"] == [] and fresh["uncommitted"] is True
    assert ".vault-mem" not in git(root, "status", "--porcelain")


async def test_outside_a_git_work_tree_history_is_absent_and_sync_says_so(git_env, tmp_path, mcp_session,
                                                                          capsys) -> None:
    root = tmp_path / "plain vault"
    root.mkdir()
    (root / "note.md").write_text(plain("Note", "body"), encoding="utf-8")
    vault = serve(root)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_read", ref="note")
        assert answer["status"] == "ok"
        assert "history" not in answer and "uncommitted" not in answer
    code = cli.main(["sync", "--vault", str(root)])
    err = capsys.readouterr().err
    assert code != 0
    assert "not a git repository" in err and "Traceback" not in err


async def test_dates_come_from_history_not_from_the_checkout(git_env, tmp_path, mcp_session) -> None:
    origin = new_repo(tmp_path / "origin", {
        "dated.md": "---\ncreated: 2020-01-01\nupdated: 2020-02-02\n---\n# Dated\n\nits own dates win\n",
        "plain.md": plain("Plain", "no dates in it"),
        "moved.md": plain("Moved", "renamed later"),
        "2021-05-06.md": plain("Daily", "a daily note"),
    })
    commit_all(origin, "first", "2022-06-01T10:00:00Z")
    (origin / "plain.md").write_text(plain("Plain", "no dates in it, edited"), encoding="utf-8")
    git(origin, "mv", "moved.md", "renamed.md")
    commit_all(origin, "second", "2023-07-01T10:00:00Z")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))  # every mtime is now "today"
    (clone / "edited.md").write_text(plain("Edited", "new here, uncommitted"), encoding="utf-8")
    vault = serve(clone)
    async with mcp_session(vault) as c:
        plain_note = await c.call("memory_read", ref="plain")
        assert (plain_note["created"], plain_note["updated"]) == ("2022-06-01T10:00:00+00:00",
                                                                  "2023-07-01T10:00:00+00:00")
        renamed = await c.call("memory_read", ref="renamed")
        assert renamed["created"] == "2022-06-01T10:00:00+00:00"  # added as moved.md
        daily = await c.call("memory_read", ref="2021-05-06")  # a date in the name beats history
        assert (daily["created"], daily["updated"]) == ("2021-05-06T00:00:00+00:00", "2022-06-01T10:00:00+00:00")
        dated = await c.call("memory_read", ref="dated")
        assert (dated["created"], dated["updated"]) == ("2020-01-01T00:00:00+00:00", "2020-02-02T00:00:00+00:00")
        assert (await c.call("memory_read", ref="edited"))["created"] > "2025"  # its mtime
        recalled = await c.call("memory_list", date_from="2022-06-01", date_to="2022-06-01")
        assert sorted(m["path"] for m in recalled["memories"]) == ["plain.md", "renamed.md"]
        # A write tool pins the history's date, never the checkout time.
        edit = await c.call("memory_edit", agent="claude-code", ref="plain", append="one more line")
        assert edit["status"] == "ok"
    text = (clone / "plain.md").read_text(encoding="utf-8")
    assert "created: 2022-06-01T10:00:00+00:00" in text


async def test_git_commit_attributes_each_write_to_the_agent_and_leaves_a_persons_work_alone(
        git_env, tmp_path, mcp_session) -> None:
    root = new_repo(tmp_path / "vault", {"person.md": plain("Person", "committed"),
                                         "staged.md": plain("Staged", "committed"),
                                         "draft.md": "# Draft\n\ncommitted\n\nsecond paragraph\n",
                                         "code.txt": "committed\n"})
    commit_all(root, "start")
    (root / "staged.md").write_text(plain("Staged", "staged by the person"), encoding="utf-8")
    git(root, "add", "staged.md")
    (root / "person.md").write_text(plain("Person", "an edit in progress"), encoding="utf-8")
    (root / "draft.md").write_text("# Draft\n\nedited by hand\n\nsecond paragraph\n", encoding="utf-8")
    (root / "code.txt").write_text("unstaged code\n", encoding="utf-8")
    (root / "untracked.txt").write_text("mine\n", encoding="utf-8")
    staged_before, unstaged_before = git(root, "diff", "--cached"), git(root, "diff")

    vault = serve(root, git_commit=True)
    async with mcp_session(vault) as c:
        wrote = await c.call("memory_write", agent="claude-code", title="Agent note", content="from the agent")
        assert wrote["status"] == "ok" and "warnings" not in wrote
        log = git(root, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s", "--name-status")
        assert log.startswith(f"claude-code <claude-code@vault-mem>|{MACHINE[0]} <{MACHINE[1]}>|"
                              "memory_write: Agent note")
        assert log.split("\n", 1)[1].strip().split("\t") == ["A", "Agent note.md"]
        assert git(root, "diff", "--cached") == staged_before
        assert git(root, "diff") == unstaged_before
        assert (root / "untracked.txt").read_text(encoding="utf-8") == "mine\n"

        edited = await c.call("memory_edit", agent="cursor", ref="Agent note", append="and more")
        assert edited["status"] == "ok" and "warnings" not in edited
        read = await c.call("memory_read", ref="Agent note")
        assert [h["author"] for h in read["history"]] == ["cursor", "claude-code"]
        assert [h["subject"] for h in read["history"]] == ["memory_edit: Agent note", "memory_write: Agent note"]
        assert read["uncommitted"] is False

        # A note the person has staged: left to them, their staging untouched.
        staged = await c.call("memory_edit", agent="cursor", ref="staged", append="agent line")
        assert staged["status"] == "ok" and "staged changes" in staged["warnings"][0]
        assert git(root, "diff", "--cached") == staged_before

        # A note with the person's edit in progress: the agent's change alone is committed, theirs
        # stays on disk, uncommitted; where the two touch the same lines nothing is committed.
        touched = await c.call("memory_edit", agent="cursor", ref="draft", append="agent line")
        assert touched["status"] == "ok" and "warnings" not in touched
        shown = git(root, "show", "HEAD", "--format=%an", "--", "draft.md")
        assert shown.startswith("cursor\n") and "+agent line" in shown and "edited by hand" not in shown
        assert git(root, "diff", "--cached") == staged_before
        worktree = (root / "draft.md").read_text(encoding="utf-8")
        assert "edited by hand" in worktree and "agent line" in worktree
        assert "edited by hand" in git(root, "diff", "--", "draft.md")
        assert (await c.call("memory_read", ref="draft"))["uncommitted"] is True

        overlap = await c.call("memory_edit", agent="cursor", ref="person", append="agent line")
        assert overlap["status"] == "ok"
        assert "uncommitted changes" in overlap["warnings"][0]
        text = (root / "person.md").read_text(encoding="utf-8")
        assert "an edit in progress" in text and "agent line" in text
        assert "person.md" not in git(root, "show", "--name-only", "--format=", "HEAD")

        deleted = await c.call("memory_delete", agent="claude-code", ref="Agent note")
        assert deleted["status"] == "ok" and "warnings" not in deleted
        assert git(root, "log", "-1", "--format=%an|%s") == "claude-code|memory_delete: Agent note\n"
        assert "Agent note.md" not in git(root, "ls-files")
    assert git(root, "diff", "--cached") == staged_before
    assert ".vault-mem" not in git(root, "status", "--porcelain")


async def test_a_commit_that_fails_is_a_warning_never_a_failed_write(git_env, tmp_path, mcp_session) -> None:
    root = new_repo(tmp_path / "vault", {"a.md": plain("A", "a")})
    commit_all(root, "start")
    git_env.write_text("[user]\n\tuseConfigOnly = true\n", encoding="utf-8")  # no identity at all
    head = git(root, "rev-parse", "HEAD")
    vault = serve(root, git_commit=True)
    async with mcp_session(vault) as c:
        wrote = await c.call("memory_write", agent="claude-code", title="Kept", content="still saved")
        assert wrote["status"] == "ok"
        assert "not committed" in wrote["warnings"][0]
        assert (await c.call("memory_search", agent="claude-code", query="saved"))["count"] == 1
    assert (root / "Kept.md").is_file()
    assert git(root, "rev-parse", "HEAD") == head


async def test_a_vault_in_a_subfolder_of_a_repository(git_env, tmp_path, mcp_session, capsys) -> None:
    top = new_repo(tmp_path / "project", {"memory/deploy.md": plain("Deploy", "steps"), "src/app.py": "x = 1\n"})
    commit_all(top, "project start", "2022-05-05T00:00:00Z")
    root = top / "memory"
    vault = serve(root)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_read", ref="deploy")
        assert [h["subject"] for h in answer["history"]] == ["project start"]
        assert answer["created"] == "2022-05-05T00:00:00+00:00"
    (root / "deploy.md").write_text(plain("Deploy", "more steps"), encoding="utf-8")
    (top / "src/app.py").write_text("x = 2\n", encoding="utf-8")
    assert cli.main(["sync", "--vault", str(root)]) == 1  # no remote
    assert "committed 1 changed note" in capsys.readouterr().err
    assert git(top, "show", "--name-only", "--format=", "HEAD") == "memory/deploy.md\n"
    assert git(top, "status", "--porcelain") == " M src/app.py\n"


def test_the_map_followed_commit_by_commit_equals_a_fresh_pass(git_env, tmp_path) -> None:
    import random

    from vault_mem.git.history import History
    from vault_mem.git.repo import Repo
    from vault_mem.settings import Settings

    rng = random.Random(13)
    root = new_repo(tmp_path / "vault", {f"n{i}.md": plain(f"N{i}", "start") for i in range(8)})
    commit_all(root, "start", "2021-01-01T00:00:00Z")
    repo = Repo.find(root, Settings())
    assert repo is not None
    followed = History(repo, tmp_path / "cache.json")
    followed.load()
    for step in range(30):
        names = sorted(p.name for p in root.glob("*.md"))
        action = rng.choice(["edit", "edit", "add", "rename", "delete"])
        target = root / rng.choice(names)
        if action == "edit":
            target.write_text(target.read_text(encoding="utf-8") + f"step {step}\n", encoding="utf-8")
        elif action == "add":
            (root / f"new{step}.md").write_text(plain(f"New {step}", "added"), encoding="utf-8")
        elif action == "rename" and len(names) > 1:
            git(root, "mv", target.name, f"moved{step}.md")
        elif len(names) > 2:
            target.unlink()
        commit_all(root, f"step {step}: {action}", f"2021-02-{1 + step % 28:02d}T00:00:{step:02d}Z")
        if step % 3 == 0:
            followed.refresh()
    followed.refresh()
    fresh = History(repo)
    fresh.load()
    paths = sorted(p.name for p in root.glob("*.md"))
    assert sorted(fresh._state.blobs) == paths == sorted(followed._state.blobs)
    for path in paths:
        data = (root / path).read_bytes()
        assert followed.dates(path, data) == fresh.dates(path, data) is not None, path
        assert followed.history_of(path, 50) == fresh.history_of(path, 50), path
    reloaded = History(repo, tmp_path / "cache.json")  # the saved map plus what came after it
    reloaded.load()
    assert all(reloaded.history_of(p, 50) == fresh.history_of(p, 50) for p in paths)
