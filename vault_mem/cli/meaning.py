"""The meaning stage on the command line: ``--meaning-model`` for serve, index and search, and
``vault-mem meaning pull NAME`` (docs/ranking.md, "By meaning")."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vault_mem import settings
from vault_mem.cli.app import PROG, Command, register
from vault_mem.cli.common import print_json, say
from vault_mem.errors import InvalidInput

if TYPE_CHECKING:
    from vault_mem.meaning.embedder import Meaning
    from vault_mem.search.api import VaultIndex


def add_meaning_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--meaning-model", default=None, metavar="DIR",
                        help="also rank by meaning with this sentence model: a folder in the sentence-transformers "
                             "layout, or a name pulled by 'vault-mem meaning pull' (needs the meaning extra)")


def open_meaning(args: argparse.Namespace, index: VaultIndex) -> Meaning | None:
    """The meaning stage ``--meaning-model`` asks for (None without it)."""
    value = getattr(args, "meaning_model", None)
    if not value:
        return None
    from vault_mem.meaning.embedder import Meaning
    from vault_mem.meaning.pull import resolve_model

    return Meaning.open(resolve_model(value), index.dir, config=index.config)


def embed_now(meaning: Meaning, index: VaultIndex, quiet: bool) -> int:
    """Embed every note not embedded yet, with a progress bar on stderr (the CLI's index and search)."""
    from vault_mem.runtime.meaning import index_notes, note_text
    from vault_mem.search.api import Progress

    bar: Progress | None = None

    def advance(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = Progress(f"embedding with {meaning.model.name}", total, quiet=quiet)
        bar.advance(done - bar.done)

    try:
        return meaning.embed_pending(index_notes(index), note_text(index.root, index.config), advance)
    finally:
        if bar is not None:
            bar.finish()


def stored_models(index: VaultIndex) -> list[dict[str, Any]]:
    """The models whose vectors are kept beside the index (status, doctor): name, folder, bytes and,
    where the meaning extra is installed, ``embedded`` of ``notes``: the notes indexed now whose
    vectors are of their text as it is (the rest wait for a server or ``index --meaning-model``)."""
    import json

    from vault_mem.runtime.meaning import index_notes

    found = []
    root = index.dir / "meaning"
    indexed: dict[str, str] | None = None
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            label = json.loads((folder / "model.json").read_text(encoding="utf-8"))
            size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
        except (OSError, ValueError):
            continue
        if not isinstance(label, dict):
            continue
        entry: dict[str, Any] = {"model": str(label.get("model", "")), "folder": str(label.get("folder", "")),
                                 "bytes": size}
        try:
            from vault_mem.meaning.store import etags_on_disk

            stored = etags_on_disk(folder)
            if indexed is None:
                indexed = index_notes(index)() if not index.needs_build() else {}
        except (ImportError, OSError):  # no meaning extra here, or the folder went meanwhile
            pass
        else:
            entry |= {"embedded": sum(1 for path, etag in indexed.items() if stored.get(path) == etag),
                      "notes": len(indexed)}
        found.append(entry)
    return found


def embedded_of(meaning: Meaning, index: VaultIndex) -> tuple[int, int]:
    """(notes indexed whose vectors are of their text as it is, notes indexed)."""
    from vault_mem.runtime.meaning import index_notes

    indexed, stored = index_notes(index)(), meaning.store.etags()
    return sum(1 for path, etag in indexed.items() if stored.get(path) == etag), len(indexed)


def progress_words(embedded: int, notes: int) -> str:
    """``embedded`` of ``notes`` said for a person, with what embeds the rest."""
    if embedded >= notes:
        return f"all {notes:,} notes embedded"
    return (f"{embedded:,} of {notes:,} notes embedded; a server or 'vault-mem index' with --meaning-model embeds "
            "the rest")


def describe(meaning: Meaning) -> str:
    info = meaning.describe()
    queries = ", queries with 8-bit weights" if info["query_bits"] == 8 else ""
    return (f"{info['model']} ({info['folder']}), run by {info['runtime']}{queries}: {info['notes']:,} notes "
            f"embedded in {info['chunks']:,} chunks")


# -- vault-mem meaning pull ---------------------------------------------------------------


def meaning_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("pull",), help="pull: download a model into the user's cache")
    parser.add_argument("name", nargs="?", default=None, metavar="NAME",
                        help="a Hugging Face sentence-transformers model (default: all-MiniLM-L6-v2)")
    parser.add_argument("--force", action="store_true", help="download again even when it is already there")


def cmd_meaning(args: argparse.Namespace) -> int:
    from vault_mem.meaning.model import load_model
    from vault_mem.meaning.pull import DEFAULT_MODEL, pull
    from vault_mem.search.api import Progress

    config = settings.current()
    name = args.name or DEFAULT_MODEL
    bars: list[Progress] = []

    def progress(file: str, total: int) -> Callable[[int], None]:
        bar = Progress(f"{file}", max(total, 0), quiet=bool(args.json), unit="bytes")
        bars.append(bar)
        return bar.advance

    try:
        folder = pull(name, progress, config=config, force=args.force)
    finally:
        for bar in bars:
            bar.finish()
    model = load_model(folder, config=config)  # a download that is not a usable model says so now, not at serve
    answer: dict[str, Any] = {"status": "ok", "model": name, "folder": str(folder), "dim": model.dim}
    if args.json:
        print_json(answer)
    else:
        say(f"{name} is in {folder} ({model.dim} dimensions); use it with: "
            f"{PROG} serve --meaning-model {args.name or DEFAULT_MODEL.split('/')[1]}")
    return 0


def check_workers(args: argparse.Namespace) -> None:
    """The meaning stage runs in one process: ``serve --http`` with it serves one worker."""
    if getattr(args, "meaning_model", None) and args.workers is not None and args.workers > 1:
        raise InvalidInput("--workers", "--meaning-model runs in one process: leave out --workers, or give "
                           "--workers 1")


register(Command(
    name="meaning",
    summary="download a sentence model for ranking by meaning",
    description="'meaning pull NAME' downloads a sentence-transformers model from the Hugging Face hub into "
                "your cache folder, with a progress bar, for 'serve --meaning-model NAME' (and index, "
                "search). Needs the meaning extra: pip install -e '.[meaning]' in the vault-mem folder. Without a "
                "network, give --meaning-model a folder holding the model instead. See docs/ranking.md.",
    examples=("vault-mem meaning pull all-MiniLM-L6-v2",
              "vault-mem meaning pull sentence-transformers/all-MiniLM-L6-v2 --force --json"),
    run=cmd_meaning, add_options=meaning_options, uses_vault=False,
))
