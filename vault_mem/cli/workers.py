"""``serve --http --workers N``: the parent process, which binds the port, starts N workers
(each a whole ``vault-mem serve`` on that socket; mcp_server/workers.py) and stops them all
when it stops or when one of them ends. How requests find their worker: docs/concurrency.md."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from vault_mem import settings
from vault_mem.cli.app import PROG
from vault_mem.cli.common import say

TOKEN_OPTIONS = ("--token", "--token-file")  # left out of a worker's arguments: it reads the token from its environment


def worker_count(text: str) -> int:
    config = settings.Settings()  # an option's type runs while the arguments are parsed, before the settings are made
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers: give 1 or more") from None
    if not 1 <= count <= config.max_workers:
        raise argparse.ArgumentTypeError(f"{count} workers: give 1..{config.max_workers} "
                                         "(default: the number of cores)")
    return count


def without_token(argv: list[str]) -> list[str]:
    """``argv`` without ``--token``/``--token-file`` and their values, in any spelling argparse takes
    (``--token X``, ``--token=X``, an unambiguous prefix such as ``--tok X``): what a process list
    shows of a worker must not hold the secret."""
    kept: list[str] = []
    words = iter(argv)
    for word in words:
        name, has_value, _ = word.partition("=")
        if len(name) > 2 and any(option.startswith(name) for option in TOKEN_OPTIONS):
            if not has_value:
                next(words, None)
            continue
        kept.append(word)
    return kept


def serve_workers(args: argparse.Namespace, count: int, token: str | None, say_serving: Callable[[], None],
                  say_http: Callable[[], None], *, stop_wait: float) -> int:
    """Run ``count`` workers until Ctrl-C or SIGTERM (status 130) or until one ends (status 1).
    The workers get ``token`` in their environment, never in their arguments (``without_token``);
    each gets ``stop_wait`` seconds to stop (``worker_stop_wait``)."""
    from vault_mem.mcp_server.workers import Workers

    if args.read_only:
        say("read-only: no write tools are served")
    say_serving()  # the vault, or each of several with its name
    workers = Workers([sys.executable, "-m", "vault_mem", *without_token(args.argv)], args.host, args.port, count,
                      token, stop_wait=stop_wait)
    try:
        pids = workers.start()
        say(f"{count} worker processes on one port (pids {', '.join(map(str, pids))}), each with its own "
            "index reader; a legacy session stays on the worker that opened it")
        say_http()
        code = workers.wait()
    except KeyboardInterrupt:  # SIGTERM too (cli/__init__.py)
        print(f"\n{PROG}: stopping {count} workers", file=sys.stderr, flush=True)
        workers.stop()
        print(f"{PROG}: stopped", file=sys.stderr, flush=True)
        return 130
    say(f"error: a worker stopped (exit status {code}); the others were stopped with it")
    return 1
