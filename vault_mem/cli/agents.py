"""``vault-mem agents add|list|remove|open``: the agent keys of a vault (served/keys.py,
docs/sharing.md). This only parses and prints."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vault_mem import settings
from vault_mem.cli.app import PROG, Command, register
from vault_mem.cli.common import print_json, say, vault_root
from vault_mem.cli.output import table
from vault_mem.errors import InvalidInput

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


def cmd_agents(args: argparse.Namespace) -> int:
    from vault_mem.served import keys

    config = settings.current()
    root = vault_root(args)
    if args.action != "add":
        for given, option in ((args.read, "--read"), (args.write, "--write"), (args.read_only, "--read-only")):
            if given:
                raise InvalidInput(option, f"only 'agents add' takes {option}: remove the key and add it again "
                                           "to change what an agent may do")
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
    entry, key = keys.add_agent(root, args.name, args.read, args.write, args.read_only, config=config)
    if args.json:
        print_json({"status": "ok", "agent": entry.agent.name, "key": key, "vault": keys.vault_key(root),
                    **{k: v for k, v in entry.public().items() if k != "agent"}})
        return 0
    public = entry.public()
    say(f"a key for agent {entry.agent.name!r} on {root} (reads {', '.join(public['read'])}; "
        + ("writes nothing" if entry.agent.read_only else f"writes {', '.join(public['write'])}")
        + "). It is shown only this once: put it in the agent's client config as "
          "'Authorization: Bearer KEY' (docs/sharing.md)")
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
                "the same limits. See docs/sharing.md.",
    examples=("vault-mem agents add coder --vault ~/notes --read projects/ --write projects/acme/",
              "vault-mem agents add reviewer --vault ~/notes --read-only --json",
              "vault-mem agents list --vault ~/notes",
              "vault-mem agents remove coder --vault ~/notes",
              "vault-mem agents open --vault ~/notes"),
    run=cmd_agents, add_options=add_options,
))
