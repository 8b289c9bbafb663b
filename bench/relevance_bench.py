"""Relevance benchmark: recall at 1, 5 and 10 of memory_search's order on the relevance set.

    python bench/relevance_bench.py                  # tests/relevance/questions.yaml
    python bench/relevance_bench.py --misses 10      # also list questions the new order misses

The set (tests/relevance/) holds agent-style questions over sample_vault and a
conversation vault, each with the notes that answer it. A question counts as found at k
when one of its answers is among the first k results. Compared on the same index:

- new order: memory_search as it ships (docs/ranking.md: rarity x field-weighted hits, stems, +10
  for all terms, then newest, then path);
- old order: the score before rarity and stems (weights x capped substring hits, +10 for
  all terms, then newest, then path), with its stop words;
- BM25F: Whoosh's own BM25F scorer (default B and K1, every field weighted alike) over the
  same title, permalink, tag and body fields, OR of the same query terms;
- two ablations of the new order: without stems, and without rarity.

Prints numbers; it is not a test, and no test pins them.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from whoosh import scoring
from whoosh.query import Or, Term
from whoosh.searching import Searcher

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vault_mem.index.build import build
from vault_mem.index.store import VaultIndex
from vault_mem.index.substring import hit_counts, words
from vault_mem.reads import ranking
from vault_mem.reads.memory_search import memory_search
from vault_mem.served.context import Vault, View

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = REPO / "tests" / "relevance" / "questions.yaml"
VAULTS = {"sample_vault": REPO / "sample_vault", "chat_vault": REPO / "tests" / "relevance" / "chat_vault"}
KS = (1, 5, 10)
TEXT_FIELDS = ("title", "perm", "tagtext", "body")
# The stop words memory_search dropped before the ranking change.
OLD_STOP_WORDS = ranking.STOP_WORDS - {"ever", "many", "much", "whose", "yet"}

Ranker = Callable[[View, str], list[str]]  # (view, question) -> vault-relative paths, best first


def new_order(view: View, question: str) -> list[str]:
    answer = memory_search(view, {"agent": "bench", "query": question, "limit": max(KS)})
    paths = view.column("path")
    by_permalink = {"memory://" + p.removesuffix(".md"): p for p in paths if p}
    return [by_permalink[n["permalink"]] for n in answer["notes"]]


def old_order(view: View, question: str) -> list[str]:
    terms = list(dict.fromkeys(words(question)))
    kept = [t for t in terms if len(t) >= ranking.MIN_TERM_CHARS and t not in OLD_STOP_WORDS] or terms
    scores: dict[int, int] = {}
    matched: dict[int, int] = {}
    for term in kept:
        hit: set[int] = set()
        for field, weight in ranking.FIELD_WEIGHTS:
            for doc, n in hit_counts(view.parts, field, term, cap=ranking.HIT_CAP).items():
                scores[doc] = scores.get(doc, 0) + weight * n
                hit.add(doc)
        for doc in hit:
            matched[doc] = matched.get(doc, 0) + 1
    for doc, n in matched.items():
        if n == len(kept):
            scores[doc] += ranking.ALL_TERMS_BONUS
    updated, paths = view.column("updated"), view.column("path")
    ranked = sorted(scores, key=lambda d: (-scores[d], -(updated[d] or 0), paths[d] or ""))
    return [paths[d] for d in ranked[:max(KS)]]


def bm25f(view: View, question: str) -> list[str]:
    terms, _dropped = ranking.search_terms(question)
    query = Or([Term(field, term) for field in TEXT_FIELDS for term in terms])
    searcher = Searcher(view.searcher.reader(), weighting=scoring.BM25F())
    return [hit["path"] for hit in searcher.search(query, limit=max(KS))]


@contextmanager
def patched(name: str, value: Any) -> Iterator[None]:
    saved = getattr(ranking, name)
    setattr(ranking, name, value)
    try:
        yield
    finally:
        setattr(ranking, name, saved)


def without_stems(view: View, question: str) -> list[str]:
    with patched("stem_of", lambda term: None):
        return new_order(view, question)


def without_rarity(view: View, question: str) -> list[str]:
    with patched("rarity", lambda notes, df: 1.0):
        return new_order(view, question)


RANKERS: dict[str, Ranker] = {
    "new order": new_order,
    "old order": old_order,
    "BM25F (Whoosh)": bm25f,
    "new, without stems": without_stems,
    "new, without rarity": without_rarity,
}


def first_rank(found: list[str], answers: list[str]) -> int | None:
    """1-based rank of the first answer in ``found``, or None."""
    return next((i + 1 for i, path in enumerate(found) if path in answers), None)


def main() -> None:
    parser = argparse.ArgumentParser(description="vault-mem relevance benchmark")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--misses", type=int, default=0, help="list this many questions the new order misses at 10")
    args = parser.parse_args()
    questions = yaml.safe_load(args.questions.read_text(encoding="utf-8"))
    ranks: dict[str, dict[str, list[int | None]]] = {name: {} for name in RANKERS}
    misses: list[tuple[str, str, list[str]]] = []
    with tempfile.TemporaryDirectory(prefix="vault-mem-relbench-") as tmp:
        for vault_name, source in VAULTS.items():
            asked = [q for q in questions if q["vault"] == vault_name]
            root = Path(tmp) / vault_name
            shutil.copytree(source, root)
            index = VaultIndex(root, Path(tmp) / f"{vault_name}-index")
            report = build(index, procs=1)
            print(f"{vault_name}: {report.total} notes, {len(asked)} questions")
            vault = Vault(root, index)
            with index.searching() as searcher:
                view = View(vault, searcher)
                for name, ranker in RANKERS.items():
                    got = [first_rank(ranker(view, q["question"]), q["answers"]) for q in asked]
                    ranks[name][vault_name] = got
                    if name == "new order":
                        misses += [(vault_name, q["question"], ranker(view, q["question"])[:3])
                                   for q, r in zip(asked, got, strict=True) if r is None]
            index.close()
    print(f"\nrecall at k over {len(questions)} questions (share of questions with an answer in the first k)")
    header = f"  {'':<24}" + "".join(f"{'all @' + str(k):>9}" for k in KS) + "   MRR@10  "
    header += "  ".join(f"{v} @1/@5/@10" for v in VAULTS)
    print(header)
    for name, per_vault in ranks.items():
        every = [r for got in per_vault.values() for r in got]
        cells = "".join(f"{recall(every, k):9.3f}" for k in KS)
        mrr = sum(1 / r for r in every if r) / len(every)
        split = "  ".join(f"{' ' * (len(v) - 4)}{'/'.join(f'{recall(got, k):.2f}' for k in KS)}"
                          for v, got in per_vault.items())
        print(f"  {name:<24}{cells}   {mrr:6.3f}  {split}")
    for vault_name, question, top in misses[:args.misses]:
        print(f"  missed ({vault_name}): {question!r}; top 3: {top}")


def recall(found_at: list[int | None], k: int) -> float:
    return sum(1 for r in found_at if r is not None and r <= k) / len(found_at) if found_at else 0.0


if __name__ == "__main__":
    main()
