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


NO_VAULT = ("no vault given: pass --vault PATH or set VAULT_MEM_VAULT (a vault named with 'vault-mem vaults add' "
            "is given by its name: --vault NAME)")


def vault_values(args: argparse.Namespace) -> list[str]:
    """What ``--vault`` gave, in order (it is repeatable; a value given before the command word is
    one value)."""
    given = getattr(args, "vault", None)
    if given is None:
        return []
    if isinstance(given, str | Path):
        return [str(given)]
    return [str(value) for value in given]


def vault_root(args: argparse.Namespace) -> Path:
    """The one vault a command works on: ``--vault`` else ``$VAULT_MEM_VAULT``, a folder or a
    registered vault's name (``resolve_vault``), checked. A command on one vault refuses two."""
    given = _one_value(args)
    if not given:
        raise InvalidInput("--vault", NO_VAULT)
    name, folder, registered = resolve_vault(given)
    return checked(folder, name if registered else None)


def given_folder(args: argparse.Namespace) -> Path | None:
    """The folder ``--vault`` (or ``$VAULT_MEM_VAULT``) names, not checked: it may not exist yet
    (``import`` makes it, ``connect --print`` prints it), and a name-like value that is neither a
    folder nor a registered name is then that folder, as before names existed; None when none is
    given."""
    given = _one_value(args)
    return resolve_vault(given, missing_ok=True)[1] if given else None


def _one_value(args: argparse.Namespace) -> str | None:
    values = vault_values(args)
    if len(values) > 1:
        raise InvalidInput("--vault", f"this command works on one vault, and {len(values)} were given "
                                      f"({', '.join(values)[:200]}): give --vault once")
    return values[0] if values else os.environ.get("VAULT_MEM_VAULT")


def resolve_vault(value: str, *, missing_ok: bool = False) -> tuple[str | None, Path, bool]:
    """What one ``--vault`` value names: (its name, or None; the folder, not checked; whether it is a
    registered name). The rule (docs/cli.md, "The vault"), in order:

    1. ``NAME=PATH`` (NAME a vault name, and the whole value no existing folder): the folder PATH,
       named NAME;
    2. a value that exists on disk (relative to the working directory, after ``~``), or that could
       not be a vault name (it holds a ``/``, starts with ``.`` or ``~``...): that path, exactly as
       before names existed; when it is also a registered name of another folder, stderr says
       which was used;
    3. a name ``vault-mem vaults add`` registered: its folder;
    4. else VaultUnavailable: the path does not exist and no vault has that name (the names
       registered are listed); with ``missing_ok``, that path, not checked.

    A damaged list of names is an error in 3 and 4, never skipped."""
    from vault_mem.errors import VaultUnavailable
    from vault_mem.served.registry import registered, registered_names
    from vault_mem.served.vaults import is_vault_name, split_vault_arg

    name, folder = split_vault_arg(value)
    if name is not None:
        if not folder:
            raise InvalidInput("--vault", f"{value!r} names no folder: give NAME=PATH, PATH or a vault's name")
        return name, Path(folder).expanduser(), False
    path = Path(value).expanduser()
    if not is_vault_name(value) or os.path.lexists(path):
        if is_vault_name(value):
            _say_if_also_a_name(value, path)
        return None, path, False
    entries = registered()
    entry = entries.get(value)
    if entry is None:
        if missing_ok:
            return None, path, False
        raise VaultUnavailable(f"vault not found: {path} does not exist, and no vault is named {value!r} "
                               f"({registered_names(entries)})", advice="check the vault path or the name")
    return value, entry.path, True


def _say_if_also_a_name(value: str, path: Path) -> None:
    from vault_mem.served.registry import registered

    try:
        entry = registered().get(value)
    except InvalidInput:
        return  # the folder is used either way
    if entry is not None and os.path.realpath(entry.path) != os.path.realpath(path):
        say(f"--vault {value}: the folder {path.absolute()} is used, not the vault named {value!r} ({entry.path}); "
            f"a folder of the working directory comes first: give --vault {entry.path} for that vault")


def checked(folder: Path, name: str | None = None) -> Path:
    """``check_vault(folder)``; for a registered vault (``name``), the message says which name."""
    from vault_mem.errors import VaultUnavailable
    from vault_mem.vault.walk import check_vault

    try:
        return check_vault(folder)
    except VaultUnavailable as exc:
        if name is None:
            raise
        raise VaultUnavailable(f"{exc.args[0]} (the folder of the vault named {name!r})",
                               advice=f"vault-mem vaults list shows each named vault's folder; vault-mem vaults "
                                      f"remove {name} forgets this name") from None


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
    """The vaults ``--vault`` names (repeatable: ``NAME=DIR``, ``DIR``, named after its folder, or a
    registered vault's name; docs/vaults.md, docs/cli.md), else the one ``$VAULT_MEM_VAULT`` names,
    else every vault registered with ``vault-mem vaults add``, in the order added: name -> checked
    root, in the order given. InvalidInput for none, a bad name, a name or a folder given twice;
    VaultUnavailable for a folder that is not there (a registered one included: never skipped)."""
    return {name: root for name, root, _ in named_folders(values, env, check=True)}


def named_folders(values: list[str], env: str | None, *, check: bool) -> list[tuple[str, Path, bool]]:
    """``named_vaults`` as (name, folder, whether it exists), with ``check`` False a folder that does
    not exist yet is kept unchecked (``connect --print``)."""
    from vault_mem.served.registry import registered
    from vault_mem.served.vaults import check_vault_name, name_after_folder

    given = list(values) or ([env] if env else [])
    pairs: list[tuple[str | None, Path, bool]]
    if given:
        pairs = [resolve_vault(value) for value in given]
    else:
        pairs = [(entry.name, entry.path, True) for entry in registered().values()]
    if not pairs:
        raise InvalidInput("--vault", "no vault given: pass --vault PATH (or NAME=PATH, repeatable) or set "
                                      "VAULT_MEM_VAULT, or name vaults once with 'vault-mem vaults add NAME DIR'")
    found: list[tuple[str, Path, bool]] = []
    for name, folder, registered_name in pairs:
        if check or folder.exists():
            root, exists = checked(folder, name if registered_name else None), True
        else:
            root, exists = folder.absolute(), False
        name = check_vault_name(name) if name is not None else name_after_folder(root)
        if any(seen == name for seen, _, _ in found):
            raise InvalidInput("--vault", f"two vaults are named {name!r}: give each its own name, "
                                          "e.g. --vault work=~/work --vault home=~/notes")
        same = next((other for other, seen, _ in found if seen.resolve() == root.resolve()), None)
        if same is not None:
            raise InvalidInput("--vault", f"{root} is given twice (as {same!r} and {name!r}): serve each folder once")
        found.append((name, root, exists))
    return found
