"""The docs are made for people and kept true: every command and option is documented and has
help text, docs/cli.md is what the parser says, every error a person can meet is explained."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from test_cli_errors import CASES

from vault_mem.cli import COMMANDS
from vault_mem.cli.app import build_parser, subparser
from vault_mem.cli.reference import markdown

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
README = DOCS.parent / "README.md"
PEOPLE_PAGES = ["getting-started.md", "clients.md", "vault-format.md", "troubleshooting.md", "cli.md"]


def options(name: str) -> list[argparse.Action]:
    return [a for a in subparser(build_parser(), name)._actions
            if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS]


def test_docs_cli_md_is_generated_from_the_parser() -> None:
    assert (DOCS / "cli.md").read_text(encoding="utf-8") == markdown(), \
        "docs/cli.md is stale: python -m vault_mem.cli.reference > docs/cli.md"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_a_description_an_example_and_documented_options(name: str) -> None:
    command = COMMANDS[name]
    assert command.summary and len(command.description) > len(command.summary)
    assert command.examples and all(e.startswith(f"vault-mem {name}") for e in command.examples)
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    section = text.split(f"\n## vault-mem {name}\n", 1)[1].split("\n## ", 1)[0]
    for action in options(name):
        assert action.help, f"{name} {action.option_strings or action.dest}: no help text"
        for flag in action.option_strings or [str(action.metavar or action.dest)]:
            assert f"`{flag}" in section, f"{name} {flag} is not in docs/cli.md"


def test_every_limit_states_its_range() -> None:
    for name in COMMANDS:
        for action in options(name):
            if "--limit" in action.option_strings:
                assert re.fullmatch(r"1\.\.\d+", str(action.metavar)), f"{name} --limit"


def test_the_readme_links_every_page_for_people() -> None:
    readme = README.read_text(encoding="utf-8")
    for page in PEOPLE_PAGES:
        assert (DOCS / page).is_file() and f"docs/{page}" in readme, page


def test_client_setup_covers_each_client_and_system() -> None:
    text = (DOCS / "clients.md").read_text(encoding="utf-8")
    for needle in ("Library/Application Support/Claude/claude_desktop_config.json",
                   r"%APPDATA%\Claude\claude_desktop_config.json", ".config/Claude/claude_desktop_config.json",
                   "Quit Claude Desktop completely", "-s user", "~/.cursor/mcp.json", "--transport http",
                   '"url": "http://127.0.0.1:8765/mcp"', "mcp-remote"):
        assert needle in text, needle


# Where the case's fragment is the person's own input, the page explains the message's words.
EXPLAINED_AS = {"unknown note": "no note matches"}


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_every_error_a_person_can_meet_is_explained(case: str) -> None:
    expected = EXPLAINED_AS.get(case) or next(c[2] for c in CASES if c[0] == case)
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    assert expected in text, f"troubleshooting.md does not explain {case!r} ({expected!r})"


def test_every_install_line_runs_as_written_from_a_checkout() -> None:
    """vault-mem is on no package index: a ``pip install`` of it names the checkout (``.``, a path),
    never the distribution, and each extra it asks for is one pyproject.toml defines."""
    import tomllib

    extras = set(tomllib.loads((DOCS.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
                 ["optional-dependencies"])
    pages = [README, *sorted(DOCS.rglob("*.md")), *sorted((DOCS.parent / "vault_mem").rglob("*.py"))]
    seen = 0
    for page in pages:
        for line in re.findall(r"pip(?:\.exe)?\s+install\s+([^\n#`\"&;|]*)", page.read_text(encoding="utf-8")):
            command = re.split(r"\)|[.,;:](?:\s|$)| in | from ", line)[0]  # where the prose around it begins
            for word in command.split():
                target = word.strip("'").rstrip(".,;:)")
                if word.startswith("-") or not target:
                    continue
                name, _, extra = target.partition("[")
                assert not re.fullmatch(r"vault[-_]mem", name, flags=re.IGNORECASE), \
                    f"{page.name}: 'pip install {line.strip()}' names vault-mem, which no index has: install the " \
                    "checkout (pip install -e '.[meaning]')"
                if extra and (name in (".", "..") or "/" in name or "\\" in name):
                    assert set(extra.rstrip("]").split(",")) <= extras, f"{page.name}: {word} asks for no such extra"
                    seen += 1
    assert seen >= 2  # the meaning extra, the test extra
