"""vault-mem history REF (docs/cli.md): one note's history for a person, without --json: the
write tools' changes from the journal and, in a git vault, its commits; a deleted note is
found through the journal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from git_helpers import commit_all, git_env, new_repo

from vault_mem import settings
from vault_mem.cli import main
from vault_mem.search.api import VaultIndex, sync
from vault_mem.served.context import Vault

__all__ = ["git_env"]  # a fixture, used by name
pytestmark = pytest.mark.anyio


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_history_shows_the_journal_and_the_commits_of_a_note(
        git_env: Path, tmp_path: Path, mcp_session: Any, capsys: pytest.CaptureFixture[str]) -> None:
    root = new_repo(tmp_path / "vault", {"plan.md": "# Plan\n\nfirst\n"})
    commit_all(root, "add the plan", "2024-05-06T07:08:09Z", ("Ada", "ada@example.org"))
    index = VaultIndex(root, config=settings.current())
    sync(index, procs=1)
    async with mcp_session(Vault(root, index)) as c:
        assert (await c.call("memory_edit", agent="coder", ref="plan", append="more"))["status"] == "ok"
        gone = await c.call("memory_write", agent="coder", title="Gone soon", content="x", domain="tmp")
        assert (await c.call("memory_delete", agent="reviewer", ref=gone["uid"]))["status"] == "ok"
    index.close()

    code, out, err = cli(capsys, "history", "plan", "--vault", str(root))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Plan (memory://plan)" and lines[1].split() == ["time", "by", "change", "note", "or", "commit"]
    assert "coder" in lines[2] and " edit " in lines[2], "newest first: the edit, then the commit"
    assert "Ada" in lines[3] and "add the plan" in lines[3] and "2024-05-06T07:08:09Z" in lines[3]
    assert "1 change by write tools" in err and "1 commit" in err and "not committed yet" in err

    code, out, _ = cli(capsys, "history", "plan", "--vault", str(root), "--json")
    answer = json.loads(out)
    assert code == 0 and answer["status"] == "ok" and answer["path"] == "plan.md"
    assert [(r["kind"], r["agent"]) for r in answer["changes"]] == [("edit", "coder")]
    assert [c["subject"] for c in answer["commits"]] == ["add the plan"] and answer["uncommitted"] is True

    code, out, err = cli(capsys, "history", "Gone soon", "--vault", str(root))
    assert code == 0, err
    assert "not in the vault now" in out and "reviewer" in out and "delete" in out and "write" in out
    code, out, _ = cli(capsys, "history", "tmp/Gone soon.md", "--vault", str(root), "--json")
    assert [r["kind"] for r in json.loads(out)["changes"]] == ["delete", "write"]

    code, out, err = cli(capsys, "history", "never was", "--vault", str(root))
    assert code == 1 and "no note matches 'never was'" in err and "journal" in err and not out
    code, out, err = cli(capsys, "history", "plan", "--vault", str(root), "--limit", "0", "--json")
    assert code == 1 and json.loads(out)["status"] == "invalid" and "--limit" in err
