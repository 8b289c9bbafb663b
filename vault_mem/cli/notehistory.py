"""``vault-mem history REF``: what happened to one note, newest first: the write tools' changes
from the journal beside the index (writes/undo.py, docs/sharing.md) and, in a git vault, the
commits that touched it (reads/githistory.py, docs/git.md). This only gathers and prints."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from vault_mem import settings
from vault_mem.cli.app import Command, register
from vault_mem.cli.common import print_answer, print_json, run_query, say
from vault_mem.cli.output import plural, table, visible
from vault_mem.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from vault_mem.search.api import VaultIndex



def history_options(parser: argparse.ArgumentParser) -> None:
    config = settings.Settings()  # the parser is made before the command's settings: it shows the defaults
    parser.add_argument("ref", metavar="REF",
                        help="the note: its id, permalink, path, file name, title or alias (quote spaces); a "
                             "deleted note by the path, id or title the journal names")
    parser.add_argument("--limit", default=None, metavar=f"1..{config.max_history}",
                        help=f"how many git commits to show at most (default {config.cli_history_default})")


def _limit(text: str | None, config: settings.Settings) -> int:
    if text is None:
        return config.cli_history_default
    if not text.strip().isdigit() or not 1 <= int(text) <= config.max_history:
        raise InvalidInput("--limit", f"{text[:40]!r} is not a count of commits: give 1..{config.max_history}")
    return int(text)


def _changes(index: VaultIndex, keys: set[str]) -> list[dict[str, Any]]:
    """The journal's changes (newest first) whose note has one of ``keys`` as uid or path."""
    from vault_mem.writes.undo import log

    return [row for row in log(index) if row["uid"] in keys or row["path"] in keys
            or row.get("trash") in keys]


def _gone_keys(ref: str, rows: list[dict[str, Any]]) -> set[str]:
    """For a note no longer in the vault: the uid and paths of the journal rows that name ``ref``
    (as path, path without .md, uid or title, ignoring case)."""
    wanted = ref.strip().removeprefix("memory://").casefold()
    keys: set[str] = set()
    for row in rows:
        names = {row["path"], row["path"].removesuffix(".md"), row["uid"], row["title"]}
        if wanted in {n.casefold() for n in names if n}:
            keys |= {row["uid"], row["path"]} - {""}
    return keys


def cmd_history(args: argparse.Namespace) -> int:
    from vault_mem.cli.common import open_index

    config = settings.current()
    commits = _limit(args.limit, config)
    try:
        read = run_query(args, "memory_read", {"ref": args.ref, "history": commits, "max_chars": 1})
    except NotFound:
        return _gone(args, config.journal_max_age_days)
    if read.get("status") != "ok":
        return print_answer(args, read, lambda a: None)
    index = open_index(args)
    answer = {"status": "ok", "ref": args.ref, "title": read["title"], "permalink": read["permalink"],
              "path": read["path"], "uid": read["uid"], "changes": _changes(index, {read["uid"], read["path"]}),
              "commits": read.get("history"), "uncommitted": read.get("uncommitted")}
    if args.json:
        print_json(answer)
        return 0
    _print_history(answer, config.journal_max_age_days)
    return 0


def _gone(args: argparse.Namespace, days: int) -> int:
    """A note no longer in the vault, as the journal remembers it; NotFound when it names none."""
    from vault_mem.cli.common import open_index
    from vault_mem.writes.undo import log

    index = open_index(args)
    keys = _gone_keys(args.ref, log(index))
    if not keys:
        raise NotFound(f"no note matches {args.ref!r} (tried uid, permalink, path, file name, title and alias), "
                       "and the journal names none by that path, id or title")
    changes = _changes(index, keys)
    answer = {"status": "ok", "ref": args.ref, "title": changes[0]["title"], "permalink": None,
              "path": changes[0]["path"], "uid": changes[0]["uid"], "changes": changes, "commits": None,
              "uncommitted": None, "message": "no note has this name now; the journal remembers it"}
    if args.json:
        print_json(answer)
    else:
        _print_history(answer, days)
    return 0


def _print_history(a: dict[str, Any], days: int) -> None:
    """``a`` for a person; ``days``: what the journal keeps (``journal_max_age_days``)."""
    rows = [(r["time"].replace("+00:00", "Z"), r["agent"], r["kind"],
             r["path"] + (f" -> {r['trash']}" if r.get("trash") else "")) for r in a["changes"]]
    rows += [(c["date"].replace("+00:00", "Z"), c["author"], f"commit {c['sha'][:8]}", c["subject"])
             for c in a["commits"] or []]
    rows.sort(key=lambda row: row[0], reverse=True)
    print(visible(f"{a['title']} ({a['permalink'] or a['path'] + ', not in the vault now'})"))
    if rows:
        print("\n".join(table(("time", "by", "change", "note or commit"), rows, flexible=(3, 1))))
    said = [plural(len(a["changes"]), "change") + f" by write tools (the journal keeps {days} days)"]
    if a["commits"] is None:
        said.append("no git history" + ("" if a["permalink"] is None else " (the vault is not a git work tree)"))
    else:
        said.append(plural(len(a["commits"]), "commit"))
    if a.get("uncommitted"):
        said.append("the file has changes not committed yet")
    say("; ".join(said))


register(Command(
    name="history",
    summary="what happened to one note: the write tools' changes and its git commits",
    description="Show one note's history, newest first: every change the write tools made to it (write, "
                "edit, supersede, close, delete, undo; from the journal kept beside the index, 30 days at "
                "most), with the agent and the time, and in a git vault the commits that touched it, with "
                "their author and subject, and whether the file has uncommitted changes. A deleted note is "
                "found by the path, id or title the journal names. 'vault-mem undo' puts an agent's "
                "changes back.",
    examples=("vault-mem history 'Queue decision v2' --vault ~/notes",
              "vault-mem history acme/x100/p200/queue.md --vault ~/notes --limit 50 --json"),
    run=cmd_history, add_options=history_options,
))
