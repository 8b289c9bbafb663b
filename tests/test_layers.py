"""The layers stay apart: imports point down, never up:
vault <- git <- index <- served <- reads, writes (apart from each other) <- ui <- mcp_server <- cli,
with runtime (what runs while serving) beside served, above the index and below the cli;
imports (import and export) and clients (their config files) stand on vault alone, for cli;
Whoosh is imported only inside index/ (and its internals only in index/whoosh_seam.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "vault_mem"
# What each layer must never import.
TOOLS = ("vault_mem.reads", "vault_mem.writes")
TOP = ("vault_mem.mcp_server", "vault_mem.cli", "mcp")
ABOVE_INDEX = ("vault_mem.served", "vault_mem.runtime", *TOOLS, *TOP)
FORBIDDEN = {
    "vault": ("vault_mem.git", "vault_mem.index", "vault_mem.imports", "vault_mem.clients", *ABOVE_INDEX, "whoosh"),
    "git": ("vault_mem.index", *ABOVE_INDEX, "whoosh"),
    # Files in, files out: an import writes notes as the write tools do, and the index catches up
    # as with any other change, so neither needs git, the index or anything above them.
    "imports": ("vault_mem.git", "vault_mem.index", "vault_mem.clients", *ABOVE_INDEX, "whoosh"),
    "clients": ("vault_mem.git", "vault_mem.index", "vault_mem.imports", *ABOVE_INDEX, "whoosh"),
    "index": ABOVE_INDEX,
    # Above the index, Whoosh is reached only through index/ (its query API: index/query.py).
    "served": ("vault_mem.runtime", *TOOLS, *TOP, "whoosh"),
    "runtime": ("vault_mem.served", *TOOLS, *TOP, "whoosh"),
    "reads": ("vault_mem.writes", "vault_mem.runtime", *TOP, "whoosh"),
    "writes": ("vault_mem.reads", "vault_mem.runtime", *TOP, "whoosh"),
    "mcp_server": ("vault_mem.runtime", "vault_mem.cli", "whoosh"),
    # The page for people stands on reads, writes and served, under mcp_server (which mounts it).
    "ui": ("vault_mem.runtime", *TOP, "whoosh"),
    "cli": ("mcp", "whoosh"),  # the top: it reaches MCP only through mcp_server/, Whoosh through index/
}


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(FORBIDDEN), "a new package needs its place in FORBIDDEN"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_point_down(layer: str) -> None:
    offenders = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module in imported_modules(path):
            if any(module == bad or module.startswith(bad + ".") for bad in FORBIDDEN[layer]):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert not offenders, "\n".join(offenders)


def test_modules_stay_small() -> None:
    """One concept per module: a file past ~500 lines is two concepts."""
    big = [f"{p.relative_to(PACKAGE)}: {n} lines" for p in PACKAGE.rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 520]
    assert not big, "\n".join(big)


# Who may start processes: git only through git/repo.py (no shell, timeouts, LC_ALL=C), and the
# server's runtime for its background index build. git/history.py, git/commit.py and
# git/sync.py all go through git/repo.py. clients/claude_code.py runs `claude mcp add/remove` for
# `vault-mem connect claude-code`: Claude Code rewrites its own config file while it runs, so its
# command is the safe way to change it (no shell, a timeout, only when `claude` is installed).
# mcp_server/workers.py starts the N workers of `serve --http --workers N`, each a vault-mem serve.
MAY_RUN_PROCESSES = {"git/repo.py", "runtime/lifecycle.py", "clients/claude_code.py", "mcp_server/workers.py"}


def test_only_the_git_module_and_the_runtime_start_processes() -> None:
    starting = [p for p in sorted(PACKAGE.rglob("*.py")) if "subprocess" in imported_modules(p)]
    offenders = [rel for p in starting if (rel := p.relative_to(PACKAGE).as_posix()) not in MAY_RUN_PROCESSES]
    assert not offenders, "\n".join(offenders)
