"""Miss-hints benchmark: what the hints of docs/tools.md ("Hints on a miss") cost.

    python bench/miss_bench.py --vault DIR --index-dir IX   # an indexed vault (vault-mem index first)

1. Normal hits: memory_search on words taken from the vault's file names (one- and two-word
   queries), in process, each call timed with the hint check and without it, interleaved so
   that the machine's load weighs on both alike. The hint check alone is timed too.
2. Misses: the same words with one letter dropped (after the first), first call (nothing
   cached), and how many of them get a "did you mean".
Prints medians and p95 of CPU time (process_time: what the machine's other load does not add) in
milliseconds, and the load average before and after.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vault_mem.reads.memory_search as search_module
from vault_mem import settings
from vault_mem.reads.misses import search_term_hints
from vault_mem.search.api import Snapshot, install_whoosh_patches
from vault_mem.search.store import VaultIndex
from vault_mem.served.context import Vault, View
from vault_mem.vault.names import words

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)


def load() -> str:
    path = Path("/proc/loadavg")
    return " ".join(path.read_text().split()[:3]) if path.exists() else "unknown (no /proc/loadavg)"


def p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    vault = Vault(args.vault, VaultIndex(args.vault, args.index_dir, config=settings.current()))
    rng = random.Random(18)
    names = sorted(p.stem for p in args.vault.rglob("*.md"))
    pool = sorted({w for n in rng.sample(names, min(400, len(names))) for w in words(n) if len(w) >= 5 and w.isalpha()})
    queries = rng.sample(pool, 60) + [" ".join(rng.sample(pool, 2)) for _ in range(30)]
    typos = [w[:i] + w[i + 1:] for w in rng.sample(pool, 30) for i in [rng.randrange(1, len(w))]]
    print(f"load before: {load()}")

    def search(view: View, query: str) -> dict[str, Any]:
        return search_module.memory_search(view, {"agent": "bench", "query": query})

    real = search_module.search_term_hints
    with_hints: list[float] = []
    without: list[float] = []
    check: list[float] = []
    with vault.index.searching() as searcher:
        for q in queries:  # warm the caches both ways share
            search(View(vault, Snapshot(searcher, config=vault.index.config)), q)
        for _ in range(args.reps):
            for q in queries:
                for on in (True, False) if rng.random() < 0.5 else (False, True):
                    search_module.search_term_hints = real if on else (lambda view, terms: [])
                    t = time.process_time()
                    search(View(vault, Snapshot(searcher, config=vault.index.config)), q)
                    (with_hints if on else without).append(time.process_time() - t)
        search_module.search_term_hints = real
        for q in queries:
            t = time.process_time()
            search_term_hints(View(vault, Snapshot(searcher, config=vault.index.config)), words(q))
            check.append(time.process_time() - t)
        first: list[float] = []
        meant = 0
        for q in typos:
            t = time.process_time()
            answer = search(View(vault, Snapshot(searcher, config=vault.index.config)), q)
            first.append(time.process_time() - t)
            meant += "did you mean" in " ".join(answer.get("hints", []))
        segments = len(searcher.reader().leaf_readers())
        notes = searcher.doc_count()
    ms = 1000
    print(f"{notes} notes, {segments} segments")
    print(f"hits, {len(queries)} queries x {args.reps}: with hints p50 {statistics.median(with_hints) * ms:.2f} "
          f"p95 {p95(with_hints) * ms:.2f} ms; without p50 {statistics.median(without) * ms:.2f} "
          f"p95 {p95(without) * ms:.2f} ms")
    print(f"the hint check alone on hits: p50 {statistics.median(check) * ms:.3f} p95 {p95(check) * ms:.3f} "
          f"max {max(check) * ms:.3f} ms")
    print(f"misspelled words ({len(typos)}), first call: p50 {statistics.median(first) * ms:.1f} "
          f"p95 {p95(first) * ms:.1f} ms; 'did you mean' in {meant}")
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
