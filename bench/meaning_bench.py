"""The meaning stage's costs on a vault: embedding time, vectors on disk and in memory, search
latency with and without meaning, and peak RSS (docs/perf/meaning.md).

    python bench/meaning_bench.py --vault DIR --model MODEL_DIR [--index-dir IX] [--seconds 300]
                                  [--queries 200] [--seed 7] [--sequential] [--mcp]

It builds (or reuses) the keyword index, then embeds the notes not embedded yet with the model
(resumable: a later run goes on where a stopped one ended), for at most ``--seconds`` when given
(then the rest is extrapolated from the notes per second, and it says so). Then it times
``memory_search`` through the server's own call path (``mcp_server.app.call``) for ``--queries``
queries, drawn with ``--seed`` from the words and titles of the vault's notes, once without the
model and once with it, each after one warm-up pass; it prints the median and p90 of each and
the process's peak RSS. ``--mcp`` also times them as an agent's client sees them (``over_mcp``).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vault_mem import settings
from vault_mem.mcp_server.app import call
from vault_mem.mcp_server.tools import TOOLS_BY_NAME
from vault_mem.meaning.embedder import Embedder, Meaning
from vault_mem.meaning.model import RUNTIMES
from vault_mem.runtime.meaning import index_notes, note_text
from vault_mem.search import fusion
from vault_mem.search.api import install_whoosh_patches, size_cache
from vault_mem.search.build import sync
from vault_mem.search.store import VaultIndex
from vault_mem.served.context import Vault
from vault_mem.vault.names import words
from vault_mem.vault.reader import read_note
from vault_mem.vault.walk import walk_vault

settings.configure(settings.from_environment(os.environ))  # VAULT_MEM_QUERY_BITS and the rest, as the command line
install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)
size_cache(settings.current().cache_mb)  # VAULT_MEM_CACHE_MB, as the command line


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e6 if sys.platform == "darwin" else peak / 1e3


def queries_of(root: Path, count: int, seed: int) -> list[str]:
    """Half: two or three words of a note's body; half: a note's title (read from the files)."""
    rng = random.Random(seed)
    paths = sorted(walk_vault(root).files)
    out: list[str] = []
    while len(out) < count:
        note = read_note(root, rng.choice(paths), config=settings.current())
        if len(out) % 2:
            found = [w for w in words(note.body[:2000]) if len(w) > 3]
            if len(found) >= 3:
                start = rng.randrange(len(found) - 2)
                out.append(" ".join(found[start: start + rng.choice((2, 3))]))
        elif note.title:
            out.append(note.title)
    return out


def rss_mb() -> float:
    """The process's resident memory now (Linux), else its peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1e3
    except OSError:
        pass
    return peak_rss_mb()


def interleaved(plain: Vault, vault: Vault, queries: list[str], sequential_too: bool) -> dict[str, list[float]]:
    """Each query timed in turn each way (keyword only; with meaning as a new query, its vector
    dropped from the cache; with meaning again, its vector kept; with ``sequential_too`` the two
    again with the keyword ranking before the embedding rather than beside it), after a warm pass:
    the machine's load, which moves from second to second on a shared machine, weighs on all alike."""
    spec = TOOLS_BY_NAME["memory_search"]
    meaning = vault.meaning
    assert meaning is not None
    for q in queries:
        call(plain, spec, {"agent": "bench", "query": q})
        call(vault, spec, {"agent": "bench", "query": q})
    ways = [("keyword only", plain, False, True), ("with meaning, new queries", vault, True, True),
            ("with meaning, repeated queries", vault, False, True)]
    if sequential_too:
        ways += [("with meaning, new queries, sequential", vault, True, False),
                 ("with meaning, repeated queries, sequential", vault, False, False)]
    times: dict[str, list[float]] = {name: [] for name, *_ in ways}
    for q in queries:
        for name, target, new, concurrent in ways:
            fusion.CONCURRENT = concurrent
            if new:
                meaning._queries.clear()
            start, cpu = time.perf_counter(), time.process_time()
            call(target, spec, {"agent": "bench", "query": q})
            times[name].append((time.perf_counter() - start) * 1000)
            times.setdefault(name + " (CPU)", []).append((time.process_time() - cpu) * 1000)
    fusion.CONCURRENT = True
    return times


def over_mcp(root: Path, index_dir: Path, model: Path, queries: list[str], warm: list[str]) -> dict[str, list[float]]:
    """memory_search as an agent's client sees it: the MCP SDK's client over stdio, against two
    ``vault-mem serve`` processes on the same index, one without a model and one with ``model``.
    Each query is asked of the two in turn, once (new to both servers: neither has searched its
    words yet, and the second has not embedded it), then again (asked before), after ``warm``
    (other queries) and once both are ready. Times by pass: ``keyword only, first`` compares with
    ``with meaning, first``, and ``keyword only, again`` with ``with meaning, again``."""
    import anyio
    from mcp import Client, StdioServerParameters

    def server(*extra: str) -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, args=[
            "-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(index_dir), *extra])

    times: dict[str, list[float]] = {}

    async def search(client: Any, query: str) -> tuple[float, dict[str, Any]]:
        start = time.perf_counter()
        result = await client.call_tool("memory_search", {"agent": "bench", "query": query})
        return (time.perf_counter() - start) * 1000, result.structured_content or {}

    async def main() -> None:
        async with Client(server(), mode="legacy") as plain, \
                Client(server("--meaning-model", str(model)), mode="legacy") as fused:
            for client in (plain, fused):  # until the start-up check and any embedding are done
                while True:
                    answer = (await search(client, warm[0]))[1]
                    if not any(k in answer for k in ("indexing", "checking", "meaning")):
                        break
                    await anyio.sleep(0.5)
            for q in warm:
                await search(plain, q)
                await search(fused, q)
            for asked in ("first", "again"):
                for q in queries:
                    times.setdefault(f"keyword only, {asked}", []).append((await search(plain, q))[0])
                    times.setdefault(f"with meaning, {asked}", []).append((await search(fused, q))[0])

    anyio.run(main)
    return times


def agreement(meaning: Meaning, queries: list[str]) -> str:
    """How near the 8-bit query vectors are to the full-precision ones, and how many of the 10 notes
    nearest by meaning the two share."""
    model, store = meaning.model, meaning.store
    cosines, shared = [], []
    for q in queries:
        near, full = model.encode_query(q), model.encode([q])[0]
        cosines.append(float(near @ full))
        by_full = {p for p, _ in store.nearest(full, 10)}
        shared.append(len(by_full & {p for p, _ in store.nearest(near, 10)}) / max(len(by_full), 1))
    return (f"8-bit query vectors: cosine with the full-precision ones {min(cosines):.4f} at the least, "
            f"{statistics.median(cosines):.4f} at the median; of the 10 notes nearest by meaning, "
            f"{statistics.mean(shared):.1%} the same on average, {min(shared):.0%} at the least")


def timed_searches(vault: Vault, queries: list[str], new_queries: bool = False) -> list[float]:
    """Each query's time after a warm pass; with ``new_queries`` the model's query cache is
    emptied before each call, so each query is encoded (as a question never asked before)."""
    spec = TOOLS_BY_NAME["memory_search"]
    for q in queries:  # warm: the caches every later call finds filled
        call(vault, spec, {"agent": "bench", "query": q})
    times = []
    for q in queries:
        if new_queries and vault.meaning is not None:
            vault.meaning._queries.clear()
        start = time.perf_counter()
        call(vault, spec, {"agent": "bench", "query": q})
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=None, help="embed at most this long, then extrapolate")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-embed", action="store_true", help="time searches with the vectors already stored")
    parser.add_argument("--runtime", choices=RUNTIMES, default="auto", help="what runs the model (default: auto)")
    parser.add_argument("--mcp", action="store_true",
                        help="also time the searches from the MCP SDK's client over stdio, one server with the model "
                             "and one without")
    parser.add_argument("--sequential", action="store_true",
                        help="also time searches that rank by words, then embed the query (not both at once)")
    parser.add_argument("--fill-random", action="store_true",
                        help="give every note not embedded a random vector (timing at full size only: "
                             "it writes them into the index folder's store; use a copy)")
    args = parser.parse_args()
    index = VaultIndex(args.vault, args.index_dir, config=settings.current())
    report = sync(index, procs=1)
    print(f"keyword index: {report.total:,} notes ({report.seconds:.1f} s)")
    queries = queries_of(args.vault, args.queries, args.seed)
    vault = Vault(args.vault, index)
    plain = timed_searches(vault, queries)
    keyword_rss = rss_mb()
    meaning = Meaning.open(args.model, index.dir, runtime=args.runtime, config=index.config)
    print(f"model {meaning.model.name} run by {meaning.model.runtime}, queries with "
          f"{meaning.model.query_bits}-bit weights")
    loaded_rss = rss_mb()
    notes, read = index_notes(index), note_text(args.vault, config=settings.current())
    embedder = Embedder(meaning, notes, read)
    before = len(meaning.store)
    deadline = None if args.seconds is None else time.monotonic() + args.seconds
    start_cpu, start = time.process_time(), time.perf_counter()
    done_now = 0

    def stop_when_due(done: int, total: int) -> None:
        nonlocal done_now
        done_now = done - before
        if deadline is not None and time.monotonic() > deadline:
            embedder._stop.set()  # the bench's own stop: what is stored stays

    if not args.no_embed:
        embedder.catch_up(stop_when_due)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    total = len(notes())
    embedded = len(meaning.store)
    chunks = meaning.store.rows()
    if done_now:
        per_note = wall / done_now
        print(f"embedded {done_now:,} notes now in {wall:.1f} s wall, {cpu:.1f} s CPU: {per_note * 1000:.1f} ms "
              f"a note wall ({cpu / done_now * 1000:.1f} ms CPU); {chunks / max(embedded, 1):.2f} chunks a note")
        if embedded < total:
            print(f"  extrapolated: the whole vault ({total:,} notes) would take {per_note * total / 60:.1f} min "
                  f"wall at this rate (only {embedded:,} embedded)")
    if args.fill_random:
        import numpy as np

        rng = np.random.default_rng(args.seed)
        have = meaning.store.etags()
        missing = [(p, e) for p, e in notes().items() if have.get(p) != e]
        for start in range(0, len(missing), 1024):
            block = rng.standard_normal((len(missing[start: start + 1024]), meaning.model.dim)).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            meaning.store.put([(p, e, block[i:i + 1]) for i, (p, e) in enumerate(missing[start: start + 1024])])
        print(f"filled {len(missing):,} notes with random vectors (for timing at full size only)")
        embedded, chunks = len(meaning.store), meaning.store.rows()
    store_bytes = sum(p.stat().st_size for p in meaning.store.folder.iterdir())
    print(f"vectors: {embedded:,} of {total:,} notes, {chunks:,} chunks, {store_bytes / 1e6:.1f} MB on disk, "
          f"{chunks * meaning.model.dim * 4 / 1e6:.1f} MB float32 in memory")
    vault.meaning = meaning
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    timings = interleaved(Vault(args.vault, index), vault, queries, args.sequential)
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    for name, times in timings.items():
        plain = timings["keyword only (CPU)" if name.endswith("(CPU)") else "keyword only"]
        q = statistics.quantiles(times, n=10)
        print(f"memory_search {name}: p50 {statistics.median(times):.2f} ms, p90 {q[8]:.2f} ms "
              f"({len(times)} queries; x{statistics.median(times) / statistics.median(plain):.2f} of keyword only)")
    if load is not None and load_after is not None:
        print(f"load average (1 min) {load[0]:.2f} before the timed searches, {load_after[0]:.2f} after")
    if meaning.model.query_bits == 8:
        print(agreement(meaning, queries))
    if args.mcp:
        load = os.getloadavg() if hasattr(os, "getloadavg") else None
        over = over_mcp(args.vault, index.dir, args.model, queries, queries_of(args.vault, 50, args.seed + 1))
        for name, times in over.items():
            plain_times = over["keyword only, " + name.rsplit(", ", 1)[1]]
            print(f"over MCP (stdio), memory_search {name}: p50 {statistics.median(times):.2f} ms, p90 "
                  f"{statistics.quantiles(times, n=10)[8]:.2f} ms ({len(times)} calls; "
                  f"x{statistics.median(times) / statistics.median(plain_times):.2f} of keyword only)")
        if load is not None:
            print(f"load average (1 min) {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"RSS: {keyword_rss:.0f} MB after keyword searches; {loaded_rss:.0f} MB with the model and vectors "
          f"loaded; {rss_mb():.0f} MB after the searches by meaning; peak {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
