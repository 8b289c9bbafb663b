"""How often ``similar`` and ``tidy`` propose notes that say the same thing (docs/ranking.md,
"Notes that say the same"; the numbers in docs/perf/duplicates.md).

    python bench/duplicates_bench.py [--half tune|test|both] [--model DIR] [--thresholds 0.2,0.25,...]

The labelled set is tests/duplicates/ (tests/duplicate_set.py): planted paraphrases (true
duplicates) and notes made from one template with other names and facts, link lists and
embeds (none of them duplicates). Each half is written into a vault of its own and indexed;
then, for each threshold:

- ``similar``: each note's ``resembling`` list (search/similar.py, as ``memory_write`` asks it,
  the ``similar_shown`` setting's length), one pair per note listed;
- ``tidy``: the clusters of reads/tidy.py, one pair per note to keep and note it supersedes;

and prints precision (the pairs proposed that are duplicates) and recall (the duplicates
proposed), each as the fraction and the counts. ``--words-only`` also measures the rule of
0.5.2 (the wording alone, no facts, no link targets), for comparison.

With ``--model`` (a sentence-transformers folder, e.g. all-MiniLM-L6-v2), each proposed pair's
cosine similarity (the two notes' title and head embedded whole) is also computed, and the
precision and recall are printed for the pairs whose cosine is at least each of ``--cosines``:
whether a meaning model, on top of the facts, would gain.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import duplicate_set  # tests/duplicate_set.py

from vault_mem import settings
from vault_mem.search import facts
from vault_mem.search.api import VaultIndex, install_whoosh_patches, sync
from vault_mem.served.context import Vault, view_of

install_whoosh_patches(settings.current())


@contextlib.contextmanager
def words_only() -> Iterator[None]:
    """The 0.5.2 rule: the resemblance of the words alone (no facts, no link targets)."""
    was_alike, was_said = facts.alike, facts.said

    def alike(a: facts.Said, b: facts.Said, wording: Any) -> float:
        return float(wording(a, b))

    def said(title: str, body: str, link_share: float) -> facts.Said:
        found = was_said(title, body, link_share)
        return dataclasses.replace(found, links=None)

    facts.alike, facts.said = alike, said  # type: ignore[assignment]
    import vault_mem.search.similar as similar
    similar.alike, similar.said = alike, said  # type: ignore[assignment]
    try:
        yield
    finally:
        facts.alike, facts.said = was_alike, was_said  # type: ignore[assignment]
        similar.alike, similar.said = was_alike, was_said  # type: ignore[assignment]


def proposals(vault: Vault, threshold: float) -> tuple[set[frozenset[str]], set[frozenset[str]]]:
    """The pairs ``similar`` lists and the pairs ``tidy`` proposes, at ``threshold``."""
    from vault_mem.reads.tidy import clusters
    from vault_mem.search.api import resembling

    listed: set[frozenset[str]] = set()
    vault.index.config = dataclasses.replace(vault.index.config, similar_threshold=threshold)
    with view_of(vault) as view:
        for doc in view.snapshot.all_docs():
            record = view.snapshot.record(doc)
            for near in resembling(view.snapshot, str(record.get("title") or ""), str(record.get("head") or ""),
                                   exclude={doc}):
                listed.add(frozenset((record["path"], view.snapshot.record(near.docnum)["path"])))
        tidied = {frozenset((c.keep.path, m.path)) for c in clusters(view.fresh) for m in c.others}
    return listed, tidied


def score(pairs: set[frozenset[str]], truth: set[frozenset[str]]) -> str:
    right = len(pairs & truth)
    precision = right / len(pairs) if pairs else 1.0
    return (f"precision {precision:.2f} ({right}/{len(pairs)}), "
            f"recall {right / len(truth):.2f} ({right}/{len(truth)})")


def cosines(model_dir: Path, notes: list[duplicate_set.SetNote],
            pairs: set[frozenset[str]]) -> dict[frozenset[str], float]:
    from vault_mem.meaning.model import load_model

    model = load_model(model_dir, config=settings.current())
    by_path = {n.path: n for n in notes}
    needed = sorted({p for pair in pairs for p in pair})
    vectors = model.encode([f"{by_path[p].title}\n{by_path[p].body}" for p in needed])
    row = {p: vectors[i] for i, p in enumerate(needed)}
    out = {}
    for pair in pairs:
        a, b = sorted(pair)
        out[pair] = float(row[a] @ row[b])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("tune", "test", "both"), default="both")
    parser.add_argument("--thresholds", default="0.2,0.25,0.3,0.35,0.4,0.45,0.5")
    parser.add_argument("--words-only", action="store_true", help="also measure the words-only rule of 0.5.2")
    parser.add_argument("--model", type=Path, help="a sentence model folder: also filter by cosine")
    parser.add_argument("--cosines", default="0.5,0.6,0.7,0.8")
    parser.add_argument("--show", action="store_true", help="also print each wrong pair tidy proposes")
    args = parser.parse_args()
    thresholds = [float(t) for t in args.thresholds.split(",")]
    halves = duplicate_set.HALVES if args.half == "both" else (args.half,)
    for half in halves:
        notes = duplicate_set.notes(half)
        truth = duplicate_set.true_pairs(notes)
        work = Path(tempfile.mkdtemp(prefix="vault-mem-duplicates-"))
        try:
            root = duplicate_set.write(work / "vault", notes)
            index = VaultIndex(root, work / "index", config=settings.current())
            sync(index, procs=1)
            vault = Vault(root, index)
            print(f"{half} half: {len(notes)} notes, {len(truth)} duplicate pairs")
            rules = [("facts", contextlib.nullcontext)] + ([("words only", words_only)] if args.words_only else [])
            for name, rule in rules:
                for threshold in thresholds:
                    with rule():
                        listed, tidied = proposals(vault, threshold)
                    print(f"  {name:10} threshold {threshold:.2f}  similar: {score(listed, truth)}; "
                          f"tidy: {score(tidied, truth)}")
                    for pair in sorted(sorted(p) for p in tidied - truth) if args.show else []:
                        print(f"    not a duplicate: {pair[0]} | {pair[1]}")
                    if args.model and name == "facts":
                        near = cosines(args.model, notes, listed | tidied)
                        for c in (float(x) for x in args.cosines.split(",")):
                            print(f"    cosine >= {c:.2f}  similar: "
                                  f"{score({p for p in listed if near[p] >= c}, truth)}; "
                                  f"tidy: {score({p for p in tidied if near[p] >= c}, truth)}")
            index.close()
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
