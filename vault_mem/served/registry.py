"""Vaults a person names once (docs/cli.md, "vault-mem vaults"): ``vault-mem vaults add work ~/work``
keeps the name and the folder in ``vaults.json``, in the user's configuration folder beside
``agents.json`` (served/keys.py:config_dir), and ``--vault work`` then means that folder on every
command.

    {"version": 1, "vaults": {"work": {"path": "/home/you/work", "added": "2026-12-07T10:00:00Z"}}}

The vaults are kept in the order they were added (``serve`` with no ``--vault`` serves them in
that order). The file is written atomically and owner-only, as agents.json is, one change at a
time. A file that is not one vault-mem wrote (not JSON, a key twice, a name that is not a vault
name, a folder that is not absolute, one folder under two names) is refused with a message that
says the file and what is wrong, and is never rewritten: ``vaults add`` and ``vaults remove``
stop too, so a hand-edited file is never lost.
"""

from __future__ import annotations

import datetime as dt
import json
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput, NotFound
from vault_mem.served.keys import config_dir, locked_file, save_private
from vault_mem.settings import Settings
from vault_mem.vault.strictjson import DuplicateKey, no_duplicates

FILE_NAME = "vaults.json"
ADD = "vault-mem vaults add NAME DIR"


@dataclass(frozen=True)
class Registered:
    """One registered vault: its name, its folder (absolute), when it was added."""

    name: str
    path: Path
    added: str

    def public(self) -> dict[str, Any]:
        """What ``vaults list --json`` shows of it."""
        return {"name": self.name, "path": str(self.path), "exists": self.path.is_dir(), "added": self.added}


def registry_file() -> Path:
    return config_dir() / FILE_NAME


def _damaged(path: Path, what: str) -> InvalidInput:
    return InvalidInput("vaults", f"the list of named vaults {path} {what}: fix it, or move it away and "
                                  f"register the vaults again ({ADD}); vault-mem does not rewrite a file it "
                                  "cannot read")


def _read(path: Path) -> dict[str, Any] | None:
    """The file's JSON object; None when there is no file."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise _damaged(path, "is not a regular file")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise _damaged(path, "is not UTF-8 text") from None
    except OSError as exc:
        raise InvalidInput("vaults", f"the list of named vaults {path} cannot be read "
                                     f"({exc.strerror or exc})") from None
    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except DuplicateKey as dup:
        raise _damaged(path, f"has the key {json.dumps(dup.key)} twice in one object") from None
    except (ValueError, RecursionError):
        raise _damaged(path, "is not valid JSON") from None
    if not isinstance(data, dict):
        raise _damaged(path, "is not a JSON object")
    return data


def _entries(path: Path, data: dict[str, Any]) -> dict[str, Registered]:
    from vault_mem.served.vaults import is_vault_name

    if data.get("version") != 1:
        raise _damaged(path, f"has version {json.dumps(data.get('version'))}, not 1 (a newer vault-mem may "
                             "have written it)")
    vaults = data.get("vaults")
    if not isinstance(vaults, dict):
        raise _damaged(path, "has no \"vaults\" object")
    found: dict[str, Registered] = {}
    folders: dict[str, str] = {}
    for name, item in vaults.items():
        if not is_vault_name(name):
            raise _damaged(path, f"names a vault {json.dumps(name)[:90]}, which is not a vault name")
        folder = item.get("path") if isinstance(item, dict) else None
        if not isinstance(folder, str) or not folder or "\x00" in folder or not Path(folder).is_absolute():
            raise _damaged(path, f"gives vault {name!r} no absolute folder (\"path\")")
        root = Path(folder)
        same = _resolved(root)
        if same in folders:
            raise _damaged(path, f"names the folder {root} twice ({folders[same]!r} and {name!r})")
        folders[same] = name
        added = item.get("added")
        found[name] = Registered(name, root, added if isinstance(added, str) else "")
    return found


def _resolved(root: Path) -> str:
    try:
        return str(root.resolve())
    except (OSError, RuntimeError):
        return str(root)


def registered() -> dict[str, Registered]:
    """Every registered vault, by name, in the order added ({} when none is); InvalidInput when
    the file is damaged."""
    path = registry_file()
    data = _read(path)
    return {} if data is None else _entries(path, data)


def _data_of(path: Path) -> dict[str, Any]:
    data = _read(path)
    if data is None:
        return {"version": 1, "vaults": {}}
    _entries(path, data)  # refused, untouched, when damaged
    return data


def add_vault(name: str, folder: Path, *, config: Settings) -> tuple[Registered, bool]:
    """Register the vault ``folder`` (it must exist) as ``name``: (its entry, whether it is new;
    False when it was registered so already). InvalidInput for a bad name, a name taken by
    another folder, a folder registered under another name."""
    from vault_mem.served.vaults import check_vault_name
    from vault_mem.vault.walk import check_vault

    check_vault_name(name, "NAME")
    root = check_vault(folder.expanduser())
    path = registry_file()
    with locked_file(path, config, "vaults"):
        data = _data_of(path)
        entries = _entries(path, data)
        known = entries.get(name)
        if known is not None:
            if _resolved(known.path) == _resolved(root):
                return known, False
            raise InvalidInput("NAME", f"{name!r} is already the name of {known.path}: remove it first "
                                       f"(vault-mem vaults remove {name}) or choose another name")
        other = next((e.name for e in entries.values() if _resolved(e.path) == _resolved(root)), None)
        if other is not None:
            raise InvalidInput("DIR", f"{root} is registered already, as {other!r}: a folder has one name "
                                      f"(vault-mem vaults remove {other} first to rename it)")
        added = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        data["vaults"][name] = {"path": str(root), "added": added}
        save_private(path, data, "the list of named vaults", sort_keys=False)
        return Registered(name, root, added), True


def remove_vault(name: str, *, config: Settings) -> Registered:
    """Forget the name ``name`` (the folder and its files are left as they are); NotFound when no
    vault has that name."""
    from vault_mem.served.vaults import check_vault_name

    check_vault_name(name, "NAME")
    path = registry_file()
    with locked_file(path, config, "vaults"):
        data = _data_of(path)
        entries = _entries(path, data)
        if name not in entries:
            raise NotFound(f"no vault is named {name!r} ({registered_names(entries)})")
        del data["vaults"][name]
        save_private(path, data, "the list of named vaults", sort_keys=False)
        return entries[name]


def registered_names(entries: dict[str, Registered]) -> str:
    """ "registered: work, home" or "none is registered: vault-mem vaults add NAME DIR" """
    if not entries:
        return f"no vault is registered: {ADD} names one"
    return "registered: " + ", ".join(entries) + "; vault-mem vaults list shows their folders"
