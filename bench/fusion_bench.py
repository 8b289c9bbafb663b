"""The meaning stage's fusion on held-out questions: recall at 1, 5 and 10 and MRR, keyword order
and fused order side by side in one run, per set and per half (docs/ranking.md, "By meaning";
docs/perf/fusion.md).

    python bench/fusion_bench.py --meaning-model DIR [--corpus DIR [--corpus-index IX]]
                                 [--locomo locomo10.json [--locomo-index IX]] [--sweep] [--misses N]

The sets: tests/relevance/paraphrases.yaml (questions in other words than their notes, written by
hand, over sample_vault, the chat_vault beside it and, with ``--corpus``, a 13,415-note personal
corpus) and, with ``--locomo``, the LoCoMo conversations (bench/locomo_vault.py builds the vault,
one note per turn, and its questions, verbatim). Every question belongs to a fixed half, written
in the set (``half: tune`` or ``held-out``; LoCoMo's by conversation): parameters are chosen on
the tune half only, and the held-out half is the figure to report.

Each vault is indexed and embedded (index folders given are reused with their vectors), then each
question is asked by ``memory_search`` without the model (keyword) and with it (fused), as a
server ranks. ``--sweep`` also gathers each question's fusion candidates once and ranks them
offline under a grid of parameters (weights, ``exact_first``, depth), printing the best on the
tune half and, for those, the held-out half; and the reciprocal-rank fusion of 0.5.2 (k=60, 20
deep) for comparison. Prints numbers; it is not a test, and no test pins them.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo_vault  # bench/, beside this file

from vault_mem import settings
from vault_mem.meaning.embedder import Meaning
from vault_mem.reads.memory_search import memory_search
from vault_mem.runtime.meaning import index_notes, note_text
from vault_mem.search import fusion
from vault_mem.search.api import install_whoosh_patches, size_cache
from vault_mem.search.build import sync
from vault_mem.search.ranking import search_terms
from vault_mem.search.store import VaultIndex
from vault_mem.search.topk import Ranked
from vault_mem.served.context import Vault, View, view_of

settings.configure(settings.from_environment(os.environ))
install_whoosh_patches(settings.current())
size_cache(settings.current().cache_mb)

REPO = Path(__file__).resolve().parent.parent
PARAPHRASES = REPO / "tests" / "relevance" / "paraphrases.yaml"
VAULTS = {"sample_vault": REPO / "sample_vault", "chat_vault": REPO / "tests" / "relevance" / "chat_vault"}
HALVES = ("tune", "held-out")
KS = (1, 5, 10)
DEEPEST = 50


@dataclass
class Asked:
    """One question and what each order found (vault-relative paths, best first)."""

    question: str
    answers: list[str]
    half: str
    found: dict[str, list[str]] = field(default_factory=dict)
    candidates: fusion.Candidates | None = None
    paths: list[str] = field(default_factory=list)  # the view's path column, for the candidates


def first_rank(found: list[str], answers: list[str]) -> int | None:
    return next((i + 1 for i, p in enumerate(found[:max(KS)]) if p in answers), None)


def metrics(ranks: list[int | None]) -> tuple[float, ...]:
    n = max(len(ranks), 1)
    recall = tuple(100 * sum(1 for r in ranks if r is not None and r <= k) / n for k in KS)
    return (*recall, sum(1 / r for r in ranks if r) / n)


def order_of(view: View, question: str, limit: int = max(KS)) -> list[str]:
    answer = memory_search(view, {"agent": "bench", "query": question, "limit": limit})
    return [n["permalink"].removeprefix("memory://") + ".md" for n in answer["notes"]]


def open_vault(name: str, source: Path, index_dir: Path, model: Path, copy_to: Path | None) -> tuple[Vault, VaultIndex]:
    root = source
    if copy_to is not None:  # a small vault is copied, never written in place
        root = copy_to / name
        shutil.copytree(source, root)
    index = VaultIndex(root, index_dir, config=settings.current())
    report = sync(index, procs=1)
    meaning = Meaning.open(model, index.dir, config=index.config)
    start = time.perf_counter()
    done = meaning.embed_pending(index_notes(index), note_text(root, config=settings.current()))
    print(f"{name}: {report.total:,} notes; embedded {done:,} now ({time.perf_counter() - start:.0f} s), "
          f"{len(meaning.store):,} with vectors", flush=True)
    vault = Vault(root, index)
    vault.meaning = meaning
    return vault, index


def ask(vault: Vault, index: VaultIndex, asked: list[Asked], sweep: bool) -> None:
    meaning = vault.meaning
    assert meaning is not None
    with view_of(vault) as view:
        paths = list(view.snapshot.column("path"))
        for q in asked:
            q.found["fused"] = order_of(view, q.question)
            vault.meaning = None
            try:
                q.found["keyword"] = order_of(view, q.question)
            finally:
                vault.meaning = meaning
            if sweep:
                terms, _ = search_terms(q.question, view.config)
                q.candidates = fusion.candidates(view.snapshot, meaning, q.question, terms, DEEPEST)
                q.paths = paths


def at_depth(found: fusion.Candidates, depth: int) -> fusion.Candidates:
    page = found.keyword.page[:depth]
    nearest = found.nearest[:depth]
    keep = set(page) | set(nearest)
    keyword = Ranked(page, {d: s for d, s in found.keyword.scores.items() if d in keep}, found.keyword.truncated,
                     found.keyword.ceiling)
    return replace(found, keyword=keyword, nearest=nearest, words={d: w for d, w in found.words.items() if d in keep},
                   exact=frozenset(d for d in found.exact if d in keep),
                   similarity={d: s for d, s in found.similarity.items() if d in keep},
                   scores={d: s for d, s in found.scores.items() if d in keep})


def rrf(found: fusion.Candidates, k: int = 60) -> list[int]:
    """0.5.2's order: the all-exact tier first, the rest by reciprocal-rank fusion."""
    tier = [d for d in found.keyword.page if found.keyword.scores[d] > found.keyword.ceiling]
    score: dict[int, float] = {}
    for ranked in (found.keyword.page, found.nearest):
        for rank, d in enumerate(ranked, 1):
            if d not in tier:
                score[d] = score.get(d, 0.0) + 1 / (k + rank)
    place = {d: i for i, d in enumerate(found.keyword.page)}
    return tier + sorted(score, key=lambda d: (-score[d], place.get(d, len(place)), -found.similarity.get(d, 0)))


def variant(found: fusion.Candidates, weight: float, how: str, exact_first: int = 3) -> list[int]:
    """Other normalisations than the shipped one, to compare: ``raw`` adds ``weight`` x the cosine
    itself to the z-scored words; ``linear`` z-scores the words themselves, not log(1 + words)."""
    docs = found.docs()
    known = [found.similarity[d] for d in docs if d in found.similarity]
    unknown = sum(known) / len(known) if known else 0.0
    sims = [found.similarity.get(d, unknown) for d in docs]
    by_words = fusion.zscores([found.words.get(d, 0.0) for d in docs])
    by_meaning = sims if how == "raw" else fusion.zscores(sims)
    fused = {d: w + weight * m for d, w, m in zip(docs, by_words, by_meaning, strict=True)}
    place = {d: i for i, d in enumerate(found.keyword.page)}
    tier = [d for d in found.keyword.page if d in found.exact] if len(found.exact) <= exact_first else []
    rest = sorted((d for d in docs if d not in tier), key=lambda d: (-fused[d], place.get(d, len(place))))
    return tier + rest


def offline(q: Asked, order: list[int]) -> int | None:
    return first_rank([q.paths[d] for d in order], q.answers)


def table(sets: dict[str, list[Asked]], orders: list[str]) -> None:
    print(f"\n{'set':<14}{'half':<10}{'n':>5}  " + "  ".join(f"{o + ' R@1/5/10 MRR':>30}" for o in orders))
    for name, asked in sets.items():
        for half in (*HALVES, "all"):
            part = [q for q in asked if half in ("all", q.half)]
            if not part:
                continue
            cells = []
            for o in orders:
                r1, r5, r10, mrr = metrics([first_rank(q.found[o], q.answers) for q in part])
                cells.append(f"{r1:5.1f} {r5:5.1f} {r10:5.1f} {mrr:6.3f}")
            print(f"{name:<14}{half:<10}{len(part):>5}  " + "  ".join(f"{c:>30}" for c in cells))


Per = dict[str, dict[str, tuple[float, ...]]]  # set -> half -> (R@1, R@5, R@10, MRR)


def per_half(sets: dict[str, list[Asked]], rank: Callable[[fusion.Candidates], list[int]]) -> Per:
    """Each set's and half's metrics of the order ``rank`` gives the questions' candidates."""
    per: Per = {}
    for name, asked in sets.items():
        for half in HALVES:
            part = [q for q in asked if q.half == half and q.candidates is not None]
            if part:
                per.setdefault(name, {})[half] = metrics([offline(q, rank(q.candidates)) for q in part
                                                          if q.candidates is not None])
    return per


def tuned(per: Per) -> tuple[float, float]:
    """The tune halves' R@10 and MRR, each the mean over the sets (each set counting once)."""
    tune = [v["tune"] for v in per.values() if "tune" in v]
    return sum(t[2] for t in tune) / len(tune), sum(t[3] for t in tune) / len(tune)


def cells(per: Per) -> str:
    return "  ".join(f"{n} {v['tune'][2]:.1f}|{v.get('held-out', (0, 0, 0, 0))[2]:.1f}" for n, v in per.items())


def shipped(found: fusion.Candidates, weights: fusion.Weights, depth: int) -> list[int]:
    return fusion.combine(at_depth(found, depth), weights)


def varied(found: fusion.Candidates, weight: float, how: str, depth: int) -> list[int]:
    return variant(at_depth(found, depth), weight, how)


def sweep(sets: dict[str, list[Asked]]) -> None:
    """Rank every question's candidates under each parameter set; the best by the tune halves'
    R@10 (the mean over sets, each set counting once), MRR breaking ties."""
    # exact_first of 3 or more: a known item (a word held by at most 3 notes) keeps its notes first
    grid = itertools.product((0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0), (3, 5, 8), (10, 20, 30, 50))
    results: list[tuple[tuple[float, float], tuple[float, int, int], Per]] = []
    for weight, exact_first, depth in grid:
        weights = fusion.Weights(1.0, weight, exact_first)
        per = per_half(sets, partial(shipped, weights=weights, depth=depth))
        results.append((tuned(per), (weight, exact_first, depth), per))
    results.sort(key=lambda r: (-r[0][0], -r[0][1]))
    print("\nsweep (words weight 1): the best 20 by the tune halves' mean R@10; each set's R@10 tune|held-out")
    for (r10, mrr), (weight, exact_first, depth), per in results[:20]:
        print(f"  meaning {weight:<5} exact_first {exact_first} depth {depth:<3} tune R@10 {r10:.2f} MRR {mrr:.3f}  "
              f"{cells(per)}")
    print(f"  RRF k=60, 20 deep (0.5.2){'':<36}{cells(per_half(sets, lambda c: rrf(at_depth(c, 20))))}")
    for how, tried in (("raw", (4.0, 8.0, 12.0, 16.0)), ("linear", (1.0, 1.5, 2.0))):
        for weight in tried:
            for depth in (20, 30):
                per = per_half(sets, partial(varied, weight=weight, how=how, depth=depth))
                r10, mrr = tuned(per)
                print(f"  variant {how} weight {weight:<5} depth {depth:<3} tune R@10 {r10:.2f} MRR {mrr:.3f}  "
                      f"{cells(per)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meaning-model", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, help="the 13,415-note corpus (read in place: give a copy)")
    parser.add_argument("--corpus-index", type=Path, help="an index folder of --corpus to reuse, with its vectors")
    parser.add_argument("--locomo", type=Path, help="LoCoMo's data/locomo10.json (bench/locomo_vault.py)")
    parser.add_argument("--locomo-vault", type=Path, help="where to build (or find, already built) the LoCoMo vault")
    parser.add_argument("--locomo-index", type=Path, help="an index folder of the LoCoMo vault to reuse")
    parser.add_argument("--sweep", action="store_true", help="also rank offline under a grid of parameters")
    parser.add_argument("--misses", type=int, default=0, help="list this many held-out questions fused misses at 10")
    parser.add_argument("--only", action="append", default=[], help="only these sets (sample_vault, chat_vault, "
                        "corpus, locomo)")
    args = parser.parse_args()
    entries = yaml.safe_load(PARAPHRASES.read_text(encoding="utf-8"))
    sets: dict[str, list[Asked]] = {}
    with tempfile.TemporaryDirectory(prefix="vault-mem-fusion-") as tmp:
        places: list[tuple[str, Path, Path, Path | None, list[Asked]]] = []
        for name, source in VAULTS.items():
            places.append((name, source, Path(tmp) / f"{name}-index", Path(tmp),
                           [Asked(e["question"], e["answers"], e["half"]) for e in entries if e["vault"] == name]))
        if args.corpus:
            places.append(("corpus", args.corpus, args.corpus_index or Path(tmp) / "corpus-index", None,
                           [Asked(e["question"], e["answers"], e["half"]) for e in entries if e["vault"] == "corpus"]))
        if args.locomo:
            root = args.locomo_vault or Path(tmp) / "locomo"
            if root.is_dir() and any(root.glob("*.md")):
                questions = locomo_vault.questions_of(args.locomo)
            else:
                questions = locomo_vault.build(args.locomo, root)
            places.append(("locomo", root, args.locomo_index or Path(tmp) / "locomo-index", None,
                           [Asked(q["question"], q["answers"], q["half"]) for q in questions]))
        for name, source, index_dir, copy_to, asked in places:
            if not asked or (args.only and name not in args.only):
                continue
            vault, index = open_vault(name, source, index_dir, args.meaning_model, copy_to)
            start = time.perf_counter()
            ask(vault, index, asked, args.sweep)
            print(f"  {len(asked)} questions asked in {time.perf_counter() - start:.0f} s", flush=True)
            assert vault.meaning is not None
            vault.meaning.stop()
            index.close()
            sets[name] = asked
    fused = settings.current()
    print(f"\nfused with meaning weight {fused.meaning_weight}, words weight {fused.meaning_words_weight}, "
          f"exact_first {fused.meaning_exact_first}, depth {fused.meaning_depth}")
    table(sets, ["keyword", "fused"])
    every = [q for asked in sets.values() for q in asked]
    for half in HALVES:
        part = [q for q in every if q.half == half]
        if part:
            k, f = metrics([first_rank(q.found["keyword"], q.answers) for q in part]), \
                metrics([first_rank(q.found["fused"], q.answers) for q in part])
            print(f"every set, {half}: {len(part)} questions, R@10 keyword {k[2]:.1f}, fused {f[2]:.1f}")
    if args.sweep:
        sweep(sets)
    for name, asked in sets.items():
        missed = [q for q in asked if q.half == "held-out" and first_rank(q.found["fused"], q.answers) is None]
        for q in missed[:args.misses]:
            print(f"  missed ({name}): {q.question!r}; top 3 {q.found['fused'][:3]}")


if __name__ == "__main__":
    main()
