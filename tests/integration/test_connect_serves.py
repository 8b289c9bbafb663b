"""The entry ``connect`` writes for a named vault runs: a real MCP client starts the server exactly
as the client's config file says (command, args, no shell, another working directory) and finds
that vault's notes, and only that vault's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import write_notes
from mcp import Client, StdioServerParameters
from test_sharing import Session

from vault_mem.cli import main
from vault_mem.clients.configs import config_place

pytestmark = pytest.mark.anyio


async def test_the_entry_for_a_named_vault_serves_that_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    for key in ("HOME", "USERPROFILE"):
        monkeypatch.setenv(key, str(home))
    monkeypatch.setenv("APPDATA", str(home / "AppData" / "Roaming"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-claude-here") + os.pathsep + os.environ.get("PATH", ""))
    work = write_notes(home / "work", {"w.md": "# Work\nthe quarterly zebra plan\n"})
    write_notes(home / "notes", {"h.md": "# Home\nthe garden zebra\n"})
    assert main(["vaults", "add", "work", str(work)]) == 0
    assert main(["vaults", "add", "home", str(home / "notes")]) == 0
    assert main(["connect", "cursor", "--vault", "work"]) == 0
    capsys.readouterr()
    entry = json.loads(config_place("cursor").path.read_text(encoding="utf-8"))["mcpServers"]["vault-mem"]
    assert entry["args"][-2:] == ["--vault", f"work={work}"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(elsewhere),
                                   env=dict(os.environ))
    async with Client(params, mode="legacy") as client:
        session = Session(client)
        await session.settled()
        found = await session.call("memory_search", agent="tester", query="zebra")
        assert [row["title"] for row in found["notes"]] == ["Work"], "the named vault, and no other"
