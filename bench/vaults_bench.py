"""One server with one vault against one server with several (docs/vaults.md): the server's
memory once every vault is indexed and warm, and the time of a memory_search in the first
vault (and, with several, of one spanning every vault), through a real MCP client over
streamable HTTP (stateless protocol), one call at a time.

    python bench/vaults_bench.py [--notes 2000] [--vaults 5] [--queries 200] [--seed 1]

Prints one line per server: vaults, RSS (MiB), and p50/p95 (ms) of each kind of search.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from gen_vault import generate
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

QUERIES = ["cache lock", "watcher event", "postgres timeout", "release rollback", "garden recipe",
           "hiring onboarding", "kafka queue", "token parser", "budget meeting", "sleep health"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mib(pid: int) -> float | None:
    """The resident memory of ``pid`` (Linux /proc; None elsewhere)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def measure(url: str, count: int, queries: int) -> dict[str, Any]:
    http = httpx2.AsyncClient(timeout=120)
    async with http, Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client:
        deadline = time.monotonic() + 1800
        every = {"vault": "*"} if count > 1 else {}
        while True:  # every vault indexed and checked (a search of every vault adds up their progress)
            answer = (await client.call_tool("memory_search", {"agent": "bench", **every})).structured_content or {}
            if answer.get("status") == "ok" and "indexing" not in answer and "checking" not in answer:
                break
            if time.monotonic() > deadline:
                raise SystemExit("the vaults were not indexed in time")
            await anyio.sleep(0.5)
        for n in range(3 * len(QUERIES)):  # warm: each vault's searchers and caches, as a served vault's are
            await client.call_tool("memory_search", {"agent": "bench", "query": QUERIES[n % len(QUERIES)], **every})
        times: dict[str, list[float]] = {"first vault": [], "every vault": []}
        kinds = ["first vault", *(["every vault"] if count > 1 else [])]
        for n in range(queries):
            for kind in kinds:
                arguments = {"agent": "bench", "query": QUERIES[n % len(QUERIES)]}
                if kind == "every vault":
                    arguments["vault"] = "*"
                started = time.perf_counter()
                result = await client.call_tool("memory_search", arguments)
                times[kind].append((time.perf_counter() - started) * 1000)
                if not result.structured_content or result.structured_content["status"] not in ("ok", "none"):
                    raise SystemExit(f"memory_search failed: {result.structured_content}")
        return times


def run_server(roots: list[Path], queries: int, log: Path) -> None:
    port = free_port()
    args = [sys.executable, "-m", "vault_mem", "serve", "--http", "--port", str(port), "--workers", "1"]
    for i, root in enumerate(roots):
        args += ["--vault", f"v{i + 1}={root}"]
    env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_TOKEN"}
    with log.open("wb") as err:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(log.read_text(errors="replace")) from None
                time.sleep(0.1)
        times = anyio.run(measure, f"http://127.0.0.1:{port}/mcp", len(roots), queries)
        rss = rss_mib(proc.pid)
        shown = "  ".join(f"{kind}: p50 {statistics.median(t):.1f} ms, p95 "
                          f"{statistics.quantiles(t, n=20)[18]:.1f} ms" for kind, t in times.items() if t)
        print(f"{len(roots)} vault(s): RSS {rss:.0f} MiB  {shown}" if rss is not None else
              f"{len(roots)} vault(s): {shown}", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000, help="notes in each vault")
    parser.add_argument("--vaults", type=int, default=5, help="vaults of the larger server")
    parser.add_argument("--queries", type=int, default=200, help="searches of each kind measured")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vaults-bench-") as tmp:
        roots = []
        for i in range(args.vaults):
            root = Path(tmp) / f"vault{i + 1}"
            generate(root, args.notes, seed=args.seed + i)
            roots.append(root)
        print(f"{args.notes} notes a vault, {args.queries} searches of each kind, one at a time", flush=True)
        run_server(roots[:1], args.queries, Path(tmp) / "one.log")
        run_server(roots, args.queries, Path(tmp) / "several.log")


if __name__ == "__main__":
    main()
