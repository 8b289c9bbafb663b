"""The commands that look after the index: ``index``, ``status``, ``doctor`` and ``stats``."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vault_mem import settings
from vault_mem.cli.app import Command, register
from vault_mem.cli.common import open_index, print_json, say, up_to_date, vault_root
from vault_mem.cli.meaning import (
    add_meaning_option,
    describe,
    embed_now,
    embedded_of,
    open_meaning,
    progress_words,
    stored_models,
)
from vault_mem.cli.output import ROOT_LABEL, cut, plural, table, visible, width

if TYPE_CHECKING:
    from vault_mem.search.api import Progress, VaultIndex

PROBLEMS_FOUND = 3  # doctor's exit status when the vault has files with problems


# -- index --------------------------------------------------------------------------------


def index_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rebuild", action="store_true",
                        help="throw the index away and build it again from the files (the undo history, "
                        "kept apart, is not touched, nor are the meaning vectors: only notes changed "
                        "since are embedded again)")
    parser.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--progress-file", type=Path, default=None, help=argparse.SUPPRESS)
    add_meaning_option(parser)


def cmd_index(args: argparse.Namespace) -> int:
    from vault_mem.search.api import Progress, ProgressFile, present, sync

    index = open_index(args)
    meaning = open_meaning(args, index)  # a bad model folder is refused before the build starts
    bars: list[Progress] = []

    def progress(label: str, total: int) -> Progress:
        quiet = args.quiet or args.json
        bar = (ProgressFile(label, total, args.progress_file, quiet=quiet, config=settings.current())
               if args.progress_file
               else Progress(label, total, quiet=quiet))
        bars.append(bar)
        return bar

    try:
        with present(index.dir, "build"):
            report = sync(index, rebuild=args.rebuild, progress=progress)  # the vectors stay (KEPT_ON_REBUILD)
            embedded = embed_now(meaning, index, quiet=args.quiet or args.json) if meaning is not None else None
    except KeyboardInterrupt:
        if not args.quiet:
            done = f" after {bars[-1].done:,} of {bars[-1].total:,} notes" if bars and bars[-1].total else ""
            print(file=sys.stderr)
            say(f"interrupted{done}; the index keeps what was done, and the next 'vault-mem index' "
                "or 'vault-mem serve' finishes it")
        return 130
    if args.json:
        print_json({"status": "ok", "vault": str(index.root), "index_dir": str(index.dir), "notes": report.total,
                    "rebuilt": report.rebuilt, "added": report.added, "updated": report.updated,
                    "removed": report.removed, "unchanged": report.unchanged,
                    "seconds": round(report.seconds, 3), "skipped_folders": report.walk_problems,
                    **({"meaning": meaning.describe() | {"embedded_now": embedded}} if meaning is not None else {})})
    elif not args.quiet:
        say(report.summary())
        say(f"index at {index.dir}")
        if meaning is not None:
            say(f"meaning: {describe(meaning)} ({embedded:,} just now)")
        for folder, why in sorted(report.walk_problems.items()):
            print(f"  skipped {folder}: {why}", file=sys.stderr)
    return 0


register(Command(
    name="index",
    summary="build the index, or bring it up to date with the files",
    description="Build the index of the vault the first time, then bring it up to date with the files: "
                "only notes whose size, time or content changed are read again. Ctrl-C stops it; "
                "the next run resumes where it stopped.",
    examples=("vault-mem index --vault ~/notes", "vault-mem index --vault ~/notes --rebuild"),
    run=cmd_index, add_options=index_options,
))


# -- status -------------------------------------------------------------------------------


def folder_bytes(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file():
                total += path.stat().st_size
        except OSError:
            continue
    return total


def doc_count(index: VaultIndex) -> int:
    from vault_mem.search.api import note_count

    return note_count(index)


def status_of(index: VaultIndex) -> dict[str, Any]:
    from vault_mem.search.api import live

    state = index.state()
    builds, servers = live(index.dir, "build"), live(index.dir, "serve")
    answer: dict[str, Any] = {"status": "ok", "vault": str(index.root), "index_dir": str(index.dir),
                              "index_bytes": folder_bytes(index.dir) if index.dir.is_dir() else 0}
    if index.needs_build():
        answer |= {"notes": 0, "problem_files": 0, "build": "running" if builds else "none"}
    else:
        problems = problems_by_file(index)
        answer |= {"notes": doc_count(index), "problem_files": len(problems),
                   "build": "complete" if index.is_complete() else "running" if builds else "interrupted"}
    progress = _build_progress(index.dir)
    if answer["build"] == "running" and progress:
        answer["build_progress"] = progress
    if "last_reconcile" in state:
        answer["last_reconcile"] = {"at": _iso(float(state["last_reconcile"])),
                                    "summary": state.get("last_reconcile_summary", "")}
    answer["servers"] = [{"pid": s["pid"], "transport": s.get("transport"), "url": s.get("url"),
                          "since": _iso(float(s.get("started", 0))),
                          **({"meaning_model": s["meaning"]} if s.get("meaning") else {}),
                          **({"unwatched": s["unwatched"]} if s.get("unwatched") else {})} for s in servers]
    models = stored_models(index)
    if models:  # only a vault that has had a meaning model: the others' answer is as it was
        answer["meaning"] = models
    return answer


def _build_progress(index_dir: Path) -> dict[str, int] | None:
    import json

    try:
        data = json.loads((index_dir / "build-progress.json").read_text(encoding="utf-8"))
        return {"done": int(data["done"]), "total": int(data["total"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def cmd_status(args: argparse.Namespace) -> int:
    from vault_mem.search.api import VaultIndex, usable_index_dir

    root = vault_root(args)
    index = VaultIndex(root, usable_index_dir(root, getattr(args, "index_dir", None)), config=settings.current())
    answer = status_of(index)
    if args.json:
        print_json(answer)
        return 0
    build = {"complete": "complete",
             "none": "none yet ('vault-mem index' builds it; serve does it in the background)",
             "interrupted": "interrupted: the next 'vault-mem index' or serve finishes it",
             "running": "running" + (" ({done:,} of {total:,} notes)".format(**answer["build_progress"])
                                     if "build_progress" in answer else "")}[answer["build"]]
    rows = [("vault", answer["vault"]),
            ("index", f"{answer['index_dir']} ({answer['index_bytes'] / 1e6:.1f} MB)"),
            ("notes", f"{answer['notes']:,} indexed"),
            ("problems", plural(answer["problem_files"], "file") + " with problems"
             + (" ('vault-mem doctor' lists them)" if answer["problem_files"] else "")),
            ("build", build)]
    if "last_reconcile" in answer:
        rows.append(("checked", f"{answer['last_reconcile']['at']}: {answer['last_reconcile']['summary']}"))
    servers = answer["servers"]
    rows.append(("served", "; ".join(f"pid {s['pid']} over {s['transport']}" + (f" at {s['url']}" if s["url"] else "")
                                     + f" since {s['since']}" + _ranking_by(s)
                                     + (f" (not watching the files: {s['unwatched']}; changes are found by a "
                                        "check every few seconds)" if s.get("unwatched") else "")
                                     for s in servers) or "no server is running"))
    for model in answer.get("meaning", []):
        rows.append(("meaning", _vectors_of(model)))
    for key, value in rows:
        print(f"{key:<9} {cut(value, width() - 10)}")
    return 0


def _vectors_of(model: dict[str, Any]) -> str:
    """What is embedded first (a terminal's width cuts the end), then where."""
    progress = f": {progress_words(model['embedded'], model['notes'])}" if "embedded" in model else ""
    return f"{model['model']}{progress} ({model['bytes'] / 1e6:.1f} MB of vectors; model in {model['folder']})"


def _ranking_by(server: dict[str, Any]) -> str:
    return f", ranking by meaning with {server['meaning_model']}" if server.get("meaning_model") else ""


register(Command(
    name="status",
    summary="the index: notes, problems, builds, last check, servers",
    description="Show the vault, its index folder and size, the notes indexed, how many files have problems, "
                "whether a build is running or was interrupted, when the index was last checked against "
                "the files, which servers serve this vault now (and the sentence model each ranks by), and "
                "the meaning vectors kept beside the index: whose model, and how many notes they cover. Reads "
                "only: builds nothing.",
    examples=("vault-mem status --vault ~/notes", "vault-mem status --vault ~/notes --json"),
    run=cmd_status,
))


# -- doctor -------------------------------------------------------------------------------


def problems_by_file(index: VaultIndex) -> dict[str, list[str]]:
    """Every indexed file with its problems, including an ``id`` shared with other files."""
    records = index.records()
    by_uid: dict[str, list[str]] = defaultdict(list)
    for path, rec in records.items():
        if rec.get("has_id"):
            by_uid[rec["uid"]].append(path)
    found: dict[str, list[str]] = {}
    for path in sorted(records):
        rec = records[path]
        problems = list(rec.get("problems") or [])
        twins = [p for p in by_uid.get(rec["uid"], []) if p != path] if rec.get("has_id") else []
        if twins:
            problems.append(f"id {rec['uid']!r} is also used by {', '.join(twins)}")
        if problems:
            found[path] = problems
    return found


def doctor_options(parser: argparse.ArgumentParser) -> None:
    add_meaning_option(parser)


def cmd_doctor(args: argparse.Namespace) -> int:
    from vault_mem.vault.walk import walk_vault

    index = up_to_date(args)
    meaning = open_meaning(args, index)  # a model that does not load says why, and exits 1
    if meaning is not None:
        embedded, indexed = embedded_of(meaning, index)
        info = meaning.describe() | {"indexed": indexed, "embedded": embedded}
        if args.json:
            print_json({"status": "ok", "meaning": info})
            return 0
        say(f"meaning: {describe(meaning)}; {progress_words(embedded, indexed)}")
        return 0
    found = problems_by_file(index)
    walked = walk_vault(index.root)
    for folder, why in sorted(walked.problems.items()):
        found[f"{folder}/"] = [why]
    for link, why in sorted(walked.skipped_links.items()):
        found[link] = [why]
    total = doc_count(index)
    models = stored_models(index)  # only a vault that has had a meaning model: the others' answer is as it was
    if args.json:
        print_json({"status": "problems" if found else "ok", "files": total, "problem_files": len(found),
                    "problems": [{"path": path, "problems": why} for path, why in found.items()],
                    **({"meaning": models} if models else {})})
    else:
        for path, problems in found.items():
            print(visible(path))
            for problem in problems:
                print(f"  - {visible(problem)}")
        say(f"{plural(len(found), 'file')} of {total:,} with problems (each is indexed as well as it can be)"
            if found else f"all {plural(total, 'file')} read cleanly")
        for model in models:
            say(f"meaning: {_vectors_of(model)}")
    return PROBLEMS_FOUND if found else 0


register(Command(
    name="doctor",
    summary="every file that could not be read cleanly, and why",
    description="List every file with a problem (malformed frontmatter, a bad date, a shared id, a folder "
                "that cannot be listed...) and what it is. Such files are still indexed as well as they "
                f"can be. Exit status: 0 when every file reads cleanly, {PROBLEMS_FOUND} when some have "
                "problems, 1 when the check itself failed. The meaning vectors kept beside the index are named "
                "by their model, with how many notes they cover. With --meaning-model: whether the model loads, "
                "its name, and how many notes are embedded.",
    examples=("vault-mem doctor --vault ~/notes", "vault-mem doctor --vault ~/notes --json"),
    run=cmd_doctor, add_options=doctor_options,
))


# -- stats --------------------------------------------------------------------------------


def cmd_stats(args: argparse.Namespace) -> int:
    index = up_to_date(args)
    records = index.records()
    # A folder counts the notes in its subfolders too, as in 'vault-mem domains'.
    domains: Counter[str] = Counter()
    for rec in records.values():
        parts = rec["path"].split("/")[:-1]
        domains[ROOT_LABEL] += 1
        for depth in range(1, len(parts) + 1):
            domains["/".join(parts[:depth])] += 1
    types: Counter[str] = Counter(r["type"] for r in records.values())
    size = folder_bytes(index.dir)
    ordered = dict(sorted(domains.items(), key=lambda item: (item[0] != ROOT_LABEL, item[0])))
    if args.json:
        print_json({"status": "ok", "notes": len(records), "domains": ordered, "types": dict(types.most_common()),
                    "index_bytes": size, "index_dir": str(index.dir)})
        return 0
    print(f"{plural(len(records), 'note')}, index {size / 1e6:.1f} MB at {index.dir}\n")
    print("\n".join(table(["notes", "type"], [(f"{n:,}", name) for name, n in types.most_common()],
                          right=[0], flexible=[1])))
    print()
    print("\n".join(table(["notes", "domain (with its subfolders)"],
                          [(f"{n:,}", name) for name, n in ordered.items()], right=[0], flexible=[1])))
    return 0


register(Command(
    name="stats",
    summary="notes per type and per domain, and the index size",
    description="Count the notes per type and per domain (a domain counts the notes in its subfolders, "
                f"{ROOT_LABEL} is the whole vault) and show the index's size.",
    examples=("vault-mem stats --vault ~/notes", "vault-mem stats --vault ~/notes --json"),
    run=cmd_stats,
))

