"""``vault-mem agents add|list|remove|open``: the agent keys of a vault (served/keys.py,
docs/sharing.md). This only parses and prints."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from vault_mem import settings
from vault_mem.cli.app import PROG, Command, register
from vault_mem.cli.common import named_vaults, print_json, say, vault_root, vault_values
from vault_mem.cli.output import table
from vault_mem.errors import InvalidInput

if TYPE_CHECKING:
    from vault_mem.served.keys import Entry

ACTIONS = ("add", "list", "remove", "open")


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", default="list", choices=ACTIONS, metavar="add|list|remove|open",
                        help="add a key, list the keys (the default), remove one, or open a vault whose last "
                             "key was removed (without a --token, HTTP requests then act as its owner)")
    parser.add_argument("name", nargs="?", default=None, metavar="NAME",
                        help="the agent's name (letters, digits, . _ -): what it passes as `agent`")
    parser.add_argument("--read", action="append", default=[], metavar="GLOB",
                        help="with add: a folder or glob the agent may read (repeatable; default: the whole "
                             "vault); notes outside are absent from all its answers")
    parser.add_argument("--write", action="append", default=[], metavar="GLOB",
                        help="with add: a folder or glob the agent may write (repeatable; default: whatever "
                             "it may read)")
    parser.add_argument("--read-only", action="store_true",
                        help="with add: the agent may not write at all; write tools are not listed to it")
    parser.add_argument("--key-stdin", action="store_true",
                        help="with add: register the key the agent already has (from 'agents add' on another "
                             "vault), read as one line from standard input and never shown, instead of making "
                             "a new one")


def _open(args: argparse.Namespace, root: Path, config: settings.Settings) -> int:
    from vault_mem.served import keys

    if args.name:
        raise InvalidInput("NAME", "'agents open' takes no name; it opens the whole vault")
    was = keys.open_vault(root, config=config)
    if args.json:
        print_json({"status": "ok", "vault": keys.vault_key(root), "closed": False, "was_closed": was})
    else:
        say(f"{root} is open" + (" again" if was else "") + ": an HTTP request without a "
            "credential acts as the vault's owner unless the server has a --token; on a server running now "
            "this takes effect at the next request")
    return 0


def _vaults(args: argparse.Namespace) -> dict[str, Path]:
    """The vaults the command is about: one (``vault_root``: as before several existed, under the
    name "") or several by name (``--vault`` given more than once; ``agents list`` alone: every
    named vault). Only ``list`` takes every named vault by default: a key is added or removed
    only where a --vault says."""
    from vault_mem.served.registry import registered

    values = vault_values(args)
    if len(values) > 1:
        return named_vaults(values, None)
    if not values and not os.environ.get("VAULT_MEM_VAULT") and args.action == "list" and registered():
        return named_vaults([], None)
    return {"": vault_root(args)}


def _read_key() -> str:
    """The key on standard input: one line, or typed without echo at a terminal."""
    from vault_mem.served.keys import key_length

    stream = sys.stdin
    if stream is None or stream.closed:
        raise InvalidInput("--key-stdin", "there is no standard input to read the key from: pipe it in")
    if stream.isatty():
        import getpass

        text = getpass.getpass("the agent's key (not shown): ")
    else:
        text = stream.readline(2 * key_length())
    key = text.strip()
    if not key:
        raise InvalidInput("--key-stdin", "standard input held no key: pipe in the key the agent has, e.g. "
                                          "from your password manager")
    return key


def cmd_agents(args: argparse.Namespace) -> int:
    from vault_mem.served import keys

    config = settings.current()
    if args.action != "add":
        for given, option in ((args.read, "--read"), (args.write, "--write"), (args.read_only, "--read-only"),
                              (args.key_stdin, "--key-stdin")):
            if given:
                raise InvalidInput(option, f"only 'agents add' takes {option}: remove the key and add it again "
                                           "to change what an agent may do")
    vaults = _vaults(args)
    if len(vaults) > 1:
        return _several(args, vaults, config)
    root = next(iter(vaults.values()))
    if args.action == "open":
        return _open(args, root, config)
    if args.action in ("add", "remove") and not args.name:
        raise InvalidInput("NAME", f"'agents {args.action}' needs the agent's name: "
                                   f"{PROG} agents {args.action} NAME --vault {root}")
    if args.action == "list":
        if args.name:
            raise InvalidInput("NAME", "'agents list' takes no name; it lists every agent of the vault")
        entries = keys.list_agents(root)
        closed = keys.is_closed(root)
        if args.json:
            print_json({"status": "ok", "vault": keys.vault_key(root), "file": str(keys.key_file()),
                        "closed": closed, "agents": [e.public() for e in entries]})
        elif not entries and closed:
            say(f"no agent keys for {root}, and it is closed: it has had keys, so every HTTP request needs "
                f"the shared --token ({PROG} agents open --vault {root} reopens it)")
        elif not entries:
            say(f"no agent keys for {root}: HTTP clients use the shared --token, if any "
                f"({PROG} agents add NAME makes one)")
        else:
            rows = [(e.agent.name, ", ".join(e.public()["read"]), ", ".join(e.public()["write"]),
                     "yes" if e.agent.read_only else "no", e.created) for e in entries]
            print("\n".join(table(("agent", "read", "write", "read-only", "created"), rows, flexible=(2, 1))))
        return 0
    if args.action == "remove":
        entry = keys.remove_agent(root, args.name, config=config)
        left = len(keys.list_agents(root))
        if args.json:
            print_json({"status": "ok", "removed": entry.agent.name, "vault": keys.vault_key(root),
                        "agents_left": left, "closed": True})
        else:
            say(f"removed the key of agent {entry.agent.name!r}: requests with it are refused from now on"
                + ("" if left else f"; no key is left and the vault stays closed: HTTP requests need the shared "
                                   f"--token until {PROG} agents open --vault {root}"))
        return 0
    given = _read_key() if args.key_stdin else None
    entries, key = keys.add_agents([root], args.name, args.read, args.write, args.read_only, config=config,
                                   key=given)
    entry = entries[0]
    if args.json:
        print_json({"status": "ok", "agent": entry.agent.name, **({"key": key} if given is None else {}),
                    "vault": keys.vault_key(root), **{k: v for k, v in entry.public().items() if k != "agent"}})
        return 0
    if given is not None:
        say(f"the key agent {entry.agent.name!r} already has now reaches {root} too ({_limits(entry)})")
        return 0
    say(f"a key for agent {entry.agent.name!r} on {root} ({_limits(entry)}). It is shown only this once: put it "
        "in the agent's client config as 'Authorization: Bearer KEY' (docs/sharing.md)")
    print(key, file=sys.stdout, flush=True)
    return 0


def _limits(entry: Entry) -> str:
    public = entry.public()
    return (f"reads {', '.join(public['read'])}; "
            + ("writes nothing" if entry.agent.read_only else f"writes {', '.join(public['write'])}"))


def _several(args: argparse.Namespace, vaults: dict[str, Path], config: settings.Settings) -> int:
    """``agents add|list|remove`` on several vaults at once (docs/sharing.md, "One key, several
    vaults"): one key on each, listed per vault, removed from each; all or nothing."""
    from vault_mem.served import keys

    if args.action == "open":
        raise InvalidInput("--vault", f"'agents open' opens one vault at a time: {PROG} agents open --vault VAULT")
    if args.action == "list":
        if args.name:
            raise InvalidInput("NAME", "'agents list' takes no name; it lists every agent of each vault")
        listed = [(name, root, keys.list_agents(root), keys.is_closed(root)) for name, root in vaults.items()]
        if args.json:
            print_json({"status": "ok", "file": str(keys.key_file()),
                        "vaults": [{"name": name, "vault": keys.vault_key(root), "closed": closed,
                                    "agents": [e.public() for e in entries]}
                                   for name, root, entries, closed in listed]})
            return 0
        blocks = []
        for name, root, entries, closed in listed:
            rows = [(e.agent.name, ", ".join(e.public()["read"]), ", ".join(e.public()["write"]),
                     "yes" if e.agent.read_only else "no", e.created) for e in entries]
            body = (table(("agent", "read", "write", "read-only", "created"), rows, flexible=(2, 1)) if rows
                    else ["no agent keys" + (" (closed: it has had keys)" if closed else "")])
            blocks.append("\n".join([f"{name}: {root}", *body]))
        print("\n\n".join(blocks))
        return 0
    if not args.name:
        raise InvalidInput("NAME", f"'agents {args.action}' needs the agent's name: "
                                   f"{PROG} agents {args.action} NAME --vault A --vault B")
    roots = list(vaults.values())
    if args.action == "remove":
        removed = keys.remove_agents(roots, args.name, config=config)
        if args.json:
            print_json({"status": "ok", "removed": removed[0].agent.name, "closed": True,
                        "vaults": [{"name": name, "vault": keys.vault_key(root),
                                    "agents_left": len(keys.list_agents(root))} for name, root in vaults.items()]})
        else:
            say(f"removed the key of agent {args.name!r} from {', '.join(vaults)}: requests with it are refused "
                "there from now on")
        return 0
    given = _read_key() if args.key_stdin else None
    entries, key = keys.add_agents(roots, args.name, args.read, args.write, args.read_only, config=config, key=given)
    if args.json:
        print_json({"status": "ok", "agent": args.name, **({"key": key} if given is None else {}),
                    "vaults": [{"name": name, "vault": keys.vault_key(root),
                                **{k: v for k, v in entry.public().items() if k != "agent"}}
                               for (name, root), entry in zip(vaults.items(), entries, strict=True)]})
        return 0
    where = "; ".join(f"{name} ({_limits(entry)})" for name, entry in zip(vaults, entries, strict=True))
    if given is not None:
        say(f"the key agent {args.name!r} already has now reaches {where}")
        return 0
    say(f"one key for agent {args.name!r} on {len(entries)} vaults: {where}. It is shown only this once: put it in "
        "the agent's client config as 'Authorization: Bearer KEY' (docs/sharing.md)")
    print(key, file=sys.stdout, flush=True)
    return 0


register(Command(
    name="agents",
    summary="give each agent its own key, and limit what it may read and write",
    description="Keys for agents sharing the vault over HTTP: each request with a key acts as its agent, "
                "which may read and write only what its globs allow (a folder such as 'projects/' or a glob "
                "such as 'projects/**/*.md'). The key is shown once and kept only as a hash in your "
                "configuration folder, never in the vault. Once a vault has keys, an HTTP request needs a "
                "key or the shared --token, even on loopback, and it stays so when the last key is removed, "
                "until 'agents open'. 'serve --agent NAME' gives a stdio client "
                "the same limits. Keys are per vault: --vault given more than once adds one key to each "
                "vault (the same globs, the key printed once), lists each vault's agents, or removes the key "
                "from each (all or nothing); --key-stdin registers on a vault the key the agent already has "
                "on another, with that vault's own globs. 'agents list' with no --vault lists every vault "
                "named with 'vault-mem vaults add'. See docs/sharing.md.",
    examples=("vault-mem agents add coder --vault ~/notes --read projects/ --write projects/acme/",
              "vault-mem agents add reviewer --vault ~/notes --read-only --json",
              "vault-mem agents add coder --vault work --vault home --read projects/",
              "vault-mem agents add coder --vault home --read-only --key-stdin < coder.key",
              "vault-mem agents list --vault ~/notes",
              "vault-mem agents remove coder --vault ~/notes",
              "vault-mem agents open --vault ~/notes"),
    run=cmd_agents, add_options=add_options, several_vaults=True,
))
