"""Five vaults in one server against five servers: memory, search speed, and start-up.

    python bench/gen_hub.py /tmp/hub1 --notes 6500 --seed 1     # ... up to /tmp/hub5, seeds 2-5
    python -m vault_mem index --yes --vault /tmp/hub1             # ... each of them
    python bench/vaults_bench.py /tmp/hub1 /tmp/hub2 /tmp/hub3 /tmp/hub4 /tmp/hub5
    python bench/vaults_bench.py /tmp/hub[1-5] --queries 300 --rounds 2 --no-startup

Every server is ``vault-mem serve --http --workers 1`` on a free port, spawned with this Python.

1. **Memory.** Five one-vault servers, then one server given all five (``--vault hubN=DIR``),
   each warmed by the same searches in every vault; for each, the resident (RSS) and
   proportional (PSS: shared pages divided among the processes sharing them) memory of the
   server and its children, summed over the five servers. Linux only (``/proc``).
2. **A search in one vault.** ``--queries`` searches (two of the hub's title words each, the
   same list every time) in the first vault, one after another: served alone against served
   beside four others (``vault: hub1``), in ABBA rounds (``--rounds``); p50, p90, p99 and the
   calls per second of each; and the same searches in every vault at once (``vault: "*"``).
3. **Start-up of the others.** The first vault indexed, the four others copies without their
   index (each has to be built): from the spawn to the first vault's first answer, and to its
   first answer marked neither ``indexing`` nor ``checking`` (its start-up check of the files
   done), against a server of the first vault alone; then the same searches
   in the first vault while the others build (p50, p90), and how long until all four answer
   without ``indexing``.

The load average is printed beside the numbers: the machine is shared, repeat runs and compare.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from gen_hub import STEMS  # bench/, the script's folder
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TIMEOUT = 900.0  # seconds a server may take to start or to build; only catches a hang


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tree(pid: int) -> list[int]:
    """``pid`` and every process under it (Linux)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def memory_mb(pid: int) -> tuple[float, float] | None:
    """(RSS, PSS) in MB of ``pid`` and its children; None off Linux."""
    rss = pss = 0
    try:
        for each in _tree(pid):
            try:
                for line in Path(f"/proc/{each}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
            except OSError:  # the child ended meanwhile
                continue
    except OSError:
        return None
    return rss / 1024, pss / 1024


def queries(count: int) -> list[str]:
    rng = random.Random(57)
    words = [w.lower() for w in STEMS]
    return [f"{rng.choice(words)} {rng.choice(words)}" for _ in range(count)]


def pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Server:
    """One ``vault-mem serve --http --workers 1`` process of the given vaults (name -> folder)."""

    def __init__(self, vaults: dict[str, Path], log: Path) -> None:
        self.vaults = vaults
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        args = [a for name, root in vaults.items()
                for a in ("--vault", f"{name}={root}" if len(vaults) > 1 else str(root))]
        env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_TOKEN"}
        self.sink = log.open("a")
        self.spawned = time.perf_counter()
        self.process = subprocess.Popen([sys.executable, "-m", "vault_mem", "serve", "--yes", "--http", "--port",
                                         str(self.port), "--workers", "1", *args],
                                        stdin=subprocess.DEVNULL, stdout=self.sink, stderr=self.sink, env=env)

    async def client(self, stack: AsyncExitStack) -> Any:
        while True:
            try:
                return await stack.enter_async_context(Client(streamable_http_client(self.url), mode="legacy"))
            except Exception:  # not listening yet
                if self.process.poll() is not None or time.perf_counter() - self.spawned > TIMEOUT:
                    raise SystemExit(f"the server of {list(self.vaults)} did not start; see {self.sink.name}") from None
                await anyio.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.sink.close()


async def search(client: Any, query: str, vault: str | None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"query": query, "agent": "vaults-bench"}
    if vault is not None:
        arguments["vault"] = vault
    result = await client.call_tool("memory_search", arguments)
    answer = result.structured_content or {}
    if answer.get("status") not in ("ok", "none"):
        raise SystemExit(f"memory_search failed: {answer}")
    return answer


async def ready(client: Any, vault: str | None) -> float:
    """perf_counter() once a search of ``vault`` answers with neither ``indexing`` nor ``checking``."""
    while True:
        answer = await search(client, "calendar", vault)
        if "indexing" not in answer and "checking" not in answer:
            return time.perf_counter()
        await anyio.sleep(0.2)


async def timed(client: Any, asked: list[str], vault: str | None) -> list[float]:
    took = []
    for query in asked:
        began = time.perf_counter()
        await search(client, query, vault)
        took.append(time.perf_counter() - began)
    return took


def line(label: str, took: list[float]) -> str:
    return (f"{label:<34} p50 {statistics.median(took) * 1000:6.2f} ms  p90 {pct(took, 0.9) * 1000:6.2f}  "
            f"p99 {pct(took, 0.99) * 1000:6.2f}  {len(took) / sum(took):6.1f} calls/s")


async def memory(roots: dict[str, Path], asked: list[str], log: Path) -> None:
    singles = [Server({name: root}, log) for name, root in roots.items()]
    try:
        async with AsyncExitStack() as stack:
            for server in singles:
                client = await server.client(stack)
                await ready(client, None)
                await timed(client, asked[:50], None)
            apart = [memory_mb(s.process.pid) for s in singles]
    finally:
        for server in singles:
            server.stop()
    together = Server(roots, log)
    try:
        async with AsyncExitStack() as stack:
            client = await together.client(stack)
            for name in roots:
                await ready(client, name)
                await timed(client, asked[:50], name)
            shared = memory_mb(together.process.pid)
    finally:
        together.stop()
    if shared is None or any(m is None for m in apart):
        print("memory: n/a (Linux only)")
        return
    rss = sum(m[0] for m in apart if m is not None)
    pss = sum(m[1] for m in apart if m is not None)
    print(f"memory, {len(roots)} one-vault servers: RSS {rss:7.0f} MB, PSS {pss:7.0f} MB "
          f"({', '.join(f'{m[1]:.0f}' for m in apart if m is not None)} PSS each)")
    print(f"memory, one server of {len(roots)} vaults: RSS {shared[0]:7.0f} MB, PSS {shared[1]:7.0f} MB "
          f"({shared[1] / pss:.0%} of the {len(roots)} servers)")


async def speed(roots: dict[str, Path], asked: list[str], rounds: int, log: Path) -> None:
    first = next(iter(roots))
    alone: list[float] = []
    beside: list[float] = []
    spanning: list[float] = []
    for turn in ("alone", "beside", "beside", "alone") * rounds:
        server = Server({first: roots[first]} if turn == "alone" else roots, log)
        try:
            async with AsyncExitStack() as stack:
                client = await server.client(stack)
                vault = None if turn == "alone" else first
                for name in ([first] if turn == "alone" else list(roots)):
                    await ready(client, None if turn == "alone" else name)
                await timed(client, asked[:50], vault)  # warm
                took = await timed(client, asked, vault)
                if turn == "beside":
                    spanning.extend(await timed(client, asked, "*"))
        finally:
            server.stop()
        (alone if turn == "alone" else beside).extend(took)
        print(line(f"  {turn} ({load()})", took))
    print(line(f"a search in {first}, served alone", alone))
    print(line(f"a search in {first}, beside {len(roots) - 1} others", beside))
    print(line(f"a search of all {len(roots)} vaults (vault: '*')", spanning))


async def first_answers(server: Server, client: Any, vault: str | None) -> tuple[float, float]:
    """Seconds from ``server``'s spawn to its first answer in ``vault``, and to its first one marked
    neither ``indexing`` nor ``checking``."""
    await search(client, "calendar", vault)
    answered = time.perf_counter() - server.spawned
    return answered, await ready(client, vault) - server.spawned


async def startup(roots: dict[str, Path], asked: list[str], log: Path) -> None:
    first, *others = roots
    with tempfile.TemporaryDirectory(prefix="vaults-bench-") as scratch:
        fresh = {first: roots[first]}
        for name in others:  # copies without their index: each is built at start-up
            fresh[name] = Path(scratch) / name
            shutil.copytree(roots[name], fresh[name], ignore=shutil.ignore_patterns(".vault-mem"))
        alone = Server({first: roots[first]}, log)
        try:
            async with AsyncExitStack() as stack:
                client = await alone.client(stack)
                alone_answer, alone_first = await first_answers(alone, client, None)
        finally:
            alone.stop()
        together = Server(fresh, log)
        try:
            async with AsyncExitStack() as stack:
                client = await together.client(stack)
                together_answer, first_answer = await first_answers(together, client, first)
                during: list[float] = []
                building = True
                while building:
                    during.extend(await timed(client, asked[:20], first))
                    answers = [await search(client, "calendar", name) for name in others]
                    building = any("indexing" in a or "checking" in a for a in answers)
                    if time.perf_counter() - together.spawned > TIMEOUT:
                        raise SystemExit("the other vaults did not finish building")
                built = time.perf_counter() - together.spawned
        finally:
            together.stop()
    print(f"start-up, the first vault alone: first answer {alone_answer:.2f} s after the spawn, its start-up "
          f"check done at {alone_first:.2f} s")
    print(f"start-up, beside {len(others)} vaults being built: first answer {together_answer:.2f} s, its start-up "
          f"check done at {first_answer:.2f} s")
    print(line(f"a search in {first} while they build", during))
    print(f"the {len(others)} others built ({sum(len(list(p.rglob('*.md'))) for p in list(roots.values())[1:]):,} "
          f"notes) {built:.1f} s after the spawn")


async def run(args: argparse.Namespace) -> None:
    roots = {f"hub{i + 1}": Path(p).resolve() for i, p in enumerate(args.vaults)}
    asked = queries(args.queries)
    log = Path(tempfile.gettempdir()) / f"vaults-bench-{os.getpid()}.log"
    print(f"vaults bench: {len(roots)} vaults, {args.queries} searches; load average before: {load()}; "
          f"server output in {log}")
    await memory(roots, asked, log)
    if args.rounds:
        await speed(roots, asked, args.rounds, log)
    if not args.no_startup:
        await startup(roots, asked, log)
    print(f"load average after: {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vaults", nargs="+", type=Path, help="indexed vaults (two or more)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1, help="ABBA rounds of the search timing (0: skip it)")
    parser.add_argument("--no-startup", action="store_true", help="skip the start-up measure")
    args = parser.parse_args()
    if len(args.vaults) < 2:
        parser.error("give two or more vaults")
    anyio.run(run, args)


if __name__ == "__main__":
    main()
