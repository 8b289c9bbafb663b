"""Agent keys: one per agent and vault, kept as a SHA-256 hash in the user's configuration
folder, never inside the vault (which git may carry to other machines). docs/sharing.md.

    $XDG_CONFIG_HOME/vault-mem/agents.json      when XDG_CONFIG_HOME is set (any platform)
    ~/.config/vault-mem/agents.json             Linux and other POSIX systems
    ~/Library/Application Support/vault-mem/    macOS
    %APPDATA%\\vault-mem\\                        Windows

The file is ``{"version": 1, "vaults": {RESOLVED_VAULT_PATH: {AGENT: {sha256, read, write,
read_only, created}}}}``, written atomically (a temporary file renamed over it), owner-only
on POSIX (0600 in a 0700 folder; on Windows the user profile's own ACL). A key is 32 random
bytes from ``secrets``: a plain hash is enough to keep it, because no one can guess 256
random bits; slow password hashes exist for secrets people choose. Keys are compared in
constant time (``hmac.compare_digest``) and never logged.

Keys are per vault: one agent may hold one key on several vaults (``agents add NAME --vault a
--vault b``, or ``--key-stdin`` to register on vault b the key it has on vault a), each vault
keeping its own globs for it; a key belongs to one agent, in every vault (docs/sharing.md, "One
key, several vaults").

A vault that has had keys stays **closed** when its last key goes: every HTTP request then
needs the shared token, until the owner runs ``agents open``. Three marks say so, and any one
of them keeps it closed: ``"closed": {VAULT: true}`` in the key file (``false`` once reopened),
a file ``.vault-mem/keyed`` in the vault, and the running server's memory of having seen keys.
So deleting or emptying the key file, serving from another configuration folder, or deleting
the vault's mark (all anyone with write access to the vault alone can do) opens nothing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput, NotFound, WriteFailed
from vault_mem.served.agents import Agent, check_agent_name, check_globs, resolve_globs
from vault_mem.settings import Settings
from vault_mem.vault.paths import INDEX_DIRNAME

FILE_NAME = "agents.json"
KEY_PREFIX = "vmk_"
KEY_FORM = re.compile(r"vmk_[A-Za-z0-9_-]{43}")  # KEY_PREFIX and token_urlsafe(32): 32 bytes in base64url
MARK_NAME = "keyed"  # in the vault's .vault-mem/: this vault has had agent keys


def config_dir() -> Path:
    """The user's vault-mem configuration folder (it may not exist yet)."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "vault-mem"
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        return Path(appdata) / "vault-mem" if appdata else Path.home() / "AppData" / "Roaming" / "vault-mem"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "vault-mem"
    return Path.home() / ".config" / "vault-mem"


def key_file() -> Path:
    return config_dir() / FILE_NAME


def vault_key(root: Path) -> str:
    """How the file names a vault: its resolved absolute path."""
    return str(root.resolve())


def vault_mark(root: Path) -> Path:
    """The vault's own mark that it has had agent keys (docs/sharing.md, "Closed")."""
    return root / INDEX_DIRNAME / MARK_NAME


def _mark_vault(root: Path) -> None:
    """Leave the vault's mark; a vault that cannot be written keeps only the key file's."""
    mark = vault_mark(root)
    with contextlib.suppress(OSError):
        if not mark.is_file():
            mark.parent.mkdir(exist_ok=True)
            mark.write_text("This vault has had agent keys: HTTP requests need a key or the token until\n"
                            "its owner runs `vault-mem agents open` (docs/sharing.md).\n", encoding="utf-8")


def _closed_flag(data: dict[str, Any], root: Path) -> bool | None:
    """The key file's word on this vault: True closed, False reopened by its owner, None silent."""
    flags = data.get("closed")
    flag = flags.get(vault_key(root)) if isinstance(flags, dict) else None
    return flag if isinstance(flag, bool) else None


def _set_closed(data: dict[str, Any], root: Path, closed: bool) -> None:
    flags = data.get("closed")
    if not isinstance(flags, dict):
        flags = data["closed"] = {}
    flags[vault_key(root)] = closed


def hashed(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Entry:
    agent: Agent
    sha256: str
    created: str

    def public(self) -> dict[str, Any]:
        """What ``agents list`` shows: never the hash."""
        return {"agent": self.agent.name, "read": list(self.agent.read) or ["**"],
                "write": list(self.agent.write) or ["**"], "read_only": self.agent.read_only,
                "created": self.created}


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"version": 1, "vaults": {}}
    except OSError as exc:
        raise InvalidInput("agents", f"the agent key file {path} cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise InvalidInput("agents", f"the agent key file {path} is not valid JSON: fix it or move it "
                                     "away (every key in it is then lost)") from None
    if not isinstance(data, dict) or not isinstance(data.get("vaults"), dict):
        raise InvalidInput("agents", f"the agent key file {path} is not one vault-mem wrote: move it away")
    return data


def _entries(data: dict[str, Any], root: Path) -> dict[str, Entry]:
    found: dict[str, Entry] = {}
    agents = data["vaults"].get(vault_key(root)) or {}
    for name, item in agents.items() if isinstance(agents, dict) else ():
        if not isinstance(item, dict) or not isinstance(item.get("sha256"), str):
            continue
        agent = Agent(str(name), tuple(item.get("read") or ()), tuple(item.get("write") or ()),
                      bool(item.get("read_only")))
        found[str(name)] = Entry(agent, item["sha256"], str(item.get("created", "")))
    return found


def _save(path: Path, data: dict[str, Any]) -> None:
    save_private(path, data, "the agent key file", sort_keys=True)


def save_private(path: Path, data: dict[str, Any], what: str, *, sort_keys: bool) -> None:
    """Write ``data`` as JSON over ``path`` atomically (a temporary file renamed over it), owner-only;
    ``what`` names the file in the error (WriteFailed) when it cannot be written."""
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.name == "posix":
            os.chmod(folder, 0o700)
        fd, temp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=folder)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=2, sort_keys=sort_keys)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    except OSError as exc:
        raise WriteFailed(f"cannot write {what} {path}: {exc.strerror or exc}") from exc


def _locked(path: Path, config: Settings) -> contextlib.AbstractContextManager[None]:
    """One change of the key file at a time (two `agents add` at once would lose one key)."""
    return locked_file(path, config, "agents")


@contextlib.contextmanager
def locked_file(path: Path, config: Settings, command: str) -> Iterator[None]:
    """One change of the configuration file ``path`` at a time: a ``.lock`` file beside it, made
    exclusively; ``command`` names the vault-mem command that holds it, in the message."""
    lock = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(f"cannot create the configuration folder {path.parent}: {exc.strerror or exc}") from exc
    deadline = time.monotonic() + config.keys_lock_wait
    while True:
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            break
        except FileExistsError:
            with contextlib.suppress(OSError):
                if time.time() - lock.stat().st_mtime > config.keys_lock_stale:
                    os.unlink(lock)
                    continue
            if time.monotonic() > deadline:
                raise WriteFailed(f"another vault-mem {command} command holds {lock}; if none runs, delete "
                                  "that file", retry=True) from None
            time.sleep(config.keys_lock_poll)
        except OSError as exc:
            raise WriteFailed(f"cannot lock {path}: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)


def list_agents(root: Path) -> list[Entry]:
    return sorted(_entries(_load(key_file()), root).values(), key=lambda e: e.agent.name)


def add_agent(root: Path, name: str, read: list[str], write: list[str], read_only: bool, *,
              config: Settings) -> tuple[Entry, str]:
    """A new key for ``name`` on the vault ``root``: (its entry, the key, shown only this once)."""
    entries, key = add_agents([root], name, read, write, read_only, config=config)
    return entries[0], key


def add_agents(roots: Sequence[Path], name: str, read: list[str], write: list[str], read_only: bool, *,
               config: Settings, key: str | None = None) -> tuple[list[Entry], str]:
    """One key for ``name`` on each vault of ``roots``, with the same globs (each resolved in its own
    vault): (its entries, in order, and the key). A new key is made unless ``key`` is given: a key
    the agent already has (``agents add --key-stdin``), which must have the form of one and be no
    other agent's key, in any vault. All or nothing: when the agent has a key on one of the vaults
    already, nothing is written."""
    check_agent_name(name)
    reads = check_globs(read, "--read", config.max_globs)
    writes = check_globs(write, "--write", config.max_globs)
    agents = [Agent(name, resolve_globs(root, reads, "--read"), resolve_globs(root, writes, "--write"), read_only)
              for root in roots]
    if key is not None:
        check_key(key)
    path = key_file()
    with _locked(path, config):
        return _add(path, list(zip(roots, agents, strict=True)), key)


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_length() -> int:
    """How many characters a key has (every key has as many)."""
    return len(new_key())


def check_key(key: str) -> str:
    """``key`` when it has the form of an agent key; InvalidInput, never quoting it, otherwise."""
    if not KEY_FORM.fullmatch(key):
        raise InvalidInput("--key-stdin", "what was read is not an agent key (it is not shown): a key is 'vmk_' "
                                          "and 43 letters, digits, '-' or '_', one line, as 'vault-mem agents add' "
                                          "printed it")
    return key


def _add(path: Path, pairs: list[tuple[Path, Agent]], given: str | None) -> tuple[list[Entry], str]:
    data = _load(path)
    several = len(pairs) > 1
    for root, agent in pairs:
        if agent.name in _entries(data, root):
            where = f"the vault {root}" if several else "this vault"
            raise InvalidInput("NAME", f"agent {agent.name!r} already has a key for {where}: remove it first "
                                       f"(vault-mem agents remove {agent.name}) to issue a new one"
                                       + ("; nothing was added" if several else ""))
    key = given if given is not None else new_key()
    digest = hashed(key)
    if given is not None:
        _check_key_is_free(data, pairs[0][1].name, digest, [root for root, _ in pairs])
    created = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for root, agent in pairs:
        agents = data["vaults"].setdefault(vault_key(root), {})
        agents[agent.name] = {"sha256": digest, "read": list(agent.read), "write": list(agent.write),
                              "read_only": agent.read_only, "created": created}
        _set_closed(data, root, True)
    _save(path, data)
    for root, _ in pairs:
        _mark_vault(root)
    return [Entry(agent, digest, created) for _, agent in pairs], key


def _check_key_is_free(data: dict[str, Any], name: str, digest: str, roots: list[Path]) -> None:
    """A key given to ``agents add --key-stdin`` is one agent's, everywhere: refused when another
    agent holds it, in one of ``roots`` or in any other vault of the file."""
    targets = {vault_key(root) for root in roots}
    for vault, agents in data["vaults"].items():
        for other, item in agents.items() if isinstance(agents, dict) else ():
            stored = item.get("sha256") if isinstance(item, dict) else None
            if other == name or not isinstance(stored, str) or not hmac.compare_digest(stored, digest):
                continue
            where = "of this vault" if vault in targets else f"of another vault ({vault})"
            raise InvalidInput("--key-stdin", f"this key is the key of agent {other!r} {where}: a key belongs to "
                                              "one agent; give this agent its own key (agents add without "
                                              "--key-stdin), or register the key under that agent's name")


def remove_agent(root: Path, name: str, *, config: Settings) -> Entry:
    return remove_agents([root], name, config=config)[0]


def remove_agents(roots: Sequence[Path], name: str, *, config: Settings) -> list[Entry]:
    """Take ``name``'s key off each vault of ``roots``: all or nothing (NotFound, naming the vault,
    when one has no key of that name)."""
    path = key_file()
    with _locked(path, config):
        return _remove(path, roots, name)


def _remove(path: Path, roots: Sequence[Path], name: str) -> list[Entry]:
    data = _load(path)
    removed = []
    for root in roots:
        entries = _entries(data, root)
        if name not in entries:
            known = ", ".join(sorted(entries)) or "none"
            where = f"the vault {root}" if len(roots) > 1 else "this vault"
            raise NotFound(f"agent {name!r} has no key for {where} (agents with keys: {known})"
                           + ("; nothing was removed" if len(roots) > 1 else ""))
        removed.append(entries[name])
    for root in roots:
        agents = data["vaults"][vault_key(root)]
        del agents[name]
        if not agents:
            del data["vaults"][vault_key(root)]
        _set_closed(data, root, True)  # the last key gone: closed until `agents open`
    _save(path, data)
    return removed


def is_closed(root: Path) -> bool:
    """Whether the vault has had keys and has not been reopened (with or without keys now)."""
    data = _load(key_file())
    return bool(_entries(data, root)) or _closed_flag(data, root) is True or os.path.lexists(vault_mark(root))


def open_vault(root: Path, *, config: Settings) -> bool:
    """Reopen a vault whose keys are all gone: without a token, HTTP requests act as its owner
    again. False when it was not closed; InvalidInput while it still has keys."""
    path = key_file()
    with _locked(path, config):
        data = _load(path)
        left = sorted(_entries(data, root))
        if left:
            raise InvalidInput("agents", f"this vault still has agent keys ({', '.join(left)}): remove them "
                                         "first (vault-mem agents remove NAME); a vault with keys is never open")
        mark = vault_mark(root)
        was = _closed_flag(data, root) is True or os.path.lexists(mark)
        try:
            mark.unlink(missing_ok=True)
        except OSError as exc:
            raise WriteFailed(f"cannot remove {mark} ({exc.strerror or exc}): the vault stays closed") from exc
        _set_closed(data, root, False)
        _save(path, data)
        return was


class KeyRing:
    """The agent keys of one vault, as the server checks them: re-read when the file changes,
    so that ``agents add`` and ``agents remove`` take effect without a restart."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._entries: dict[str, Entry] = {}
        self._flag: bool | None = None  # the key file's closed flag for this vault
        self._had_keys = False  # this process has seen the vault closed: only `agents open` clears it
        if self._current():
            _mark_vault(root)  # a vault keyed before the mark existed gets it now

    def _current(self) -> dict[str, Entry]:
        path = key_file()
        try:
            info = path.stat()
            stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                try:
                    data = _load(path) if stamp is not None else {"vaults": {}}
                    self._entries, self._flag = _entries(data, self.root), _closed_flag(data, self.root)
                except InvalidInput:
                    # A damaged file must not open the vault to anyone: keep refusing unknown keys.
                    self._entries = {name: Entry(e.agent, "", e.created) for name, e in self._entries.items()}
                    self._flag = None
                self._stamp = stamp
                if self._entries or self._flag is True:
                    self._had_keys = True
                elif self._flag is False:  # its owner ran `agents open`
                    self._had_keys = False
            return self._entries

    def closed(self) -> bool:
        """Whether every HTTP request needs a key or the token: the vault has keys, or had them
        and its owner has not reopened it (any one of the three marks: module docstring)."""
        if self._current() or self._had_keys:
            return True
        return os.path.lexists(vault_mark(self.root))

    def any(self) -> bool:
        """Whether this vault has agent keys (then every HTTP request needs a key or the token)."""
        return bool(self._current())

    def agent_for(self, key: str) -> Agent | None:
        """The agent whose key is ``key``, compared in constant time with every stored hash."""
        given = hashed(key)
        found = None
        for entry in self._current().values():
            if entry.sha256 and hmac.compare_digest(given, entry.sha256):
                found = entry.agent
        return found

    def named(self, name: str) -> Agent | None:
        entry = self._current().get(name)
        return entry.agent if entry is not None else None

    def still(self, name: str, sha256: str | None) -> Agent | None:
        """The agent ``name`` while its key is still the one whose hash is ``sha256`` (a page session
        opened with a key ends with that key: a new key of the same name does not revive it)."""
        entry = self._current().get(name)
        if entry is None or not sha256 or not entry.sha256 or not hmac.compare_digest(entry.sha256, sha256):
            return None
        return entry.agent
