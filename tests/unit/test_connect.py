"""vault-mem connect / disconnect (docs/clients.md): each client's config, at each platform's place
under a temporary home, ends exactly as it was plus or minus the one entry; a backup is written
first; a file that does not parse is never overwritten."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from vault_mem.cli import main
from vault_mem.clients.configs import CLIENTS, add_entry, config_place, remove_entry, server_command, server_entry
from vault_mem.errors import InvalidInput
from vault_mem.settings import Settings

LIMITS = Settings()  # what connect reads of a client's config, as the command line has it by default

OTHERS = {"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "C:\\Users\\x"]},
          "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
                     "env": {"MEMORY_FILE_PATH": "/tmp/memory.jsonl"}}}


def layout(tmp_path: Path, system: str) -> dict[str, str]:
    home = tmp_path / f"home-{system}"
    home.mkdir()
    if system == "win32":
        return {"USERPROFILE": str(home), "APPDATA": str(home / "AppData" / "Roaming")}
    if system == "darwin":
        return {"HOME": str(home)}
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


EXPECTED = {
    ("claude-desktop", "darwin"): "Library/Application Support/Claude/claude_desktop_config.json",
    ("claude-desktop", "win32"): "AppData/Roaming/Claude/claude_desktop_config.json",
    ("claude-desktop", "linux"): ".config/Claude/claude_desktop_config.json",
    ("vscode", "darwin"): "Library/Application Support/Code/User/mcp.json",
    ("vscode", "win32"): "AppData/Roaming/Code/User/mcp.json",
    ("vscode", "linux"): ".config/Code/User/mcp.json",
    ("cursor", "darwin"): ".cursor/mcp.json", ("cursor", "win32"): ".cursor/mcp.json",
    ("cursor", "linux"): ".cursor/mcp.json",
    ("claude-code", "darwin"): ".claude.json", ("claude-code", "win32"): ".claude.json",
    ("claude-code", "linux"): ".claude.json",
}


@pytest.mark.parametrize(("client", "system"), sorted(EXPECTED))
def test_connect_then_disconnect_leaves_the_config_as_it_was_plus_or_minus_the_entry(
        tmp_path: Path, client: str, system: str) -> None:
    env = layout(tmp_path, system)
    place = config_place(client, system, env)
    home = Path(env.get("USERPROFILE") or env["HOME"])
    assert place.path == home / EXPECTED[(client, system)]
    place.path.parent.mkdir(parents=True, exist_ok=True)
    before: dict[str, Any] = {"theme": "dark", place.key: OTHERS, "zzz": [1, {"a": None}]}
    place.path.write_text(json.dumps(before, indent=4), encoding="utf-8")
    original = place.path.read_bytes()
    vault = tmp_path / "My Notes"
    entry = server_entry(client, server_command(), vault)

    added = add_entry(place, "vault-mem", entry, LIMITS)
    assert added.action == "added" and added.backup is not None and added.backup.read_bytes() == original
    after = json.loads(place.path.read_text(encoding="utf-8"))
    assert after == {**before, place.key: {**OTHERS, "vault-mem": entry}}
    assert list(after) == list(before), "the keys keep their order"
    assert entry["args"][-2:] == ["--vault", str(vault)] and Path(entry["command"]).is_absolute()

    assert add_entry(place, "vault-mem", entry, LIMITS).action == "unchanged"
    removed = remove_entry(place, "vault-mem", LIMITS)
    assert removed.action == "removed" and removed.backup is not None
    assert json.loads(place.path.read_text(encoding="utf-8")) == before
    assert remove_entry(place, "vault-mem", LIMITS).action == "absent"


def test_a_config_that_does_not_parse_is_never_overwritten(tmp_path: Path) -> None:
    env = layout(tmp_path, "linux")
    place = config_place("vscode", "linux", env)
    place.path.parent.mkdir(parents=True)
    text = '{\n  // my servers\n  "servers": {}\n}\n'
    place.path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        add_entry(place, "vault-mem", server_entry("vscode", server_command(), tmp_path), LIMITS)
    assert f"{place.path} does not parse as JSON at line 2, column 3" in caught.value.message
    assert place.path.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in place.path.parent.iterdir()) == ["mcp.json"], "no backup, no temp file"


def test_a_new_config_is_created_with_only_the_entry(tmp_path: Path) -> None:
    place = config_place("cursor", "darwin", layout(tmp_path, "darwin"))
    entry = server_entry("cursor", server_command(), tmp_path)
    change = add_entry(place, "notes", entry, LIMITS)
    assert change.action == "added" and change.backup is None
    assert json.loads(place.path.read_text(encoding="utf-8")) == {"mcpServers": {"notes": entry}}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    for key, value in layout(tmp_path / "home", sys.platform).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("APPDATA", str(home / "AppData" / "Roaming"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-claude-here"))
    return home


def test_the_cli_connects_prints_and_disconnects(tmp_path: Path, home: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for client in CLIENTS:
        place = config_place(client)
        assert main(["connect", client, "--vault", str(vault), "--print"]) == 0
        printed = capsys.readouterr()
        assert json.loads(printed.out)[place.key]["vault-mem"]["args"][-1] == str(vault)
        assert not place.path.exists(), "--print writes nothing"
        assert main(["connect", client, "--vault", str(vault), "--json"]) == 0
        answer = json.loads(capsys.readouterr().out)
        assert answer["action"] == "added" and answer["next"] and answer["config"] == str(place.path)
        assert main(["disconnect", client]) == 0
        assert "removed vault-mem" in capsys.readouterr().err
        assert json.loads(place.path.read_text(encoding="utf-8")) == {place.key: {}}

    broken = config_place("cursor")
    broken.path.write_text('{"mcpServers": {,}}', encoding="utf-8")
    assert main(["connect", "cursor", "--vault", str(vault)]) == 1
    err = capsys.readouterr().err
    assert str(broken.path) in err and "line 1, column 17" in err and "Traceback" not in err
    assert broken.path.read_text(encoding="utf-8") == '{"mcpServers": {,}}'
    assert main(["connect", "cursor", "--vault", str(vault), "--name", "bad name"]) == 1
    assert "--name" in capsys.readouterr().err


def test_print_shows_the_entry_of_a_vault_folder_not_made_yet_and_writing_one_is_refused(
        tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's `connect claude-desktop --vault ~/notes --print` on a machine without ~/notes:
    the entry is printed and stderr says to make the folder; without --print nothing is written
    and the message says what to do."""
    vault = home / "notes"
    place = config_place("claude-desktop")
    assert main(["connect", "claude-desktop", "--vault", "~/notes", "--print"]) == 0
    printed = capsys.readouterr()
    assert json.loads(printed.out)[place.key]["vault-mem"]["args"][-1] == str(vault)
    assert "does not exist yet" in printed.err and "mkdir" in printed.err
    assert main(["connect", "claude-desktop", "--vault", "~/notes"]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and "--print" in err and "Traceback" not in err
    assert not place.path.exists() and not vault.exists()


def test_connect_as_an_agent_serves_with_its_limits_and_needs_its_key(tmp_path: Path, home: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    assert main(["connect", "cursor", "--vault", str(vault), "--agent", "coder"]) == 1
    err = capsys.readouterr().err
    assert "'coder' has no key on this vault" in err and "vault-mem agents add coder" in err
    place = config_place("cursor")
    assert not place.path.exists(), "a refused connect writes nothing"

    assert main(["agents", "add", "coder", "--vault", str(vault), "--write", "projects/*"]) == 0
    capsys.readouterr()
    assert main(["connect", "cursor", "--vault", str(vault), "--agent", "coder"]) == 0
    capsys.readouterr()
    entry = json.loads(place.path.read_text(encoding="utf-8"))[place.key]["vault-mem-coder"]
    assert entry["args"][-4:] == ["--vault", str(vault.resolve()), "--agent", "coder"]
    assert main(["disconnect", "cursor", "--agent", "coder"]) == 0
    assert json.loads(place.path.read_text(encoding="utf-8")) == {place.key: {}}


@pytest.mark.skipif(os.name == "nt", reason="the fake claude is a POSIX shell script")
def test_claude_code_uses_claude_mcp_add_when_claude_is_installed(tmp_path: Path, home: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    fake = bin_dir / "claude"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{calls}"\n'
                    'case "$*" in "mcp add"*) echo "Added stdio MCP server $5 to user config";; '
                    '"mcp remove"*) echo "Removed MCP server $5";; esac\n', encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    vault = tmp_path / "vault"
    vault.mkdir()
    assert main(["connect", "claude-code", "--vault", str(vault)]) == 0
    assert "claude mcp add" in capsys.readouterr().err
    assert main(["disconnect", "claude-code"]) == 0
    command = " ".join(server_command())
    assert calls.read_text(encoding="utf-8").splitlines() == [
        f"mcp add --scope user vault-mem -- {command} serve --vault {vault}",
        "mcp remove --scope user vault-mem",
    ]
    assert not (home / ".claude.json").exists(), "claude's own command wrote its config"


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_a_private_config_stays_private_in_its_backup_and_after_the_rewrite(tmp_path: Path) -> None:
    place = config_place("claude-desktop", "linux", layout(tmp_path, "linux"))
    place.path.parent.mkdir(parents=True)
    place.path.write_text(json.dumps({"mcpServers": {"gh": {"command": "gh-mcp", "env": {
        "GITHUB_TOKEN": "ghp_secret"}}}}), encoding="utf-8")
    place.path.chmod(0o600)
    change = add_entry(place, "vault-mem", server_entry("claude-desktop", server_command(), tmp_path), LIMITS)
    assert change.backup is not None and b"ghp_secret" in change.backup.read_bytes()
    assert stat.S_IMODE(change.backup.stat().st_mode) == 0o600, "the backup holds the token too"
    assert stat.S_IMODE(place.path.stat().st_mode) == 0o600
    removed = remove_entry(place, "vault-mem", LIMITS)
    assert removed.backup is not None and stat.S_IMODE(removed.backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(place.path.stat().st_mode) == 0o600


def test_numbers_are_written_back_as_they_were_spelled(tmp_path: Path) -> None:
    place = config_place("cursor", "linux", layout(tmp_path, "linux"))
    place.path.parent.mkdir(parents=True)
    huge = "9" * 5000  # more digits than Python's int() takes from a string by default
    text = ('{"limits": {"big": 1e400, "tiny": -0.0, "exact": 0.10000000000000000000001, "e": 1E+2, '
            f'"huge": {huge}, "odd": "\\ud800 lone"}}, "mcpServers": {{}}}}')
    place.path.write_text(text, encoding="utf-8")
    entry = server_entry("cursor", server_command(), tmp_path)
    change = add_entry(place, "vault-mem", entry, LIMITS)
    written = place.path.read_text(encoding="utf-8")
    for spelled in ("1e400", "-0.0", "0.10000000000000000000001", "1E+2", huge, '"\\ud800 lone"'):
        assert spelled in written
    assert "Infinity" not in written
    # valid JSON: a strict reader (no NaN/Infinity) takes it, and finds the entry
    strict = json.loads(written, parse_constant=lambda name: pytest.fail(f"{name} in the file"),
                        parse_int=str, parse_float=str)
    assert strict["mcpServers"]["vault-mem"] == entry
    assert change.rewritten is not None and "layout" in change.rewritten, "the layout change is said"
    remove_entry(place, "vault-mem", LIMITS)
    assert json.loads(place.path.read_text(encoding="utf-8"), parse_int=str, parse_float=str) == json.loads(
        text, parse_int=str, parse_float=str)


def test_a_key_twice_in_one_object_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    env = layout(tmp_path, "linux")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", str(tmp_path / "no-claude-here"))
    place = config_place("claude-desktop")
    place.path.parent.mkdir(parents=True)
    text = ('{\n  "mcpServers": {"first": {"command": "a"}},\n  "theme": "dark",\n'
            '  "mcpServers": {"second": {"command": "b"}}\n}\n')
    place.path.write_text(text, encoding="utf-8")
    vault = tmp_path / "vault"
    vault.mkdir()
    assert main(["connect", "claude-desktop", "--vault", str(vault)]) == 1
    err = capsys.readouterr().err
    assert '"mcpServers" twice' in err and "lines 2 and 4" in err and "nothing was changed" in err
    assert place.path.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in place.path.parent.iterdir()) == [place.path.name], "no backup, no temp file"
    # a duplicate deeper down is refused too: nothing the client holds is dropped unseen
    nested = '{"mcpServers": {"a": {"command": "x", "env": {"K": "1", "K": "2"}}}}'
    place.path.write_text(nested, encoding="utf-8")
    assert main(["disconnect", "claude-desktop", "--name", "a"]) == 1
    assert '"K" twice' in capsys.readouterr().err
    assert place.path.read_text(encoding="utf-8") == nested
    place.path.write_text('{"mcpServers": {}, "x": NaN}', encoding="utf-8")
    assert main(["connect", "claude-desktop", "--vault", str(vault)]) == 1
    assert "NaN is not a JSON number" in capsys.readouterr().err


def test_disconnect_says_the_server_is_gone_not_shown(tmp_path: Path, home: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for client in CLIENTS:
        assert main(["connect", client, "--vault", str(vault)]) == 0
        capsys.readouterr()
        assert main(["disconnect", client, "--json"]) == 0
        answer = json.loads(capsys.readouterr().out)
        assert answer["action"] == "removed" and answer["next"]
        assert client == "claude-desktop" or "no longer" in answer["next"], answer["next"]


@pytest.mark.parametrize("depth", [100_000, 600])
def test_a_config_nested_too_deep_is_refused_in_one_line_and_left_as_it_was(
        tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], depth: int) -> None:
    """100,000 levels do not parse in Python; 600 parse, but could not be written back (docs/clients.md)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    place = config_place("cursor")
    place.path.parent.mkdir(parents=True)
    text = '{"mcpServers": {}, "x": ' + "[" * depth + "]" * depth + "}"
    place.path.write_text(text, encoding="utf-8")
    for command in (["connect", "cursor", "--vault", str(vault)], ["disconnect", "cursor"]):
        assert main(command) == 1
        err = capsys.readouterr().err
        assert "nested more than 100 levels deep" in err and "nothing was changed" in err, err
        assert "Traceback" not in err and "internal error" not in err and len(err.strip().splitlines()) == 1
        assert place.path.read_text(encoding="utf-8") == text
        assert sorted(p.name for p in place.path.parent.iterdir()) == ["mcp.json"], "no backup, no temp file"
    shallow = '{"mcpServers": {}, "x": ' + "[" * 99 + "]" * 99 + "}"  # 100 levels with the outer object
    place.path.write_text(shallow, encoding="utf-8")
    assert main(["connect", "cursor", "--vault", str(vault)]) == 0
    capsys.readouterr()
    assert json.loads(place.path.read_text(encoding="utf-8"))["x"] == json.loads(shallow)["x"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system (Windows)")
def test_a_config_that_is_a_fifo_is_refused_without_waiting_on_it(tmp_path: Path, home: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    place = config_place("cursor")
    place.path.parent.mkdir(parents=True)
    os.mkfifo(place.path)
    assert main(["connect", "cursor", "--vault", str(vault)]) == 1  # no writer ever opens it: a read would block
    err = capsys.readouterr().err
    assert "not a regular file" in err and "nothing was changed" in err, err
    assert stat.S_ISFIFO(os.stat(place.path).st_mode)


def test_a_config_larger_than_the_bound_is_refused(tmp_path: Path) -> None:
    place = config_place("cursor", "linux", layout(tmp_path, "linux"))
    place.path.parent.mkdir(parents=True)
    text = '{"mcpServers": {}, "notes": "' + "x" * 200 + '"}'
    place.path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput, match="larger than 100 bytes"):
        add_entry(place, "vault-mem", server_entry("cursor", server_command(), tmp_path),
                  dataclasses.replace(LIMITS, client_config_bytes=100))
    assert place.path.read_text(encoding="utf-8") == text
