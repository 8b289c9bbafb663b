"""The command-line framework: a registry of commands, the parser, and one-line usage errors.

A command is a ``Command`` registered with ``register``: its name, a one-line summary, a
description and examples for ``--help``, a function that adds its options, and the function
that runs it. Adding a command is one module that calls ``register`` and one import in
``cli/__init__.py``; adding an option is one ``add_argument`` in that command's module.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from vault_mem import __version__

PROG = "vault-mem"
LIMIT_RULE = ("--limit: how many to show, from 1 to the command's maximum (search 50, list 200, "
              "recall 500); search shows at most 50 and says so, the others refuse a larger number.")


@dataclass(frozen=True)
class Command:
    name: str
    summary: str  # one line in the command list
    description: str  # the paragraph of ``vault-mem NAME --help``
    examples: tuple[str, ...]
    run: Callable[[argparse.Namespace], int]
    add_options: Callable[[argparse.ArgumentParser], None] = lambda parser: None
    uses_vault: bool = True  # takes --vault, --index-dir and --yes
    several_vaults: bool = False  # --vault is said to be repeatable: NAME=PATH (it is on every command)
    has_json: bool = True  # takes --json
    aliases: tuple[str, ...] = field(default=())


COMMANDS: dict[str, Command] = {}


def register(command: Command) -> Command:
    COMMANDS[command.name] = command
    return command


class UsageError(Exception):
    """A command line that does not parse: shown as one line, exit status 2."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog
        self.message = " ".join(message.split())


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are exceptions (one line each), never a usage dump."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number: give 1..65535") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range: a port is 1..65535")
    return port


def _vault_options(parser: argparse.ArgumentParser, top: bool, several: bool = False) -> None:
    """--vault (appended: a command on one vault refuses two, cli/common.py:vault_root), --index-dir,
    --yes."""
    default = {} if top else {"default": argparse.SUPPRESS}
    said = ("a vault, repeatable: NAME=PATH, a folder (named after it), or the name 'vault-mem vaults add' "
            "gave a vault (default: $VAULT_MEM_VAULT)") if several else \
        ("the vault: its folder, or the name 'vault-mem vaults add' gave it (a folder of that name in the "
         "working directory comes first; default: $VAULT_MEM_VAULT)")
    parser.add_argument("--vault", action="append", metavar="VAULT", **default,  # type: ignore[arg-type]
                        help=said)
    parser.add_argument("--index-dir", type=Path, metavar="PATH", **default,  # type: ignore[arg-type]
                        help="where the index lives (default: <vault>/.vault-mem, or the user's cache "
                             "folder when the vault is read-only)")
    parser.add_argument("--yes", action="store_true", **default,  # type: ignore[arg-type]
                        help="index a folder that does not look like a vault (/, the home folder, or "
                             "over 50,000 Markdown files without .obsidian) without asking")


def _wrapped(text: str) -> str:
    """Paragraphs filled to the terminal's width (argparse leaves raw descriptions as written)."""
    room = max(40, shutil.get_terminal_size((80, 24)).columns - 2)
    return "\n".join(textwrap.fill(line, room, subsequent_indent="  " if line.startswith("--") else "")
                     for line in text.splitlines())


def build_parser() -> Parser:
    top = Parser(prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
                 description="Long-term memory for AI agents, kept as Markdown files that people read and "
                             "edit.",
                 epilog=_wrapped("Run 'vault-mem COMMAND --help' for a command's options and examples.\n"
                                 + LIMIT_RULE + "\nDocs: docs/cli.md (every command), docs/getting-started.md."))
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _vault_options(top, top=True)
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser,
                             title="commands")
    for command in COMMANDS.values():
        epilog = "examples:\n" + "\n".join(f"  {line}" for line in command.examples)
        parser = sub.add_parser(command.name, help=command.summary, description=_wrapped(command.description),
                                epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
        if command.uses_vault:
            _vault_options(parser, top=False, several=command.several_vaults)
        if command.has_json:
            parser.add_argument("--json", action="store_true",
                                help="print the answer as one JSON object on stdout (errors too)")
        command.add_options(parser)
    return top


def subparser(parser: Parser, name: str) -> Parser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(name)
            if isinstance(found, Parser):
                return found
    raise KeyError(name)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The parsed command line; UsageError (one line, with a suggestion) when it does not parse."""
    parser = build_parser()
    word = command_word(argv)
    if word is not None and word not in COMMANDS:
        raise UsageError(PROG, f"{word!r} is not a command{suggestion(word, COMMANDS)}; "
                               f"'{PROG}' alone lists the commands")
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = subparser(parser, args.command) if args.command else parser
        options = [s for action in command._actions for s in action.option_strings]
        first = extras[0]
        if first.startswith("-"):
            raise UsageError(command.prog, f"unknown option {first.partition('=')[0]}"
                                           f"{suggestion(first.partition('=')[0], options)}; "
                                           f"see '{command.prog} --help'")
        raise UsageError(command.prog, f"unexpected argument {first!r}; see '{command.prog} --help'"
                                       " (quote a value that holds spaces)")
    return args


def command_word(argv: Sequence[str]) -> str | None:
    """The first word that is not a top-level option or its value."""
    words = iter(argv)
    for word in words:
        if word in ("--vault", "--index-dir"):
            next(words, None)
        elif word == "--":
            return next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def suggestion(word: str, choices: Sequence[str] | dict[str, Command]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def print_command_list() -> None:
    width = max(len(name) for name in COMMANDS)
    lines = [f"{PROG} {__version__}: long-term memory for AI agents, kept as Markdown files.", "",
             f"usage: {PROG} COMMAND [--vault PATH|NAME] [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    lines += ["", f"'{PROG} COMMAND --help' shows a command's options and examples (all: docs/cli.md)."]
    print("\n".join(lines), file=sys.stdout)
