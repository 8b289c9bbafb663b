"""The server alone: raw JSON-RPC lines on `vault-mem serve`'s stdin, no MCP SDK on this side.

    python bench/rpc_bench.py --vault DIR [--index-dir IX] [--runs 200] [--seed 1]
    python bench/rpc_bench.py --vault DIR --py-spy profile.txt   # also sample the server
    python bench/rpc_bench.py --vault DIR --mode sdk      # the same calls from the SDK's client
    python bench/rpc_bench.py --vault DIR --mode inproc   # ... through the call path, in process

The index is built (or reused when complete) before the server starts, so the server
never builds while it is timed. Then one `vault-mem serve` process gets the legacy
handshake and, one request at a time, ``--runs`` calls of each kind:

- ``memory_search``: a random 6+-letter word of a random note (seeded), one word a call;
- ``memory_search common``: issue 22's slow Hub words, then the vault's most widespread
  6+-letter words, in turn;
- ``memory_read``: a random note by its path;
- ``ping``.

Each call's time is from writing the request line to reading its answer line. Prints
p50/p95/max per kind in milliseconds, with the load average. ``--py-spy FILE`` runs
``py-spy record -r 500 -f raw`` on the server process while the calls run (py-spy must be
on PATH; the raw output is collapsed stacks, one per line, with sample counts).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vault_mem import settings
from vault_mem.search.api import install_whoosh_patches
from vault_mem.search.build import build
from vault_mem.search.store import VaultIndex

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)

WORD = re.compile(r"[A-Za-z]{6,}")
ISSUE_WORDS = ["community", "recipe", "footer", "stopwatch", "plugin"]  # issue 22's slow words on the Hub


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


class RawClient:
    """One `vault-mem serve` process spoken to in JSON lines."""

    def __init__(self, root: Path, index_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(index_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # buffered: a raw
        # pipe's readline reads one byte per system call, which would time this client, not the server
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            line = self.stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed its stdout during {method}")
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]  # type: ignore[no-any-return]

    def initialize(self) -> None:
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "rpc-bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def ready_index(root: Path, index_dir: Path) -> VaultIndex:
    index = VaultIndex(root, index_dir, config=settings.current())
    if index.needs_build() or not index.is_complete():
        report = build(index)
        print(f"built the index of {report.total} notes in {report.seconds:.1f} s")
    return index


def sample_words(root: Path, paths: list[str], rng: random.Random, count: int) -> list[str]:
    """A random 6+-letter word of a random note, ``count`` times."""
    out: list[str] = []
    while len(out) < count:
        text = (root / rng.choice(paths)).read_text(encoding="utf-8", errors="replace")
        found = WORD.findall(text.partition("\n---\n")[2] or text)
        if found:
            out.append(rng.choice(found).lower())
    return out


def common_words(root: Path, paths: list[str], top: int = 8) -> list[str]:
    """The 6+-letter words found in the most notes."""
    spread: Counter[str] = Counter()
    for path in paths:
        text = (root / path).read_text(encoding="utf-8", errors="replace").lower()
        spread.update(set(WORD.findall(text)))
    return sorted(spread, key=lambda w: (-spread[w], w))[:top]  # ties by the word: the same list every run


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def plan(root: Path, paths: list[str], runs: int, seed: int) -> list[tuple[str, str, dict[str, Any]]]:
    rng = random.Random(seed)
    common = list(dict.fromkeys(ISSUE_WORDS + common_words(root, paths)))
    calls: list[tuple[str, str, dict[str, Any]]] = []
    calls += [("memory_search", "memory_search", {"agent": "bench", "query": w})
              for w in sample_words(root, paths, rng, runs)]
    calls += [("memory_search common", "memory_search", {"agent": "bench", "query": common[i % len(common)]})
              for i in range(runs)]
    calls += [("memory_read", "memory_read", {"ref": rng.choice(paths)[:-3]}) for _ in range(runs)]
    calls += [("ping", "ping", {}) for _ in range(runs)]
    print("common words:", ", ".join(common))
    return calls


def run(call_one: Callable[[str, dict[str, Any]], str | None],
        calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, list[float]]:
    """Each call through ``call_one(tool, args) -> status`` (None for ping), timed."""
    times: dict[str, list[float]] = {}
    for label, tool, args in calls:
        start, cpu = time.perf_counter(), time.thread_time()
        status = call_one(tool, args)
        times.setdefault(label, []).append((time.perf_counter() - start) * 1000)
        # This thread's CPU time as well: on a loaded machine it moves far less than the clock
        # (in process it is the call's whole cost; over a pipe only the client's).
        times.setdefault(f"{label} (cpu)", []).append((time.thread_time() - cpu) * 1000)
        if tool != "ping" and status not in ("ok", "none"):
            raise RuntimeError(f"{tool} {args}: status {status}")
    return times


def raw_call(client: RawClient) -> Callable[[str, dict[str, Any]], str | None]:
    def call_one(tool: str, args: dict[str, Any]) -> str | None:
        if tool == "ping":
            client.request("ping")
            return None
        return client.call_tool(tool, args).get("structuredContent", {}).get("status")  # type: ignore[no-any-return]
    return call_one


def in_process(root: Path, index_dir: Path, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, list[float]]:
    """The same calls through the server's call path in this one thread (no transport)."""
    from vault_mem.mcp_server.app import call
    from vault_mem.mcp_server.tools import TOOLS_BY_NAME
    from vault_mem.served.context import Vault

    vault = Vault(root, VaultIndex(root, index_dir, config=settings.current()))

    def call_one(tool: str, args: dict[str, Any]) -> str | None:
        if tool == "ping":
            return None
        return call(vault, TOOLS_BY_NAME[tool], dict(args)).get("status")

    run(call_one, calls[::10])
    print(f"load average before: {loadavg()}")
    times = run(call_one, [c for c in calls if c[1] != "ping"])
    print(f"load average after:  {loadavg()}")
    return times


def over_sdk(root: Path, index_dir: Path, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, list[float]]:
    """The same calls from the MCP SDK's own client over stdio (what an agent's client costs too)."""
    import anyio
    from mcp import Client, StdioServerParameters

    times: dict[str, list[float]] = {}

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(index_dir)])
        async with Client(params, mode="legacy") as client:
            for warm_up in (True, False):
                if not warm_up:
                    print(f"load average before: {loadavg()}")
                for label, tool, args in calls[::10] if warm_up else calls:
                    start = time.perf_counter()
                    if tool == "ping":
                        await client.send_ping()
                    else:
                        await client.call_tool(tool, args)
                    if not warm_up:
                        times.setdefault(label, []).append((time.perf_counter() - start) * 1000)
            print(f"load average after:  {loadavg()}")

    anyio.run(main)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, help="index folder, reused when complete (default: a temp one)")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=("raw", "sdk", "inproc"), default="raw",
                        help="raw JSON-RPC lines (default), the SDK's client over stdio, or in process")
    parser.add_argument("--py-spy", type=Path, help="record the server with py-spy into this file (raw mode)")
    args = parser.parse_args()
    root = args.vault.resolve()
    with tempfile.TemporaryDirectory(prefix="vault-mem-rpc-") as tmp:
        index_dir = args.index_dir.resolve() if args.index_dir else Path(tmp) / "index"
        index = ready_index(root, index_dir)
        paths = sorted(str(r["path"]) for r in index.records().values())
        index.close()
        calls = plan(root, paths, args.runs, args.seed)
        if args.mode == "inproc":
            times = in_process(root, index_dir, calls)
        elif args.mode == "sdk":
            times = over_sdk(root, index_dir, calls)
        else:
            times = over_raw(root, index_dir, calls, args.py_spy)
    where = {"raw": "server alone, raw JSON-RPC over stdio", "sdk": "MCP SDK client over stdio",
             "inproc": "in process, one thread"}[args.mode]
    print(f"\n{where} ({args.runs} calls each)".ljust(60) + "p50 ms   p95 ms   max ms")
    for label, values in times.items():
        if label.endswith("(cpu)") and args.mode != "inproc":
            continue  # the client's CPU time says nothing of the server's
        print(f"  {label:<55} {statistics.median(values):7.2f}  {pct(values, 0.95):7.2f}  {max(values):7.2f}")


def over_raw(root: Path, index_dir: Path, calls: list[tuple[str, str, dict[str, Any]]],
             py_spy: Path | None) -> dict[str, list[float]]:
    client = RawClient(root, index_dir)
    try:
        client.initialize()
        call_one = raw_call(client)
        run(call_one, calls[::10])  # warm-up: imports, searchers, caches
        spy = None
        if py_spy:
            spy_exe = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
            spy = subprocess.Popen([spy_exe, "record", "-r", "500", "--nonblocking", "-f", "raw",
                                    "-o", str(py_spy), "--pid", str(client.proc.pid)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # py-spy attaches
        print(f"load average before: {loadavg()}")
        times = run(call_one, calls)
        print(f"load average after:  {loadavg()}")
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
        return times
    finally:
        client.close()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
