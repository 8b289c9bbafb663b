"""Where each client keeps its MCP servers, and adding or removing one entry there safely.

    config_place(client, system, env)     the file and the key holding its servers
    server_entry(client, command, vault)  what the entry holds: this install's absolute command and
                                          the vault (or the vaults, by name: one entry for all)
    add_entry(place, name, entry, limits)     merge into the file: a backup first, other servers kept
    remove_entry(place, name, limits)         take the one entry out, the same way

The files are JSON; one that does not parse (a trailing comma, a comment), that holds a
key twice in one object, or NaN/Infinity, that is nested deeper than ``client_config_depth`` or
larger than ``client_config_bytes``, or that is not a regular file (a FIFO is never opened to
wait on), is never rewritten: InvalidInput says the file and what is wrong. Numbers are
written back as they were spelled (``1e400`` stays ``1e400``). Every write is atomic, and the
file's previous bytes are kept beside it as ``<name>.<UTC time>.bak`` first, with the file's
own permission bits (it may hold a token).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput
from vault_mem.settings import Settings
from vault_mem.vault.portable import read_regular
from vault_mem.vault.strictjson import DuplicateKey, no_duplicates
from vault_mem.vault.writer import atomic_write

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")
NEXT_STEP = {
    "claude-desktop": "quit Claude Desktop completely (Claude > Quit on macOS, the tray icon on Windows) "
                      "and start it again: it reads the file only at start",
    "claude-code": "start a new Claude Code session; 'claude mcp list' shows the server",
    "cursor": "in Cursor, Settings > MCP: toggle the server off and on (or restart Cursor)",
    "vscode": "in VS Code, run 'MCP: List Servers' and start the server (or reload the window)",
}
# After disconnect: the client still runs the server it started until it reads its config again.
GONE_STEP = {
    "claude-desktop": NEXT_STEP["claude-desktop"],
    "claude-code": "start a new Claude Code session; 'claude mcp list' no longer shows the server",
    "cursor": "in Cursor, Settings > MCP no longer lists the server once Cursor is restarted",
    "vscode": "in VS Code, reload the window: 'MCP: List Servers' no longer lists the server",
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
    rewritten: str | None = None  # what of the file's layout the rewrite did not keep, when any


@dataclass(frozen=True)
class Number:
    """A JSON number as the file spells it: written back as it was (``1e400`` would become
    ``inf``, then ``Infinity``, which is not JSON; a 5,000-digit integer would not parse)."""

    text: str


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


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


def server_entry(client: str, command: list[str], vault: Path | Mapping[str, Path],
                 agent: str | None = None) -> dict[str, Any]:
    """The client's entry for ``serve --vault VAULT``, or, given vaults by name, ``serve --vault
    NAME=DIR`` for each, in order: one server for all of them (with ``--agent AGENT``: that agent's
    limits)."""
    entry: dict[str, Any] = {"type": "stdio"} if client in ("vscode", "claude-code") else {}
    as_agent = ["--agent", agent] if agent is not None else []
    if isinstance(vault, Path):
        vaults = ["--vault", str(vault)]
    else:
        vaults = [word for name, root in vault.items() for word in ("--vault", f"{name}={root}")]
    entry |= {"command": command[0], "args": [*command[1:], "serve", *vaults, *as_agent]}
    return entry


def read_config(place: Place, config_limits: Settings) -> tuple[dict[str, Any], bytes | None]:
    """(the config as parsed, its bytes); ({}, None) when the file does not exist yet; ``config_limits``:
    the settings that bound what is read (``client_config_bytes``, ``client_config_depth``)."""
    try:
        data = read_regular(place.path, config_limits.client_config_bytes, chunk=config_limits.read_chunk)
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        raise InvalidInput("CLIENT", f"{place.path} cannot be read ({exc.strerror or exc}); "
                           "nothing was changed") from None
    if not data.strip():
        return {}, data
    try:
        text = data.decode("utf-8-sig")
        config = json.loads(text, object_pairs_hook=no_duplicates, parse_float=Number, parse_int=Number,
                            parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise InvalidInput("CLIENT", f"{place.path} is not UTF-8 text; nothing was changed") from None
    except RecursionError:
        config = None  # deeper than Python parses: said below, as any file too deep
    except json.JSONDecodeError as exc:
        raise InvalidInput("CLIENT", f"{place.path} does not parse as JSON at line {exc.lineno}, column "
                           f"{exc.colno} ({exc.msg}); nothing was changed: fix the file (comments and "
                           "trailing commas are not JSON), or use --print and add the entry by hand") from None
    except DuplicateKey as dup:
        raise InvalidInput("CLIENT", f"{place.path} has the key {json.dumps(dup.key, ensure_ascii=False)} twice "
                           f"in one object{_lines_of(text, dup.key)}; a client reads only the last one, so "
                           "what the first holds is ignored already: merge the two into one, then run this "
                           "again (or use --print and add the entry by hand); nothing was changed") from None
    except ValueError as exc:  # NaN or Infinity: Python reads them, no client does
        raise InvalidInput("CLIENT", f"{place.path} holds {exc}; nothing was changed: fix the file, or use "
                           "--print and add the entry by hand") from None
    if config is None or _deeper_than(config, config_limits.client_config_depth):
        raise InvalidInput("CLIENT", f"{place.path} is nested more than {config_limits.client_config_depth} levels "
                           "deep, which no client's config is; nothing was changed: fix the file, or use --print "
                           "and add the entry by hand")
    if not isinstance(config, dict):
        raise InvalidInput("CLIENT", f"{place.path} holds a JSON {type(config).__name__}, not an object; "
                           "nothing was changed")
    servers = config.get(place.key, {})
    if not isinstance(servers, dict):
        raise InvalidInput("CLIENT", f"{place.path}: {place.key!r} is not an object of servers; nothing was changed")
    return config, data


def _deeper_than(value: Any, depth: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``depth`` levels deep (walked without
    recursion: ``dumps`` writes it back by recursion, one level a call)."""
    level: list[Any] = [value]
    for _ in range(depth):
        level = [child for v in level if isinstance(v, dict | list)
                 for child in (v.values() if isinstance(v, dict) else v)]
        if not level:
            return False
    return any(isinstance(v, dict | list) for v in level)


def _lines_of(text: str, key: str) -> str:
    """ " (lines 3 and 9)": where ``key`` is spelled as a key, when it is spelled plainly."""
    spelled = re.compile(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:")
    lines = [str(text.count("\n", 0, m.start()) + 1) for m in spelled.finditer(text)]
    return f" (lines {', '.join(lines[:-1])} and {lines[-1]})" if len(lines) >= 2 else ""


def dumps(value: Any, level: int = 0) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, with each Number as it was spelled, and
    a string holding a lone surrogate (``"\\ud800"`` in the file) escaped, as UTF-8 cannot hold it."""
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(value, Number):
        return value.text
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = (f"{inner}{dumps(str(k))}: {dumps(v, level + 1)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(f"{inner}{dumps(v, level + 1)}" for v in value) + f"\n{pad}]"
    if isinstance(value, str) and any("\ud800" <= ch <= "\udfff" for ch in value):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False)


def _write(place: Place, config: dict[str, Any], before: bytes | None,
           limits: Settings) -> tuple[Path | None, str | None]:
    """Write ``config``: first the file as it was to a backup with the file's own permission bits,
    then the new text over it atomically (atomic_write keeps the bits of the file it replaces).
    Returns (the backup, what of the old layout was not kept)."""
    backup, rewritten = None, None
    if before is not None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        backup = place.path.with_name(f"{place.path.name}.{stamp}.bak")
        atomic_write(backup, before, mode=stat.S_IMODE(os.stat(place.path).st_mode), config=limits)
        rewritten = _layout_change(before)
    place.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(place.path, (dumps(config) + "\n").encode("utf-8"), config=limits)
    return backup, rewritten


def _layout_change(before: bytes) -> str | None:
    """What the rewrite does not keep of the file as it was (every value is kept): None when the
    file was already laid out as connect writes it."""
    try:
        text = before.decode("utf-8-sig")
        again = dumps(json.loads(text, object_pairs_hook=no_duplicates, parse_float=Number, parse_int=Number))
    except (ValueError, DuplicateKey):
        return None  # read_config refused it already
    if again.strip() == text.strip():
        return None
    bom = "byte order mark, " if before.startswith(b"\xef\xbb\xbf") else ""
    return (f"the file's layout ({bom}indentation, spacing, escapes such as \\u00e9) was not kept: it is "
            "written as 2-space JSON; every key, value and number is kept as it was")


def add_entry(place: Place, name: str, entry: dict[str, Any], limits: Settings) -> Change:
    config, before = read_config(place, limits)
    servers = config.get(place.key, {})
    if servers.get(name) == entry:
        return Change(place, "unchanged")
    action = "replaced" if name in servers else "added"
    config[place.key] = {**servers, name: entry}
    return Change(place, action, *_write(place, config, before, limits))


def remove_entry(place: Place, name: str, limits: Settings) -> Change:
    config, before = read_config(place, limits)
    servers = config.get(place.key, {})
    if name not in servers:
        return Change(place, "absent")
    config[place.key] = {k: v for k, v in servers.items() if k != name}
    return Change(place, "removed", *_write(place, config, before, limits))


def snippet(place: Place, name: str, entry: dict[str, Any]) -> str:
    return json.dumps({place.key: {name: entry}}, indent=2, ensure_ascii=False)
