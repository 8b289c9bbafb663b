"""``vault-mem vaults add|list|remove``: vaults a person names once (served/registry.py), so that
``--vault NAME`` means the folder on every command and ``serve`` alone serves them all. This only
parses and prints."""

from __future__ import annotations

import argparse
from pathlib import Path

from vault_mem import settings
from vault_mem.cli.app import PROG, Command, register
from vault_mem.cli.common import print_json, say
from vault_mem.cli.output import table
from vault_mem.errors import InvalidInput

ACTIONS = ("add", "list", "remove")


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", default="list", choices=ACTIONS, metavar="add|list|remove",
                        help="name a vault, list the named vaults (the default), or forget a name")
    parser.add_argument("name", nargs="?", default=None, metavar="NAME",
                        help="the vault's name: 1 to 64 letters, digits, '-', '_' or '.', starting with a letter, "
                             "digit or '_'")
    parser.add_argument("folder", nargs="?", default=None, metavar="DIR",
                        help="with add: the vault's folder (it must exist; kept as an absolute path)")


def cmd_vaults(args: argparse.Namespace) -> int:
    from vault_mem.served import registry

    if args.action != "add" and args.folder is not None:
        raise InvalidInput("DIR", f"only 'vaults add' takes a folder: {PROG} vaults {args.action}"
                                  + (" NAME" if args.action == "remove" else ""))
    if args.action == "list":
        if args.name:
            raise InvalidInput("NAME", "'vaults list' takes no name; it lists every named vault")
        entries = registry.registered()
        if args.json:
            print_json({"status": "ok", "file": str(registry.registry_file()),
                        "vaults": [entry.public() for entry in entries.values()]})
        elif not entries:
            say(f"no vault is named yet: {PROG} vaults add NAME DIR names one")
        else:
            rows = [(e.name, str(e.path), "yes" if e.path.is_dir() else "no (missing)") for e in entries.values()]
            print("\n".join(table(("name", "folder", "exists"), rows, flexible=(1,))))
        return 0
    if not args.name:
        usage = "NAME DIR" if args.action == "add" else "NAME"
        raise InvalidInput("NAME", f"'vaults {args.action}' needs the vault's name: "
                                   f"{PROG} vaults {args.action} {usage}")
    config = settings.current()
    if args.action == "remove":
        entry = registry.remove_vault(args.name, config=config)
        if args.json:
            print_json({"status": "ok", "removed": entry.name, "path": str(entry.path)})
        else:
            say(f"forgot the name {entry.name!r} ({entry.path}); the folder, its notes, its index and its agent "
                "keys are left as they are")
        return 0
    if args.folder is None:
        raise InvalidInput("DIR", f"'vaults add' needs the vault's folder: {PROG} vaults add {args.name} DIR")
    entry, new = registry.add_vault(args.name, Path(args.folder), config=config)
    if args.json:
        print_json({"status": "ok", "action": "added" if new else "unchanged", **entry.public()})
    elif new:
        say(f"{entry.path} is the vault {entry.name!r}: '--vault {entry.name}' names it on every command, and "
            f"'{PROG} serve' with no --vault serves every named vault")
    else:
        say(f"{entry.path} was already the vault {entry.name!r}; nothing was changed")
    return 0


register(Command(
    name="vaults",
    summary="name your vaults once, then give --vault NAME on every command",
    description="Name a vault's folder once ('vaults add work ~/work'): then '--vault work' means that folder on "
                "every command, and 'serve' with no --vault and no $VAULT_MEM_VAULT serves every named vault, in "
                "the order they were added. The names are kept in vaults.json in your configuration folder, beside "
                "agents.json, never in a vault. A folder of the working directory whose name is the same as a "
                "vault's name comes first: '--vault work' is ./work when there is one, as it always was. "
                "'vaults remove' forgets a name and leaves the folder and its files as they are. A vaults.json "
                "that vault-mem did not write (not JSON, a bad name, a folder that is not absolute) is refused, "
                "never rewritten.",
    examples=("vault-mem vaults add work ~/work",
              "vault-mem vaults add home ~/notes",
              "vault-mem vaults list",
              "vault-mem vaults list --json",
              "vault-mem vaults remove home"),
    run=cmd_vaults, add_options=add_options, uses_vault=False,
))
