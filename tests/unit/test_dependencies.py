"""Declared equals imported: every third-party module that vault_mem/ imports comes from a
distribution named in pyproject.toml's ``[project] dependencies``, and every distribution
named there provides a module that vault_mem/ imports (docs/dependencies.md says why each
one is there). The ``meaning`` extra's distributions are imported only inside vault_mem/meaning/,
so a server without the extra never needs them. Read from pyproject.toml itself, so adding a
dependency is one edit."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "vault_mem"


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (``PyYAML`` == ``pyyaml``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(extra: str | None = None) -> set[str]:
    """The distributions of ``[project] dependencies``, or of the optional ``extra``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return {canonical(re.split(r"[\s<>=!~;\[(]", spec, maxsplit=1)[0]) for spec in specs}


MEANING = "vault_mem/meaning/"


def imported_modules() -> dict[str, set[str]]:
    """Top-level third-party module name -> the files of vault_mem/ that import it (any depth:
    imports inside functions count too)."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top != "vault_mem" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(path.relative_to(ROOT).as_posix())
    return found


def test_every_third_party_import_is_a_declared_dependency() -> None:
    providers = importlib.metadata.packages_distributions()
    wanted, optional = declared(), declared("meaning")
    undeclared = {}
    for module, files in imported_modules().items():
        dists = {canonical(d) for d in providers.get(module, [])}
        assert dists, f"{module} (imported by {sorted(files)}) is not installed from any distribution"
        outside = sorted(f for f in files if not f.startswith(MEANING))
        if not dists & wanted and not (dists & optional and not outside):
            undeclared[module] = (sorted(dists), outside or sorted(files))
    assert not undeclared, f"imported but not declared in pyproject.toml (the meaning extra's only inside " \
                           f"{MEANING}): {undeclared}"


def test_every_declared_dependency_is_imported() -> None:
    providers = importlib.metadata.packages_distributions()
    used = {canonical(d) for module in imported_modules() for d in providers.get(module, [])}
    unused = (declared() | declared("meaning")) - used
    assert not unused, f"declared in pyproject.toml but never imported by vault_mem/: {sorted(unused)}"


def test_the_scan_sees_imports_inside_functions_and_ignores_the_standard_library() -> None:
    modules = imported_modules()
    assert "uvicorn" in modules, "uvicorn is imported inside a function in mcp_server/transports.py"
    assert not {"json", "os", "tomllib", "vault_mem"} & set(modules)
