"""``vault-mem ui``: the page for people (vault_mem/ui/, docs/ui.md) on a local port, opened in
the browser with a one-time login link (``--no-browser``: the link is printed on stdout, its
first line). Loopback only unless ``--token`` and ``--allowed-host`` are given, as for serve.
``--vault`` is repeatable (``NAME=DIR``, docs/ui.md "Several vaults"): one page for several vaults,
each with its own index and runtime, the first given the default."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from vault_mem.cli.app import Command, port_number, register
from vault_mem.cli.common import named_vaults, open_index, say
from vault_mem.errors import InvalidInput

if TYPE_CHECKING:
    from vault_mem.search.api import VaultIndex
    from vault_mem.served.context import Vault


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vault", action="append", default=argparse.SUPPRESS, metavar="[NAME=]PATH",
                        help="a vault folder, named NAME (default: after its folder), or the name 'vault-mem "
                             "vaults add' gave a vault; repeatable: one page for several vaults, the first the "
                             "default (default: $VAULT_MEM_VAULT, else every named vault)")
    parser.add_argument("--index-dir", type=Path, default=argparse.SUPPRESS, metavar="PATH",
                        help="where the index lives, with one vault (default: <vault>/.vault-mem, or the user's "
                             "cache folder when the vault is read-only; with several, each vault's own)")
    parser.add_argument("--yes", action="store_true", default=argparse.SUPPRESS,
                        help="index a folder that does not look like a vault (/, the home folder, or over 50,000 "
                             "Markdown files without .obsidian) without asking")
    parser.add_argument("--host", default="127.0.0.1", metavar="ADDRESS",
                        help="bind address (default 127.0.0.1; any other needs --token and --allowed-host)")
    parser.add_argument("--port", type=port_number, default=None, metavar="1..65535",
                        help="port (default: a free one)")
    parser.add_argument("--token", default=None, metavar="SECRET",
                        help="a secret that logs in as the vault's owner on the login form (default: "
                             "$VAULT_MEM_TOKEN); without it only the one-time link does")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help="a host name browsers use to reach a non-loopback bind (repeatable)")
    parser.add_argument("--no-browser", action="store_true",
                        help="do not open a browser: print the one-time login link on stdout (its first line)")


def given_vaults(args: argparse.Namespace) -> list[str]:
    """What ``--vault`` gave, before the command's name (``vault-mem --vault X ui``: one) or after
    it (repeatable)."""
    given = getattr(args, "vault", None)
    if isinstance(given, list):
        return [str(value) for value in given]
    return [str(given)] if given else []


def cmd_ui(args: argparse.Namespace) -> int:
    from vault_mem.mcp_server.transports import check_http_options, is_loopback

    roots = named_vaults(given_vaults(args), os.environ.get("VAULT_MEM_VAULT"))
    if len(roots) > 1 and getattr(args, "index_dir", None) is not None:
        raise InvalidInput("--index-dir", "--index-dir names one vault's index: with several vaults each keeps "
                                          "its own (give --index-dir only with one --vault)")
    token = args.token or os.environ.get("VAULT_MEM_TOKEN") or None
    port = args.port or _free_port(args.host)
    check_http_options(args.host, port, token, args.allowed_host)

    import uvicorn

    from vault_mem.runtime.lifecycle import Runtime
    from vault_mem.served.context import Vault
    from vault_mem.served.keys import KeyRing
    from vault_mem.served.vaults import Served
    from vault_mem.ui.web import Page

    indexes: list[VaultIndex] = []
    runtimes: list[Runtime] = []
    vaults: dict[str, Vault] = {}
    try:
        for name, root in roots.items():  # each vault its own index and runtime, each built in the background
            indexes.append(open_index(args, root, doing="show it"))
            runtimes.append(Runtime(indexes[-1]))
            runtimes[-1].start()
            vaults[name] = Vault(root, indexes[-1], health=runtimes[-1])
        served = Served(vaults, next(iter(vaults)))  # as over HTTP: the first given is the default
        page = Page(served, {name: KeyRing(vault.root) for name, vault in vaults.items()}, token,
                    args.allowed_host, port)
        shown = "127.0.0.1" if args.host in ("0.0.0.0", "::", "[::]") else args.host
        shown = f"[{shown.strip('[]')}]" if ":" in shown else shown
        link = page.login_link(f"http://{shown}:{port}")
        which = (str(next(iter(roots.values()))) if len(roots) == 1
                 else "the vaults " + ", ".join(f"{name} ({root})" for name, root in roots.items()))

        def announce() -> None:
            """Once the page answers: the link (printed, or opened in a browser) and where it is."""
            if args.no_browser:
                print(link, flush=True)
            say(f"the page of {which} at http://{shown}:{port}/ (one-time login link: {link}); Ctrl-C to stop")
            if not is_loopback(args.host):
                say("reachable from other machines: log in there with --token or an agent key")
            if not args.no_browser:
                import webbrowser

                if not webbrowser.open(link):
                    say("no browser could be opened: open the link above")

        class Announcing(uvicorn.Server):
            """Says where the page is only once it listens: a request made the moment the link
            is printed is answered (docs/ui.md)."""

            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets=sockets)
                if self.started and not self.should_exit:
                    announce()

        config = uvicorn.Config(page, host=args.host.strip("[]"), port=port, log_level="warning", access_log=False,
                                log_config=None)
        Announcing(config).run()
    finally:
        for runtime in runtimes:
            runtime.stop()
        for index in indexes:
            with contextlib.suppress(Exception):  # one that fails to close must not keep the others open
                index.close()
    return 0


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host.strip("[]"), 0))
            return int(probe.getsockname()[1])
    except OSError as exc:
        raise InvalidInput("--host", f"cannot listen on {host}: {exc.strerror or exc}") from None


register(Command(
    name="ui",
    summary="a page in the browser: what agents changed (with diffs), undo, inboxes, search",
    description="Serve the vault's page for people on this machine and open it in the browser with a "
                "one-time login link: every change agents made, newest first, with its diff and an undo "
                "for one change or an agent's window (a person's later edit is left alone); the notes "
                "waiting in each agent's inbox; search and read-only notes; the agents and their limits. "
                "With several --vault, one page for them all and a switcher between them. "
                "serve --http serves the same page at /. See docs/ui.md.",
    examples=("vault-mem ui --vault ~/notes", "vault-mem ui --vault ~/notes --no-browser --port 8770",
              "vault-mem ui --vault work=~/work --vault home=~/notes"),
    run=cmd_ui, add_options=add_options, has_json=False, uses_vault=False,
))
