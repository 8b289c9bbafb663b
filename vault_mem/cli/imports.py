"""``import`` (memories kept elsewhere into notes) and ``export`` (every note as JSON lines)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vault_mem import settings
from vault_mem.cli.app import Command, register
from vault_mem.cli.common import (
    check_likely_vault,
    checked,
    given_folder,
    print_json,
    progress_bar,
    say,
    vault_root,
    vault_values,
)
from vault_mem.cli.output import plural, visible
from vault_mem.errors import InvalidInput
from vault_mem.imports import FORMATS
from vault_mem.settings import Settings

if TYPE_CHECKING:
    from vault_mem.imports.notes import Report



def import_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("format", metavar="FORMAT", choices=list(FORMATS),
                        help="what SOURCE is: " + "; ".join(f"{name}: {f.summary}" for name, f in FORMATS.items()))
    parser.add_argument("source", metavar="SOURCE", type=Path, help="the export file to import")
    parser.add_argument("--domain", default=None, metavar="FOLDER",
                        help="put every note in this folder (default: the format's own, see docs/import.md)")
    parser.add_argument("--dry-run", action="store_true",
                        help="say what would be done; write nothing (not even a new vault's folder)")


RELATION = "a relation"  # how a merged relation's ``what`` begins (imports/mcp_memory.py, imports/mem0.py)
NOTHING_IMPORTED = 3  # exit status when no record became or matched a note (docs/import.md)


def _import_vault(args: argparse.Namespace) -> tuple[Path, list[Path]]:
    """(the vault's root, the folders this run made for it, innermost first). A dry run makes
    nothing: a vault that does not exist yet is taken as empty."""
    given = given_folder(args) if vault_values(args) else None  # a registered name is its folder
    folder = given.absolute() if given is not None else None
    made: list[Path] = []
    if folder is not None and not folder.exists():
        if args.dry_run:
            return folder, []
        made = [folder]
        while not made[-1].parent.exists() and made[-1].parent != made[-1]:
            made.append(made[-1].parent)
        folder.mkdir(parents=True)  # a new, empty vault to import into
    try:
        root = checked(folder) if folder is not None else vault_root(args)
        if not args.yes:
            check_likely_vault(root, "import into it")
    except BaseException:
        _remove_if_empty(made)
        raise
    return root, made


def _remove_if_empty(made: list[Path]) -> bool:
    """Remove the folders a run made (innermost first), each only when empty; whether the vault's went."""
    for folder in made:
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            return folder is not made[0]
    return bool(made)


class _Journal:
    """Each batch the import wrote, journaled as the changes of one agent, ``import-FORMAT``
    (docs/sharing.md): ``vault-mem log`` lists them and ``vault-mem undo`` takes them back. The
    index folder is found at the first change, so that a run that writes nothing makes none."""

    def __init__(self, args: argparse.Namespace, root: Path, agent: str) -> None:
        self.args, self.root, self.agent = args, root, agent
        self.index_dir: Path | None = None
        self.warnings: list[str] = []

    def __call__(self, changes: list[dict[str, Any]]) -> None:
        from vault_mem import settings
        from vault_mem.errors import VaultMemError
        from vault_mem.history import journal, location
        from vault_mem.search.api import usable_index_dir

        try:
            if self.index_dir is None:
                self.index_dir = usable_index_dir(self.root, getattr(self.args, "index_dir", None))
        except VaultMemError as exc:
            warning: str | None = f"the notes are written, but not journaled for undo: {exc}"
        else:
            warning = journal.record(location.history_dir(self.index_dir), self.agent, "import", changes,
                                     config=settings.current())
        if warning and warning not in self.warnings:
            self.warnings.append(warning)


def cmd_import(args: argparse.Namespace) -> int:
    from vault_mem.imports.notes import import_records

    fmt = FORMATS[args.format]
    config = settings.current()
    source = fmt.read(args.source.expanduser(), config)  # before any folder is made: a bad source leaves nothing
    root, made = _import_vault(args)
    agent = f"import-{fmt.name}"
    journal = _Journal(args, root, agent)
    bar = progress_bar(f"import {fmt.name}", len(source.records))
    bar.quiet = args.json
    try:
        report = import_records(root, fmt.name, source, domain=args.domain, dry_run=args.dry_run,
                                default_domain=fmt.default_domain, advance=bar.advance, journal=journal,
                                config=config)
    except BaseException:
        _remove_if_empty(made)
        raise
    if made and report.imported_nothing() and _remove_if_empty(made):
        made = []
    if made:
        say(f"created the vault folder {root}")
    if args.json:
        print_json(_answer(report, root, agent, journal.warnings))
    else:
        _print_report(report, root, args.source, agent, journal.warnings)
    if report.unaccounted():
        return 1  # a fault of this program, said in the summary: never a silent loss
    return NOTHING_IMPORTED if report.imported_nothing() else 0


def _answer(report: Report, root: Path, agent: str, warnings: list[str]) -> dict[str, Any]:
    return {"status": "ok", "vault": str(root), "format": report.format, "dry_run": report.dry_run,
            "agent": agent, "records": report.records, "unit": report.unit, **report.counts(),
            "unaccounted": report.unaccounted(), "imported_nothing": report.imported_nothing(),
            "created_paths": report.created, "updated_paths": report.updated,
            "conflict_paths": [{"path": p, "why": why} for p, why in report.conflicts],
            "merged_records": [{"where": m.where, "into": m.into, "what": m.what} for m in report.merged],
            "skipped_records": [{"where": s.where, "why": s.reason} for s in report.skipped],
            "parts": {what: {"in_source": held, "in_notes": kept} for what, (held, kept) in report.parts.items()},
            "left_out": report.left_out, "warnings": warnings}


def _print_report(report: Report, root: Path, source: Path, agent: str, warnings: list[str]) -> None:
    config = settings.current()
    counts = report.counts()
    verb = "would import" if report.dry_run else "imported"
    say(f"{verb} {source.name} ({report.format}) into {root}: {report.records:,} {report.unit} = "
        + " + ".join(f"{n:,} {name}" for name, n in counts.items()))
    lines: list[str] = []
    if report.unaccounted():
        lines.append(f"error: {report.unaccounted():,} of the {report.records:,} {report.unit} have no outcome "
                     "above; this is a fault of vault-mem: please report it (exit status 1)")
    for what, (held, kept) in report.parts.items():
        lines.append(f"{what}: {held:,} in the source, {kept:,} in the notes"
                     + ("" if held == kept else f" ({held - kept:,} empty ones left out)"))
    relations = sum(1 for m in report.merged if m.what.startswith(RELATION))
    if relations:
        lines.append(f"merged: {relations:,} relations, each a link line in the note of the entity it starts from "
                     "(--json lists them)")
    if report.left_out:
        lines.append("left out, as docs/import.md says for this format: "
                     + ", ".join(f"{n:,} {what}" for what, n in sorted(report.left_out.items())))
    for title, items in (("conflicts (left as they are)", [f"{p}: {why}" for p, why in report.conflicts]),
                         ("merged, besides the relations" if relations else "merged",
                          [f"{m.where}: into {m.into!r}: {m.what}" for m in report.merged
                           if not m.what.startswith(RELATION)]),
                         ("skipped", [f"{s.where}: {s.reason}" for s in report.skipped])):
        if items:
            lines.append(f"{title}:")
            lines += [f"  {item}" for item in items[:config.import_shown]]
            if len(items) > config.import_shown:
                lines.append(f"  ... and {len(items) - config.import_shown:,} more (--json lists them all)")
    if report.imported_nothing():
        lines.append(f"nothing {'would be' if report.dry_run else 'was'} imported: "
                     + ("every record was skipped (above)" if report.skipped else "the source holds no record")
                     + f" (exit status {NOTHING_IMPORTED})")
    if report.dry_run:
        lines.append("nothing was written (--dry-run)")
    elif report.created or report.updated:
        lines.append("the index catches up on its own: at once under a running 'vault-mem serve', else at "
                     "the next command")
        lines.append(f"to take this import back: vault-mem undo --agent {agent} --since 1h --apply "
                     "(see vault-mem log)")
    if report.skipped and not report.imported_nothing():
        lines.append(f"warning: {len(report.skipped):,} of the {report.records:,} {report.unit} were skipped (listed "
                     "above) and are not in the vault")
    lines += warnings
    for line in lines:
        print(visible(line), file=sys.stderr)


register(Command(
    name="import",
    summary="bring in memories kept elsewhere: mcp-memory, mem0, openmemory, chatgpt, claude, jsonl, okf",
    description="Turn an export from another memory tool or chat app into ordinary notes, written as the "
                "write tools write them (agent import-FORMAT). Run it again at any time: a note is updated "
                "only when its source changed and nobody edited it since the last import (an edited note is "
                "listed as a conflict and left alone), and nothing is created twice. The end accounts for every "
                "entry of the source: created, updated, unchanged, conflicts, merged (into another entry's "
                "note: a relation, the same entity again) and skipped (with the line or entry and why) add up "
                "to what the file holds, and a warning says when some were skipped; then what the format's "
                "notes leave out (thinking, tool calls, other branches...). A file of 'vault-mem export' is "
                "restored as it was: the same files, byte for byte. Each run is journaled as agent "
                "import-FORMAT: 'vault-mem log' lists it and 'vault-mem undo --agent import-FORMAT' takes it "
                "back. Exit status: 0 imported; 3 nothing imported (every record skipped, or none in the "
                "source); 1 failed (a source that cannot be read names why). Formats and where each export "
                "comes from: docs/import.md.",
    examples=("vault-mem import mcp-memory ~/memory.jsonl --vault ~/notes",
              "vault-mem import chatgpt ~/Downloads/chatgpt-export/conversations.json --vault ~/notes",
              "vault-mem import claude conversations.json --vault ~/notes --domain chats/claude",
              "vault-mem import mem0 memories.json --vault ~/notes --dry-run",
              "vault-mem import openmemory ~/Downloads/memories_export_alice.zip --vault ~/notes",
              "vault-mem import okf ~/bundles/acme.zip --vault ~/notes --domain acme",
              "vault-mem import jsonl notes.jsonl --vault ~/new-vault"),
    run=cmd_import, add_options=import_options,
))


def export_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "okf"],
                        help="jsonl: one JSON object per note, the fields of 'vault-mem read --json' and the "
                             "whole body; okf: an Open Knowledge Format bundle (every note's file, a root "
                             "index.md), written to the folder or .zip --output names")
    parser.add_argument("--output", type=Path, default=None, metavar="FILE",
                        help="write to FILE (replaced whole, atomically) instead of stdout; for --format okf "
                             "a new folder, or a file ending in .zip")


def cmd_export(args: argparse.Namespace) -> int:
    from vault_mem.imports.export import export_lines
    from vault_mem.vault.writer import atomic_write

    root = vault_root(args)
    config = settings.current()
    count = 0
    seen: set[str] = set()
    if args.format == "okf":
        return _export_okf(args, root, config)
    if args.output is None:
        for line in export_lines(root, config, seen):
            sys.stdout.write(line + "\n")
            count += 1
        sys.stdout.flush()
    else:
        output = args.output.expanduser()
        if output.is_dir():
            raise InvalidInput("--output", f"{output} is a folder; give a file name")
        lines = list(export_lines(root, config, seen))
        count = len(lines)
        atomic_write(output, "".join(line + "\n" for line in lines).encode("utf-8"), config=config)
    say(f"exported {plural(count, 'note')} from {root}" + (f" to {args.output}" if args.output else ""))
    _say_not_exported(root, seen)
    return 0


def _say_not_exported(root: Path, seen: set[str]) -> None:
    from vault_mem.imports.export import not_exported

    shown = settings.current().import_shown
    for why, paths in not_exported(root, seen).items():
        say(f"not exported: {len(paths):,} {why}: " + ", ".join(visible(p) for p in paths[:shown])
            + (f" and {len(paths) - shown:,} more" if len(paths) > shown else ""))


def _export_okf(args: argparse.Namespace, root: Path, config: Settings) -> int:
    """An OKF bundle of the vault (docs/import.md, "OKF bundles"), to a new folder or a .zip, whole
    or not at all: a folder is written beside its place under a hidden name, then renamed."""
    from vault_mem.imports.okf import OKF_VERSION, bundle, write_bundle

    if args.output is None:
        raise InvalidInput("--output", "an OKF bundle is many files: give --output FOLDER (a new or empty "
                           "folder) or --output FILE.zip")
    output = args.output.expanduser()
    seen: set[str] = set()
    made = bundle(root, config, seen)
    write_bundle(made.files, output, config)
    shown = config.import_shown
    say(f"exported {plural(made.notes, 'note')} from {root} to {output} as an OKF {OKF_VERSION} bundle "
        f"(index.md lists them; vault-mem.json lets 'vault-mem import okf' restore them exactly)")
    if made.typed:
        say(f"{plural(made.typed, 'note')} without a type got one line 'type: ...' (OKF needs one); the import "
            "takes it away again")
    if made.links:
        say(f"{plural(made.links, 'wikilink')} written as Markdown links to the notes they name (OKF's links); the "
            "import writes them back as they were")
    if made.renamed:
        say("renamed, as OKF keeps index.md and log.md for itself: "
            + ", ".join(f"{visible(a)} -> {visible(b)}" for a, b in made.renamed[:shown]))
    if made.not_conformant:
        say(f"not OKF-conformant, exported as written (frontmatter that does not parse, or not UTF-8): "
            f"{plural(len(made.not_conformant), 'note')}: " + ", ".join(visible(p) for p in made.not_conformant[:shown])
            + (f" and {len(made.not_conformant) - shown:,} more" if len(made.not_conformant) > shown else ""))
    _say_not_exported(root, seen)
    return 0


register(Command(
    name="export",
    summary="every note as one JSON line, or as an OKF bundle, for pipelines and for leaving",
    description="Write every note of the vault with its parsed fields (those of 'vault-mem read --json', "
                "without what the index computes: links, backlinks, lineage, history), its whole body and "
                "its file as it is, one JSON object per line, in path order. 'vault-mem import jsonl' of "
                "that file into an empty vault gives back the same files, byte for byte. With --format okf, "
                "an Open Knowledge Format bundle instead (a new folder, or FILE.zip): every note's file, a "
                "type line added where OKF needs one, a root index.md, and vault-mem.json, from which "
                "'vault-mem import okf' gives back the same files. The end names the Markdown files that "
                "are not exported (ignored by the vault's rules, or named only '.md').",
    examples=("vault-mem export --vault ~/notes > notes.jsonl",
              "vault-mem export --vault ~/notes --output ~/backup/notes.jsonl",
              "vault-mem export --vault ~/notes --format okf --output ~/notes-okf.zip",
              "vault-mem export --vault ~/notes | jq -r 'select(.type == \"decision\") | .title'"),
    run=cmd_export, add_options=export_options, has_json=False,
))
