"""``connect CLIENT --vault work=~/work --vault home=~/notes`` (docs/clients.md, "Several vaults"):
one entry in the client's real config file serving every vault given, each folder absolute and
each name kept, for every client connect supports; ``--print`` shows the same entry."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from test_connect import home as home  # the fixture: a temporary home, no claude on PATH

from vault_mem.cli import main
from vault_mem.clients.configs import CLIENTS, config_place, server_command

OTHER = {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def folders(home: Path) -> dict[str, Path]:
    for name in ("work", "notes"):
        (home / name).mkdir()
    return {"work": home / "work", "home": home / "notes"}


@pytest.mark.parametrize("client", CLIENTS)
def test_one_entry_serves_every_vault_named_with_absolute_folders(
        client: str, folders: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    place = config_place(client)
    place.path.parent.mkdir(parents=True, exist_ok=True)
    place.path.write_text(json.dumps({place.key: OTHER, "theme": "dark"}), encoding="utf-8")
    argv = ["connect", client, "--vault", "work=~/work", "--vault", "home=~/notes"]
    expected = [*server_command()[1:], "serve", "--vault", f"work={folders['work']}",
                "--vault", f"home={folders['home']}"]
    code, out, _ = run(capsys, *argv, "--print")
    assert code == 0 and json.loads(out)[place.key]["vault-mem"]["args"] == expected
    assert json.loads(place.path.read_text(encoding="utf-8")) == {place.key: OTHER, "theme": "dark"}, \
        "--print writes nothing"
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0 and json.loads(out)["action"] == "added"
    written = json.loads(place.path.read_text(encoding="utf-8"))
    assert written["theme"] == "dark" and list(written[place.key]) == ["memory", "vault-mem"], "one entry, others kept"
    entry = written[place.key]["vault-mem"]
    assert entry["command"] == server_command()[0] and entry["args"] == expected
    assert all(Path(a.partition("=")[2]).is_absolute() for a in entry["args"] if "=" in a)
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0 and json.loads(out)["action"] == "unchanged"
    assert main(["disconnect", client]) == 0
    assert json.loads(place.path.read_text(encoding="utf-8")) == {place.key: OTHER, "theme": "dark"}


def test_names_from_vaults_add_are_written_as_their_folders_and_none_given_means_every_one(
        folders: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VAULT_MEM_VAULT", raising=False)
    place = config_place("cursor")
    code, _, err = run(capsys, "connect", "cursor")
    assert code == 1 and "no vault given" in err and "vaults add" in err
    for name, folder in folders.items():
        assert run(capsys, "vaults", "add", name, str(folder))[0] == 0
    assert run(capsys, "connect", "cursor")[0] == 0
    args = json.loads(place.path.read_text(encoding="utf-8"))[place.key]["vault-mem"]["args"]
    assert args[-4:] == ["--vault", f"work={folders['work']}", "--vault", f"home={folders['home']}"]
    assert run(capsys, "connect", "cursor", "--vault", "home", "--name", "home-only")[0] == 0
    args = json.loads(place.path.read_text(encoding="utf-8"))[place.key]["home-only"]["args"]
    assert args[-2:] == ["--vault", f"home={folders['home']}"], "a registered name keeps its name"
    assert run(capsys, "connect", "cursor", "--vault", str(folders["home"]), "--name", "plain")[0] == 0
    args = json.loads(place.path.read_text(encoding="utf-8"))[place.key]["plain"]["args"]
    assert args[-2:] == ["--vault", str(folders["home"])], "one folder is written as before: a plain --vault PATH"


def test_a_vault_not_made_yet_is_printed_but_never_written(
        home: Path, folders: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    place = config_place("claude-desktop")
    argv = ["connect", "claude-desktop", "--vault", "work=~/work", "--vault", "later=~/later"]
    code, out, err = run(capsys, *argv, "--print")
    assert code == 0 and f"later={home / 'later'}" in json.loads(out)[place.key]["vault-mem"]["args"]
    assert "does not exist yet" in err and "mkdir" in err
    code, _, err = run(capsys, *argv)
    assert code == 1 and "does not exist" in err and "--print" in err
    assert not place.path.exists() and not (home / "later").exists()


def test_two_vaults_under_one_name_or_one_folder_twice_are_refused(
        folders: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "connect", "cursor", "--vault", "a=~/work", "--vault", "a=~/notes")
    assert code == 1 and "two vaults are named 'a'" in err
    code, _, err = run(capsys, "connect", "cursor", "--vault", "a=~/work", "--vault", "b=~/work")
    assert code == 1 and "is given twice" in err
    code, _, err = run(capsys, "connect", "cursor", "--vault", "a/b=~/work", "--vault", "home=~/notes")
    assert code == 1 and "does not exist" in err, "a/b=... is no name: the whole value is a path"
    assert not config_place("cursor").path.exists()


def test_an_agent_needs_a_key_on_every_vault_of_the_entry(
        folders: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    place = config_place("vscode")
    argv = ["connect", "vscode", "--vault", "work=~/work", "--vault", "home=~/notes", "--agent", "coder"]
    code, _, _ = run(capsys, "agents", "add", "coder", "--vault", str(folders["work"]), "--json")
    assert code == 0
    code, _, err = run(capsys, *argv)
    assert code == 1 and f"'coder' has no key on the vault 'home' ({folders['home']})" in err
    assert "--key-stdin" in err and not place.path.exists()
    code, _, _ = run(capsys, "agents", "add", "coder", "--vault", str(folders["home"]), "--read-only")
    assert code == 0
    assert run(capsys, *argv)[0] == 0
    entry = json.loads(place.path.read_text(encoding="utf-8"))[place.key]["vault-mem-coder"]
    assert entry["type"] == "stdio" and entry["args"][-6:] == [
        "--vault", f"work={folders['work']}", "--vault", f"home={folders['home']}", "--agent", "coder"]


@pytest.mark.skipif(os.name == "nt", reason="the fake claude is a POSIX shell script")
def test_claude_code_gets_every_vault_through_claude_mcp_add(
        tmp_path: Path, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    fake = bin_dir / "claude"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{calls}"\necho "Added stdio MCP server"\n', encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert main(["connect", "claude-code", "--vault", "work=~/work", "--vault", "home=~/notes"]) == 0
    command = " ".join(server_command())
    assert calls.read_text(encoding="utf-8").splitlines() == [
        f"mcp add --scope user vault-mem -- {command} serve --vault work={folders['work']} "
        f"--vault home={folders['home']}"]
