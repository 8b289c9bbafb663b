"""What every command shares: finding the vault and its index, running a query, printing an
answer for a person or as JSON. Messages name CLI options and commands, not MCP tool names."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vault_mem import settings
from vault_mem.cli.app import PROG
from vault_mem.cli.output import json_text, visible
from vault_mem.errors import InvalidInput

if TYPE_CHECKING:
    from vault_mem.search.api import Progress, VaultIndex

FAILED = ("invalid", "not_found", "conflict", "error")
# Tool vocabulary in messages, as a person at a shell would say it.
_FOR_PEOPLE = [
    (re.compile(r"memory_read\(ref=('[^']*'|\"[^\"]*\"), offset=(\d+)\)"), r"vault-mem read \1 --offset \2"),
    (re.compile(r"\bmemory_read\b"), "vault-mem read"),
    (re.compile(r"\blist_domains\b"), "vault-mem domains"),
    (re.compile(r"(?<![-\w])(since|until)="), r"--\1 "),
    (re.compile(r"\bmemory_search\b"), "vault-mem search"),
]
# A message that starts with a tool parameter names the CLI option instead.
_OPTION_OF = {"tag_filter": "--tags", "source_filter": "--source", "limit": "--limit", "offset": "--offset",
              "since": "--since", "until": "--until", "kind": "--kind", "tag": "--tag", "type": "--type",
              "status": "--status", "namespace": "--namespace", "scope": "--scope", "ref": "REF"}


def say(text: str) -> None:
    print(f"{PROG}: {visible(text)}", file=sys.stderr, flush=True)


def for_people(message: str) -> str:
    for pattern, replacement in _FOR_PEOPLE:
        message = pattern.sub(replacement, message)
    head, sep, rest = message.partition(":")
    if sep and head in _OPTION_OF:
        message = f"{_OPTION_OF[head]}:{rest}"
    return " ".join(message.split())


def vault_root(args: argparse.Namespace) -> Path:
    from vault_mem.vault.walk import check_vault

    given = getattr(args, "vault", None) or os.environ.get("VAULT_MEM_VAULT")
    if not given:
        raise InvalidInput("--vault", "no vault given: pass --vault PATH or set VAULT_MEM_VAULT")
    return check_vault(Path(given).expanduser())


def open_index(args: argparse.Namespace, root: Path | None = None, doing: str = "index it") -> VaultIndex:
    """The vault's index in a folder that can be written; refuses an unlikely vault without --yes."""
    from vault_mem.search.api import VaultIndex, has_index, usable_index_dir

    root = root or vault_root(args)
    given = getattr(args, "index_dir", None)
    if not getattr(args, "yes", False) and not has_index(root, given):
        check_likely_vault(root, doing)  # before anything is written into it
    return VaultIndex(root, usable_index_dir(root, given), config=settings.current())


def check_likely_vault(root: Path, doing: str) -> None:
    from vault_mem.vault.guard import unlikely_vault

    why = unlikely_vault(root, settings.current().many_files)
    if why:
        raise InvalidInput("--vault", f"{why}: is it really the vault? pass --yes to {doing} anyway")


def progress_bar(label: str, total: int) -> Progress:
    from vault_mem.search.api import Progress

    return Progress(label, total)


def up_to_date(args: argparse.Namespace) -> VaultIndex:
    """The vault's index, built (with a progress bar) or reconciled first."""
    from vault_mem.search.api import sync

    index = open_index(args)
    sync(index, progress=progress_bar)
    return index


def run_query(args: argparse.Namespace, tool: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Answer ``raw`` as the MCP tool ``tool`` would (same handler), on an up-to-date index."""
    from vault_mem.mcp_server.tools import TOOLS_BY_NAME
    from vault_mem.served.context import Vault, view_of

    index = up_to_date(args)
    vault = Vault(index.root, index, project=getattr(args, "project", None))
    if getattr(args, "meaning_model", None):  # search --meaning-model: notes not embedded yet are, first
        from vault_mem.cli.meaning import embed_now, open_meaning

        vault.meaning = open_meaning(args, index)
        if vault.meaning is not None:
            embed_now(vault.meaning, index, quiet=bool(getattr(args, "json", False)))
    handler = TOOLS_BY_NAME[tool].handler
    with view_of(vault) as view:
        answer: dict[str, Any] = handler(view, {k: v for k, v in raw.items() if v is not None})
    return answer


def print_json(value: Any) -> None:
    print(json_text(json.dumps(value, ensure_ascii=False, indent=2)))


def print_answer(args: argparse.Namespace, answer: dict[str, Any], human: Callable[[dict[str, Any]], None],
                 none_fails: bool = False) -> int:
    """Print ``answer`` as JSON or for a person; exit 1 when it failed (or found nothing, if
    ``none_fails``), with the message as one line on stderr."""
    status = answer.get("status")
    failed = status in FAILED or (none_fails and status == "none")
    if args.json:
        print_json(answer)
    elif not failed:
        human(answer)
    if failed:
        label = {"none": "", "not_found": "not found: "}.get(str(status), f"{status}: ")
        why = [str(answer.get("message") or "nothing found"), *map(str, answer.get("hints", []))]
        say(label + for_people("; ".join(why)))  # a failure stays one line, its hints included
    return 1 if failed else 0


def print_hints(answer: dict[str, Any]) -> None:
    """The answer's ``hints`` (why nothing matched, "did you mean"), one line each on stderr."""
    for hint in answer.get("hints", []):
        print(f"  {visible(for_people(str(hint)))}", file=sys.stderr)


def named_vaults(values: list[str], env: str | None = None) -> dict[str, Path]:
    """The vaults ``--vault`` names (repeatable: ``NAME=DIR`` or ``DIR``, named after its folder;
    docs/vaults.md), else the one ``$VAULT_MEM_VAULT`` names: name -> checked root, in the order
    given. InvalidInput for none, a bad name, a name or a folder given twice."""
    from vault_mem.served.vaults import check_vault_name, name_after_folder, split_vault_arg
    from vault_mem.vault.walk import check_vault

    given = list(values) or ([env] if env else [])
    if not given:
        raise InvalidInput("--vault", "no vault given: pass --vault PATH (or NAME=PATH, repeatable) or set "
                                      "VAULT_MEM_VAULT")
    roots: dict[str, Path] = {}
    for value in given:
        name, folder = split_vault_arg(value)
        if not folder:
            raise InvalidInput("--vault", f"{value!r} names no folder: give NAME=PATH or PATH")
        root = check_vault(Path(folder).expanduser())
        name = check_vault_name(name) if name is not None else name_after_folder(root)
        if name in roots:
            raise InvalidInput("--vault", f"two vaults are named {name!r}: give each its own name, "
                                          "e.g. --vault work=~/work --vault home=~/notes")
        same = next((other for other, seen in roots.items() if seen.resolve() == root.resolve()), None)
        if same is not None:
            raise InvalidInput("--vault", f"{root} is given twice (as {same!r} and {name!r}): serve each folder once")
        roots[name] = root
    return roots
