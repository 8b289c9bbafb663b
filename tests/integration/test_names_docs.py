"""The docs of several vaults run as written: the shell blocks of docs/clients.md ("Several vaults
in one entry") and docs/sharing.md ("One key, several vaults"), then the examples of ``vault-mem
vaults --help``, line by line in bash under a fresh home, each exiting 0, and what they wrote is
what the pages say."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vault_mem.cli import COMMANDS

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


def sh_lines(page: str, heading: str) -> list[str]:
    """The lines of every ```sh block under ``heading`` (up to the next heading of any level)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    body = re.split(rf"^#+ {re.escape(heading)}\n", text, flags=re.MULTILINE)[1]
    body = re.split(r"^#+ ", body, flags=re.MULTILINE)[0]
    return [line for block in re.findall(r"```sh\n(.*?)```", body, flags=re.DOTALL) for line in block.splitlines()]


@pytest.mark.skipif(os.name == "nt" or not shutil.which("bash"), reason="runs the POSIX lines in bash")
def test_the_several_vaults_docs_run_as_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    lines = (sh_lines("clients.md", "Several vaults in one entry") + sh_lines("sharing.md", "One key, several vaults")
             + list(COMMANDS["vaults"].examples))
    assert len(lines) >= 15 and all(line.startswith(("vault-mem ", "mkdir ", "rm ")) for line in lines), lines
    prelude = f"vault-mem() {{ {shlex.quote(sys.executable)} -m vault_mem \"$@\"; }}\ncd ~\n"
    script = prelude + "\n".join(f'{line}\necho "exit $? of: {line[:60]}" >&2' for line in lines)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, text=True, env=env,
                          cwd=home, timeout=600)
    said = [line for line in done.stderr.splitlines() if line.startswith("exit ")]
    assert len(said) == len(lines) and all(line.startswith("exit 0 ") for line in said), done.stderr

    work, notes = f"work={home / 'work'}", f"home={home / 'notes'}"
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text(encoding="utf-8"))
    assert cursor["mcpServers"]["vault-mem"]["args"][-5:] == ["serve", "--vault", work, "--vault", notes]
    vscode = json.loads((home / ".config" / "Code" / "User" / "mcp.json").read_text(encoding="utf-8"))
    assert vscode["servers"]["vault-mem"]["args"][-4:] == ["--vault", work, "--vault", notes]
    claude = json.loads((home / ".claude.json").read_text(encoding="utf-8"))  # no claude command on this PATH
    assert claude["mcpServers"]["vault-mem"]["args"][-4:] == ["--vault", work, "--vault", notes]
    assert not (home / ".config" / "Claude").exists(), "--print wrote nothing"
    keys = json.loads((home / ".config" / "vault-mem" / "agents.json").read_text(encoding="utf-8"))["vaults"]
    on_work, on_notes = keys[str((home / "work").resolve())], keys[str((home / "notes").resolve())]
    assert on_work["coder"]["sha256"] == on_notes["coder"]["sha256"], "one key on both vaults"
    assert on_work["planner"]["sha256"] == on_notes["planner"]["sha256"] and on_notes["planner"]["read_only"]
    assert not on_work["planner"]["read_only"] and not (home / "planner.key").exists()
    named = json.loads((home / ".config" / "vault-mem" / "vaults.json").read_text(encoding="utf-8"))["vaults"]
    assert list(named) == ["work"], "the last example removed home"
