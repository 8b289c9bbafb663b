"""Embed a vault's notes with a model into the vectors beside its index, in parts that several
processes can share (the store numbers its shards under a lock), timed.

    python bench/meaning_embed.py --vault DIR --index-dir IX --model MODEL_DIR [--part K/N]

``--part K/N`` embeds only the notes not embedded yet whose place in path order is K modulo N
(K from 0): N processes with parts 0/N .. N-1/N embed the vault once between them. Each prints its
notes, chunks, wall and CPU time, and peak RSS. The keyword index must exist (``vault-mem index``).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vault_mem import settings
from vault_mem.meaning.embedder import Embedder, Meaning
from vault_mem.runtime.meaning import index_notes, note_text
from vault_mem.search.api import install_whoosh_patches
from vault_mem.search.store import VaultIndex

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--part", default="0/1", help="K/N: this process's share (default: all)")
    args = parser.parse_args()
    k, n = (int(x) for x in args.part.split("/"))
    index = VaultIndex(args.vault, args.index_dir, config=settings.current())
    meaning = Meaning.open(args.model, index.dir, config=index.config)
    everything = index_notes(index)()
    stored = meaning.store.etags()
    mine = {p: e for i, (p, e) in enumerate(sorted(everything.items())) if i % n == k and stored.get(p) != e}
    print(f"part {k}/{n}: {len(mine):,} notes to embed of {len(everything):,} ({len(stored):,} stored), "
          f"run by {meaning.model.runtime}", flush=True)
    embedder = Embedder(meaning, lambda: {**{p: e for p, e in stored.items() if p in everything}, **mine},
                        note_text(args.vault, config=settings.current()))
    rows_before = meaning.store.rows()
    start, cpu = time.perf_counter(), time.process_time()
    done = embedder.catch_up()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    chunks = meaning.store.rows() - rows_before
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    if done:
        print(f"part {k}/{n}: embedded {done:,} notes ({chunks:,} chunks) in {wall:.1f} s wall, {cpu:.1f} s CPU: "
              f"{wall / done * 1000:.1f} ms wall, {cpu / done * 1000:.1f} ms CPU a note; peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
