"""Crash bench: kill -9 a server during concurrent ``memory_write`` calls, start a new one, and
count the notes on disk that its answers do not list once its start-up check has ended.

    python bench/crash_bench.py                      # 262 generated notes, 60 writes, 3 runs
    python bench/crash_bench.py --notes 262 --writes 60 --runs 3 --vault DIR   # a copy of DIR

Each run: a copy of the vault (generated, or ``--vault``), ``serve --http`` on it until its
answers no longer say ``indexing``, ``--writes`` concurrent ``memory_write`` calls, a kill -9
after a few of them answered, then a new server; once its answers carry neither ``indexing``
nor ``checking``, ``list_by_domain(domain="", status="all")`` is paged through and compared
with the memory files on disk. Prints, per run, the notes on disk, those listed and the missing.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from gen_vault import generate
from serving import start_http

from vault_mem.vault.note import permalink_of
from vault_mem.vault.paths import display_path
from vault_mem.vault.walk import walk_vault

TOKEN = "crash-bench-token"
BUSY = ("indexing", "checking")  # answer fields that say the index may not hold every file yet


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    answer = result.structured_content
    assert isinstance(answer, dict), result.content
    return answer


def session(url: str) -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
    return http, Client(streamable_http_client(url, http_client=http), mode="legacy")  # type: ignore[arg-type]


async def until_settled(client: Client, timeout: float = 300.0) -> tuple[dict[str, Any], int]:
    """Call list_by_domain until an answer carries none of ``BUSY``; that answer and the calls made."""
    deadline = time.monotonic() + timeout
    calls = 0
    while True:
        answer = await call(client, "list_by_domain", domain="", status="all", limit=1)
        calls += 1
        if not any(key in answer for key in BUSY):
            return answer, calls
        if time.monotonic() > deadline:
            raise SystemExit(f"still busy after {timeout} s: {answer}")
        await anyio.sleep(0.02)


async def listed(client: Client) -> set[str]:
    found: set[str] = set()
    offset = 0
    while True:
        answer = await call(client, "list_by_domain", domain="", status="all", limit=200, offset=offset)
        found |= {row["permalink"] for row in answer.get("results", [])}
        if "next_offset" not in answer:
            return found
        offset = answer["next_offset"]


async def write_storm(url: str, writes: int, kill_after: int, proc: subprocess.Popen[bytes], tag: str) -> int:
    """``writes`` concurrent memory_write calls (over 6 sessions); kill -9 once ``kill_after`` answered."""
    answered = 0
    killed = anyio.Event()

    async def one(client: Client, i: int) -> None:
        nonlocal answered
        try:
            await call(client, "memory_write", agent="crash", title=f"crash {tag} {i}",
                       content=f"written before the kill {tag} {i}", domain=f"crash/{i % 4}")
        except Exception:  # the server died under the call
            return
        answered += 1
        if answered >= kill_after and not killed.is_set():
            proc.send_signal(signal.SIGKILL)
            killed.set()

    async def on_session(k: int) -> None:
        http, client = session(url)
        try:
            async with http, client, anyio.create_task_group() as tg:
                for i in range(k, writes, 6):
                    tg.start_soon(one, client, i)
        except Exception:  # the server died: the session ends with it
            return

    async with anyio.create_task_group() as tg:
        for k in range(6):
            tg.start_soon(on_session, k)
    if not killed.is_set():
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    return answered


def on_disk(root: Path) -> set[str]:
    return {permalink_of(display_path(rel)) for rel in walk_vault(root).files}


async def one_run(source: Path | None, notes: int, writes: int, seed: int, work: Path) -> tuple[int, int, list[str]]:
    work = work / f"run{seed}"  # the index folder is made beside the vault (tests/serving.py)
    work.mkdir()
    root = work / "vault"
    if source is not None:
        shutil.copytree(source, root, ignore=shutil.ignore_patterns(".vault-mem"))
    else:
        generate(root, notes, seed)
    env = os.environ | {"VAULT_MEM_TOKEN": TOKEN}
    proc, url = start_http(root, work, env=env, stdout=subprocess.DEVNULL)
    http, client = session(url)
    async with http, client:
        await until_settled(client)
    kill_after = random.Random(seed).randint(5, max(6, writes // 2))
    answered = await write_storm(url, writes, kill_after, proc, str(seed))
    proc2, url2 = start_http(root, work, env=env, stdout=subprocess.DEVNULL)
    try:
        http, client = session(url2)
        async with http, client:
            await until_settled(client)
            seen = await listed(client)
            if os.environ.get("CRASH_BENCH_LATER"):
                await anyio.sleep(float(os.environ["CRASH_BENCH_LATER"]))
                later = await listed(client)
                print(f"  {len(later - seen)} more listed later")
    finally:
        proc2.send_signal(signal.SIGTERM)
        proc2.wait(timeout=30)
    disk = on_disk(root)
    missing = sorted(disk - seen)
    print(f"run {seed}: {answered} writes answered before the kill; {len(disk)} notes on disk, "
          f"{len(seen & disk)} listed, {len(missing)} missing {missing[:5]}", flush=True)
    return len(disk), len(seen & disk), missing


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=262)
    parser.add_argument("--writes", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vault", type=Path, help="copy this vault instead of generating one")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lost = 0
        for seed in range(opts.runs):
            _, _, missing = await one_run(opts.vault, opts.notes, opts.writes, seed, Path(tmp))
            lost += len(missing)
    print(f"missing in all: {lost}")
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    anyio.run(main)
