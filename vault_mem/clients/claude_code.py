"""Claude Code's own ``claude mcp add`` / ``claude mcp remove``, when the command is installed.

The one place outside git and the server's runtime that starts a process (tests/unit/test_layers.py):
Claude Code keeps its servers in a file it also writes itself while running, so its own
command is the safe way to change it. No shell, a timeout, the output kept for the message.
"""

from __future__ import annotations

import shutil
import subprocess

from vault_mem.errors import InvalidInput


def claude_command() -> str | None:
    return shutil.which("claude")


def _run(args: list[str], timeout: float) -> tuple[int, str]:
    try:
        done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidInput("CLIENT", f"'{' '.join(args[:3])}' could not run ({exc}); use --print and add it by "
                           "hand") from None
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def mcp_add(claude: str, name: str, command: list[str], *, timeout: float) -> str:
    """Add ``name`` at user scope (replacing an entry of that name); returns what claude said.
    ``timeout``: the seconds each ``claude`` command may take (``claude_cli_timeout``)."""
    args = [claude, "mcp", "add", "--scope", "user", name, "--", *command]
    code, said = _run(args, timeout)
    if code != 0 and "already exists" in said:
        _run([claude, "mcp", "remove", "--scope", "user", name], timeout)
        code, said = _run(args, timeout)
    if code != 0:
        raise InvalidInput("CLIENT", f"'claude mcp add' failed (exit {code}): {said or 'no message'}")
    return said


def mcp_remove(claude: str, name: str, *, timeout: float) -> tuple[bool, str]:
    """(removed?, what claude said); an entry that is not there is not an error."""
    code, said = _run([claude, "mcp", "remove", "--scope", "user", name], timeout)
    return code == 0, said
