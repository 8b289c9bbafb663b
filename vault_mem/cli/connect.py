"""``connect`` and ``disconnect``: this install as an MCP server in a client's own config."""

from __future__ import annotations

import argparse
import os
import re
import shlex
from pathlib import Path
from typing import Any

from vault_mem import settings
from vault_mem.cli.app import Command, register
from vault_mem.cli.common import checked, named_folders, print_json, resolve_vault, say, vault_values
from vault_mem.clients.configs import (
    CLIENTS,
    GONE_STEP,
    NEXT_STEP,
    Change,
    add_entry,
    config_place,
    remove_entry,
    server_command,
    server_entry,
    snippet,
)
from vault_mem.errors import InvalidInput

DEFAULT_NAME = "vault-mem"
_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


def _client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("client", metavar="CLIENT", choices=CLIENTS, help="one of " + ", ".join(CLIENTS))
    parser.add_argument("--name", default=None, metavar="NAME",
                        help=f"the server's name in the client's config (default {DEFAULT_NAME}, or "
                             f"{DEFAULT_NAME}-AGENT with --agent); one per vault to connect several")


def connect_options(parser: argparse.ArgumentParser) -> None:
    _client_options(parser)
    parser.add_argument("--agent", default=None, metavar="AGENT",
                        help="the client acts as this agent, with the limits of its key (serve --agent; "
                             "vault-mem agents add; docs/sharing.md)")
    parser.add_argument("--print", action="store_true", dest="print_only",
                        help="print the entry (or the claude command) instead of writing it")


def disconnect_options(parser: argparse.ArgumentParser) -> None:
    _client_options(parser)
    parser.add_argument("--agent", default=None, metavar="AGENT",
                        help=f"the agent the entry was connected as (its default name is {DEFAULT_NAME}-AGENT)")


def _name(args: argparse.Namespace) -> str:
    agent = getattr(args, "agent", None)
    name = args.name or (f"{DEFAULT_NAME}-{agent}" if agent else DEFAULT_NAME)
    if not _NAME.fullmatch(name):
        raise InvalidInput("--name", f"{name!r} is not a server name: use 1-64 letters, digits, '.', '_', '-'")
    return str(name)


def _connect_vaults(args: argparse.Namespace) -> Path | dict[str, Path]:
    """What the entry serves: one folder as ``--vault PATH`` (one ``--vault`` given as a folder, or
    ``$VAULT_MEM_VAULT``), else the vaults by name: ``--vault`` repeated (``NAME=PATH``, a folder or a
    registered name), one ``NAME=PATH`` or registered name, or, with no ``--vault`` and no
    ``$VAULT_MEM_VAULT``, every vault ``vault-mem vaults add`` named. Each folder absolute. A folder
    that does not exist yet is refused when the entry would be written (the client could only show
    a failed server), but ``--print`` prints the entry anyway, saying on stderr to make the folder
    first (docs/clients.md)."""
    from vault_mem.errors import VaultUnavailable

    values = vault_values(args)
    env = os.environ.get("VAULT_MEM_VAULT")
    if len(values) == 1 or (not values and env):
        value = values[0] if values else str(env)
        try:
            name, folder, registered = resolve_vault(value)
        except VaultUnavailable:  # neither a folder nor a name: the message lists the names there are
            if not args.print_only:
                raise
            name, folder, registered = None, Path(value).expanduser(), False
        if folder.exists():
            root = checked(folder, name if registered else None)
        else:
            root = folder.absolute()
            _missing(args, root)
        return root if name is None else {name: root}
    found = named_folders(values, env, check=False)
    for _, root, exists in found:
        if not exists:
            _missing(args, root)
    return {name: root for name, root, _ in found}


def _missing(args: argparse.Namespace, folder: Path) -> None:
    """A vault folder not made yet: refused, unless ``--print`` (then stderr says to make it)."""
    if not args.print_only:
        raise InvalidInput("--vault", f"{folder} does not exist: make the vault's folder first "
                           f"(mkdir -p {shlex.quote(str(folder))}), or name the folder of your vault, "
                           "or pass --print to see the entry") from None
    say(f"{folder} does not exist yet: make it (mkdir -p {shlex.quote(str(folder))}) before the client "
        "starts the server")


def _check_agent(args: argparse.Namespace, vaults: Path | dict[str, Path]) -> str | None:
    """The ``--agent`` to serve as, once it is known to have a key on each vault (else serve would
    refuse to start, or serve a vault the agent cannot reach, and the client would only show a
    failed server or a vault it cannot see)."""
    from vault_mem.served.keys import list_agents

    if args.agent is None:
        return None
    roots = {"": vaults} if isinstance(vaults, Path) else vaults
    for name, root in roots.items():
        if not root.is_dir():
            continue
        known = sorted(entry.agent.name for entry in list_agents(root))
        if args.agent not in known:
            have = ", ".join(known) if known else "none yet"
            which = "this vault" if len(roots) == 1 else f"the vault {name!r} ({root})"
            raise InvalidInput("--agent", f"{args.agent!r} has no key on {which} (agents: {have}); add one "
                               f"with: vault-mem agents add {args.agent} --vault {root}"
                               + ("" if len(roots) == 1 else " (--key-stdin to give it the key it has)"))
    return str(args.agent)


def _report(args: argparse.Namespace, answer: dict[str, Any], line: str) -> int:
    if args.json:
        print_json(answer)
    else:
        say(line)
        if answer.get("backup"):
            say(f"the file as it was is kept in {answer['backup']}")
        if answer.get("rewritten"):
            say(answer["rewritten"])
        if answer.get("next"):
            say(f"next: {answer['next']}")
    return 0


def _change_answer(change: Change, name: str, next_step: str | None) -> dict[str, Any]:
    return {"status": "ok", "client": change.place.client, "name": name, "config": str(change.place.path),
            "action": change.action, "backup": str(change.backup) if change.backup else None,
            "rewritten": change.rewritten, "next": next_step if change.action not in ("unchanged", "absent") else None}


def cmd_connect(args: argparse.Namespace) -> int:
    from vault_mem.clients.claude_code import claude_command, mcp_add

    config = settings.current()
    name = _name(args)
    vaults = _connect_vaults(args)
    agent = _check_agent(args, vaults)
    command = server_command()
    place = config_place(args.client)
    entry = server_entry(args.client, command, vaults, agent)
    claude = claude_command() if args.client == "claude-code" else None
    if args.print_only:
        if claude is not None:
            text = shlex.join([claude, "mcp", "add", "--scope", "user", name, "--", entry["command"], *entry["args"]])
            where = "run"
        else:
            text, where = snippet(place, name, entry), f"merge into {place.path}"
        if args.json:
            print_json({"status": "ok", "client": args.client, "name": name, "config": str(place.path),
                        "print": text})
        else:
            say(f"{where}:")
            print(text)
        return 0
    if claude is not None:
        said = mcp_add(claude, name, [entry["command"], *entry["args"]], timeout=config.claude_cli_timeout)
        answer = {"status": "ok", "client": args.client, "name": name, "config": "claude mcp (user scope)",
                  "action": "added", "backup": None, "next": NEXT_STEP[args.client], "message": said}
        return _report(args, answer, f"added {name} with 'claude mcp add --scope user'")
    change = add_entry(place, name, entry, config)
    answer = _change_answer(change, name, NEXT_STEP[args.client])
    verb = {"added": "added", "replaced": "replaced", "unchanged": "already had"}[change.action]
    return _report(args, answer, f"{verb} {name} ({shlex.join([entry['command'], *entry['args']])}) in {place.path}")


def cmd_disconnect(args: argparse.Namespace) -> int:
    from vault_mem.clients.claude_code import claude_command, mcp_remove

    config = settings.current()
    name = _name(args)
    claude = claude_command() if args.client == "claude-code" else None
    if claude is not None:
        removed, said = mcp_remove(claude, name, timeout=config.claude_cli_timeout)
        answer = {"status": "ok", "client": args.client, "name": name, "config": "claude mcp (user scope)",
                  "action": "removed" if removed else "absent", "backup": None,
                  "next": GONE_STEP[args.client] if removed else None, "message": said}
        return _report(args, answer, f"removed {name} with 'claude mcp remove'" if removed
                       else f"'claude mcp remove' removed nothing: {said}")
    change = remove_entry(config_place(args.client), name, config)
    line = (f"removed {name} from {change.place.path}" if change.action == "removed"
            else f"{change.place.path} has no server named {name}; nothing was changed")
    return _report(args, _change_answer(change, name, GONE_STEP[args.client]), line)


register(Command(
    name="connect",
    summary="add this vault to an MCP client's config: claude-desktop, claude-code, cursor, vscode",
    description="Write this install's absolute command and the vault into the client's own config file at "
                "its place on this system (macOS, Windows, Linux; docs/clients.md), merged into what is "
                "there: other servers are kept, the file as it was is saved beside it first (with the file's "
                "own permissions), the result is valid JSON with every number spelled as it was. A file that "
                "does not parse, or holds a key twice in one object, is never overwritten: the command stops "
                "and says where the error is. claude-code uses 'claude mcp add --scope user' when the claude command "
                "is installed. --print shows the entry instead. Then restart the client. Several vaults: "
                "--vault given more than once (NAME=PATH, a folder, or a vault's name from 'vault-mem vaults "
                "add') writes one entry whose server serves them all, each folder absolute and each name kept; "
                "with no --vault and no $VAULT_MEM_VAULT, the entry serves every named vault.",
    examples=("vault-mem connect claude-desktop --vault ~/notes",
              "vault-mem connect claude-desktop --vault work=~/work --vault home=~/notes",
              "vault-mem connect claude-code --vault ~/notes",
              "vault-mem connect cursor --vault ~/work-notes --name work-notes",
              "vault-mem connect claude-desktop --vault ~/notes --agent coder",
              "vault-mem connect vscode --vault ~/notes --print"),
    run=cmd_connect, add_options=connect_options, several_vaults=True,
))

register(Command(
    name="disconnect",
    summary="remove the vault-mem entry from an MCP client's config",
    description="Take the server entry (default vault-mem, or --name NAME) out of the client's config, "
                "the same way connect put it there: a backup first, everything else kept; claude-code "
                "uses 'claude mcp remove --scope user' when the claude command is installed.",
    examples=("vault-mem disconnect claude-desktop", "vault-mem disconnect cursor --name work-notes"),
    run=cmd_disconnect, add_options=disconnect_options, uses_vault=False,
))
