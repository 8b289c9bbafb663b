"""The layers stay apart: imports point down, never up:
vault <- git <- history <- meaning <- search <- served <- reads, writes (apart from each other) <- ui <-
mcp_server <- cli,
with runtime (what runs while serving) beside served, above the search engine and below the cli;
imports (import and export) and clients (their config files) stand on vault alone, for cli;
Whoosh is imported only inside search/ (its internals only in search/whoosh/), and everything
above the engine reaches it through its face, search/api.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent.parent / "vault_mem"
# What each layer must never import.
TOOLS = ("vault_mem.reads", "vault_mem.writes")
TOP = ("vault_mem.mcp_server", "vault_mem.cli", "mcp")
ABOVE_ENGINE = ("vault_mem.served", "vault_mem.runtime", *TOOLS, *TOP)
FORBIDDEN = {
    "vault": ("vault_mem.git", "vault_mem.search", "vault_mem.imports", "vault_mem.clients", *ABOVE_ENGINE, "whoosh"),
    "git": ("vault_mem.search", *ABOVE_ENGINE, "whoosh"),
    # Files in, files out: an import writes notes as the write tools do, and the index catches up
    # as with any other change, so neither needs git, the index or anything above them.
    "imports": ("vault_mem.git", "vault_mem.search", "vault_mem.clients", *ABOVE_ENGINE, "whoosh"),
    "clients": ("vault_mem.git", "vault_mem.search", "vault_mem.imports", *ABOVE_ENGINE, "whoosh"),
    # The journal and the agents' states: files beside the vault, below the engine that indexes it.
    "history": ("vault_mem.git", "vault_mem.search", "vault_mem.imports", "vault_mem.clients", *ABOVE_ENGINE, "whoosh"),
    # The optional meaning stage (a sentence model and the vectors beside the index): under the
    # engine, which asks it for the notes nearest a query; it reads notes as the vault gives them.
    "meaning": ("vault_mem.git", "vault_mem.search", "vault_mem.history", "vault_mem.imports", "vault_mem.clients",
                *ABOVE_ENGINE, "whoosh"),
    "search": ABOVE_ENGINE,
    # Above the engine, Whoosh is reached only through search/api.py.
    "served": ("vault_mem.runtime", *TOOLS, *TOP, "whoosh"),
    "runtime": ("vault_mem.served", *TOOLS, *TOP, "whoosh"),
    "reads": ("vault_mem.writes", "vault_mem.runtime", *TOP, "whoosh"),
    "writes": ("vault_mem.reads", "vault_mem.runtime", *TOP, "whoosh"),
    "mcp_server": ("vault_mem.runtime", "vault_mem.cli", "whoosh"),
    # The page for people stands on reads, writes and served, under mcp_server (which mounts it).
    "ui": ("vault_mem.runtime", *TOP, "whoosh"),
    "cli": ("mcp", "whoosh"),  # the top: it reaches MCP only through mcp_server/, Whoosh through search/
    # Every timing, size and threshold: a module at the package's top that every layer imports.
    "settings": ("vault_mem.vault", "vault_mem.git", "vault_mem.history", "vault_mem.search", "vault_mem.imports",
                 "vault_mem.clients", *ABOVE_ENGINE, "whoosh"),
}
MODULES = {"settings"}  # layers that are one module at the package's top, not a package


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages | MODULES == set(FORBIDDEN), "a new package needs its place in FORBIDDEN"


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
    paths = [PACKAGE / f"{layer}.py"] if layer in MODULES else sorted((PACKAGE / layer).rglob("*.py"))
    for path in paths:
        for module in imported_modules(path):
            if any(module == bad or module.startswith(bad + ".") for bad in FORBIDDEN[layer]):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert not offenders, "\n".join(offenders)


def test_modules_stay_readable() -> None:
    """Modules are split by concept, not by size; a file past 900 lines has grown a second one."""
    big = [f"{p.relative_to(PACKAGE)}: {n} lines" for p in PACKAGE.rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 900]
    assert not big, "\n".join(big)


# The search engine's one face.
ENGINE_FACE = {"vault_mem.search", "vault_mem.search.api"}


def test_nothing_above_the_engine_reaches_behind_its_face() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "search":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = {node.module} if node.module != "vault_mem.search" else {
                    f"vault_mem.search.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.Import):
                names = {alias.name for alias in node.names}
            else:
                continue
            offenders += [f"{path.relative_to(PACKAGE)} imports {name}" for name in sorted(names)
                          if name.startswith("vault_mem.search.") and name not in ENGINE_FACE]
    assert not offenders, "\n".join(offenders)


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


# The tests keep the same face. Tests of the engine's inside (its segments, postings, caches,
# commits, merges, Whoosh patches) live in tests/engine/ and may reach behind it; every other test
# (tests/unit, tests/integration and the helpers in tests/) tests the layers above through
# search/api.py, as the code above does: no other module of search/, no Whoosh, and none of the
# engine's private attributes (a name with a leading underscore that only search/ defines).
TESTS = PACKAGE.parent / "tests"
ENGINE_TESTS = TESTS / "engine"
# The engine's methods that hand out its Whoosh objects: a test above asks ``reading`` for a snapshot.
HANDING_OUT_WHOOSH = {"searching"}
# A test helper that may name a module behind the face, and why.
HELPERS_BEHIND_THE_FACE = {
    # A test holds a build, a merge or a start-up check at a named step (search/hold.py) and runs
    # it with the run's choice of Whoosh patches: the engine's test seam, re-exported for the layers.
    "holding.py": {"vault_mem.search.hold", "vault_mem.search.whoosh.patches"},
}
# Whoosh modules a test above the engine may use, and why: none of them is the engine's object.
WHOOSH_FOR_TESTS = {
    # The Snowball stemmer, as the plain-scan oracle's own reference (tests/unit/test_memory_search.py).
    "whoosh.lang.snowball.english",
}


def engine_private_names() -> set[str]:
    """The private names (``_name``) search/ defines and no other part of vault_mem does."""
    def defined(paths: list[Path]) -> set[str]:
        names: set[str] = set()
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
        return {n for n in names if n.startswith("_") and not n.startswith("__")}

    engine = sorted((PACKAGE / "search").rglob("*.py"))
    others = [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] != "search"]
    return defined(engine) - defined(others)


def behind_the_face(path: Path, private: set[str]) -> list[str]:
    """What the test module at ``path`` reaches behind the engine's face."""
    allowed = HELPERS_BEHIND_THE_FACE.get(path.name, set()) if path.parent == TESTS else set()
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = {node.module} if node.module != "vault_mem.search" else {
                f"vault_mem.search.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            names = {alias.name for alias in node.names}
        elif isinstance(node, ast.Attribute) and (node.attr in private or node.attr in HANDING_OUT_WHOOSH):
            found.append(f"line {node.lineno} uses {ast.unparse(node)}")
            continue
        else:
            continue
        for name in sorted(names - allowed - WHOOSH_FOR_TESTS):
            if (name.startswith("vault_mem.search.") and name not in ENGINE_FACE) or name.split(".")[0] == "whoosh":
                found.append(f"line {node.lineno} imports {name}")
    return found


def test_tests_above_the_engine_use_its_face() -> None:
    private = engine_private_names()
    assert {"_open_batch", "_read_toc"} <= private  # what the rule looks for is there
    offenders = [f"{path.relative_to(TESTS)} {what}" for path in sorted(TESTS.rglob("*.py"))
                 if not path.is_relative_to(ENGINE_TESTS)
                 for what in [*behind_the_face(path, private), *engine_internals_used(path)]]
    assert not offenders, "move the test to tests/engine/ or ask through search/api.py:\n" + "\n".join(offenders)


def test_the_face_rule_for_tests_catches_each_way_behind_it(tmp_path: Path) -> None:
    """Each way behind the face, in a test module, is caught."""
    private = engine_private_names()
    probe = tmp_path / "test_probe.py"
    for line in ("from vault_mem.search.store import VaultIndex", "from vault_mem.search import store",
                 "import vault_mem.search.query", "from whoosh.query import Term", "import whoosh.index",
                 "index._open_batch.changes.clear()", "ix._read_toc()", "with index.searching() as s: pass"):
        probe.write_text(line + "\n", encoding="utf-8")
        assert behind_the_face(probe, private), line
    probe.write_text("from vault_mem.search.api import VaultIndex, reading\nfrom vault_mem.search import api\n"
                     "from whoosh.lang.snowball.english import EnglishStemmer\n", encoding="utf-8")
    assert behind_the_face(probe, private) == []


def test_code_above_the_engine_uses_no_private_name_of_it_nor_its_searchers() -> None:
    private = engine_private_names()
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "search":
            continue
        found = behind_the_face(path, private)
        offenders += [f"{rel.as_posix()} {what}" for what in found]
    assert not offenders, "\n".join(offenders)


# What only the engine touches: Whoosh's writer and its commit, document numbers and stored fields.
# Every change reaches the index through ``VaultIndex.apply`` (or its two halves, ``submit`` and
# ``commit_batch``, for a write tool that journals between them): the watcher, the start-up check,
# the write tools and undo follow one commit protocol, with the check of what another process
# committed inside the engine, under its lock (docs/architecture.md#3-the-save-path).
ENGINE_ONLY = frozenset({
    "acquire_writer", "writer", "commit_live", "update_document", "delete_by_term", "delete_document",
    "add_document", "document_number", "stored_fields", "searcher", "writelock", "latest_generation",
})


def engine_internals_used(path: Path) -> list[str]:
    """``line: name`` of each attribute in ``ENGINE_ONLY`` that the module at ``path`` reaches."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = sorted((node.lineno, node.col_offset, node.attr) for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and node.attr in ENGINE_ONLY)
    return [f"{line}: .{attr}" for line, _, attr in found]


def test_nothing_outside_the_engine_touches_a_writer_a_document_number_or_a_commit() -> None:
    offenders = [f"{path.relative_to(PACKAGE)}:{found}" for path in sorted(PACKAGE.rglob("*.py"))
                 if path.relative_to(PACKAGE).parts[0] != "search" for found in engine_internals_used(path)]
    assert not offenders, "\n".join(offenders)


def test_the_engine_rule_finds_a_watcher_that_commits_itself(tmp_path: Path) -> None:
    """The watcher of 0.6.0 took the index's writer itself; the rule above says so of that code."""
    old = tmp_path / "watcher.py"
    old.write_text(
        "def _apply(self, changed, removed):\n"
        "    writer = self.index.acquire_writer()\n"
        "    current = writer.searcher()\n"
        "    docnum = current.document_number(path='a.md')\n"
        "    etag = current.stored_fields(docnum)['record']['etag']\n"
        "    writer.delete_by_term('path', 'b.md')\n"
        "    writer.update_document(**document_of(note, rel))\n"
        "    self.index.commit_live(writer)\n", encoding="utf-8")
    assert [found.split(": ")[1] for found in engine_internals_used(old)] == [
        ".acquire_writer", ".searcher", ".document_number", ".stored_fields", ".delete_by_term",
        ".update_document", ".commit_live"]
