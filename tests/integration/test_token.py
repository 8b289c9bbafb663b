"""The bearer token (docs/sharing.md): from --token, --token-file or VAULT_MEM_TOKEN; never blank;
never in a worker's arguments, and, from a file or the environment, in no process's arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from conftest import write_notes
from serving import http_args, serve_args
from test_workers import Served, ready

from vault_mem.cli.workers import without_token

pytestmark = pytest.mark.anyio

SECRET = "f1le-s3cret-token"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize(("given", "source"), [
    (["--token", " "], "--token"),
    (["--token", ""], "--token"),
    (["--token-file", "{blank}"], "--token-file"),
    (["--token", " padded "], "--token"),
    ([], "VAULT_MEM_TOKEN"),
])
def test_a_blank_token_is_refused_wherever_it_comes_from(tmp_path: Path, given: list[str], source: str) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "# A\n"})
    blank = tmp_path / "token"
    blank.write_text(" \n\n", encoding="utf-8")
    args = [word.replace("{blank}", str(blank)) for word in given]
    env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_TOKEN"}
    if not given:
        env["VAULT_MEM_TOKEN"] = "  \t"
    proc = subprocess.run([sys.executable, *serve_args(root, *http_args(), "--host", "0.0.0.0", "--allowed-host",
                                                       "memory.lan", *args)],
                          env=env, capture_output=True, timeout=60, cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and source in err and "Traceback" not in err, err
    assert "blank" in err or "spaces at its ends" in err, err
    assert proc.stdout == b""


def test_a_missing_token_file_or_two_tokens_are_refused(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "# A\n"})
    for extra, needle in ((["--token-file", str(tmp_path / "none")], "cannot read the token"),
                          (["--token", "x", "--token-file", str(tmp_path / "none")], "not both")):
        proc = subprocess.run([sys.executable, *serve_args(root, *http_args(), *extra)], capture_output=True,
                              timeout=60, cwd=tmp_path)
        err = proc.stderr.decode()
        assert proc.returncode == 1 and needle in err and "Traceback" not in err, err


def test_a_workers_arguments_never_hold_the_token_in_any_spelling() -> None:
    kept = ["serve", "--http", "--workers", "2"]
    for spelled in (["--token", "S"], ["--token=S"], ["--tok", "S"], ["--to=S"], ["--token-file", "/t"],
                    ["--token-f=/t"]):
        assert without_token(["serve", "--http", *spelled, "--workers", "2"]) == kept, spelled
    assert without_token(["serve", "--http", "--port", "1", "--tags", "x"]) == ["serve", "--http", "--port", "1",
                                                                                  "--tags", "x"]


def cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/cmdline")
@pytest.mark.parametrize("route", ["file", "argument"])
async def test_the_token_reaches_every_worker_but_no_workers_arguments(tmp_path: Path, route: str) -> None:
    """With --token-file, the token is in no process's arguments (the server's, its workers');
    with --token=SECRET, in the server's alone (as the user typed it): the workers get it in their
    environment, and both workers ask for it."""
    token_file = tmp_path / "token"
    token_file.write_text(SECRET + "\n", encoding="utf-8")
    extra = ("--token-file", str(token_file)) if route == "file" else (f"--token={SECRET}",)
    served = Served(tmp_path, extra=extra, env={"VAULT_MEM_TOKEN": "another"})
    try:
        pids = served.pids()
        assert len(pids) == 2
        for pid in pids:
            assert SECRET.encode() not in cmdline(pid), cmdline(pid)
        if route == "file":
            assert SECRET.encode() not in cmdline(served.proc.pid)
        async with httpx2.AsyncClient(timeout=60) as client:
            await ready(served, SECRET)
            for key, status in ((None, 401), ("another", 401), (SECRET, 200)):
                auth = {"Authorization": f"Bearer {key}"} if key else {}
                answer = await client.post(served.url, json=INIT, headers=HEADERS | auth)
                assert answer.status_code == status, (key, answer.text)
    finally:
        served.stop()
    assert SECRET not in served.stderr()

