"""The command line: argument parsing and printing only.

    vault-mem COMMAND [--vault PATH] [options]     (vault-mem alone lists the commands)

Every failure is one line on stderr (and, with ``--json``, a JSON object on stdout too):
exit status 1 for a failure, 2 for a command line that does not parse, 130 when stopped,
3 when ``doctor`` finds problems. A person never sees a traceback (VAULT_MEM_DEBUG=1 shows
one for an internal error). The commands live in ``serve``, ``maintenance`` and ``queries``;
``app`` holds the registry (see there how to add one).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from vault_mem.cli import (  # noqa: F401  (each registers its commands)
    agents,
    connect,
    gitsync,
    history,
    imports,
    maintenance,
    meaning,
    notehistory,
    queries,
    serve,
    tidy,
    ui,
    vaults,
)
from vault_mem.cli.app import COMMANDS, PROG, UsageError, parse, print_command_list
from vault_mem.cli.common import for_people
from vault_mem.cli.output import json_text, visible
from vault_mem.errors import VaultMemError

__all__ = ["COMMANDS", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in argv
    try:
        if not argv:
            print_command_list()
            return 0
        args = parse(argv)
        args.argv = argv  # serve --workers N starts each worker with the same arguments
        if args.command is None:
            print_command_list()
            return 0
    except UsageError as exc:
        return _fail(f"{exc.prog}: error: {exc.message}", "invalid", exc.message, wants_json, 2)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=f"{PROG}: %(message)s")
    logging.getLogger("mcp").setLevel(logging.WARNING)
    command = COMMANDS[args.command]
    previous = None
    try:
        previous = _sigterm_as_interrupt()
        from vault_mem import settings
        from vault_mem.search.api import install_whoosh_patches, size_cache  # the composition root: once, here

        config = settings.from_environment(os.environ)
        settings.configure(config)
        install_whoosh_patches(config)
        size_cache(config.cache_mb)
        return command.run(args)
    except VaultMemError as exc:
        message = for_people(exc.message)
        return _fail(f"{PROG}: error: {message}", exc.status, message, wants_json, 1)
    except KeyboardInterrupt:
        if not getattr(args, "quiet", False):  # a server's background build: the server says it
            print(f"\n{PROG}: stopped", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `vault-mem search x | head`: the reader has gone, nothing to say
        _silence_stdout()
        return 0
    except OSError as exc:  # the machine refused something: say what, on one line
        where = f": {exc.filename}" if exc.filename else ""
        message = f"{exc.strerror or exc}{where}"
        return _fail(f"{PROG}: error: {message}", "error", message, wants_json, 1)
    except Exception as exc:
        if os.environ.get("VAULT_MEM_DEBUG"):
            raise
        message = (f"internal error: {type(exc).__name__}: {exc} (please report it; VAULT_MEM_DEBUG=1 "
                   "shows the traceback)")
        return _fail(f"{PROG}: {message}", "error", message, wants_json, 1)
    finally:
        if previous is not None:  # main() called in a longer-lived process (tests)
            signal.signal(signal.SIGTERM, previous)


def _fail(line: str, status: str, message: str, wants_json: bool, code: int) -> int:
    if wants_json:
        print(json_text(json.dumps({"status": status, "message": message}, ensure_ascii=False)))
    print(visible(" ".join(line.split())), file=sys.stderr)
    return code


def _sigterm_as_interrupt() -> Any:
    """SIGTERM (how clients and service managers stop a process) acts as Ctrl-C, so that builds
    clean up after themselves and serve stops with its one line."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError, OSError):  # not the main thread (main() called from a thread)
        return signal.signal(signal.SIGTERM, interrupt)
    return None


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
