"""The MCP Inspector CLI's ``--strict`` check of ``tools/list``, run against a real server, and the
listing's size with and without output schemas (docs/tools.md, "Schemas").

    python bench/inspector_strict.py                                  # npx fetches the Inspector
    python bench/inspector_strict.py --inspector /tmp/insp/node_modules/.bin/mcp-inspector

Spawns ``vault-mem serve`` over stdio on a copy of sample_vault (plain, ``--compat``, and with the
MCP Apps extension announced) through ``mcp-inspector --cli --strict --method tools/list`` and
prints how many portability warnings and errors the Inspector reported for each. Needs Node.js;
the Inspector comes from the npm registry (not a dependency of vault-mem or its tests).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


def run(inspector: list[str], vault: Path, index: Path, *extra: str) -> tuple[int, int, int, int]:
    """(warnings, errors, listing bytes, listing bytes without output schemas) of one --strict run."""
    server = [sys.executable, "-m", "vault_mem", "serve", "--vault", str(vault), "--index-dir", str(index)]
    flags = [f for f in extra if f.startswith("--advertise")]
    server += [f for f in extra if not f.startswith("--advertise")]
    done = subprocess.run([*inspector, "--cli", "-e", f"PYTHONPATH={ROOT}", "--strict", *flags,
                           "--method", "tools/list", *server], capture_output=True, text=True, timeout=300,
                          env=os.environ | {"PYTHONPATH": str(ROOT)}, cwd=vault.parent)
    if done.returncode not in (0, 6):
        raise SystemExit(f"the Inspector failed ({done.returncode}): {done.stderr[-2000:]}")
    warnings = len(re.findall(r"^Warning: tool", done.stderr, flags=re.MULTILINE))
    errors = len(re.findall(r"^Error: tool", done.stderr, flags=re.MULTILINE))
    tools = json.loads(done.stdout)["tools"]
    whole = len(json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False))
    bare = [{k: v for k, v in tool.items() if k != "outputSchema"} for tool in tools]
    return warnings, errors, whole, len(json.dumps({"tools": bare}, separators=(",", ":"), ensure_ascii=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inspector", default=None, help=f"the mcp-inspector command (default: npx -y {INSPECTOR})")
    args = parser.parse_args()
    inspector = [args.inspector] if args.inspector else ["npx", "-y", INSPECTOR]
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(ROOT / "sample_vault", vault)
        print(f"{'server':<28} {'warnings':>8} {'errors':>6} {'bytes':>8} {'without output schemas':>23}")
        for name, extra in (("serve", ()), ("serve --compat", ("--compat",)),
                            ("serve, host renders apps", ("--advertise-apps",))):
            warnings, errors, whole, bare = run(inspector, vault, Path(tmp) / "ix", *extra)
            print(f"{name:<28} {warnings:>8} {errors:>6} {whole:>8,} {bare:>23,}")


if __name__ == "__main__":
    main()
