"""Every vault_mem module imports on a Python without the POSIX-only modules (as on Windows).

``mypy --platform win32`` checks what the code names; this checks what actually runs at
import time: in a child interpreter, an import of ``fcntl``, ``termios``, ``pwd`` or ``grp``
made by vault_mem's own code raises ModuleNotFoundError, as it would on Windows, and every
module of the package is imported. Imports made by the dependencies are let through: they
choose their own platform branch (the MCP SDK's stdio transport imports ``fcntl`` only when
``sys.platform != "win32"``), so refusing them here would fail for a reason Windows never sees.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

POSIX_ONLY = ("fcntl", "termios", "pwd", "grp")
REPO = Path(__file__).resolve().parent.parent.parent

CHILD = textwrap.dedent("""
    import builtins, importlib, json, pkgutil, sys

    blocked = {blocked!r}
    real_import = builtins.__import__

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        importer = (globals or {{}}).get("__name__") or ""
        if level == 0 and name.partition(".")[0] in blocked and importer.partition(".")[0] == "vault_mem":
            raise ModuleNotFoundError(f"No module named {{name!r}} (POSIX-only; imported by {{importer}})", name=name)
        return real_import(name, globals, locals, fromlist, level)

    builtins.__import__ = guarded_import
    refused = []  # the guard works: code that claims to be vault_mem cannot import them
    for name in blocked:
        try:
            exec(f"import {{name}}", {{"__name__": "vault_mem.probe"}})
        except ModuleNotFoundError:
            refused.append(name)

    import vault_mem

    modules, failures = ["vault_mem"], {{}}
    for info in pkgutil.walk_packages(vault_mem.__path__, "vault_mem."):
        modules.append(info.name)
        try:
            importlib.import_module(info.name)
        except Exception as exc:
            failures[info.name] = f"{{type(exc).__name__}}: {{exc}}"
    print(json.dumps({{"refused": refused, "modules": modules, "failures": failures}}))
""")


def test_every_module_imports_without_the_posix_only_modules() -> None:
    import json

    done = subprocess.run([sys.executable, "-c", CHILD.format(blocked=POSIX_ONLY)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(report["refused"]) == sorted(POSIX_ONLY)  # the blocking works, so the test can fail
    expected = {f"vault_mem.{p.relative_to(REPO / 'vault_mem').with_suffix('').as_posix().replace('/', '.')}"
                for p in (REPO / "vault_mem").rglob("*.py") if p.name != "__init__.py"}
    assert expected <= set(report["modules"])  # every module file was imported
    assert report["failures"] == {}
