"""The ranking stage of memory_search alone: every match scored and sorted, against the pruned page.

    python bench/topk_bench.py --vault DIR [--index-dir IX] [--count 150] [--seed 1] [--limit 10]

For ``--count`` random 6+-letter words of random notes (seeded, as bench/rpc_bench.py draws
them), the common words (issue 22's Hub words and the vault's most widespread words), and
pairs of each, both ways find the page of ``--limit`` notes in one searcher, on warm caches
(each query is asked once before it is timed): ``score_notes`` of every match then a sort
by score, newest, path (what memory_search did before search/topk.py), and ``best_notes``.
Prints p50, p95 and the worst in milliseconds of CPU time (this thread's: on a loaded
machine the clock moves far more) and wall time, the worst common-word query, the load
average, and fails (exit status 1) if any page, score or ``truncated`` differs. Then each
common word through the whole memory_search call (rows and excerpts included), 20 warm
calls each, and the worst of them by CPU p50.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rpc_bench import ISSUE_WORDS, common_words, loadavg, pct, ready_index, sample_words

from vault_mem import settings
from vault_mem.mcp_server.tools import TOOLS_BY_NAME
from vault_mem.search.api import install_whoosh_patches
from vault_mem.search.ranking import score_notes, search_terms
from vault_mem.search.topk import best_notes
from vault_mem.served.context import Vault, View, view_of

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)

Page = tuple[list[int], dict[int, float], bool]


def full_page(view: View, terms: list[str], limit: int) -> Page:
    scores = score_notes(view.snapshot, terms)
    updated, paths = view.snapshot.column("updated"), view.snapshot.column("path")
    page = heapq.nsmallest(limit, scores, key=lambda d: (-scores[d], -(updated[d] or 0), paths[d] or ""))
    return page, {d: scores[d] for d in page}, len(scores) > len(page)


def pruned_page(view: View, terms: list[str], limit: int) -> Page:
    ranked = best_notes(view.snapshot, terms, limit)
    return ranked.page, ranked.scores, ranked.truncated


def timed(way: Callable[[View, list[str], int], Page], view: View, terms: list[str],
          limit: int) -> tuple[Page, float, float]:
    way(view, terms, limit)  # warm: postings, groups and columns cached as in a running server
    start, cpu = time.perf_counter(), time.thread_time()
    page = way(view, terms, limit)
    return page, (time.thread_time() - cpu) * 1000, (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, required=True, help="index folder, reused when complete")
    parser.add_argument("--count", type=int, default=150, help="random words")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=10)
    args = parser.parse_args()
    root = args.vault.resolve()
    index = ready_index(root, args.index_dir.resolve())
    paths = sorted(str(r["path"]) for r in index.records().values())
    rng = random.Random(args.seed)
    words = sample_words(root, paths, rng, args.count)
    common = list(dict.fromkeys(ISSUE_WORDS + common_words(root, paths)))
    queries = [*words, *common, *(f"{a} {b}" for a, b in zip(words[::2], words[1::2], strict=False)),
               *(f"{a} {b}" for a, b in itertools.pairwise(common))]
    print(f"{len(queries)} queries ({len(words)} random words, {len(common)} common words, pairs); "
          f"load average {loadavg()}")
    times: dict[str, dict[str, list[float]]] = {"full": {"cpu": [], "wall": []}, "pruned": {"cpu": [], "wall": []}}
    worst: dict[str, tuple[float, str]] = {"full": (0.0, ""), "pruned": (0.0, "")}
    slowest: dict[str, tuple[float, str]] = {"full": (0.0, ""), "pruned": (0.0, "")}
    differ: list[str] = []
    with view_of(Vault(root, index)) as view:
        for query in queries:
            terms, _dropped = search_terms(query, view.config)
            pages: dict[str, Any] = {}
            for way, run in (("full", full_page), ("pruned", pruned_page)):
                pages[way], cpu, wall = timed(run, view, terms, args.limit)
                times[way]["cpu"].append(cpu)
                times[way]["wall"].append(wall)
                slowest[way] = max(slowest[way], (cpu, query))
                if query in common:
                    worst[way] = max(worst[way], (cpu, query))
            if pages["full"] != pages["pruned"]:
                differ.append(query)
        print("\nmemory_search of each common word, whole call, 20 warm calls   CPU p50   wall p50   (ms)")
        handler = TOOLS_BY_NAME["memory_search"].handler
        slow = (0.0, "")
        for word in common:
            cpu_times, wall_times = [], []
            for i in range(21):
                start, cpu = time.perf_counter(), time.thread_time()
                handler(view, {"agent": "bench", "query": word})
                if i:  # the first warms
                    cpu_times.append((time.thread_time() - cpu) * 1000)
                    wall_times.append((time.perf_counter() - start) * 1000)
            slow = max(slow, (statistics.median(cpu_times), word))
            print(f"  {word:<24} {statistics.median(cpu_times):8.2f} {statistics.median(wall_times):9.2f}")
        print(f"worst common word, whole call: {slow[1]!r}, CPU p50 {slow[0]:.2f} ms (load average {loadavg()})")
    index.close()
    print(f"\nranking stage, limit {args.limit}, warm       p50 ms   p95 ms   worst ms   (CPU time; wall)")
    for way, got in times.items():
        cpu, wall = got["cpu"], got["wall"]
        print(f"  {way:<10} {statistics.median(cpu):15.3f} {pct(cpu, 0.95):8.3f} {max(cpu):9.2f}"
              f"   (wall {statistics.median(wall):.3f} / {pct(wall, 0.95):.3f} / {max(wall):.2f})")
        print(f"  {'':<10} worst common word: {worst[way][1]!r}, {worst[way][0]:.2f} ms CPU; "
              f"slowest query: {slowest[way][1]!r}, {slowest[way][0]:.2f} ms")
    print(f"load average {loadavg()}")
    print(f"{len(queries) - len(differ)} of {len(queries)} pages identical"
          + (f"; differ: {differ[:10]}" if differ else ""))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
