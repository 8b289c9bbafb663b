"""Where each client keeps its MCP servers, and adding or removing one entry there safely.

    config_place(client, system, env)     the file and the key holding its servers
    server_entry(client, command, vault)  what the entry holds: this install's absolute command
    add_entry(place, name, entry)         merge into the file: a backup first, other servers kept
    remove_entry(place, name)             take the one entry out, the same way

The files are JSON; one that does not parse (a trailing comma, a comment) is never
rewritten: InvalidInput says the file, line and column. Every write is atomic, and the
file's previous bytes are kept beside it as ``<name>.<UTC time>.bak`` first.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.vault.writer import atomic_write

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")
NEXT_STEP = {
    "claude-desktop": "quit Claude Desktop completely (Claude > Quit on macOS, the tray icon on Windows) "
                      "and start it again: it reads the file only at start",
    "claude-code": "start a new Claude Code session; 'claude mcp list' shows vault-mem",
    "cursor": "in Cursor, Settings > MCP: toggle vault-mem off and on (or restart Cursor)",
    "vscode": "in VS Code, run 'MCP: List Servers' and start vault-mem (or reload the window)",
}


@dataclass(frozen=True)
class Place:
    client: str
    path: Path
    key: str  # the top-level key that maps server names to entries


@dataclass
class Change:
    place: Place
    action: str  # added | replaced | unchanged | removed | absent
    backup: Path | None = None


def home_of(system: str, env: Mapping[str, str]) -> Path:
    given = env.get("USERPROFILE") if system == "win32" else env.get("HOME")
    return Path(given) if given else Path.home()


def _app_data(system: str, env: Mapping[str, str]) -> Path:
    """The folder desktop apps keep their settings in, per system."""
    home = home_of(system, env)
    if system == "darwin":
        return home / "Library" / "Application Support"
    if system == "win32":
        return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"


def config_place(client: str, system: str = sys.platform, env: Mapping[str, str] | None = None) -> Place:
    """The config file of ``client`` on ``system`` (``darwin``, ``win32``, else Linux)."""
    env = os.environ if env is None else env
    if client == "claude-desktop":
        return Place(client, _app_data(system, env) / "Claude" / "claude_desktop_config.json", "mcpServers")
    if client == "vscode":
        return Place(client, _app_data(system, env) / "Code" / "User" / "mcp.json", "servers")
    if client == "cursor":
        return Place(client, home_of(system, env) / ".cursor" / "mcp.json", "mcpServers")
    if client == "claude-code":  # user scope, when the claude command is not there to write it
        return Place(client, home_of(system, env) / ".claude.json", "mcpServers")
    raise InvalidInput("CLIENT", f"{client!r} is not a client vault-mem knows; use one of {', '.join(CLIENTS)}")


def server_command() -> list[str]:
    """This install's absolute command: the ``vault-mem`` script beside the running Python, else
    ``python -m vault_mem`` (the interpreter's path as it is, so that a virtualenv stays one)."""
    script = Path(sys.executable).parent / ("vault-mem.exe" if os.name == "nt" else "vault-mem")
    if script.is_file():
        return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "vault_mem"]


def server_entry(client: str, command: list[str], vault: Path, agent: str | None = None) -> dict[str, Any]:
    """The client's entry for ``serve --vault VAULT`` (with ``--agent AGENT``: that agent's limits)."""
    entry: dict[str, Any] = {"type": "stdio"} if client in ("vscode", "claude-code") else {}
    as_agent = ["--agent", agent] if agent is not None else []
    entry |= {"command": command[0], "args": [*command[1:], "serve", "--vault", str(vault), *as_agent]}
    return entry


def read_config(place: Place) -> tuple[dict[str, Any], bytes | None]:
    """(the config as parsed, its bytes); ({}, None) when the file does not exist yet."""
    try:
        data = place.path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        raise InvalidInput("CLIENT", f"{place.path} cannot be read ({exc.strerror or exc}); "
                           "nothing was changed") from None
    if not data.strip():
        return {}, data
    try:
        config = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InvalidInput("CLIENT", f"{place.path} is not UTF-8 text; nothing was changed") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput("CLIENT", f"{place.path} does not parse as JSON at line {exc.lineno}, column "
                           f"{exc.colno} ({exc.msg}); nothing was changed: fix the file (comments and "
                           "trailing commas are not JSON), or use --print and add the entry by hand") from None
    if not isinstance(config, dict):
        raise InvalidInput("CLIENT", f"{place.path} holds a JSON {type(config).__name__}, not an object; "
                           "nothing was changed")
    servers = config.get(place.key, {})
    if not isinstance(servers, dict):
        raise InvalidInput("CLIENT", f"{place.path}: {place.key!r} is not an object of servers; nothing was changed")
    return config, data


def _write(place: Place, config: dict[str, Any], before: bytes | None) -> Path | None:
    backup = None
    if before is not None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        backup = place.path.with_name(f"{place.path.name}.{stamp}.bak")
        atomic_write(backup, before)
    place.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(place.path, (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return backup


def add_entry(place: Place, name: str, entry: dict[str, Any]) -> Change:
    config, before = read_config(place)
    servers = config.get(place.key, {})
    if servers.get(name) == entry:
        return Change(place, "unchanged")
    action = "replaced" if name in servers else "added"
    config[place.key] = {**servers, name: entry}
    return Change(place, action, _write(place, config, before))


def remove_entry(place: Place, name: str) -> Change:
    config, before = read_config(place)
    servers = config.get(place.key, {})
    if name not in servers:
        return Change(place, "absent")
    config[place.key] = {k: v for k, v in servers.items() if k != name}
    return Change(place, "removed", _write(place, config, before))


def snippet(place: Place, name: str, entry: dict[str, Any]) -> str:
    return json.dumps({place.key: {name: entry}}, indent=2, ensure_ascii=False)
