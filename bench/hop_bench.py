"""What the hop of a legacy session costs under ``serve --http --workers 2``.

    python bench/hop_bench.py                  # 300 notes, 400 calls
    python bench/hop_bench.py --calls 1000 --tool memory_search

Starts ``vault-mem serve --http --workers 2`` over a generated vault and makes ``--calls``
sequential calls from one client whose every request opens a new connection, so the
operating system picks a worker each time: in a legacy session about half the requests land
on the worker that does not hold the session and are passed to the other one
(``Vault-Mem-Passed-By``); a 2026-07-28 client's requests are answered where they land. The
latencies of direct and passed calls are printed side by side; their difference is the hop.
One client, one call at a time: the cost of the hop itself, not of a queue.
"""

from __future__ import annotations

import argparse
import os
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

from gen_vault import generate
from load_bench import http_server, pct, wait_ready


async def measure(url: str, mode: str, calls: int, tool: str, refs: list[str]) -> dict[str, list[float]]:
    passed: list[bool] = []

    async def note(response: httpx2.Response) -> None:
        passed.append("vault-mem-passed-by" in response.headers)

    times: dict[str, list[float]] = {"direct": [], "passed": []}
    http = httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), event_hooks={"response": [note]})
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
        for i in range(calls):
            args: dict[str, Any] = ({"ref": refs[i % len(refs)]} if tool == "memory_read"
                                    else {"agent": "hop-bench", "query": "queue worker"})
            passed.clear()
            start = time.perf_counter()
            result = await client.call_tool(tool, args)
            ms = (time.perf_counter() - start) * 1000
            assert (result.structured_content or {}).get("status") == "ok", result.structured_content
            times["passed" if passed and passed[-1] else "direct"].append(ms)
    return times


async def run(args: argparse.Namespace, work: Path) -> None:
    root = work / "vault"
    root.mkdir()
    generate(root, args.notes, 1)
    with http_server(root, work, 2) as (proc, url):
        refs, _ = await wait_ready(url, proc, args.notes)
        print(f"load average before: {' '.join(Path('/proc/loadavg').read_text().split()[:3])} "
              f"({os.cpu_count()} cores, a shared machine)")
        print(f"{'client / call':28s} {'calls':>6s} {'p50 ms':>8s} {'p90 ms':>8s}")
        for mode in ("legacy", "2026-07-28"):
            times = await measure(url, mode, args.calls, args.tool, refs)
            for kind, values in times.items():
                if values:
                    print(f"{mode + ' ' + kind:28s} {len(values):6d} {pct(values, 50):8.2f} {pct(values, 90):8.2f}")
            if times["direct"] and times["passed"]:
                print(f"  the hop: +{pct(times['passed'], 50) - pct(times['direct'], 50):.2f} ms at the median")
        print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--tool", choices=["memory_read", "memory_search"], default="memory_read")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vault-mem-hop-") as work:
        anyio.run(run, args, Path(work))


if __name__ == "__main__":
    main()
