"""Settings are passed, not fetched (docs/settings.md, "Where settings are read"): only the
composition roots, where a process is assembled, read ``settings.current()``; every other module
receives what it needs (an object's ``config``, a function's parameters). And a wait or a timeout
inside a function is a name (a setting, or a constant of its module with its reason), never a bare
number."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from vault_mem import settings

PACKAGE = Path(settings.__file__).resolve().parent

# Where a process is assembled and reads its settings: the command line's commands (after
# ``configure``). The other composition roots are handed theirs and read none: a build worker gets its
# parent's index's (``search/build.py:_worker``), the background merge the ones
# ``runtime/tuning.py:merge_process`` builds from the environment (``search/merge.py:main``).
ROOTS = ("cli/",)


def _settings_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names this module binds to the settings module, and to its ``current`` (or ``_current``)."""
    modules: set[str] = set()
    functions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "vault_mem.settings":
                    modules.add(alias.asname or "vault_mem")
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            for alias in node.names:
                if alias.name == "settings" and source in ("vault_mem", ""):
                    modules.add(alias.asname or alias.name)
                if source in ("vault_mem.settings", "settings") and alias.name in ("current", "_current"):
                    functions.add(alias.asname or alias.name)
    return modules, functions


def readings(source: str) -> Iterator[int]:
    """The lines of ``source`` that reach the process's settings: ``settings.current`` (or
    ``_current``) through any name the module gave the settings module, a ``current`` imported from
    it, or ``getattr(settings, "current")``."""
    tree = ast.parse(source)
    modules, functions = _settings_names(tree)
    for node in ast.walk(tree):
        if _reads(node, modules, functions):
            yield node.lineno


def _reads(node: ast.AST, modules: set[str], functions: set[str]) -> bool:
    names = ("current", "_current")
    if isinstance(node, ast.Attribute) and node.attr in names:
        base = node.value
        return (isinstance(base, ast.Name) and base.id in modules) \
            or (isinstance(base, ast.Attribute) and base.attr == "settings")  # vault_mem.settings.current
    if isinstance(node, ast.Name):
        return node.id in functions and isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
        args = node.args
        return len(args) >= 2 and isinstance(args[0], ast.Name) and args[0].id in modules \
            and isinstance(args[1], ast.Constant) and args[1].value in names
    return False


def modules() -> Iterator[tuple[str, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel != "settings.py":
            yield rel, path.read_text(encoding="utf-8")


def is_root(rel: str) -> bool:
    return any(rel == root or (root.endswith("/") and rel.startswith(root)) for root in ROOTS)


def reading_outside_the_roots(sources: Iterable[tuple[str, str]]) -> list[str]:
    return [f"{rel}:{line}" for rel, source in sources if not is_root(rel) for line in readings(source)]


def test_only_the_composition_roots_read_the_process_settings() -> None:
    found = reading_outside_the_roots(modules())
    assert not found, ("settings.current() is read where a process is assembled (ROOTS) and passed down "
                       "from there (an object's config, a function's parameter):\n" + "\n".join(found))


def test_a_new_reading_outside_the_roots_is_found() -> None:
    """Any module of the package but the command line's, the engine's too, fails the test above
    the day it reads ``current()`` (none is let off)."""
    reading = "from vault_mem import settings\ndef f():\n    return settings.current().cache_mb\n"
    sources = dict(modules())
    for rel in ("search/segments.py", "search/whoosh/parts.py", "search/build.py", "search/merge.py",
                "runtime/tuning.py", "vault/reader.py"):
        assert rel in sources and not reading_outside_the_roots([(rel, sources[rel])])
        line = sources[rel].count("\n") + 3  # the added function's return
        assert reading_outside_the_roots([(rel, sources[rel] + reading)]) == [f"{rel}:{line}"]
    assert not reading_outside_the_roots([("cli/serve.py", reading)])


@pytest.mark.parametrize("source", [
    "from vault_mem import settings\ndef f():\n    return settings.current().x\n",
    "from vault_mem import settings as s\ndef f():\n    return s.current().x\n",
    "import vault_mem.settings\ndef f():\n    return vault_mem.settings.current().x\n",
    "import vault_mem.settings as s\ndef f():\n    return s._current.x\n",
    "from vault_mem.settings import current\ndef f():\n    return current().x\n",
    "from vault_mem.settings import current as now\ndef f():\n    return now().x\n",
    "from .. import settings\ndef f():\n    return settings.current().x\n",
    "from vault_mem import settings\nread = settings.current\n",
    "from vault_mem import settings\ndef f():\n    return getattr(settings, 'current')().x\n",
])
def test_every_way_to_reach_the_process_settings_is_seen(source: str) -> None:
    assert list(readings(source)), source


def test_a_config_passed_in_is_not_a_reading() -> None:
    source = ("from vault_mem import settings\n"
              "def f(config: settings.Settings, current: int) -> int:\n"
              "    return config.x + current + settings.Settings().x\n")
    assert not list(readings(source))


# -- Waits and timeouts are named ------------------------------------------------------------------

WAITS = ("wait", "sleep", "join", "settimeout")  # a call of one of these takes its wait first

def _number(node: ast.expr) -> bool:
    """A number of seconds written in ``node``, other than 0 (no wait at all): ``5``, ``2 * 0.05``,
    ``max(0.1, left)``, ``deadline + 5`` (not the numbers inside an argument of another kind, such
    as the generator ``str.join`` takes)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool) and node.value != 0
    if isinstance(node, ast.UnaryOp):
        return _number(node.operand)
    if isinstance(node, ast.BinOp):
        return _number(node.left) or _number(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
        return any(_number(a) for a in node.args)
    return False


def bare_waits(source: str) -> Iterator[tuple[int, str]]:
    """(line, call) of each call inside a function that waits a number of seconds written in it: a
    ``timeout=`` holding a number, a number in the first argument of ``wait``, ``sleep``, ``join``,
    ``settimeout``, or in any argument of a ``Timeout``."""
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call):
                continue
            name = call.func.attr if isinstance(call.func, ast.Attribute) else \
                call.func.id if isinstance(call.func, ast.Name) else ""
            if any(k.arg == "timeout" and _number(k.value) for k in call.keywords) \
                    or (name in WAITS and call.args and _number(call.args[0])) \
                    or (name == "Timeout" and any(_number(a) for a in [*call.args, *(k.value for k in call.keywords)])):
                yield call.lineno, ast.unparse(call)


def test_waits_and_timeouts_inside_functions_are_named() -> None:
    found = [f"{rel}:{line}: {call}" for rel, source in modules() for line, call in bare_waits(source)]
    assert not found, ("a wait is a setting (if a person might tune it) or a constant of its module with "
                       "the reason beside it:\n" + "\n".join(found))


@pytest.mark.parametrize("source", [
    "import time\ndef f():\n    time.sleep(0.2)\n",
    "def f(t):\n    t.join(0.5)\n",
    "def f(c):\n    c.wait(timeout=10)\n",
    "def f(e):\n    e.wait(2 * 0.05)\n",
    "def f(s):\n    s.settimeout(5)\n",
    "import subprocess\ndef f():\n    subprocess.run(['x'], timeout=60)\n",
    "async def f(a):\n    await a.sleep(1)\n",
    "def f(child, deadline, now):\n    child.wait(timeout=max(0.1, deadline - now))\n",
    "import httpx\ndef f():\n    return httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0))\n",
])
def test_every_bare_wait_is_seen(source: str) -> None:
    assert list(bare_waits(source)), source


def test_a_named_wait_is_not_bare() -> None:
    source = ("import time\nPOLL = 0.2\n"
              "def f(config, t):\n    time.sleep(POLL)\n    t.join(config.stop_wait)\n    t.wait(0)\n"
              "    t.wait(timeout=None)\n")
    assert not list(bare_waits(source))
