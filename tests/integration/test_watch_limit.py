"""A system that will not watch the vault's folders (Linux's limit of inotify watches reached) does
not stop the server: it says so, and saves made outside it are found by checks of every note that
run every few seconds instead (docs/index-and-sync.md, "While serving").

The limit is the real one, lowered for a user namespace of the server's own (``unshare -U -r``):
``/proc/sys/user/max_inotify_watches`` there counts that namespace's watches only, so nothing
else on the machine feels it. Where that cannot be had (not Linux, no ``unshare``, user
namespaces switched off) the tests are skipped."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from conftest import ToolClient, write_notes
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from vault_mem import settings
from vault_mem.search.api import VaultIndex, sync

pytestmark = pytest.mark.anyio
HANG = 30.0  # only a hang fails: a check runs every few seconds here, the periodic one every 60 s
LIMIT_FILE = "/proc/sys/user/max_inotify_watches"


def limited(watches: int) -> list[str]:
    """The command prefix that runs a program with at most ``watches`` inotify watches."""
    unshare = shutil.which("unshare")
    if sys.platform != "linux" or unshare is None or not os.path.exists(LIMIT_FILE):
        pytest.skip("needs Linux's unshare and per-namespace inotify limits")
    command = [unshare, "--user", "--map-root-user", "sh", "-c", f'echo {watches} > {LIMIT_FILE} && exec "$@"', "sh"]
    if subprocess.run([*command, "true"], capture_output=True).returncode != 0:
        pytest.skip("user namespaces are not available here")
    return command


def vault(tmp_path: Path) -> Path:
    """Notes at the root and in three top-level folders (no sub-folders): four watches in all."""
    root = write_notes(tmp_path / "v", {"top.md": "# Top\n\nat the root\n",
                                        **{f"{name}/n.md": f"# {name}\n\nin {name}\n" for name in "abc"}})
    index = VaultIndex(root, config=settings.current())
    sync(index)
    index.close()
    return root


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, watches: int) -> AsyncIterator[tuple[Path, StdioServerParameters, Path, ToolClient]]:
    """``vault``, served over stdio with room for ``watches`` inotify watches: its root, the
    server's parameters, the file its stderr goes to, and a session."""
    root = vault(tmp_path)
    prefix = limited(watches)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_MEM_")}
    params = StdioServerParameters(command=prefix[0], args=[*prefix[1:], sys.executable, "-m", "vault_mem", "serve",
                                                            "--vault", str(root)], cwd=str(root.parent), env=env)
    errlog = tmp_path / "serve.err"
    with errlog.open("w") as sink:
        async with Client(stdio_client(params, errlog=sink), mode="legacy") as client:
            yield root, params, errlog, ToolClient(client)


async def found(session: ToolClient, word: str) -> dict[str, object]:
    deadline = time.monotonic() + HANG
    while True:
        answer = await session.call("memory_search", agent="t", query=word)
        if answer.get("notes"):
            return answer
        assert time.monotonic() < deadline, f"{word} not found in {HANG} s: {answer}"
        await anyio.sleep(0.1)


def said_so(errlog: Path, text: str) -> None:
    deadline = time.monotonic() + HANG
    while text not in errlog.read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, f"the server never said {text!r}"
        time.sleep(0.02)


async def checked(session: ToolClient) -> None:
    """Once the start-up check has ended (answers no longer say ``checking``)."""
    deadline = time.monotonic() + HANG
    while "checking" in await session.call("memory_search", agent="t", query="root"):
        assert time.monotonic() < deadline, "the start-up check never ended"
        await anyio.sleep(0.6)  # calls that leave the check a quiet moment (runtime/lifecycle.py)


async def test_a_server_started_over_the_watch_limit_says_so_and_finds_saves_by_checking(tmp_path: Path) -> None:
    """With room for two watches of the four, starting the observer raises ENOSPC: the server still
    answers, logs one line naming the limit, and an append made in an editor is found."""
    async with serving(tmp_path, 2) as (root, params, errlog, session):
        assert (await session.call("memory_search", agent="t", query="root"))["status"] == "ok"
        with open(root / "b" / "n.md", "a", encoding="utf-8") as note:
            note.write("\nzeppelinquartz\n")
        answer = await found(session, "zeppelinquartz")
        assert [row["permalink"] for row in answer["notes"]] == ["memory://b/n"], answer  # type: ignore[union-attr]
        status = json.loads(subprocess.run(
            [sys.executable, "-m", "vault_mem", "status", "--vault", str(root), "--json"], capture_output=True,
            text=True, timeout=HANG, env=params.env, check=True).stdout)
        assert [s.get("unwatched") for s in status["servers"]] == ["inotify watch limit reached"], status
    said = errlog.read_text(encoding="utf-8")
    assert "Traceback" not in said, said
    warnings = [line for line in said.splitlines() if "cannot watch" in line]
    assert len(warnings) == 1 and "inotify watch limit reached" in warnings[0], said
    assert "max_user_watches" in warnings[0], said


async def test_a_folder_made_once_the_limit_is_reached_is_checked_for_saves(tmp_path: Path) -> None:
    """Attack: the limit reached later, by a new top-level folder (the start watched all four). Its
    saves were left to the periodic check a minute later; now the checks come every few seconds."""
    async with serving(tmp_path, 4) as (root, _params, errlog, session):
        await checked(session)  # else the start-up check would find the note
        (root / "d").mkdir()
        said_so(errlog, "cannot watch")
        (root / "d" / "late.md").write_text("# Late\n\nbasaltmarimba\n", encoding="utf-8")
        await found(session, "basaltmarimba")  # the folder's own event: its subtree compared
        with open(root / "d" / "late.md", "a", encoding="utf-8") as note:  # and now no event comes
            note.write("\nzirconfjord\n")
        answer = await found(session, "zirconfjord")
        assert [row["permalink"] for row in answer["notes"]] == ["memory://d/late"], answer  # type: ignore[union-attr]
    said = errlog.read_text(encoding="utf-8")
    assert "Traceback" not in said and f"cannot watch {root / 'd'}" in said, said
