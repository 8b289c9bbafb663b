"""docs/architecture.md is executed: every code name it cites resolves, and the save path it draws
(section 3, and the start-up path of section 5) names every lock, wait, event and thread-local the
code on that path creates, so that a mechanism added to the path without its place in the page,
or a name renamed in the code and not in the page, fails here."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
PACKAGE = REPO / "vault_mem"
DOC = REPO / "docs" / "architecture.md"

# The modules a save runs through (docs/architecture.md, section 3): what they create must be named there.
SAVE_PATH = (
    "mcp_server/app.py", "mcp_server/calls.py", "mcp_server/delegate.py", "writes/tools.py", "writes/across.py",
    "writes/landing.py", "vault/writer.py",
    "history/journal.py", "history/agentstate.py", "history/filelocks.py", "search/store.py",
    "search/commits.py", "search/whoosh/parts.py", "runtime/watcher.py", "search/similar.py", "search/lru.py",
    "search/segments.py",
)
# The runtime around it: named in section 3 or in the start-up path (section 5).
START_PATH = ("runtime/lifecycle.py",)
# What makes a lock, a wait or a per-thread value: threading's, filelock's and anyio's.
MAKERS = frozenset({"Lock", "RLock", "Condition", "Event", "Semaphore", "BoundedSemaphore", "local", "FileLock",
                    "CapacityLimiter"})
WAITS = frozenset({"sleep", "wait", "wait_for", "acquire"})


def section(number: int) -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"^## {number}\. .*?(?=^## |\Z)", text, re.M | re.S)
    assert found, f"docs/architecture.md has no section {number}"
    return found.group(0)


def cited(text: str) -> list[str]:
    """The code spans of ``text`` (outside fenced blocks; a span may wrap a line), each cut before its
    first parenthesis (``f(x)`` cites ``f``)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return [" ".join(span.split("(", 1)[0].split()) for span in re.findall(r"`([^`]+)`", text)]


@cache
def module_files() -> dict[str, list[Path]]:
    """File name -> the package's modules of that name."""
    found: dict[str, list[Path]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found.setdefault(path.name, []).append(path)
    return found


def modules_cited(cited_path: str) -> list[Path]:
    """The modules a cited ``file.py`` or ``folder/file.py`` may be: under vault_mem/, by its end
    (``app.py`` is mcp_server's or ui's: a name cited in it must be in one of them)."""
    return [p for p in module_files().get(Path(cited_path).name, [])
            if ("/" + p.relative_to(PACKAGE).as_posix()).endswith("/" + cited_path)]


@cache
def tree_of(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _assigned(node: ast.AST) -> set[str]:
    """Names an assignment, a for loop or an import binds at this level."""
    names: set[str] = set()
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
    elif isinstance(node, ast.Import | ast.ImportFrom):
        names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def members(scope: ast.AST) -> dict[str, ast.AST | None]:
    """What a module, class or function defines at its own level: functions and classes (their
    node, to look inside), assigned names; for a class, also every ``self.name =`` of its methods."""
    found: dict[str, ast.AST | None] = {}
    body = getattr(scope, "body", [])
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
        else:
            found.update(dict.fromkeys(_assigned(node)))
    if isinstance(scope, ast.ClassDef):
        for node in ast.walk(scope):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self":
                found.setdefault(node.attr, None)
    return found


def resolves(path: Path, dotted: str) -> bool:
    """Whether ``dotted`` (``name``, ``Class.method``, ``function.inner``) is defined in ``path``."""
    scope: ast.AST | None = tree_of(path)
    for part in dotted.split("."):
        if scope is None:
            return True  # an attribute of a value (``Batch.done.set``): its type is not followed
        defined = members(scope)
        if part not in defined:
            return False
        scope = defined[part]
    return True


@cache
def classes() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(tree_of(path)):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(path)
    return found


# What ends a file's name the page cites (``build.lock``), not a module's attribute.
FILE_ENDS = frozenset({"lock", "json", "jsonl", "toc", "md", "tmp"})
# Classes the page names that are not vault-mem's (Whoosh's, filelock's, anyio's, the standard library's).
NOT_OURS = frozenset({"FileLock", "BoundedSemaphore", "IndexBusy"})


def stale(span: str) -> str | None:
    """Why the code span ``span`` names nothing in the code (None: it resolves, or is no code name)."""
    if re.fullmatch(r"[\w/]+\.py:[\w.]+", span):
        file, name = span.split(":")
        paths = modules_cited(file)
        if not paths:
            return f"{file}: no such module"
        return None if any(resolves(path, name) for path in paths) else f"{name} is not defined in {file}"
    if re.fullmatch(r"[\w/]+\.py", span):
        exists = bool(modules_cited(span)) or (REPO / span).is_file()
        return None if exists else f"{span}: no such file"
    if re.fullmatch(r"[A-Z]\w*\.\w+(\.\w+)*", span):
        name, attribute = span.split(".")[:2]
        if name in NOT_OURS:
            return None
        paths = classes().get(name)
        if not paths:
            return f"{name}: no such class"
        return None if any(resolves(p, f"{name}.{attribute}") for p in paths) else f"{name} has no {attribute}"
    if re.fullmatch(r"[a-z_]+\.[A-Za-z_]\w*", span) and span.rpartition(".")[2] not in FILE_ENDS:
        module, name = span.split(".")
        paths = module_files().get(f"{module}.py", [])
        if len(paths) != 1:
            return None  # not a module's name (``ix.writer``)
        return None if resolves(paths[0], name) else f"{name} is not defined in {paths[0].relative_to(REPO)}"
    return None


def test_every_code_name_the_architecture_page_cites_is_in_the_code() -> None:
    problems = sorted({f"`{span}`: {why}" for span in cited(DOC.read_text(encoding="utf-8"))
                       if (why := stale(span)) is not None})
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("span", ["delegate.py:take_writes_quickly", "workers.py:give_way_to_the_writer",
                                  "landing.py:landed", "filelocks.POLL", "Written.begin",
                                  "search/store.py:VaultIndex.no_such_method", "no/such.py"])
def test_the_page_check_finds_the_names_that_went_stale(span: str) -> None:
    """The names the page of 0.6.0 cited after the code had moved on are found stale."""
    assert stale(span) is not None


def test_the_page_check_resolves_what_is_there() -> None:
    for span in ["search/store.py:VaultIndex.commit_batch", "app.py:build_server.on_call_tool",
                 "Batch.done.set", "merge.plan", "writes/tools.py", "VaultIndex._committing"]:
        assert stale(span) is None, span


def mechanisms(path: Path) -> list[tuple[str, int]]:
    """What the module at ``path`` creates that a save may wait on, each as the name the page must
    cite: ``Class.attribute`` (made in a method and kept on ``self``), ``name`` (a module's), or the
    function that makes one without keeping it or that waits (``Class.method``, ``function``): a
    lock, condition, event, semaphore, capacity limiter, file lock or thread-local made; a sleep,
    a wait or an acquire called."""
    found: list[tuple[str, int]] = []

    def called(node: ast.AST) -> str | None:
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)

    def visit(node: ast.AST, owner: str | None, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            here_owner, here_function = owner, function
            if isinstance(child, ast.ClassDef):
                here_owner, here_function = child.name, None
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                here_function = child.name if function is None else function
            where = f"{owner}.{function}" if owner and function else function
            if isinstance(child, ast.Assign | ast.AnnAssign) and child.value is not None and any(
                    called(sub) in MAKERS for sub in ast.walk(child.value)):
                target = child.targets[0] if isinstance(child, ast.Assign) else child.target
                while isinstance(target, ast.Subscript):
                    target = target.value
                if isinstance(target, ast.Attribute):
                    found.append((f"{owner}.{target.attr}" if owner else target.attr, child.lineno))
                elif isinstance(target, ast.Name) and function is None:
                    found.append((target.id, child.lineno))
                elif where:
                    found.append((where, child.lineno))
                continue
            name = called(child)
            if name in WAITS or name in MAKERS:
                assert where, f"{path}:{child.lineno}: a {name} outside any function"
                found.append((where, child.lineno))
            visit(child, here_owner, here_function)

    visit(tree_of(path), None, None)
    return found


def named(name: str, spans: list[str]) -> bool:
    """Whether ``name`` (``Class.attribute`` or ``name``) is one of ``spans``, or their end."""
    for span in spans:
        code = span.rsplit(":", 1)[-1]
        parts = code.split(".")
        wanted = name.split(".")
        if any(parts[i:i + len(wanted)] == wanted for i in range(len(parts))) and (
                len(wanted) > 1 or parts[-1] == name):
            return True
    return False


def test_every_lock_and_wait_on_the_save_path_is_on_the_page() -> None:
    save, start = cited(section(3)), cited(section(3)) + cited(section(5))
    missing = [f"vault_mem/{rel}:{line}: {name}"
               for modules, spans in ((SAVE_PATH, save), (START_PATH, start)) for rel in modules
               for name, line in mechanisms(PACKAGE / rel) if not named(name, spans)]
    assert not missing, "not named in docs/architecture.md's save path:\n" + "\n".join(missing)


def test_the_save_path_check_finds_a_lock_the_page_does_not_name(tmp_path: Path) -> None:
    """The locks of 0.6.0 missing from the page (a folder names' lock, the journal's prune guard) are found."""
    module = tmp_path / "module.py"
    module.write_text("import threading, time\n_names_lock = threading.Lock()\n_prune_guard = threading.Lock()\n"
                      "class Index:\n    def __init__(self):\n        self._committing = threading.Lock()\n"
                      "    def _space(self):\n        time.sleep(0.05)\n", encoding="utf-8")
    found = [name for name, _ in mechanisms(module)]
    assert found == ["_names_lock", "_prune_guard", "Index._committing", "Index._space"]
    assert [name for name in found if not named(name, ["_names_lock", "VaultIndex._committing", "Index._space"])] \
        == ["_prune_guard", "Index._committing"]
