"""docs/cli.md, generated from the parser so that the reference never drifts from ``--help``.

    python -m vault_mem.cli.reference > docs/cli.md

``tests/unit/test_cli_docs.py`` fails when the file differs from what this prints.
"""

from __future__ import annotations

import argparse

from vault_mem.cli import COMMANDS
from vault_mem.cli.app import LIMIT_RULE, build_parser, subparser

INTRO = """\
# The command line

`vault-mem COMMAND [--vault PATH|NAME] [options]`. `vault-mem` alone lists the commands and
`vault-mem COMMAND --help` shows one command's options and examples. This page is generated
from the same parser (`python -m vault_mem.cli.reference > docs/cli.md`).

- **The vault** comes from `--vault`, else `$VAULT_MEM_VAULT`: a folder, or the name of a vault
  named once with [`vault-mem vaults add NAME DIR`](#vault-mem-vaults). A value is read in this
  order: `NAME=PATH` is the folder PATH (a command on one vault ignores the name); a value that
  exists on disk, or that cannot be a name (it holds `/` or `\\`, starts with `.` or `~`), is that
  path, exactly as before names existed; else a name `vaults add` gave is its folder; else it
  is an error that lists the names there are, never a fallback. So a folder of the working
  directory comes first: with `./work` there, `--vault work` is `./work` even when `work` is
  also a name (stderr then says which vault it did not use; give its path to reach it). A
  command on one vault refuses `--vault` given twice; `serve`, `connect` and `agents` take it
  repeated (`--vault work=~/work --vault home`), and `serve` or `connect` with no `--vault`
  and no `$VAULT_MEM_VAULT` take every named vault. The index lives in
  `<vault>/.vault-mem/` unless `--index-dir` says otherwise (see [the vault format](vault-format.md));
  the history behind `log`, `undo` and `inbox`, which cannot be rebuilt, beside it in
  `<vault>/.vault-mem-history/` (or `<index folder>-history/`; see
  [the index and how it follows the files](index-and-sync.md#the-history-apart-from-the-index)).
- **Output**: text for people, its rows cut with `…` to the terminal's width (`$COLUMNS` when
  set); piped or redirected to a file, whole lines, never cut. With `--json`, one JSON object on
  stdout, errors included (`{"status": "invalid", "message": ...}`). Every command but `serve`
  and `export` (whose stdout belongs to the MCP protocol and to the notes) takes `--json`.
- **Vault text is shown, never obeyed**: a control character in a title, body, tag or file name
  (an escape sequence that would clear the screen, set the window title or write the
  clipboard) is printed visibly as `\\x1b`, and a bidi control that would reorder a name (U+202E
  and the like) as `\\u202e`; `--json` keeps every value exact, escaping those characters the
  JSON way (`\\u001b`, `\\u202e`). New file names never hold bidi controls.
- **Errors** are one line on stderr that says what was wrong and what is accepted; see
  [troubleshooting](troubleshooting.md) for each message.
- **Exit status**: 0 done; 1 failed (bad value, unknown note or domain, unusable vault);
  2 the command line does not parse; 3 `doctor` found problems; 130 stopped by Ctrl-C.
- **Limits**: {limit_rule}
- **Domains**: a domain is a folder path from the vault's top; `(root)` is the top itself, that is
  the whole vault, wherever a domain is shown or taken.
- **Dates** (`recall --since/--until`): `YYYY`, `YYYY-MM`, `YYYY-MM-DD` or an ISO datetime.
- **A folder that does not look like a vault** (`/`, your home folder, or more than 50,000
  Markdown files and no `.obsidian` folder) is not indexed without `--yes`.
"""


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += f" {action.metavar or action.dest.upper()}"
        else:
            name = str(action.metavar or action.dest)
        rows.append((name, str(action.help or "")))
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def markdown() -> str:
    parser = build_parser()
    parts = [INTRO.replace("{limit_rule}", LIMIT_RULE.removeprefix("--limit: ")), "## Commands\n"]
    parts.append("| command | what it does |\n|---|---|")
    parts += [f"| [`{name}`](#vault-mem-{name}) | {command.summary} |" for name, command in COMMANDS.items()]
    for name, command in COMMANDS.items():
        sub = subparser(parser, name)
        parts.append(f"\n## vault-mem {name}\n\n{command.description}\n")
        parts.append("| option | meaning |\n|---|---|")
        parts += [f"| `{option}` | {_cell(text)} |" for option, text in _options(sub)]
        parts.append("\nExamples:\n\n```sh\n" + "\n".join(command.examples) + "\n```")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
