"""Two servers writing to one vault: how the index's one write lock is shared between processes.

    python bench/two_servers_bench.py --vault DIR                  # a copy of DIR, 4 threads each, 30 s
    python bench/two_servers_bench.py --vault DIR --threads 8 --seconds 20

Two MCP clients open at once are two ``vault-mem serve`` processes on one vault (docs/concurrency.md).
This copies ``--vault`` (its index left out) into a temporary folder, builds the index, then starts
two processes, each a served vault with its runtime (watcher, background merges) and ``--threads``
threads writing new notes and appending to their own through the server's call path, as
``bench/write_bench.py --threads`` does in one. Each process prints its writes, their p50, p99 and
max; this prints both side by side. A process kept from the lock by the other shows as fewer
writes and a max of seconds. Run it against two checkouts with ``PYTHONPATH=<checkout>``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from writers import pct, write_steadily  # bench/, the script's folder


def one_server(root: Path, index_dir: Path, name: str, threads: int, seconds: float, start_at: float) -> None:
    """One process's writers; prints one JSON line."""
    from vault_mem import settings
    from vault_mem.runtime.lifecycle import Runtime
    from vault_mem.search.api import VaultIndex, install_whoosh_patches
    from vault_mem.served.context import Vault

    install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)
    index = VaultIndex(root, index_dir, config=settings.current())
    vault = Vault(root, index)
    runtime = Runtime(index)
    runtime.start()
    if not runtime.wait_ready(600):
        raise SystemExit("the index did not become ready")
    time.sleep(max(0.0, start_at - time.time()))
    times, failures = write_steadily(vault, threads, seconds, name, f"Two {name}", ["two-servers"])
    runtime.stop()
    index.close()
    print(json.dumps({"name": name, "writes": len(times), "p50": statistics.median(times),
                      "p99": pct(times, 0.99), "max": max(times), "failed": len(failures)}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, help="the vault to copy (required)")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--server", nargs=2, metavar=("WORK", "NAME"), help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.server:
        work = Path(args.server[0])
        one_server(work / "vault", work / "index", args.server[1], args.threads, args.seconds, args.start_at)
        return
    if args.vault is None or not args.vault.is_dir():
        parser.error("--vault takes the folder of a vault to copy")
    from vault_mem import settings
    from vault_mem.search.api import VaultIndex, install_whoosh_patches, sync

    install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)
    work = Path(tempfile.mkdtemp(prefix="vault-mem-two-"))
    try:
        shutil.copytree(args.vault, work / "vault", symlinks=True,
                        ignore=shutil.ignore_patterns(".vault-mem", ".git"))
        index = VaultIndex(work / "vault", work / "index", config=settings.current())
        sync(index)
        index.close()
        start_at = time.time() + 15  # both processes have loaded and checked the index by then
        command = [sys.executable, __file__, "--threads", str(args.threads), "--seconds", str(args.seconds),
                   "--start-at", str(start_at), "--server", str(work)]
        procs = [subprocess.Popen([*command, name], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
                 for name in ("one", "two")]
        rows = [json.loads((proc.communicate()[0] or "{}").strip().splitlines()[-1]) for proc in procs]
        for row in rows:
            print(f"{row['name']:<4} {row['writes']:>6} writes  p50 {row['p50']:7.1f} ms  p99 {row['p99']:8.1f} ms"
                  f"  max {row['max']:8.1f} ms  {row['failed']} failed")
        counts = [row["writes"] for row in rows]
        print(f"total {sum(counts)} writes; the smaller share {min(counts) / max(sum(counts), 1):.2f}; "
              f"worst max {max(row['max'] for row in rows):.0f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
