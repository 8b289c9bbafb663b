"""``vault-mem serve``: every option checked before anything is announced, then the transport in
a thread so that Ctrl-C (or SIGTERM) stops it at once with one line.

The transports block where Python's own shutdown would wait (a thread reading stdin, an HTTP
event stream that stays open), so a stop ends the process directly once the watcher and the
index are closed. Files are never half-written by that: every write is a rename.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from vault_mem import __version__, settings
from vault_mem.cli.app import PROG, Command, port_number, register
from vault_mem.cli.common import named_vaults, open_index, say
from vault_mem.cli.gitsync import add_serve_options, start_serve_options
from vault_mem.cli.meaning import add_meaning_option, check_workers, open_meaning
from vault_mem.cli.workers import worker_count
from vault_mem.errors import InvalidInput
from vault_mem.mcp_server.cors import allowed_origins
from vault_mem.runtime import tuning
from vault_mem.served.agents import Agent
from vault_mem.served.keys import KeyRing, list_agents

TOKEN_ENV = "VAULT_MEM_TOKEN"  # the token by environment: kept out of argv, and how workers get it
# Seconds between two looks at the transport's thread: Ctrl-C reaches the main thread only between
# two timed joins, on every platform; any short pause does.
SIGNAL_POLL = 0.5

if TYPE_CHECKING:
    from vault_mem.mcp_server.app import Calls
    from vault_mem.mcp_server.workers import Seat


def add_options(parser: argparse.ArgumentParser) -> None:
    # serve's own --vault, repeatable, in place of the common one (a group made while the parser
    # resolves conflicts takes the option string over)
    parser.conflict_handler = "resolve"
    vaults = parser.add_argument_group("vaults")
    parser.conflict_handler = "error"
    vaults.add_argument("--vault", action="append", default=argparse.SUPPRESS, metavar="[NAME=]PATH",
                        help="the vault folder, or the name 'vault-mem vaults add' gave it (default: "
                             "$VAULT_MEM_VAULT, else every named vault); repeatable: several vaults served at "
                             "once, each named NAME= or after its folder (docs/vaults.md)")
    parser.add_argument("--http", action="store_true",
                        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", metavar="ADDRESS",
                        help="HTTP bind address (default 127.0.0.1; any other needs --token and --allowed-host)")
    parser.add_argument("--port", type=port_number, default=8765, metavar="1..65535",
                        help="HTTP port (default 8765)")
    parser.add_argument("--token", default=None, metavar="SECRET",
                        help="bearer token HTTP clients must send (default: $VAULT_MEM_TOKEN); it shows in the "
                             "process list: prefer --token-file or the variable")
    parser.add_argument("--token-file", default=None, metavar="PATH",
                        help="read the bearer token from this file (its one line; surrounding spaces and the "
                             "line end are dropped), keeping it out of the process list")
    parser.add_argument("--workers", type=worker_count, default=None, metavar="N",
                        help="with --http: N server processes on one port, each with its own index reader "
                             "(default: the number of cores); with 2 or more, worker 1 makes every write and "
                             "the others answer the clients; a legacy session stays on its worker")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help="a host name clients use to reach a non-loopback bind (repeatable)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="with --http: a web page's origin (scheme://host[:port], e.g. http://127.0.0.1:8080) "
                             "that may call /mcp from a browser, as browser-based MCP hosts do (repeatable; "
                             "none by default; each matched exactly; never '*')")
    parser.add_argument("--project", default=None, metavar="NAME",
                        help="the project whose project_shared and project_local memories recall includes "
                             "by default (default: $VAULT_MEM_PROJECT)")
    parser.add_argument("--agent", default=None, metavar="NAME",
                        help="stdio: the client acts as this agent, with the limits of its key (vault-mem "
                             "agents add; docs/sharing.md); over HTTP each agent sends its own key")
    parser.add_argument("--read-only", action="store_true",
                        help="serve no write tools at all (they are not listed, and a call to one is refused)")
    add_meaning_option(parser)
    parser.add_argument("--compat", action="store_true",
                        help="also serve get_memory(uid) and memory_get(memory_id), aliases of memory_read")
    add_serve_options(parser)


def cmd_serve(args: argparse.Namespace) -> int:
    config = settings.current()
    roots = served_roots(args)
    token = serve_token(args) if args.http else None
    args.allow_origin = allowed_origins(args.allow_origin)  # refused now, before anything is announced
    if len(roots) > 1 and getattr(args, "index_dir", None) is not None:
        raise InvalidInput("--index-dir", "applies to one vault: with several, each keeps its index in its own "
                                          "folder (<vault>/.vault-mem, or the cache when it is read-only)")
    indexes = {name: open_index(args, root, doing="serve it") for name, root in roots.items()}
    first = next(iter(roots))
    root, index = roots[first], indexes[first]
    seat = None
    if args.http:
        from vault_mem.mcp_server.transports import check_http_options
        from vault_mem.mcp_server.workers import keep_writing_to_the_terminal, seat_from_env

        seat = seat_from_env()  # one of `serve --workers N`: the parent checked the options and holds the port
        if seat is None:
            check_http_options(args.host, args.port, token, args.allowed_host)
        else:
            keep_writing_to_the_terminal()
            if seat.takes_writes:  # worker 1 of several: every write is made here
                tuning.writer_takes_writes_quickly(config)
            elif not seat.leads:
                tuning.serving_worker_gives_way(config)
    elif args.workers is not None:
        raise InvalidInput("--workers", "applies to --http only: a stdio server has one client")
    elif args.allow_origin:
        raise InvalidInput("--allow-origin", "applies to --http only: a browser cannot reach a stdio server")
    elif sys.stdin is None:
        say("error: serve over stdio needs a standard input: an MCP client starts it")
        return 1
    rings = {name: KeyRing(folder) for name, folder in roots.items()}
    keys = rings[first]
    reach = _stdio_reach(args, rings, roots)
    caller = next((agent for agent in reach.values() if agent is not None), None) if reach is not None else None
    url = f"http://{_url_host(args.host)}:{args.port}/mcp"
    check_workers(args)
    meaning = open_meaning(args, index)  # before serving: a model that cannot load is refused now
    meanings = {first: meaning, **{name: meaning.for_index(indexes[name].dir, config=config) for name in roots
                                   if name != first}} if meaning is not None else {}
    workers = args.workers or (1 if meaning is not None else os.cpu_count() or 1)
    if args.http and seat is None and workers > 1:
        from vault_mem.cli.workers import serve_workers

        for opened in indexes.values():
            opened.close()
        return serve_workers(args, workers, token, lambda: _say_serving(roots),
                             lambda: _say_http_all(roots, url, token, rings, args.allow_origin),
                             stop_wait=config.worker_stop_wait)

    from vault_mem.runtime.lifecycle import Runtime
    from vault_mem.search.api import present

    project = args.project or os.environ.get("VAULT_MEM_PROJECT") or None
    runtimes = {name: Runtime(opened, merges=seat is None or seat.leads, writes=seat is None or seat.leads)
                for name, opened in indexes.items()}
    with contextlib.ExitStack() as marks:
        for name, opened in indexes.items():
            marks.enter_context(present(opened.dir, "serve", transport="http" if args.http else "stdio",
                                        url=url if args.http else None, vault=str(roots[name]),
                                        **({"worker": seat.index + 1} if seat is not None else {}),
                                        **({"meaning": meaning.model.name} if meaning is not None else {})))
        # The watchers listen, and builds run, while the MCP SDK loads (about 2 s); the check of an
        # existing index starts once it is loaded. Each vault's runtime is its own: one still
        # building never holds the others' answers.
        loaded = threading.Event()
        for started in runtimes.values():
            started.start(check_after=loaded)
        try:
            if seat is not None:
                say(f"worker {seat.index + 1} of {seat.count} (pid {os.getpid()}) serving"
                    + ((": it makes the writes and runs the background merges and the git sync" if seat.count > 1
                        else ": it runs the background merges and the git sync") if seat.leads else ""))
            else:
                if args.read_only:
                    say("read-only: no write tools are served")
                _say_serving(roots)
            for name, opened in indexes.items():
                if seat is None or seat.leads:
                    say(f"index at {opened.dir}{_doing(opened)}")
                if name in meanings:
                    from vault_mem.runtime.meaning import start_embedding

                    chosen = meanings[name]
                    where = f" in {roots[name]}" if len(roots) > 1 else ""
                    say(f"ranking by meaning too, with {chosen.model.name}: {len(chosen.store):,} notes embedded"
                        f"{where}; the rest are embedded in the background once the index is ready")
                    start_embedding(chosen, roots[name], opened, runtimes[name].wait_ready)
            from vault_mem.mcp_server.app import Calls, build_server
            from vault_mem.mcp_server.delegate import Delegate
            from vault_mem.served.context import Vault
            from vault_mem.served.vaults import Served, default_vault

            vaults = {name: Vault(roots[name], opened, project=project, compat=args.compat, health=runtimes[name],
                                  git_commit=args.git_commit, meaning=meanings.get(name))
                      for name, opened in indexes.items()}
            served = Served(vaults, default_vault(roots, None if args.http else Path.cwd()))
            calls = Calls(served, args.read_only)
            # Of serve --workers N, worker 1 makes every write (mcp_server/delegate.py).
            delegate = (Delegate(seat.write_port, seat.secret, config=config) if seat is not None and not seat.leads
                        else None)
            server = build_server(served, caller=caller, read_only=args.read_only, calls=calls, delegate=delegate,
                                  reach=reach if served.several else None)
            loaded.set()
            if seat is None or not seat.takes_writes:  # worker 1 of several answers no reads
                from vault_mem.mcp_server.warm import warm_when_ready

                for name, vault in vaults.items():
                    warm_when_ready(vault, runtimes[name].wait_ready)
            run = _transport(args, server, url, token, root, rings if served.several else keys, caller, seat, calls,
                             config=config, roots=roots)
            tuning.settle_collector(quiet_everywhere(list(runtimes.values())), config)
            if seat is None or seat.leads:
                for folder in roots.values():
                    start_serve_options(args, folder)
        except KeyboardInterrupt:  # Ctrl-C while the server loads: the same one line as later
            _stop_now(list(runtimes.values()), quiet=seat is not None)
        except BaseException:
            for started in runtimes.values():
                started.stop()
            raise
        code = _run_until_stopped(run, list(runtimes.values()), config.stop_grace, quiet=seat is not None)
    if meaning is not None:
        # The embedder may be mid-batch: Python's shutdown would free the model under it (onnxruntime
        # then aborts the process). What it stored is whole; that batch is embedded at the next start.
        _exit_now(code)
    return code


def served_roots(args: argparse.Namespace) -> dict[str, Path]:
    """The vaults ``--vault`` names (repeatable here: NAME=PATH or PATH; docs/vaults.md), by name."""
    given = getattr(args, "vault", None)
    values = [str(v) for v in given] if isinstance(given, list) else [str(given)] if given else []
    return named_vaults(values, os.environ.get("VAULT_MEM_VAULT") or None)


def _doing(index: Any) -> str:
    return ("; building it in the background (queries answer as it grows)" if index.needs_build() else
            "; resuming the interrupted build in the background" if not index.is_complete()
            else "; checking it against the files")


def _say_serving(roots: dict[str, Path]) -> None:
    if len(roots) == 1:
        say(f"{PROG} {__version__} serving the vault {next(iter(roots.values()))}")
        return
    say(f"{PROG} {__version__} serving {len(roots)} vaults: "
        + ", ".join(f"{name} ({folder})" for name, folder in roots.items()))


def quiet_everywhere(runtimes: list[Any]) -> Callable[[float], bool]:
    """The process's quiet test for its collector (runtime/tuning.py): no call in any served vault
    for ``seconds`` (each vault's Runtime sees its own calls only)."""
    return lambda seconds: all(runtime.quiet_for(seconds) for runtime in runtimes)


def serve_token(args: argparse.Namespace) -> str | None:
    """The bearer token: ``--token``, else ``--token-file``, else ``$VAULT_MEM_TOKEN`` (empty: unset).
    A blank token, or one with spaces or control characters at its ends or control characters
    within (a client could never send it in a header as it is), is refused, naming its source."""
    if args.token is not None and args.token_file is not None:
        raise InvalidInput("--token-file", "give the token once: --token or --token-file, not both")
    if args.token is not None:
        return _checked_token("--token", args.token)
    if args.token_file is not None:
        try:
            text = Path(args.token_file).read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise InvalidInput("--token-file", f"cannot read the token from {args.token_file}: {reason}") from None
        return _checked_token("--token-file", text.strip(), where=f" in {args.token_file}")
    value = os.environ.get(TOKEN_ENV)
    return _checked_token(TOKEN_ENV, value) if value else None


def _checked_token(source: str, token: str, where: str = "") -> str:
    if not token.strip():
        raise InvalidInput(source, f"the token{where} is blank: give a secret that clients send as "
                                   "'Authorization: Bearer SECRET' (e.g. openssl rand -hex 16)")
    if token != token.strip() or any(ord(c) < 32 or ord(c) == 127 for c in token):
        raise InvalidInput(source, f"the token{where} has spaces at its ends or control characters, which a "
                                   "client cannot send in an HTTP header as they are: give it without them")
    return token


def _stdio_reach(args: argparse.Namespace, rings: dict[str, KeyRing],
                 roots: dict[str, Path]) -> dict[str, Agent | None] | None:
    """What a stdio client reaches as the agent ``--agent`` names: each vault where it has a key,
    with that key's limits there (None without --agent: the owner of every vault)."""
    if args.agent is None:
        return None
    if args.http:
        raise InvalidInput("--agent", "applies to stdio, where the one client is that agent; over HTTP "
                                      "each agent sends its own key (docs/sharing.md)")
    reach: dict[str, Agent | None] = {name: agent for name, ring in rings.items()
                                      if (agent := ring.named(args.agent)) is not None}
    if not reach:
        root = next(iter(roots.values()))
        known = ", ".join(e.agent.name for e in list_agents(root)) or "none yet"
        if len(roots) == 1:
            raise InvalidInput("--agent", f"{args.agent!r} has no key for this vault (agents: {known}); "
                                          f"add it with {PROG} agents add {args.agent} --vault {root}")
        raise InvalidInput("--agent", f"{args.agent!r} has no key in any of the vaults served; add it with "
                                      f"{PROG} agents add {args.agent} --vault {root}")
    return reach


def _transport(args: argparse.Namespace, server: Any, url: str, token: str | None, root: Any,
               keys: KeyRing | dict[str, KeyRing], caller: Agent | None, seat: Seat | None = None,
               calls: Calls | None = None, *, config: settings.Settings,
               roots: dict[str, Path] | None = None) -> Callable[[], None]:
    """Say how to connect, and return the function that serves until the client or a signal ends it."""
    if args.http:
        from vault_mem.mcp_server.transports import run_http

        if seat is None:  # the workers' parent says it once
            if isinstance(keys, dict) and roots is not None:
                _say_http_all(roots, url, token, keys, args.allow_origin)
            else:
                _say_http(root, url, token, keys if isinstance(keys, KeyRing) else KeyRing(root), args.allow_origin)
        return lambda: run_http(server, args.host, args.port, token, args.allowed_host, keys, seat, calls,
                                tuple(args.allow_origin), config=config)
    from vault_mem.mcp_server.transports import run_stdio

    if sys.stdin.isatty():
        say("this is an MCP server speaking JSON-RPC on stdin/stdout: an MCP client starts it, e.g. "
            f'{{"command": "vault-mem", "args": ["serve", "--vault", "{root}"]}} (see docs/clients.md)')
    if caller is not None:
        say(f"the client acts as agent {caller.name!r}, with the limits of its key")
    if roots is not None and len(roots) > 1 and calls is not None:
        say(f"calls without a vault go to the vault {calls.served.default!r}")
    say("waiting for an MCP client on stdio; Ctrl-C to stop")
    return lambda: run_stdio(server)


def _say_endpoint(url: str, token: str | None, origins: list[str]) -> None:
    say(f"streamable HTTP at {url}" + (" (bearer token required)" if token else ""))
    if origins:
        say(f"web pages at {', '.join(origins)} may call it from a browser (--allow-origin)")


def _say_http(root: Any, url: str, token: str | None, keys: KeyRing, origins: list[str]) -> None:
    _say_endpoint(url, token, origins)
    if keys.any():
        say(f"this vault has {len(list_agents(root))} agent key(s): each request needs one of them"
            + (" or the token" if token else "") + ", even on loopback")
    elif keys.closed():
        say("this vault has had agent keys and none is left: it is closed, every request needs the token"
            + ("" if token else " (none was given, so every request is refused)")
            + f"; {PROG} agents open --vault {root} reopens it")
    say(f'connect a client with {{"url": "{url}"}}; Ctrl-C to stop')


def _say_http_all(roots: dict[str, Path], url: str, token: str | None, rings: dict[str, KeyRing],
                  origins: list[str]) -> None:
    """What ``_say_http`` says, with several vaults: which need a key or the token, vault by vault."""
    if len(roots) == 1:
        name = next(iter(roots))
        _say_http(roots[name], url, token, rings[name], origins)
        return
    _say_endpoint(url, token, origins)
    closed = [name for name, ring in rings.items() if ring.closed()]
    if closed:
        say("vaults with agent keys (each request reaches them with one of their keys"
            + (" or the token" if token else "") + f"): {', '.join(closed)}")
    if not token and len(closed) < len(rings):
        say("a request without a credential reaches the others: "
            + ", ".join(name for name in rings if name not in closed))
    say(f'connect a client with {{"url": "{url}"}}; calls without a vault go to {next(iter(roots))!r}; '
        "Ctrl-C to stop")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _run_until_stopped(run: Callable[[], None], runtimes: list[Any], grace: float, quiet: bool = False) -> int:
    """Run the transport in a thread; return its outcome, or end the process on a stop signal.

    When the client leaves, a build still running gets ``grace`` seconds to finish; a signal
    (Ctrl-C, SIGTERM) stops it at once (it keeps what it committed either way)."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            run()
        except BaseException as exc:  # reported by the main thread, as one line
            failure.append(exc)

    thread = threading.Thread(target=target, name="vault-mem-transport", daemon=True)
    try:  # SIGTERM raises KeyboardInterrupt too (cli/__init__.py)
        thread.start()
        while thread.is_alive():
            thread.join(SIGNAL_POLL)
    except KeyboardInterrupt:
        _stop_now(runtimes, quiet)
    for runtime in runtimes:
        runtime.stop(grace)
    if failure and not (isinstance(failure[0], SystemExit) and not failure[0].code):
        exc = failure[0]
        reason = f"exit status {exc.code}" if isinstance(exc, SystemExit) else str(exc) or type(exc).__name__
        say(f"error: the server stopped: {reason}")
        return 1
    return 0


def _stop_now(runtimes: list[Any], quiet: bool = False) -> NoReturn:
    """One line (none from a worker: its parent says it), each vault's watcher and any child build
    stopped, then the process ends (status 130)."""
    if not quiet:
        print(f"\n{PROG}: stopped", file=sys.stderr, flush=True)
    try:
        for runtime in runtimes:
            runtime.stop()
            runtime.index.close()
    finally:
        _exit_now(130)


def _exit_now(code: int) -> NoReturn:
    """End the process with ``code`` at once, the log and the output flushed first."""
    try:
        logging.shutdown()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


register(Command(
    name="serve",
    summary="serve the vault to MCP clients (stdio, or HTTP)",
    description="Serve the vault over MCP: an MCP client (Claude Desktop, Claude Code, Cursor...) starts "
                "it and speaks JSON-RPC on stdin/stdout, or with --http clients connect to "
                "http://HOST:PORT/mcp. The index is built or checked in the background; queries answer "
                "at once from what is indexed so far. Every option is checked before the server starts. "
                "Ctrl-C stops it. See docs/clients.md for client set-up.",
    examples=("vault-mem serve --vault ~/notes",
              "vault-mem serve --vault ~/notes --http --port 8765",
              "vault-mem serve --vault ~/notes --http --host 0.0.0.0 --token-file ~/.vault-mem-token "
              "--allowed-host memory.lan",
              "vault-mem serve --vault ~/notes --git-commit --sync-every 300"),
    run=cmd_serve, add_options=add_options, has_json=False,
))
