"""Write benchmark: latency of each write tool in process on a generated vault.

    python bench/write_bench.py                 # 10,000 generated notes, 100 calls per tool
    python bench/write_bench.py --notes 2000 --runs 50
    python bench/write_bench.py --notes 2000 --threads 8 --seconds 20   # concurrent writes

``--threads N`` runs N threads that write new notes and append to their own for ``--seconds``,
as worker 1 of ``serve --workers 2`` makes the writes of 32 sessions, with the server's
runtime (its watcher, background merges) running. It prints the writes per second, their p50
and p99, and the CPU this process spent per write (merge processes not counted): steadier than
``load_bench``'s latencies, which move by tens of ms between identical runs, so a change to the
write path is judged by it first.

Each call goes through the server's own call path (``vault_mem.mcp_server.app.call``: argument
validation, one searcher, the write, the index commit that makes it visible to every read
tool before the answer), without the MCP transport. Prints p50, p95 and max per tool in
milliseconds. Target on a 2-core machine: p50 <= 60 ms for each write tool.

The vault and its index live in a temporary folder and are thrown away.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gen_vault import generate
from writers import pct, write_steadily

from vault_mem import settings
from vault_mem.mcp_server.app import call
from vault_mem.mcp_server.tools import ToolSpec, tools_for
from vault_mem.search.api import install_whoosh_patches
from vault_mem.search.build import build
from vault_mem.search.store import VaultIndex
from vault_mem.served.context import Vault

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)

AGENT = "bench"
TARGET_P50_MS = 60.0


class Bench:
    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.specs: dict[str, ToolSpec] = {spec.name: spec for spec in tools_for(False)}
        self.rows: list[tuple[str, list[float]]] = []

    def run(self, tool: str, args: dict[str, Any]) -> tuple[dict[str, Any], float]:
        start = time.perf_counter()
        answer = call(self.vault, self.specs[tool], dict(args))
        elapsed = (time.perf_counter() - start) * 1000
        if answer.get("status") != "ok":
            raise SystemExit(f"{tool} {args} answered {answer}")
        return answer, elapsed

    def measure(self, label: str, tool: str, plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answers, times = [], []
        for args in plans:
            answer, elapsed = self.run(tool, args)
            answers.append(answer)
            times.append(elapsed)
        self.rows.append((label, times))
        return answers

    def report(self) -> bool:
        print(f"\n{'in process':<30} {'calls':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
        ok = True
        for label, times in self.rows:
            p50 = statistics.median(times)
            ok &= p50 <= TARGET_P50_MS
            flag = "" if p50 <= TARGET_P50_MS else f"   over the {TARGET_P50_MS:.0f} ms target"
            print(f"  {label:<28} {len(times):>5} {p50:8.1f} {pct(times, 0.95):8.1f} {max(times):8.1f}{flag}")
        return ok


def concurrent(vault: Vault, domains: list[str], threads: int, seconds: float) -> None:
    """``threads`` threads writing for ``seconds``: half new notes, half appends to their own."""
    from vault_mem.runtime.lifecycle import Runtime

    runtime = Runtime(vault.index)
    runtime.start()
    if not runtime.wait_ready(600):
        raise SystemExit("the index did not become ready")
    cpu, wall = time.process_time(), time.perf_counter()
    times, failures = write_steadily(vault, threads, seconds, AGENT, "Load", domains, tags=["load"])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    runtime.stop()
    print(f"{len(times)} writes from {threads} threads in {wall:.1f} s: {len(times) / wall:.1f} writes/s, "
          f"p50 {statistics.median(times):.1f} ms, p99 {pct(times, 0.99):.1f} ms, max {max(times):.1f} ms")
    print(f"CPU of this process: {cpu:.1f} s, {1000 * cpu / len(times):.2f} ms per write "
          f"(merge processes not counted); {len(failures)} failed{': ' + failures[0] if failures else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description="vault-mem write benchmark")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--threads", type=int, default=0, help="concurrent writers (0: each tool in turn)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the concurrent writers run")
    args = parser.parse_args()
    if args.threads < 0 or args.seconds <= 0:
        parser.error("--threads takes 0 or more, --seconds more than 0")
    runs = args.runs
    with tempfile.TemporaryDirectory(prefix="vault-mem-wbench-") as tmp:
        root = Path(tmp) / "vault"
        generate(root, args.notes)
        index = VaultIndex(root, Path(tmp) / "index", config=settings.current())
        report = build(index)
        print(f"vault of {report.total} notes, index built in {report.seconds:.1f} s")
        if args.threads:
            domains = sorted({r["path"].rpartition("/")[0] for r in index.records().values()})
            concurrent(Vault(root, index), domains, args.threads, args.seconds)
            index.close()
            return
        records = sorted(index.records().values(), key=lambda r: r["path"])
        domain = max(records, key=lambda r: (r["path"].count("/"), r["path"]))["path"].rpartition("/")[0]
        old = [r["uid"] for r in records[:: max(1, len(records) // runs)]][:runs]
        bench = Bench(Vault(root, index))

        notes = bench.measure("memory_write", "memory_write", [
            {"agent": AGENT, "title": f"Bench note {i}", "content": f"Body of bench note {i}.\n\nMore text.",
             "domain": domain, "type": "fact", "tags": ["bench", f"n{i % 7}"]} for i in range(runs)])
        tasks = [bench.run("memory_write", {"agent": AGENT, "title": f"Bench task {i}", "content": "- [ ] step",
                                            "domain": domain, "type": "task"})[0] for i in range(runs)]
        bench.measure("memory_edit append", "memory_edit", [
            {"agent": AGENT, "ref": n["uid"], "append": "An appended paragraph."} for n in notes])
        bench.measure("memory_edit set", "memory_edit", [
            {"agent": AGENT, "ref": n["uid"], "set": {"importance": 0.8, "owner": "ops"}} for n in notes])
        bench.measure("memory_edit content+if_etag", "memory_edit", [
            {"agent": AGENT, "ref": n["uid"], "content": "A new body.",
             "if_etag": bench.run("memory_read", {"ref": n["uid"]})[0]["etag"]} for n in notes[: runs // 2]])
        bench.measure("task_close", "task_close", [
            {"agent": AGENT, "ref": t["uid"], "state": "completed"} for t in tasks])
        bench.measure("memory_supersede", "memory_supersede", [
            {"agent": AGENT, "ref": uid, "title": f"Superseding {i}", "content": "The newer version."}
            for i, uid in enumerate(old)])
        bench.measure("memory_delete", "memory_delete", [{"agent": AGENT, "ref": n["uid"]} for n in notes])
        ok = bench.report()
        index.close()
    print("all p50 within target" if ok else "some p50 over target")


if __name__ == "__main__":
    main()
