"""Every timing, size and threshold is a line of vault_mem/settings.py: a number written as a
module's or a class's constant, or as a parameter's default, is one the settings' docstring names
as a format or a contract (a default of 0, 1 or -1 is a start or "none", not a choice)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from vault_mem import settings

PACKAGE = Path(settings.__file__).resolve().parent
NEUTRAL = {0, 1, -1}


def numeric(node: ast.expr) -> bool:
    """Whether ``node`` is a number, or arithmetic over one (``64 * 1024``, ``len(x) + 16``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return numeric(node.left) or numeric(node.right)
    if isinstance(node, ast.Tuple):
        return any(numeric(e) for e in node.elts)
    return False


def value_of(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def constants(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) of each constant of the module and of its classes (UPPER_CASE names)."""
    bodies = [tree.body, *(c.body for c in ast.walk(tree) if isinstance(c, ast.ClassDef))]
    for body in bodies:
        for st in body:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
            for target in targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                for name in names:
                    if isinstance(name, ast.Name) and name.id.lstrip("_").isupper() and st.value is not None:
                        yield name.id, st.value


def defaults(tree: ast.Module) -> Iterator[tuple[set[str], str, ast.expr]]:
    """(the function's name and its class's, parameter, default) of every parameter with a default."""
    owners = {id(fn): {c.name} for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for fn in c.body}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            args = fn.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            for arg, default in pairs:
                yield {fn.name, *owners.get(id(fn), set())}, arg.arg, default


def named_in_the_settings_docstring() -> set[str]:
    return set(re.findall(r"``(\w+)``", settings.__doc__ or ""))


def test_numbers_outside_the_settings_are_the_formats_and_contracts_its_docstring_names() -> None:
    named = named_in_the_settings_docstring()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "settings.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, value in constants(tree):
            if numeric(value) and name not in named:
                found.append(f"{rel}: {name} = {ast.unparse(value)}")
        for owners, param, default in defaults(tree):
            if numeric(default) and value_of(default) not in NEUTRAL \
                    and not (param in named and owners & named):
                found.append(f"{rel}: {'.'.join(sorted(owners))}({param}={ast.unparse(default)})")
    assert not found, "a timing, size or threshold belongs in vault_mem/settings.py (one line, why, docs link):\n" + \
        "\n".join(found)


def test_the_docstring_keeps_the_exceptions_few() -> None:
    doc = settings.__doc__ or ""
    exceptions = doc[doc.index("What is not here"):]
    assert len(re.findall(r"^- ", exceptions, re.M)) <= 6, "a handful of kinds, each with its why"
