"""Soak: one busy agent over stdio for minutes on end, and the server's memory once a minute.

    python bench/soak_bench.py                          # a generated Hub vault, mixed calls, 15 min
    python bench/soak_bench.py --mode reads --minutes 5
    python bench/soak_bench.py --vault DIR --index-dir IX --minutes 3
    python bench/soak_bench.py --tree ../base           # the server from another checkout

Generates a Hub-shaped vault (``gen_hub.py``, ``--notes`` 6,500) unless ``--vault`` is given,
and works on a copy of it either way (the calls write). The index is built before the server
starts. Then one ``vault-mem serve`` process gets raw JSON-RPC lines on stdin, one call after
another with no pause, as an agent loop would:

- ``--mode reads``: 55% ``memory_search`` of a random 6+-letter word of a random note, 35%
  ``memory_read`` of a random note, 10% ``list_by_domain`` of a random domain;
- ``--mode mixed`` (default): 10% ``memory_write`` of a new note, 5% edits from outside (this
  process appends a line to a random note's file, as an editor would, and the server's watcher
  picks it up), and the reads above in the same proportions for the other 85%.

Once a minute it prints the server's resident memory (RSS), the calls per second of that
minute, the p50 and p99 latency of its calls, the errors so far and the load average; at the
end the highest and the last RSS and the whole run's latencies. The RSS is read from
``/proc/PID/status`` (Linux); elsewhere from ``psutil`` when it is installed, else from
``ps -o rss=`` (macOS); Windows needs ``psutil``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_hub import generate
from rpc_bench import RawClient, loadavg, pct, ready_index, sample_words

AGENT = "soak-bench"
READS = (("memory_search", 55), ("memory_read", 35), ("list_by_domain", 10))
MIXED = (("memory_write", 10), ("outside_edit", 5), ("memory_search", 47), ("memory_read", 30),
         ("list_by_domain", 8))  # the reads keep their 55:35:10 proportions in the other 85%


class Server(RawClient):
    """``RawClient`` whose server may come from another checkout (``--tree``)."""

    def __init__(self, root: Path, index_dir: Path, tree: Path | None) -> None:
        env = dict(os.environ)
        if tree is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(index_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.next_id = 0


def rss_mb(pid: int) -> float:
    """The process's resident memory in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    try:
        import psutil  # type: ignore[import-untyped]

        return float(psutil.Process(pid).memory_info().rss) / 2**20
    except ImportError:
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True, check=True)
        return int(out.stdout.split()[0]) / 1024


def outside_edit(root: Path, path: str, n: int) -> None:
    """Append a line to a note's file, as an editor would (the whole file written again)."""
    target = root / path
    text = target.read_text(encoding="utf-8")
    target.write_text(text.rstrip("\n") + f"\n\nEdited outside, soak line {n}.\n", encoding="utf-8")


def soak(root: Path, index_dir: Path, mode: str, lines: int, every_s: float, seed: int,
         tree: Path | None) -> None:
    index = ready_index(root, index_dir)
    paths = sorted(str(r["path"]) for r in index.records().values())
    index.close()
    rng = random.Random(seed)
    words = sample_words(root, paths, rng, 2000)
    mix = READS if mode == "reads" else MIXED
    kinds, weights = [k for k, _ in mix], [w for _, w in mix]
    server = Server(root, index_dir, tree)
    try:
        server.initialize()
        listing = server.call_tool("list_domains", {}).get("structuredContent", {})
        domains = [d["domain"] for d in listing.get("domains", []) if d["domain"]] or [""]
        print(f"server pid {server.proc.pid}, {len(paths)} notes, {len(domains)} domains, mode {mode}, "
              f"RSS at start {rss_mb(server.proc.pid):.0f} MB, load average {loadavg()}")
        print("minute   RSS MB   calls/s   p50 ms   p99 ms   errors   load average")
        latencies: list[float] = []
        minute: list[float] = []
        errors = edits = 0
        peak = 0.0
        start = mark = time.monotonic()
        done = 0
        while done < lines:
            kind = rng.choices(kinds, weights)[0]
            if kind == "outside_edit":
                edits += 1
                outside_edit(root, rng.choice(paths), edits)
            else:
                args: dict[str, Any]
                if kind == "memory_search":
                    args = {"agent": AGENT, "query": rng.choice(words)}
                elif kind == "memory_read":
                    args = {"ref": rng.choice(paths)[:-3]}
                elif kind == "list_by_domain":
                    args = {"domain": rng.choice(domains)}
                else:
                    n = len(latencies)
                    args = {"agent": AGENT, "title": f"Soak note {n} {rng.choice(words)}",
                            "content": f"Written by the soak, call {n}: {' '.join(rng.sample(words, 8))}.",
                            "domain": rng.choice(domains), "tags": ["soak"]}
                began = time.perf_counter()
                try:
                    status = server.call_tool(kind, args).get("structuredContent", {}).get("status")
                except RuntimeError:
                    status = "exception"
                ms = (time.perf_counter() - began) * 1000
                latencies.append(ms)
                minute.append(ms)
                errors += status not in ("ok", "none")
            if (now := time.monotonic()) - mark >= every_s:
                done += 1
                rss = rss_mb(server.proc.pid)
                peak = max(peak, rss)
                print(f"{done:>6} {rss:>8.0f} {len(minute) / (now - mark):>9.0f} {statistics.median(minute):>8.2f} "
                      f"{pct(minute, 0.99):>8.2f} {errors:>8}   {loadavg()}", flush=True)
                minute, mark = [], now
        elapsed = time.monotonic() - start
        print(f"\n{len(latencies)} calls in {elapsed:.0f} s ({len(latencies) / elapsed:.0f}/s), "
              f"{edits} edits from outside, {errors} errors; "
              f"RSS highest {peak:.0f} MB, last {rss_mb(server.proc.pid):.0f} MB; "
              f"p50 {statistics.median(latencies):.2f} ms, p99 {pct(latencies, 0.99):.2f} ms")
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--vault", type=Path, help="a vault to copy (default: a generated Hub vault)")
    parser.add_argument("--notes", type=int, default=6500, help="notes of the generated vault")
    parser.add_argument("--index-dir", type=Path, help="index folder, reused when complete (default: a temp one)")
    parser.add_argument("--mode", choices=("mixed", "reads"), default="mixed")
    parser.add_argument("--minutes", type=int, default=15, help="lines to print (default 15)")
    parser.add_argument("--every", type=float, default=60, help="seconds between two lines (default: a minute)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tree", type=Path, help="run the server of this checkout (first on PYTHONPATH)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vault-mem-soak-") as tmp:
        root = Path(tmp) / "vault"
        if args.vault:
            shutil.copytree(args.vault, root, ignore=shutil.ignore_patterns(".vault-mem*", ".git"))
        else:
            generate(root, args.notes, args.seed)
        index_dir = args.index_dir.resolve() if args.index_dir else Path(tmp) / "index"
        tree = args.tree.resolve() if args.tree else None
        soak(root, index_dir, args.mode, args.minutes, args.every, args.seed, tree)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
