"""What ``memory_write``'s ``similar`` costs a write, in process (docs/perf/similar.md).

    python bench/similar_bench.py --vault DIR [--writes 40] [--rounds 2] [--seed 5]

The vault is copied (its index left behind) and indexed in a temp folder. Each write restates a
random existing note (its body with three words changed, a new title), as an agent that saves
what the vault already holds; rounds alternate ``similar`` on (3) and off (0), so that a drift of
the machine falls on both. Prints, per round, the write's p50 and p90 in milliseconds and how
many writes listed a similar note, then the load average.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vault_mem import settings
from vault_mem.search.api import VaultIndex, install_whoosh_patches, sync
from vault_mem.served.context import Vault, view_of
from vault_mem.writes import tools

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)


def restatement(path: Path, rng: random.Random) -> str:
    """The note's body (after any frontmatter) with three words changed."""
    words = path.read_text(encoding="utf-8", errors="replace").split("---", 2)[-1].split()
    for _ in range(3):
        if words:
            words[rng.randrange(len(words))] = "changed"
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--writes", type=int, default=40, help="writes per round (default 40)")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of rounds, on then off (default 2)")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vault-mem-similar-"))
    try:
        shutil.copytree(args.vault, work / "vault", ignore=shutil.ignore_patterns(".vault-mem*", ".git"))
        index = VaultIndex(work / "vault", work / "index", config=settings.current())
        sync(index, procs=1)
        vault = Vault(work / "vault", index)
        notes = sorted(p for p in (work / "vault").rglob("*.md")
                       if ".excalidraw" not in p.name and 300 < p.stat().st_size < 20_000)
        rng = random.Random(args.seed)
        print(f"{len(notes)} notes to restate in {args.vault}")
        for round_ in range(2 * args.rounds):
            similar = 3 if round_ % 2 == 0 else 0
            times, listed = [], 0
            for n in range(args.writes):
                note = rng.choice(notes)
                raw = {"agent": "bench", "domain": "bench", "title": f"{note.stem} again {round_} {n}",
                       "content": restatement(note, rng)}
                with view_of(vault) as view:
                    start = time.perf_counter()
                    answer = tools.memory_write(view, raw, similar=similar)
                    times.append((time.perf_counter() - start) * 1000)
                listed += bool(answer.get("similar"))
            times.sort()
            print(f"similar={similar}: p50 {statistics.median(times):.1f} ms, "
                  f"p90 {times[int(len(times) * 0.9)]:.1f} ms, {listed} of {args.writes} listed a similar note")
        print("load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        index.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
