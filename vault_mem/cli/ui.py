"""``vault-mem ui``: the page for people (vault_mem/ui/, docs/ui.md) on a local port, opened in
the browser with a one-time login link (``--no-browser``: the link is printed on stdout, its
first line). Loopback only unless ``--token`` and ``--allowed-host`` are given, as for serve."""

from __future__ import annotations

import argparse
import os
import socket

from vault_mem.cli.app import Command, port_number, register
from vault_mem.cli.common import open_index, say, vault_root
from vault_mem.errors import InvalidInput


def add_options(parser: argparse.ArgumentParser) -> None:
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


def cmd_ui(args: argparse.Namespace) -> int:
    from vault_mem.mcp_server.transports import check_http_options, is_loopback

    root = vault_root(args)
    token = args.token or os.environ.get("VAULT_MEM_TOKEN") or None
    port = args.port or _free_port(args.host)
    check_http_options(args.host, port, token, args.allowed_host)
    index = open_index(args, root, doing="show it")

    import uvicorn

    from vault_mem.runtime.lifecycle import Runtime
    from vault_mem.served.context import Vault
    from vault_mem.served.keys import KeyRing
    from vault_mem.ui.web import Page

    runtime = Runtime(index)
    runtime.start()
    try:
        vault = Vault(root, index, health=runtime)
        page = Page(vault, KeyRing(root), token, args.allowed_host, port)
        shown = "127.0.0.1" if args.host in ("0.0.0.0", "::", "[::]") else args.host
        shown = f"[{shown.strip('[]')}]" if ":" in shown else shown
        link = page.login_link(f"http://{shown}:{port}")

        def announce() -> None:
            """Once the page answers: the link (printed, or opened in a browser) and where it is."""
            if args.no_browser:
                print(link, flush=True)
            say(f"the page of {root} at http://{shown}:{port}/ (one-time login link: {link}); Ctrl-C to stop")
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
        runtime.stop()
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
                "serve --http serves the same page at /. See docs/ui.md.",
    examples=("vault-mem ui --vault ~/notes", "vault-mem ui --vault ~/notes --no-browser --port 8770"),
    run=cmd_ui, add_options=add_options, has_json=False,
))
