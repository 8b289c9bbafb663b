"""Query benchmark: latency of each read tool in process and over stdio.

    python bench/query_bench.py                  # a generated vault of 10,000 notes
    python bench/query_bench.py --vault DIR      # an existing vault (its index goes to a temp folder)
    python bench/query_bench.py --vault DIR --index-dir IX   # ... its index kept there (reused when complete)

In process: the query function called directly inside one searcher, as the server does.
Over stdio: one spawned `vault-mem serve` process, then many calls through a real MCP client.
Prints p50 and p95 per tool in milliseconds, then memory_search of the common words (issue
22's slow words on the Obsidian Hub and the vault's most widespread 6+-letter words, as
``bench/gen_hub.py`` makes plenty of) and the worst of them. Targets on a 2-core machine: p50 <= 10 ms and
p95 <= 30 ms in process for each of the four contracts; p50 <= 15 ms over stdio.
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
from rpc_bench import ISSUE_WORDS, common_words, loadavg

from vault_mem import settings
from vault_mem.mcp_server.tools import TOOLS_BY_NAME
from vault_mem.search.api import Snapshot, install_whoosh_patches
from vault_mem.search.build import build
from vault_mem.search.ranking import score_notes
from vault_mem.search.store import VaultIndex
from vault_mem.served.context import Vault, View

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)


def calls(sample_domain: str, sample_ref: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, tool, arguments) for every measured call."""
    return [
        ("list_by_domain literal", "list_by_domain", {"domain": sample_domain}),
        ("list_by_domain segment", "list_by_domain", {"domain": sample_domain.rpartition("/")[2]}),
        ("mem_recall month", "mem_recall", {"since": "2025-03", "until": "2025-03"}),
        ("mem_recall structured", "mem_recall", {"since": "2025", "output_format": "structured", "limit": 50}),
        ("memory_list default", "memory_list", {}),
        ("memory_list query+tags", "memory_list", {"query": "cache", "tags_any": ["memory", "index"]}),
        ("memory_search 1 term", "memory_search", {"agent": "bench", "query": "latency"}),
        ("memory_search 3 terms", "memory_search", {"agent": "bench", "query": "cache rollback python"}),
        ("memory_search question", "memory_search",
         {"agent": "bench", "query": "How did we handle the retries when the cache timed out?"}),
        ("memory_search question 2", "memory_search",
         {"agent": "bench", "query": "Which files changed when the folders were renamed?"}),
        ("memory_search recent", "memory_search", {"agent": "bench"}),
        ("memory_read", "memory_read", {"ref": sample_ref}),
        ("list_domains", "list_domains", {}),
    ]



def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def worst_common_word(vault: Vault, words: list[str], runs: int) -> None:
    """memory_search of each common word in process; prints each and the worst p50."""
    handler = TOOLS_BY_NAME["memory_search"].handler
    print(f"\ncommon words in process ({runs} calls each)  p50 ms   p95 ms   matches")
    worst = ("", 0.0)
    for word in words:
        times = []
        with vault.index.searching() as searcher:
            matches = len(score_notes(Snapshot(searcher, config=vault.index.config), [word]))
        for _ in range(runs):
            start = time.perf_counter()
            with vault.index.searching() as searcher:
                handler(View(vault, Snapshot(searcher, config=vault.index.config)), {"agent": "bench", "query": word})
            times.append((time.perf_counter() - start) * 1000)
        p50 = statistics.median(times)
        worst = max(worst, (word, p50), key=lambda w: w[1])
        print(f"  {word:<34} {p50:7.2f}  {pct(times, 0.95):7.2f}   {matches}")
    print(f"worst common-word query: {worst[0]!r}, p50 {worst[1]:.2f} ms (load average {loadavg()})")


def in_process(vault: Vault, plan: list[tuple[str, str, dict[str, Any]]], runs: int) -> None:
    print(f"\nin process ({runs} calls each)          p50 ms   p95 ms   status")
    for label, tool, args in plan:
        handler = TOOLS_BY_NAME[tool].handler
        times = []
        status = "?"
        for _ in range(runs):
            start = time.perf_counter()
            with vault.index.searching() as searcher:
                status = handler(View(vault, Snapshot(searcher, config=vault.index.config)), dict(args))["status"]
            times.append((time.perf_counter() - start) * 1000)
        print(f"  {label:<34} {statistics.median(times):7.2f}  {pct(times, 0.95):7.2f}   {status}")


def over_stdio(root: Path, index_dir: Path, plan: list[tuple[str, str, dict[str, Any]]], runs: int) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(index_dir)])
        start = time.perf_counter()
        async with Client(params, mode="legacy") as client:
            print(f"\nover stdio: spawn + initialize {1000 * (time.perf_counter() - start):.0f} ms "
                  f"({runs} calls each)     p50 ms   p95 ms")
            for label, tool, args in plan:
                times = []
                for _ in range(runs):
                    t = time.perf_counter()
                    await client.call_tool(tool, args)
                    times.append((time.perf_counter() - t) * 1000)
                print(f"  {label:<34} {statistics.median(times):7.2f}  {pct(times, 0.95):7.2f}")

    anyio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(description="vault-mem query benchmark")
    parser.add_argument("--vault", type=Path, help="an existing vault (default: generate one)")
    parser.add_argument("--index-dir", type=Path,
                        help="index folder to reuse when complete, else build there (default: a temp folder)")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--no-stdio", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vault-mem-qbench-") as tmp:
        root = args.vault.resolve() if args.vault else Path(tmp) / "vault"
        if not args.vault:
            generate(root, args.notes)
        index = VaultIndex(root, args.index_dir.resolve() if args.index_dir else Path(tmp) / "index",
            config=settings.current())
        if args.index_dir and not index.needs_build() and index.is_complete():
            with index.searching() as searcher:
                print(f"vault {root}: {searcher.doc_count()} notes, index reused from {index.dir}")
        else:
            report = build(index)
            print(f"vault {root}: {report.total} notes, built in {report.seconds:.1f} s")
        records = index.records()
        deepest = max(records.values(), key=lambda r: (r["path"].count("/"), r["path"]))
        domain = deepest["path"].rpartition("/")[0]
        plan = calls(domain, deepest["uid"])
        vault = Vault(root, index)
        print(f"load average {loadavg()}")
        in_process(vault, plan, args.runs)
        paths = sorted(str(r["path"]) for r in records.values())
        words = list(dict.fromkeys(ISSUE_WORDS + common_words(root, paths)))
        worst_common_word(vault, words, max(10, args.runs // 5))
        index.close()
        if not args.no_stdio:
            over_stdio(root, index.dir, plan, args.runs)


if __name__ == "__main__":
    main()
