"""``vault-mem sync`` and serve's git options (``--git-commit``, ``--sync-every``): the command
line of docs/git.md. The sync itself is git/sync.py; this only parses and prints."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vault_mem import settings
from vault_mem.cli.app import PROG, Command, register
from vault_mem.cli.common import print_json, say, vault_root
from vault_mem.cli.output import visible


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds: give 1..86400") from None
    if not 1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{text} is out of range: give 1..86400 seconds")
    return value


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--git-commit", action="store_true",
                        help="in a git vault, commit each write tool's change, authored by the calling agent "
                             "(docs/git.md)")
    parser.add_argument("--sync-every", type=seconds, default=None, metavar="SECONDS",
                        help="in a git vault, run `vault-mem sync` every SECONDS in the background (default: off)")


def start_serve_options(args: argparse.Namespace, root: Path) -> None:
    """Say what --git-commit and --sync-every will do, and start the sync loop."""
    if not (args.git_commit or args.sync_every):
        return
    from vault_mem.git.repo import Repo

    if Repo.find(root, settings.current()) is None:
        say(f"warning: {root} is not a git work tree: --git-commit and --sync-every do nothing (see docs/git.md)")
        return
    if args.git_commit:
        say("each write tool's change becomes a git commit, authored by the calling agent")
    if args.sync_every:
        from vault_mem.runtime.syncloop import SyncLoop

        SyncLoop(root, args.sync_every, config=settings.current()).start()
        say(f"syncing with git every {args.sync_every:g} s")


def cmd_sync(args: argparse.Namespace) -> int:
    """One sync; exit 0 synced, 1 not finished (the lines say why), 3 synced with conflicted copies."""
    from vault_mem.git.sync import sync_vault

    root = vault_root(args)
    result = sync_vault(root, config=settings.current())
    lines = result.lines or ["nothing to do"]
    if args.json:
        print_json({"status": "ok" if result.complete else "error", "complete": result.complete,
                    "committed": result.committed, "pushed": result.pushed, "lines": lines,
                    "conflicts": [{"note": note, "copy": copy} for note, copy in result.conflicts]})
    for line in lines:
        print(f"{PROG}: {visible(line)}", file=sys.stderr)
    _reindex(args, root)
    return result.exit_code


def _reindex(args: argparse.Namespace, root: Path) -> None:
    """Keep an existing index (and the conflicted copies in it) current; never build one here."""
    from vault_mem.search.api import VaultIndex, has_index, sync, usable_index_dir

    given = getattr(args, "index_dir", None)
    if has_index(root, given):
        index = VaultIndex(root, usable_index_dir(root, given), config=settings.current())
        if not index.needs_build():
            sync(index)


register(Command(
    name="sync",
    summary="git vaults: commit changed notes, fetch, integrate, push",
    description="Share the vault through git (docs/git.md): commit every changed, new or deleted note "
                "(only notes: never .vault-mem/ or your staged work), fetch the branch's upstream, bring it "
                "in, push; never --force. A note changed on both sides keeps the remote version and yours "
                "is written beside it as '<name> (conflict <host> <date>).md', one line each; no conflict "
                "marker lands in a note. Exit status: 0 synced, 1 not finished (the lines say why: not a "
                "git repository, no remote, no network, a rejected push...), 3 synced with conflicted "
                "copies to resolve.",
    examples=("vault-mem sync --vault ~/notes",
              "vault-mem sync --vault ~/notes --json"),
    run=cmd_sync,
))
