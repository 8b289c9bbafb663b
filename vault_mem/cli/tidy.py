"""``vault-mem tidy``: the clusters of notes that say nearly the same (reads/tidy.py), each with
the note to keep; a person accepts them one by one (on a terminal) or all (``--apply``), and
each accepted cluster's note to keep supersedes the others (writes/tidy.py). This only parses,
asks and prints."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from vault_mem import settings
from vault_mem.cli.app import PROG, Command, register
from vault_mem.cli.common import print_json, progress_bar, say, up_to_date
from vault_mem.cli.output import plural, visible
from vault_mem.errors import Conflict, InvalidInput, NotFound, WriteFailed

if TYPE_CHECKING:
    from vault_mem.reads.tidy import Cluster, Member
    from vault_mem.search.api import Progress, VaultIndex
    from vault_mem.vault.note import Note


def tidy_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--apply", action="store_true",
                        help="supersede every listed cluster into its note to keep, without asking")
    parser.add_argument("--threshold", type=float, metavar="X",
                        help="how alike the wording of two notes whose facts agree must be, 0..1 (default 0.25; "
                             "higher finds fewer, closer ones)")
    parser.add_argument("--keep", action="append", default=[], metavar="PATH",
                        help="keep this note in its cluster, whoever wrote it (repeatable): your choice over "
                             "the newest, and the only way to keep a held cluster's note")


def cmd_tidy(args: argparse.Namespace) -> int:
    from vault_mem.reads.tidy import Authors, clusters
    from vault_mem.served.context import Vault, view_of
    from vault_mem.served.keys import KeyRing

    if args.threshold is None:
        args.threshold = settings.current().similar_threshold
    if not 0 < args.threshold <= 1:
        raise InvalidInput("--threshold", f"must be more than 0 and at most 1, got {args.threshold}")
    picked = [_vault_path(p) for p in args.keep]
    index = up_to_date(args)
    vault = Vault(index.root, index)
    keys = KeyRing(index.root)

    def may_write(name: str, path: str) -> bool:
        """Without keys, every caller is the owner's; with keys, a name that has none (removed
        since, or never given one) may write nothing: its copy never replaces a note unless a
        person picks it (security fails closed, docs/sharing.md)."""
        agent = keys.named(name)
        if agent is None:
            return not keys.closed()
        return agent.may_write(path)

    authors = Authors(index.history_dir, may_write)
    bar: list[Progress] = []
    with view_of(vault) as view:
        found = clusters(view.fresh, threshold=args.threshold,
                         total=lambda n: bar.append(progress_bar("tidy: comparing", n)),
                         advance=lambda n: bar[0].advance(n), authors=authors, picked=picked)
    if bar:
        bar[0].finish()
    unknown = [p for p in picked if not any(p in (m.path, m.fsrel) for c in found for m in (c.keep, *c.others))]
    if unknown:
        raise InvalidInput("--keep", f"{unknown[0]} is in no cluster tidy proposes; --keep takes the path of a "
                                     "listed note (as `vault-mem tidy` prints it)")
    asking = not args.apply and not args.json and sys.stdin.isatty()
    if not args.apply and not asking:
        return _listed(args, found)
    accepted: list[Cluster] = []
    applied: list[dict[str, Any]] = []
    warnings: list[str] = []
    try:
        for cluster in found:
            if asking:
                _show(cluster)
                others = plural(len(cluster.others), "note")
                answer = _ask(f"supersede {others} into the first? [y]es [n]o [a]ll [q]uit ")
                if answer == "q":
                    break
                if answer == "n":
                    continue
                if answer == "a":
                    asking = False
            elif cluster.held:  # only a person's answer (or --keep) keeps a held cluster's note
                applied.append({**cluster.public(), "status": "held", "message": f"left alone: {cluster.held}"})
                continue
            accepted.append(cluster)
            applied.append(_apply(index, cluster, warnings))
    finally:  # what was written is indexed even when stopped (Ctrl-C) halfway
        _index(index, [a.pop("note") for a in applied if "note" in a], warnings)
    done = [a for a in applied if a["status"] == "ok"]
    if args.json:
        print_json({"status": "ok", "applied": True, "count": len(found), "clusters": applied, "warnings": warnings})
        return 0
    say(f"superseded into their notes to keep: {plural(len(done), 'cluster')} of {len(found)}; "
        f"`{PROG} undo --agent tidy --since 1h --apply` puts them back")
    for item in applied:
        if item["status"] != "ok":
            say(item["message"])
    for warning in warnings:
        say(warning)
    return 0


def _listed(args: argparse.Namespace, found: list[Cluster]) -> int:
    if args.json:
        print_json({"status": "ok", "applied": False, "count": len(found), "clusters": [c.public() for c in found]})
        return 0
    if not found:
        say("no notes say nearly the same: nothing to tidy")
        return 0
    for cluster in found:
        _show(cluster)
    say(f"{plural(len(found), 'cluster')} of notes that say nearly the same; run again on a terminal to accept "
        "them one by one, or with --apply to supersede every one into its note to keep (a held one only with "
        "--keep PATH)")
    return 0


def _vault_path(given: str) -> str:
    path = given.replace("\\", "/").strip().lstrip("./")
    return path if path.lower().endswith(".md") else f"{path}.md"


def _by(member: Member) -> str:
    return "by " + (", ".join(visible(name) for name in member.by) if member.by else "a person")


def _show(cluster: Cluster) -> None:
    chosen = "  (your choice)" if cluster.picked else ""
    print(f"keep  {visible(cluster.keep.path)}  (updated {cluster.keep.updated[:10]}, {_by(cluster.keep)}){chosen}")
    for member in cluster.others:
        print(f"  {member.similarity:.2f}  {visible(member.path)}  (updated {member.updated[:10]}, {_by(member)})")
    if cluster.held:
        print(f"  held: {visible(cluster.held)}")


def _ask(prompt: str) -> str:
    while True:
        print(prompt, end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:  # end of input: stop asking
            return "q"
        answer = line.strip().lower()[:1]
        if answer in ("y", "n", "a", "q"):
            return answer


def _apply(index: VaultIndex, cluster: Cluster, warnings: list[str]) -> dict[str, Any]:
    import datetime as dt

    from vault_mem.vault.dates import iso
    from vault_mem.writes.tidy import supersede_into

    keep = cluster.keep
    row: dict[str, Any] = cluster.public()
    try:
        note, warning = supersede_into(index.root, index.history_dir, vars(keep), [vars(m) for m in cluster.others],
                                       iso(dt.datetime.now(dt.UTC)), config=index.config)
    except (Conflict, NotFound, InvalidInput, WriteFailed) as exc:  # InvalidInput: a path led through a symlink
        return {**row, "status": exc.status, "message": exc.message}
    if warning and warning not in warnings:
        warnings.append(warning)
    return {**row, "status": "ok", "note": (note, keep.fsrel)}


def _index(index: VaultIndex, notes: list[tuple[Note, str]], warnings: list[str]) -> None:
    """Index the notes tidy wrote now (a running server's watcher would, too)."""
    from vault_mem.errors import IndexBusy

    if not notes:
        return
    try:
        index.apply(notes, [], timeout=index.write_timeout)
    except (IndexBusy, OSError) as exc:
        warnings.append(f"the notes are written, but not indexed yet ({exc}); the next serve or index run catches up")


register(Command(
    name="tidy",
    summary="clusters of notes that say nearly the same; supersede each into one, with your yes",
    description="Find the clusters of current notes that say the same (the words they share, weighted by how "
                "rare they are in the vault, and the same names, numbers and dates; no model), and propose for "
                "each the note to keep: the most recently updated that may replace the others. A note an agent "
                "wrote (the history's journal says who wrote each) never replaces one that agent may not write, "
                "unless you pick it with --keep. On a terminal, ask cluster by cluster; with --apply, take every "
                "one not held; otherwise only list them. An accepted cluster's note to keep supersedes the others "
                "(its supersedes list names them): nothing is deleted or merged, and every list shows the note "
                "kept in their place. "
                f"Each change is journaled under the agent tidy: `{PROG} undo --agent tidy --since 1h --apply` "
                "puts the notes back byte for byte.",
    examples=("vault-mem tidy --vault ~/notes", "vault-mem tidy --vault ~/notes --json",
              "vault-mem tidy --vault ~/notes --apply",
              "vault-mem tidy --vault ~/notes --keep 'research/Plan copy.md' --apply"),
    run=cmd_tidy, add_options=tidy_options,
))
