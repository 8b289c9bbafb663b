"""The command line: argument parsing and printing only.

    vault-mem serve|index|sync|doctor|stats|search|list|recall|read|domains [--vault PATH]

Errors are one line on stderr (exit 1 for a failure, 2 for bad arguments); never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vault_mem import __version__
from vault_mem.errors import VaultMemError

PROG = "vault-mem"


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--vault", type=Path, default=argparse.SUPPRESS,
                        help="the vault folder (default: $VAULT_MEM_VAULT)")
    common.add_argument("--index-dir", type=Path, default=argparse.SUPPRESS,
                        help="where the index lives (default: <vault>/.vault-mem)")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print the answer as JSON")

    parser = argparse.ArgumentParser(prog=PROG, parents=[common],
                                     description="Long-term memory for AI agents, kept as Markdown files.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = sub.add_parser("serve", parents=[common], help="serve the vault over MCP (stdio by default)")
    serve.add_argument("--http", action="store_true", help="streamable HTTP at /mcp instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    serve.add_argument("--token", default=None, help="bearer token required over HTTP (or $VAULT_MEM_TOKEN)")
    serve.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                       help="a host name clients use for a non-loopback bind (repeatable)")
    serve.add_argument("--project", default=None, help="project whose tiers mem_recall includes by default")
    serve.add_argument("--compat", action="store_true", help="also serve get_memory and memory_get")
    serve.add_argument("--git-commit", action="store_true",
                       help="commit each write tool's change, author the calling agent (git vaults; docs/git.md)")
    serve.add_argument("--sync-every", type=_seconds, default=None, metavar="SECONDS",
                       help="run `vault-mem sync` every SECONDS in the background (off by default)")

    sub.add_parser("sync", parents=[common],
                   help="commit pending note changes, fetch, integrate, push (git vaults; docs/git.md)")

    index = sub.add_parser("index", parents=[common], help="bring the index up to date")
    index.add_argument("--rebuild", action="store_true", help="rebuild from scratch")
    index.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    index.add_argument("--progress-file", type=Path, default=None, help=argparse.SUPPRESS)

    sub.add_parser("doctor", parents=[common], help="list every file with problems, and why")
    sub.add_parser("stats", parents=[common, as_json], help="notes per domain and per type, index size")

    search = sub.add_parser("search", parents=[common, as_json], help="search notes (memory_search)")
    search.add_argument("query", nargs="*", help="words to find")
    search.add_argument("--kind", default=None)
    search.add_argument("--tag", default=None)
    search.add_argument("--limit", default=None)

    lister = sub.add_parser("list", parents=[common, as_json], help="list a domain (list_by_domain)")
    lister.add_argument("domain", help="a folder path, or a segment name")
    lister.add_argument("--type", default=None)
    lister.add_argument("--status", default=None, help="active, archived or all")
    lister.add_argument("--limit", default=None)
    lister.add_argument("--offset", default=None)

    recall = sub.add_parser("recall", parents=[common, as_json], help="recall by creation date (mem_recall)")
    recall.add_argument("--since", default=None)
    recall.add_argument("--until", default=None)
    recall.add_argument("--source", dest="source_filter", default=None)
    recall.add_argument("--tags", dest="tag_filter", default=None)
    recall.add_argument("--namespace", default=None)
    recall.add_argument("--scope", default=None)
    recall.add_argument("--limit", default=None)
    recall.add_argument("--project", default=None)

    read = sub.add_parser("read", parents=[common, as_json], help="read one memory (memory_read)")
    read.add_argument("ref", help="uid, permalink, path, file name or title")
    read.add_argument("--offset", default=None)

    sub.add_parser("domains", parents=[common, as_json], help="list the domains (list_domains)")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"must be from 1 to 86400 seconds, got {text}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="vault-mem: %(message)s")
    logging.getLogger("mcp").setLevel(logging.WARNING)
    try:
        command: Callable[[argparse.Namespace], int] = COMMANDS[args.command]
        return command(args)
    except VaultMemError as exc:
        print(f"{PROG}: error: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\n{PROG}: stopped", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


# -- commands -----------------------------------------------------------------------------


def _vault_root(args: argparse.Namespace) -> Path:
    from vault_mem.errors import InvalidInput
    from vault_mem.vault.walk import check_vault

    given = getattr(args, "vault", None) or os.environ.get("VAULT_MEM_VAULT")
    if not given:  # the caller's mistake, not a fault: InvalidInput
        raise InvalidInput("--vault", "no vault given: pass --vault PATH or set VAULT_MEM_VAULT")
    return check_vault(Path(given).expanduser())


def _index(args: argparse.Namespace, root: Path) -> Any:
    from vault_mem.index.store import VaultIndex

    index_dir = getattr(args, "index_dir", None)
    return VaultIndex(root, index_dir.expanduser().absolute() if index_dir else None)


def _up_to_date(args: argparse.Namespace) -> Any:
    """The vault's index, built (with a progress bar) or reconciled first."""
    from vault_mem.index.build import sync
    from vault_mem.index.progress import Progress

    root = _vault_root(args)
    index = _index(args, root)
    sync(index, progress=lambda label, total: Progress(label, total))
    return index


def cmd_index(args: argparse.Namespace) -> int:
    from vault_mem.index.build import sync
    from vault_mem.index.progress import Progress, ProgressFile

    root = _vault_root(args)
    index = _index(args, root)

    def progress(label: str, total: int) -> Progress:
        if args.progress_file:
            return ProgressFile(label, total, args.progress_file, quiet=args.quiet)
        return Progress(label, total, quiet=args.quiet)

    report = sync(index, rebuild=args.rebuild, progress=progress)
    if not args.quiet:
        print(f"{root}: {report.summary()}; index at {index.dir}", file=sys.stderr)
        for folder, why in sorted(report.walk_problems.items()):
            print(f"  skipped {folder}: {why}", file=sys.stderr)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from collections import defaultdict

    index = _up_to_date(args)
    records = index.records()
    by_uid: dict[str, list[str]] = defaultdict(list)
    for path, rec in records.items():
        if rec.get("has_id"):
            by_uid[rec["uid"]].append(path)
    found = 0
    for path in sorted(records):
        rec = records[path]
        problems = list(rec.get("problems") or [])
        twins = [p for p in by_uid.get(rec["uid"], []) if p != path] if rec.get("has_id") else []
        if twins:
            problems.append(f"id {rec['uid']!r} is also used by {', '.join(twins)}")
        if problems:
            found += 1
            print(path)
            for problem in problems:
                print(f"  - {problem}")
    from vault_mem.vault.walk import walk_vault

    for folder, why in sorted(walk_vault(index.root).problems.items()):
        found += 1
        print(f"{folder}/\n  - {why}")
    print(f"{found} of {len(records)} files with problems" if found else f"all {len(records)} files read cleanly",
          file=sys.stderr)
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from collections import Counter

    index = _up_to_date(args)
    records = index.records()
    domains: Counter[str] = Counter(r["path"].rpartition("/")[0] or "(root)" for r in records.values())
    types: Counter[str] = Counter(r["type"] for r in records.values())
    size = sum(f.stat().st_size for f in index.dir.iterdir() if f.is_file())
    stats = {"notes": len(records), "domains": dict(sorted(domains.items())), "types": dict(types.most_common()),
             "index_bytes": size, "index_dir": str(index.dir)}
    if args.json:
        print(json.dumps(stats, ensure_ascii=False, indent=2))
        return 0
    print(f"{len(records)} notes, index {size / 1e6:.1f} MB at {index.dir}")
    print("\nper type:")
    for name, n in types.most_common():
        print(f"  {n:6d}  {name}")
    print("\nper domain:")
    for name, n in sorted(domains.items()):
        print(f"  {n:6d}  {name}")
    return 0


def _query(args: argparse.Namespace, tool: str, raw: dict[str, Any]) -> dict[str, Any]:
    from vault_mem.served.context import Vault, View
    from vault_mem.server.tools import TOOLS_BY_NAME

    index = _up_to_date(args)
    vault = Vault(index.root, index, project=getattr(args, "project", None))
    handler = TOOLS_BY_NAME[tool].handler
    with index.searching() as searcher:
        answer: dict[str, Any] = handler(View(vault, searcher), {k: v for k, v in raw.items() if v is not None})
    return answer


def _print_answer(args: argparse.Namespace, answer: dict[str, Any], human: Callable[[dict[str, Any]], None]) -> int:
    if args.json:
        print(json.dumps(answer, ensure_ascii=False, indent=2))
    elif answer.get("status") in ("invalid", "not_found", "conflict", "error"):
        print(f"{PROG}: {answer['status']}: {answer.get('message', '')}", file=sys.stderr)
    else:
        human(answer)
    return 1 if answer.get("status") in ("invalid", "error") else 0


def cmd_search(args: argparse.Namespace) -> int:
    raw = {"agent": "cli", "query": " ".join(args.query) or None, "kind": args.kind, "tag": args.tag,
           "limit": args.limit}
    answer = _query(args, "memory_search", raw)

    def human(a: dict[str, Any]) -> None:
        for note in a.get("notes", []):
            print(f"{note['score']:>4}  {note['updated_at'][:10]}  {note['permalink']}  {note['title']}")
            if note.get("excerpt"):
                print(f"      {note['excerpt']}")
        print(f"{a.get('count', 0)} notes" + (" (more matched: raise --limit)" if a.get("truncated") else ""),
              file=sys.stderr)

    return _print_answer(args, answer, human)


def cmd_list(args: argparse.Namespace) -> int:
    raw = {"domain": args.domain, "type": args.type, "status": args.status, "limit": args.limit,
           "offset": args.offset}
    answer = _query(args, "list_by_domain", raw)

    def human(a: dict[str, Any]) -> None:
        for row in a.get("results", []):
            extra = f" [{row['state']} {row['progress']['done']}/{row['progress']['total']}]" if "state" in row else ""
            print(f"{row['updated'][:10]}  {row['type']:<12} {row['path']}  {row['title']}{extra}")
        more = f"; more with --offset {a['next_offset']}" if "next_offset" in a else ""
        print(f"{len(a.get('results', []))} memories in {', '.join(a.get('domains', [])) or 'nothing'}{more}",
              file=sys.stderr)

    return _print_answer(args, answer, human)


def cmd_recall(args: argparse.Namespace) -> int:
    raw = {"since": args.since, "until": args.until, "source_filter": args.source_filter,
           "tag_filter": args.tag_filter, "namespace": args.namespace, "scope": args.scope, "limit": args.limit,
           "output_format": "structured" if args.json else "compact"}
    answer = _query(args, "mem_recall", raw)
    return _print_answer(args, answer, lambda a: print(a.get("text", "")))


def cmd_read(args: argparse.Namespace) -> int:
    answer = _query(args, "memory_read", {"ref": args.ref, "offset": args.offset})

    def human(a: dict[str, Any]) -> None:
        print(f"{a['title']}  ({a['permalink']}, {a.get('type', '')}, updated {a.get('updated', '')[:10]})")
        if a.get("tags"):
            print("tags: " + ", ".join(a["tags"]))
        for problem in a.get("problems", []):
            print(f"problem: {problem}")
        for commit in a.get("history", []):
            print(f"commit {commit['sha']} {commit['date'][:10]} {commit['author']}: {commit['subject']}")
        if a.get("uncommitted"):
            print("uncommitted changes (the file differs from git's HEAD)")
        print()
        print(a.get("body", ""))
        if "next_offset" in a:
            print(f"[more: --offset {a['next_offset']}]", file=sys.stderr)

    return _print_answer(args, answer, human)


def cmd_domains(args: argparse.Namespace) -> int:
    answer = _query(args, "list_domains", {})

    def human(a: dict[str, Any]) -> None:
        for d in a.get("domains", []):
            print(f"{d['active']:6d} {d['archived']:6d}  {d['updated'][:10]}  {d['domain'] or '(root)'}")

    return _print_answer(args, answer, human)


def cmd_serve(args: argparse.Namespace) -> int:
    root = _vault_root(args)
    index = _index(args, root)
    from vault_mem.served.context import Vault
    from vault_mem.server.runtime import Runtime

    project = args.project or os.environ.get("VAULT_MEM_PROJECT") or None
    runtime = Runtime(index)
    vault = Vault(root, index, project=project, compat=args.compat, health=runtime, git_commit=args.git_commit)
    _start_git_options(args, root)

    def say(text: str) -> None:
        print(f"{PROG}: {text}", file=sys.stderr, flush=True)

    say(f"{PROG} {__version__} serving the vault {root}")
    say(f"index at {index.dir}" + ("; building it in the background (queries answer as it grows)"
                                   if index.needs_build() else "; checking it against the files"))
    runtime.start()
    from vault_mem.server.app import build_server

    server = build_server(vault)
    if args.http:
        from vault_mem.server.transports import run_http

        token = args.token or os.environ.get("VAULT_MEM_TOKEN") or None
        say(f"streamable HTTP at http://{args.host}:{args.port}/mcp" + (" (bearer token required)" if token else ""))
        say(f'connect a client with {{"url": "http://{args.host}:{args.port}/mcp"}}; Ctrl-C to stop')
        run_http(server, args.host, args.port, token, args.allowed_host)
        return 0
    from vault_mem.server.transports import run_stdio

    if sys.stdin.isatty():
        say("this is an MCP server speaking JSON-RPC on stdin/stdout: an MCP client starts it, e.g. "
            f'{{"command": "vault-mem", "args": ["serve", "--vault", "{root}"]}} (see the README)')
    say("waiting for an MCP client on stdio; Ctrl-C to stop")
    run_stdio(server)
    return 0


def _start_git_options(args: argparse.Namespace, root: Path) -> None:
    """serve --git-commit and --sync-every: say what they will do, and start the sync loop."""
    if not (args.git_commit or args.sync_every):
        return
    from vault_mem.vault.git import Repo

    if Repo.find(root) is None:
        print(f"{PROG}: warning: {root} is not a git work tree: --git-commit and --sync-every do nothing "
              "(see docs/git.md)", file=sys.stderr)
        return
    if args.git_commit:
        print(f"{PROG}: each write tool's change becomes a git commit, author the calling agent", file=sys.stderr)
    if args.sync_every:
        from vault_mem.server.syncloop import SyncLoop

        SyncLoop(root, args.sync_every).start()
        print(f"{PROG}: syncing with git every {args.sync_every:g} s", file=sys.stderr)


def cmd_sync(args: argparse.Namespace) -> int:
    """One sync; exit 0 synced, 1 not finished (the lines say why), 3 synced with conflicted copies."""
    from vault_mem.vault.gitsync import sync_vault

    root = _vault_root(args)
    result = sync_vault(root)
    for line in result.lines or ["nothing to do"]:
        print(f"{PROG}: {line}", file=sys.stderr)
    index = _index(args, root)
    if not index.needs_build():  # keep the index (and the conflicted copies in it) current
        from vault_mem.index.build import sync

        sync(index)
    return result.exit_code


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "serve": cmd_serve, "index": cmd_index, "doctor": cmd_doctor, "stats": cmd_stats, "search": cmd_search,
    "list": cmd_list, "recall": cmd_recall, "read": cmd_read, "domains": cmd_domains, "sync": cmd_sync,
}
