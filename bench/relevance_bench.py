"""Relevance benchmark: recall at 1, 5 and 10 of memory_search's order on the relevance set.

    python bench/relevance_bench.py                  # tests/relevance/questions.yaml
    python bench/relevance_bench.py --misses 10      # also list questions the new order misses
    python bench/relevance_bench.py --known-items [--corpus DIR]   # one-word searches for known items
    python bench/relevance_bench.py --paraphrases --meaning-model DIR [--corpus DIR --corpus-index IX]
    python bench/relevance_bench.py --known-items --meaning-model DIR [--corpus DIR --corpus-index IX]
                                    [--known-vault DIR[=IX] ...]

The set (tests/relevance/) holds agent-style questions over sample_vault and a
conversation vault, each with the notes that answer it. A question counts as found at k
when one of its answers is among the first k results. Compared on the same index:

- new order: memory_search as it ships (docs/ranking.md: each word form's rarity x its
  field-weighted hits, +10 for all terms, the query's ceiling for all terms exactly, then
  newest, then path);
- one rarity for both forms: the score before issue 18 (a term's df counted the notes holding
  it or its stem, and the +10 was the only bonus), the order where a stem-only title hit
  could outrank an exact body hit;
- old order: the score before rarity and stems (weights x capped substring hits, +10 for
  all terms, then newest, then path), with its stop words;
- BM25F: Whoosh's own BM25F scorer (default B and K1, every field weighted alike) over the
  same title, permalink, tag and body fields, OR of the same query terms;
- two ablations of the new order: without stems, and without rarity.

With ``--known-items`` it asks each known item (bench/known_items.py) alone, by the new
order and by the one-rarity order, and counts how many of the notes holding it come in the
first 10 and how many words have one of their notes first: on the stored set of the
13,415-note corpus (``--corpus DIR``, the folder it was made from), on sample_vault, on a
generated vault (bench/gen_vault.py) and on the hub-like vault of bench/known_items.py.

With ``--meaning-model DIR`` (a sentence-transformers folder; docs/ranking.md, "By meaning") each
vault is embedded first (the time is printed) and one more order is compared: "fused (meaning)",
memory_search as a server with that model ranks. ``--paraphrases`` asks
tests/relevance/paraphrases.yaml instead: questions whose answer shares few or no words with
them, over sample_vault and (with ``--corpus``) the 13,415-note corpus; ``--corpus-index`` reuses
an index folder (and its vectors) of the corpus, so that it is embedded once.

Prints numbers; it is not a test, and no test pins them.
"""

from __future__ import annotations

import argparse
import json
import os
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

from vault_mem import settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_vault  # bench/, beside this file
import known_items

from vault_mem.meaning.embedder import Meaning
from vault_mem.reads.memory_search import memory_search
from vault_mem.runtime.meaning import index_notes, note_text
from vault_mem.search import ranking
from vault_mem.search.api import Snapshot, install_whoosh_patches, size_cache
from vault_mem.search.build import build, sync
from vault_mem.search.snapshot import parts_of, searcher_of
from vault_mem.search.store import VaultIndex
from vault_mem.search.substring import form_hit_counts
from vault_mem.served.context import Vault, View, view_of
from vault_mem.vault.names import words

settings.configure(settings.from_environment(os.environ))  # VAULT_MEM_QUERY_BITS and the rest, as the command line
install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)
size_cache(settings.current().cache_mb)  # VAULT_MEM_CACHE_MB, as the command line

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = REPO / "tests" / "relevance" / "questions.yaml"
PARAPHRASES = REPO / "tests" / "relevance" / "paraphrases.yaml"
VAULTS = {"sample_vault": REPO / "sample_vault", "chat_vault": REPO / "tests" / "relevance" / "chat_vault"}
KS = (1, 5, 10)
TEXT_FIELDS = ("title", "perm", "tagtext", "body")
# The stop words memory_search dropped before the ranking change.
OLD_STOP_WORDS = ranking.STOP_WORDS - {"ever", "many", "much", "whose", "yet"}

Ranker = Callable[[View, str], list[str]]  # (view, question) -> vault-relative paths, best first


def new_order(view: View, question: str) -> list[str]:
    answer = memory_search(view, {"agent": "bench", "query": question, "limit": max(KS)})
    paths = view.snapshot.column("path")
    by_permalink = {"memory://" + p.removesuffix(".md"): p for p in paths if p}
    return [by_permalink[n["permalink"]] for n in answer["notes"]]


def old_order(view: View, question: str) -> list[str]:
    terms = list(dict.fromkeys(words(question)))
    kept = [t for t in terms if len(t) >= settings.current().query_min_term_chars and t not in OLD_STOP_WORDS] or terms
    scores: dict[int, int] = {}
    matched: dict[int, int] = {}
    for term in kept:
        hit: set[int] = set()
        for field, weight in settings.current().rank_field_weights:
            for doc, n in form_hit_counts(parts_of(view.snapshot), field, term)[0].items():
                scores[doc] = scores.get(doc, 0) + weight * min(n, settings.current().rank_hit_cap)
                hit.add(doc)
        for doc in hit:
            matched[doc] = matched.get(doc, 0) + 1
    for doc, n in matched.items():
        if n == len(kept):
            scores[doc] += settings.current().rank_all_terms_bonus
    updated, paths = view.snapshot.column("updated"), view.snapshot.column("path")
    ranked = sorted(scores, key=lambda d: (-scores[d], -(updated[d] or 0), paths[d] or ""))
    return [paths[d] for d in ranked[:max(KS)]]


def one_rarity_scores(view: View, terms: list[str]) -> dict[int, float]:
    """The score before issue 18: one df per term (notes holding it or its stem), +10 for all."""
    notes = searcher_of(view.snapshot).doc_count()
    totals: dict[int, float] = {}
    matched: dict[int, int] = {}
    for term in terms:
        hits = ranking.weighted_hits(view.snapshot, term)
        either = {d: hits.exact.get(d, 0) + hits.stem.get(d, 0) for d in hits.exact.keys() | hits.stem.keys()}
        idf = ranking.rarity(notes, len(either))
        for doc, value in either.items():
            totals[doc] = totals.get(doc, 0.0) + idf * value
            matched[doc] = matched.get(doc, 0) + 1
    return {doc: round(total + (settings.current().rank_all_terms_bonus if matched[doc] == len(terms) else 0), 4)
            for doc, total in totals.items()}


def one_rarity_order(view: View, question: str) -> list[str]:
    """memory_search's order over the one-rarity scores (every match scored, then sorted)."""
    terms, _dropped = ranking.search_terms(question, view.config)
    scores = one_rarity_scores(view.snapshot, terms)
    updated, paths = view.snapshot.column("updated"), view.snapshot.column("path")
    ranked = sorted(scores, key=lambda d: (-scores[d], -(updated[d] or 0), paths[d] or ""))
    return [paths[d] for d in ranked[:max(KS)]]


def bm25f(view: View, question: str) -> list[str]:
    terms, _dropped = ranking.search_terms(question, view.config)
    query = Or([Term(field, term) for field in TEXT_FIELDS for term in terms])
    searcher = Searcher(searcher_of(view.snapshot).reader(), weighting=scoring.BM25F())
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
    "one rarity (before #18)": one_rarity_order,
    "old order": old_order,
    "BM25F (Whoosh)": bm25f,
    "new, without stems": without_stems,
    "new, without rarity": without_rarity,
}


def with_meaning(meaning: Meaning | None) -> dict[str, Ranker]:
    """The orders to compare: with a model, memory_search fused with it as well."""
    if meaning is None:
        return dict(RANKERS)

    def fused(view: View, question: str) -> list[str]:
        view.vault.meaning = meaning
        try:
            return new_order(view, question)
        finally:
            view.vault.meaning = None

    return {**RANKERS, "fused (meaning)": fused}


def embedded(model: Path | None, root: Path, index: VaultIndex, embed: bool = True) -> Meaning | None:
    """The model's vectors of ``root``, embedding what is not embedded yet (timed) unless not ``embed``."""
    if model is None:
        return None
    import time

    meaning = Meaning.open(model, index.dir, config=index.config)
    if not embed:
        print(f"  {len(meaning.store):,} notes have vectors already; nothing embedded now")
        return meaning
    start = time.perf_counter()
    done = meaning.embed_pending(index_notes(index), note_text(root, config=settings.current()))
    if done:
        took = time.perf_counter() - start
        print(f"  embedded {done:,} notes in {took:.1f} s ({took / done * 1000:.1f} ms a note), "
              f"{meaning.store.rows():,} chunks")
    return meaning


def first_rank(found: list[str], answers: list[str]) -> int | None:
    """1-based rank of the first answer in ``found``, or None."""
    return next((i + 1 for i, path in enumerate(found) if path in answers), None)




def plain(ranker: Ranker) -> Ranker:
    """``ranker`` with the vault's model set aside: the keyword order alone."""
    def keyword_only(view: View, question: str) -> list[str]:
        meaning, view.vault.meaning = view.vault.meaning, None
        try:
            return ranker(view, question)
        finally:
            view.vault.meaning = meaning
    return keyword_only


KNOWN_ITEM_ORDERS: dict[str, Ranker] = {"new order": plain(new_order), "one rarity (before #18)": one_rarity_order}


def known_item_counts(view: View, items: dict[str, list[str]], ranker: Ranker) -> tuple[int, int, list[str]]:
    """(notes found in the first 10, words with one of their notes first, words missing a note at 10)."""
    in_ten = first = 0
    missed: list[str] = []
    for word, holding in items.items():
        found = ranker(view, word)
        hits = sum(1 for path in holding if path in found[:10])
        in_ten += hits
        first += bool(found) and found[0] in holding
        if hits < len(holding):
            missed.append(word)
    return in_ten, first, missed


def check_known_items(corpus: Path | None, show: int, model: Path | None = None,
                      corpus_index: Path | None = None, generated: bool = True, embed_corpus: bool = True,
                      more: list[tuple[Path, Path | None]] | None = None) -> None:
    print("known items: one-word memory_search for each word of 6+ letters held by at most 3 notes")
    orders = dict(KNOWN_ITEM_ORDERS)
    if model is not None:
        orders["fused (meaning)"] = new_order  # memory_search as served: the vault holds the model
    columns = "  ".join(f"{n + ' top10/top1':>36}" for n in orders)
    print(f"  {'vault':<34}{'words':>7}{'notes':>7}  {columns}")
    with tempfile.TemporaryDirectory(prefix="vault-mem-known-") as tmp:
        vaults: list[tuple[str, Path, dict[str, list[str]] | None]] = []
        if corpus is not None:
            stored = json.loads(known_items.KNOWN_ITEMS.read_text(encoding="utf-8"))
            vaults.append((f"corpus ({stored['notes']} notes, stored set)", corpus, stored["items"]))
        vaults.append(("sample_vault", REPO / "sample_vault", None))
        if generated:
            made = Path(tmp) / "generated"
            gen_vault.generate(made, 2000, seed=1)
            vaults.append(("generated (gen_vault, 2000 notes)", made, None))
            seeded = Path(tmp) / "seeded"
            gen_vault.generate(seeded, 2000, seed=1)
            known_items.seed_rare_words(seeded, gen_vault.WORDS)
            vaults.append(("generated + rare words (1 in 20)", seeded, None))
        hub = Path(tmp) / "hub"
        known_items.hub_vault(hub)
        vaults.append(("hub-like (stem-sharing titles)", hub, None))
        given = {root: ix for root, ix in more or []}
        vaults += [(f"{root.name} ({sum(1 for _ in root.rglob('*.md')):,} notes)", root, None) for root in given]
        for i, (name, root, items) in enumerate(vaults):
            index = VaultIndex(root, corpus_index if root == corpus and corpus_index else given.get(root)
                               or Path(tmp) / f"index{i}", config=settings.current())
            sync(index, procs=1)
            if items is None:
                items = known_items.known_items(root, index)
            pairs = sum(len(v) for v in items.values())
            meaning = embedded(model, root, index, embed=embed_corpus or root != corpus)
            with index.searching() as searcher:
                vault = Vault(root, index)
                vault.meaning = meaning
                view = View(vault, Snapshot(searcher, config=vault.index.config))
                cells, misses = [], []
                for order_name, ranker in orders.items():
                    in_ten, first, missed = known_item_counts(view, items, ranker)
                    cells.append(f"{in_ten:>5}/{pairs} ({in_ten / max(pairs, 1):6.1%}) {first:>5}/{len(items)}")
                    misses.append((order_name, missed))
            index.close()
            print(f"  {name:<34}{len(items):>7}{pairs:>7}  " + "  ".join(f"{c:>36}" for c in cells))
            for order_name, missed in misses:
                if missed and show:
                    print(f"    {order_name} misses {len(missed)}: {', '.join(missed[:show])}")


def main() -> None:
    parser = argparse.ArgumentParser(description="vault-mem relevance benchmark")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--misses", type=int, default=0, help="list this many questions the new order misses at 10")
    parser.add_argument("--known-items", action="store_true", help="count known items found by one-word searches")
    parser.add_argument("--corpus", type=Path, help="the corpus tests/relevance/known_items.json was made from")
    parser.add_argument("--corpus-index", type=Path, help="an index folder of --corpus to reuse (with its vectors)")
    parser.add_argument("--meaning-model", type=Path, help="also compare the order fused with this sentence model")
    parser.add_argument("--paraphrases", action="store_true", help=f"ask {PARAPHRASES.relative_to(REPO)}")
    parser.add_argument("--no-embed-corpus", action="store_true",
                        help="use the corpus vectors already in --corpus-index (a part of it), embedding none")
    parser.add_argument("--known-vault", type=Path, action="append", default=[], metavar="DIR[=INDEX]",
                        help="known items: also this vault (e.g. one of bench/gen_hub.py), with an index folder to "
                        "reuse (and its vectors) after '='")
    parser.add_argument("--no-generated", action="store_true",
                        help="known items: leave out the two generated 2,000-note vaults (each embedded with a model)")
    args = parser.parse_args()
    if args.known_items:
        check_known_items(args.corpus, args.misses or 12, args.meaning_model, args.corpus_index,
                          generated=not args.no_generated, embed_corpus=not args.no_embed_corpus,
                          more=[known_vault(str(v)) for v in args.known_vault])
        return
    questions = yaml.safe_load((PARAPHRASES if args.paraphrases else args.questions).read_text(encoding="utf-8"))
    vaults = dict(VAULTS) | ({"corpus": args.corpus} if args.corpus else {})
    questions = [q for q in questions if q["vault"] in vaults]
    rankers = with_meaning(None)
    misses: list[tuple[str, str, list[str]]] = []
    ranks: dict[str, dict[str, list[int | None]]] = {}
    with tempfile.TemporaryDirectory(prefix="vault-mem-relbench-") as tmp:
        for vault_name, source in vaults.items():
            asked = [q for q in questions if q["vault"] == vault_name]
            if not asked:
                continue
            if vault_name == "corpus":  # read in place: 13k notes are not copied
                root, index = source, VaultIndex(source, args.corpus_index or Path(tmp) / "corpus-index",
                    config=settings.current())
                report = sync(index, procs=1)
            else:
                root = Path(tmp) / vault_name
                shutil.copytree(source, root)
                index = VaultIndex(root, Path(tmp) / f"{vault_name}-index", config=settings.current())
                report = build(index, procs=1)
            print(f"{vault_name}: {report.total} notes, {len(asked)} questions")
            meaning = embedded(args.meaning_model, root, index)
            rankers = with_meaning(meaning)
            vault = Vault(root, index)
            with view_of(vault) as view:
                for name, ranker in rankers.items():
                    got = [first_rank(ranker(view, q["question"]), q["answers"]) for q in asked]
                    ranks.setdefault(name, {})[vault_name] = got
                    if name == "new order":
                        misses += [(vault_name, q["question"], ranker(view, q["question"])[:3])
                                   for q, r in zip(asked, got, strict=True) if r is None]
            index.close()
    print(f"\nrecall at k over {len(questions)} questions (share of questions with an answer in the first k)")
    header = f"  {'':<24}" + "".join(f"{'all @' + str(k):>9}" for k in KS) + "   MRR@10  "
    header += "per vault @1/@5/@10"
    print(header)
    for name, per_vault in ranks.items():
        every = [r for got in per_vault.values() for r in got]
        cells = "".join(f"{recall(every, k):9.3f}" for k in KS)
        mrr = sum(1 / r for r in every if r) / len(every)
        split = "  ".join(f"{v} {'/'.join(f'{recall(got, k):.2f}' for k in KS)}" for v, got in per_vault.items())
        print(f"  {name:<24}{cells}   {mrr:6.3f}  {split}")
    for vault_name, question, top in misses[:args.misses]:
        print(f"  missed ({vault_name}): {question!r}; top 3: {top}")


def known_vault(spec: str) -> tuple[Path, Path | None]:
    root, _, index = spec.partition("=")
    return Path(root), Path(index) if index else None


def recall(found_at: list[int | None], k: int) -> float:
    return sum(1 for r in found_at if r is not None and r <= k) / len(found_at) if found_at else 0.0


if __name__ == "__main__":
    main()
