"""Appends to existing notes right after a fresh ``serve``: is each one found, and how soon.

    python bench/append_bench.py --vault /work/data/r107k          # an indexed vault (vault-mem index first)
    python bench/append_bench.py --vault DIR --appends 10 --runs 3 --burst
    python bench/append_bench.py --vault DIR --gap 0.5 --http 2     # over HTTP with two workers
    python bench/append_bench.py --vault DIR --at-spawn 0.3         # appends while the server starts

Each run spawns a fresh ``vault-mem serve`` (stdio, or ``--http N`` workers) and, once its session
is up (or ``--at-spawn`` seconds after the spawn, before it is), appends a word of its own to
``--appends`` random existing notes, as an editor or a script would (``open(path, "a")``): one after
another, each polled with ``memory_search`` until found (``--gap`` seconds between them), or all at
once and then polled together (``--burst``). A word not found within ``--limit`` seconds is lost.
Excalidraw drawings are left out (their text is not indexed). The notes are restored byte for byte,
with their times, after each run, and ``vault-mem index`` brings the index back before the next.

Prints, per run, how many were found and the median time to visible; every lost note; the
server's own lines about the start-up check and the periodic check. The machine is shared:
the load average is printed beside the numbers.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

TOKEN = "append-bench"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def notes_of(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [str(Path(folder, f).relative_to(root)) for f in files
                  if f.endswith(".md") and not f.endswith(".excalidraw.md") and not f.startswith(".")]
    return sorted(found)


class Appends:
    """The appends of one run, and what they changed (restored by ``restore``)."""

    def __init__(self, root: Path, notes: list[str], rng: random.Random, tag: str) -> None:
        self.root, self.notes, self.rng, self.tag = root, notes, rng, tag
        self.made: dict[str, tuple[str, float]] = {}  # word -> (note, when appended)
        self.originals: dict[str, tuple[bytes, os.stat_result]] = {}

    def one(self) -> str:
        rel = self.rng.choice(self.notes)
        while rel in self.originals:
            rel = self.rng.choice(self.notes)
        path = self.root / rel
        self.originals[rel] = (path.read_bytes(), os.stat(path))
        word = f"appendbench{self.tag}w{len(self.made)}"
        with open(path, "a", encoding="utf-8") as note:
            note.write(f"\n\n{word}\n")
        self.made[word] = (rel, time.monotonic())
        return word

    def restore(self) -> None:
        for rel, (data, st) in self.originals.items():
            path = self.root / rel
            path.write_bytes(data)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


async def visible(client: Client, word: str) -> bool:
    result = await client.call_tool("memory_search", {"agent": "append-bench", "query": word})
    answer: Any = result.structured_content or {}
    return bool(answer.get("notes"))


async def poll(client: Client, appends: Appends, words: list[str], limit: float, found: dict[str, float]) -> None:
    """Ask for each word in turn until every one is found or ``limit`` seconds passed since the first."""
    start = min(appends.made[w][1] for w in words)
    while len(found) < len(appends.made) and time.monotonic() - start < limit:
        for word in words:
            if word not in found and await visible(client, word):
                found[word] = 1000 * (time.monotonic() - appends.made[word][1])
        await anyio.sleep(0.02)


async def run(args: argparse.Namespace, seed: int) -> tuple[int, list[float], list[str]]:
    root: Path = args.vault
    appends = Appends(root, notes_of(root), random.Random(seed), f"{seed}")
    errlog = Path(f"/tmp/append-bench-{os.getpid()}-{seed}.log")
    serve = [sys.executable, "-m", "vault_mem", "serve", "--yes", "--vault", str(root)]
    found: dict[str, float] = {}
    spawned = time.monotonic()
    try:
        async with AsyncExitStack() as stack:
            sink = stack.enter_context(errlog.open("w"))
            if args.at_spawn is not None:
                def early() -> None:
                    time.sleep(args.at_spawn)
                    for _ in range(args.appends):
                        appends.one()
                        time.sleep(args.gap)
                saver = threading.Thread(target=early, daemon=True)
                saver.start()
            if args.http:
                port = free_port()
                proc = subprocess.Popen([*serve, "--http", "--port", str(port), "--workers", str(args.http)],
                                        env=os.environ | {"VAULT_MEM_TOKEN": TOKEN},
                                        stdout=subprocess.DEVNULL, stderr=sink)
                def stop() -> None:
                    proc.terminate()
                    proc.wait(60)
                stack.callback(stop)
                wait_listening(port, proc)
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120))
                transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
            else:
                transport = stdio_client(StdioServerParameters(command=serve[0], args=serve[1:], env=dict(os.environ)),
                                         errlog=sink)
            client = await stack.enter_async_context(Client(transport, mode="legacy"))
            print(f"  session up {time.monotonic() - spawned:.2f} s after the spawn", flush=True)
            if args.at_spawn is not None:
                saver.join()
                await poll(client, appends, list(appends.made), args.limit, found)
            elif args.burst:
                for _ in range(args.appends):
                    appends.one()
                await poll(client, appends, list(appends.made), args.limit, found)
            else:
                for _ in range(args.appends):
                    await anyio.sleep(args.gap)
                    await poll(client, appends, [appends.one()], args.limit, found)
    finally:
        appends.restore()
    lost = [rel for word, (rel, _) in appends.made.items() if word not in found]
    for line in errlog.read_text(errors="replace").splitlines():
        if any(text in line for text in ("index ready", "periodic check", "Traceback", "cannot watch", "dropped")):
            print(f"  server: {line}")
    errlog.unlink(missing_ok=True)
    return len(appends.made), list(found.values()), lost


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited with status {proc.returncode}") from None
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True, help="a vault whose index is complete")
    parser.add_argument("--appends", type=int, default=10)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1, help="the first run's seed (which notes)")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between two appends")
    parser.add_argument("--burst", action="store_true", help="append to all, then poll them together")
    parser.add_argument("--at-spawn", type=float, default=None, metavar="SECONDS",
                        help="append this long after the spawn, before the session is up")
    parser.add_argument("--http", type=int, default=0, metavar="WORKERS", help="serve over HTTP with N workers")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds after which a word is lost")
    args = parser.parse_args()
    total, times, lost = 0, list[float](), list[str]()
    for i in range(args.runs):
        subprocess.run([sys.executable, "-m", "vault_mem", "index", "--vault", str(args.vault), "--yes"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        print(f"run {i + 1}: load average {load()}", flush=True)
        made, found, gone = anyio.run(run, args, args.seed + i)
        total, times, lost = total + made, times + found, lost + gone
        print(f"  found {len(found)} of {made}; median {statistics.median(found) if found else 0:.0f} ms to visible"
              + "".join(f"\n  LOST: {rel}" for rel in gone), flush=True)
    print(f"all runs: {len(times)} of {total} found, median {statistics.median(times) if times else 0:.0f} ms, "
          f"worst {max(times, default=0):.0f} ms; {len(lost)} lost; load average {load()}")


if __name__ == "__main__":
    main()
