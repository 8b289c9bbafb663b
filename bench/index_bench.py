"""Index benchmark: cold build, warm reconcile, index size and peak RSS.

    python bench/index_bench.py                 # a generated vault of 10,000 notes
    python bench/index_bench.py --notes 2000
    python bench/index_bench.py --vault DIR     # an existing vault (its index goes to a temp folder)

Prints numbers; it is not a test. Targets on a 2-core machine: cold build of 10,000 notes
<= 20 s, warm reconcile <= 1 s, peak RSS <= 300 MB.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gen_vault import generate

from vault_mem import settings
from vault_mem.search.api import install_whoosh_patches
from vault_mem.search.build import build, reconcile
from vault_mem.search.progress import Progress
from vault_mem.search.store import VaultIndex

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)


def peak_rss_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def main() -> None:
    parser = argparse.ArgumentParser(description="vault-mem index benchmark")
    parser.add_argument("--vault", type=Path, help="an existing vault (default: generate one)")
    parser.add_argument("--notes", type=int, default=10_000, help="notes to generate (default 10,000)")
    parser.add_argument("--procs", type=int, default=None, help="build workers (default: cores)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vault-mem-bench-") as tmp:
        if args.vault:
            root = args.vault.resolve()
        else:
            root = Path(tmp) / "vault"
            t = time.perf_counter()
            generate(root, args.notes)
            print(f"generated {args.notes} notes in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        index = VaultIndex(root, Path(tmp) / "index", config=settings.current())
        start = time.perf_counter()
        report = build(index, lambda label, total: Progress(label, total), procs=args.procs)
        cold = time.perf_counter() - start
        warm = []
        for _ in range(3):
            start = time.perf_counter()
            again = reconcile(index)
            warm.append(time.perf_counter() - start)
            assert again.added == again.updated == again.removed == 0, again.summary()
        size = sum(f.stat().st_size for f in index.dir.iterdir() if f.is_file())
        own, children = peak_rss_mb()
        print(f"vault:            {root} ({report.total} notes)")
        print(f"cold build:       {cold:.1f} s ({report.total / cold:,.0f} notes/s)")
        print(f"warm reconcile:   {min(warm):.2f} s (best of 3; {', '.join(f'{w:.2f}' for w in warm)})")
        print(f"index size:       {size / 1e6:.1f} MB")
        print(f"peak RSS:         {own:.0f} MB in this process, {children:.0f} MB in the largest worker")


if __name__ == "__main__":
    main()
