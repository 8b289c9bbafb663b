"""The "agent diary" benchmark: how well ``memory_write``'s ``similar`` and ``vault-mem tidy``'s
clusters find notes that say the same thing again, and what ``similar`` costs a write.

    python bench/diary_bench.py                       # 700 facts written session by session
    python bench/diary_bench.py --facts 1500 --seed 2
    python bench/diary_bench.py --latency-vault DIR   # write latency on an indexed vault (it is written to)
    python bench/diary_bench.py --tidy-vault DIR      # tidy's clusters on an indexed vault (nothing written)

The diary: agents write one note per fact they learnt, session after session, each wrapped in
the same session boilerplate (a header naming the date, agent and project, a footer with the
next steps). Facts are sentences over a Zipf-distributed vocabulary. Some facts are written
once; some are restated in later sessions with paraphrase-level edits (sentences reordered,
every date and number changed, words added and dropped, another title); some become
supersession chains (``memory_supersede``, newer numbers each time), now and then restated
once more by an agent that did not know. The ground truth is which notes state the same fact.

Every note is written through the server's own call path (``mcp_server.app.call``), so each
write's answer carries ``similar`` as an agent would get it. Measured:

- ``similar``: precision of the listed notes (the same fact), recall over the pairs it could
  list (each note and the earlier statements of its fact present, at most the list's length),
  and the share of restatements for which it listed at least one earlier statement;
- tidy: the clusters (``reads/tidy.py``) over the finished diary, as pairs of notes in one
  cluster, against the pairs of current notes (nothing supersedes them) that state one fact.

``--latency-vault`` writes ``--runs`` diary notes into an already indexed vault, with and
without ``similar`` in turn, and prints p50/p99 of each. ``--tidy-vault`` prints how many
clusters tidy proposes on a vault and a sample of them, to judge by reading.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vault_mem import settings
from vault_mem.mcp_server.app import call
from vault_mem.mcp_server.tools import ToolSpec, tools_for
from vault_mem.reads.tidy import Cluster, clusters
from vault_mem.search.api import Snapshot, install_whoosh_patches
from vault_mem.search.build import build
from vault_mem.search.store import VaultIndex
from vault_mem.served.context import Vault, View
from vault_mem.writes import tools as writes

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)

AGENTS = ("claude-code", "cursor", "codex", "aider")
PROJECTS = ("billing", "ingest", "search", "mobile", "infra")
UNITS = ("ms", "seconds", "minutes", "MB", "GB", "requests", "retries", "workers", "percent", "rows")
VERBS = ("drops", "blocks", "slows", "breaks", "fixes", "needs", "skips", "repeats", "locks", "caches")
ADJECTIVES = ("stale", "flaky", "slow", "missing", "broken", "cold", "hot", "duplicated", "empty", "wrong")
FILLERS = ("really", "again", "still", "definitely", "probably", "now", "also", "always", "usually", "just")
TEMPLATES = (
    "The {a} {b} {verb} the {c} when {d} exceeds {num} {unit}.",
    "We saw {a} fail on {date} because the {b} {c} was {adj}.",
    "Use {a} instead of {b} for the {c} {d}; it needs {num} {unit}.",
    "The {a} keeps {num} {unit} of {b} before the {c} {verb} anything.",
    "On {date} the {a} team moved {b} to the {c} {d} cluster.",
    "Never run {a} with {b} enabled: the {c} gets {adj} after {num} {unit}.",
    "{a} and {b} disagree about the {c} format since {date}.",
    "Set {a} {b} to {num} {unit} or the {c} {verb} the {d} queue.",
)
TITLES = ("{A} {b} {c}", "Lesson: {a} {b} and {c}", "{A} vs {b}", "Gotcha with {a} {b}", "{A} {b} note",
          "About {a} and the {c}", "{A} {c} again", "Why {a} {b} matters")


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    """Made-up words from syllables, most common first (drawn by Zipf's law)."""
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "sa", "do", "fu", "gri", "bla", "tor",
                 "ven", "qua", "xel", "mor", "dri", "pla", "sto", "nix", "cal", "ber", "lin", "ost", "tek"]
    found: dict[str, None] = {}
    while len(found) < size:
        found["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))] = None
    return list(found)


@dataclass
class Fact:
    """One fact: its sentences as (template, content words) and its title words."""

    group: int
    sentences: list[tuple[str, dict[str, str]]]
    title: tuple[str, str, str]


@dataclass
class Planned:
    """A note to write: when, which fact, how (write or supersede the previous version)."""

    day: int
    fact: Fact
    supersede: bool = False
    version: int = 0
    path: str = ""
    similar: list[str] = field(default_factory=list)


class Diary:
    def __init__(self, rng: random.Random, vocabulary: int = 4000) -> None:
        self.rng = rng
        self.words = _vocabulary(rng, vocabulary)
        self.weights = [1 / (rank + 1) ** 1.05 for rank in range(len(self.words))]

    def word(self) -> str:
        return self.rng.choices(self.words, self.weights)[0]

    def fact(self, group: int) -> Fact:
        count = self.rng.randint(1, 4)
        sentences = []
        for template in self.rng.sample(TEMPLATES, count):
            sentences.append((template, {k: self.word() for k in "abcd"} | {
                "verb": self.rng.choice(VERBS), "adj": self.rng.choice(ADJECTIVES), "unit": self.rng.choice(UNITS)}))
        first = sentences[0][1]
        return Fact(group, sentences, (first["a"], first["b"], first["c"]))

    def text(self, fact: Fact, day: int, restated: bool) -> tuple[str, str]:
        """A title and a body stating ``fact``: the first statement as it is, a restatement with
        paraphrase-level edits."""
        rng = self.rng
        order = list(fact.sentences)
        if restated and len(order) > 1 and rng.random() < 0.7:
            rng.shuffle(order)
        lines = []
        for template, slots in order:
            filled = template.format(**slots, num=rng.randint(2, 5000),
                                     date=f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
            tokens = filled.split(" ")
            if restated:
                for _ in range(rng.randint(0, 2)):  # words dropped
                    if len(tokens) > 6:
                        del tokens[rng.randrange(1, len(tokens) - 1)]
                for _ in range(rng.randint(0, 2)):  # words added
                    tokens.insert(rng.randrange(1, len(tokens)), rng.choice(FILLERS))
            lines.append(" ".join(tokens))
        a, b, c = fact.title
        title = rng.choice(TITLES if restated else TITLES[:1]).format(A=a.capitalize(), a=a, b=b, c=c)
        agent, project = rng.choice(AGENTS), rng.choice(PROJECTS)
        date = f"2026-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}"
        header = (f"Session of {date} by agent {agent}. Context: continuing the work on the {project} "
                  "repository, picked up from the previous handoff note.")
        footer = ("Next steps: run the full test suite, update the changelog and push the branch for "
                  "review before the end of the session.")
        return f"{title} ({rng.randint(1, 999)})", "\n\n".join([header, " ".join(lines), footer])


def plan(diary: Diary, facts: int, rng: random.Random) -> list[Planned]:
    notes: list[Planned] = []
    for group in range(facts):
        fact = diary.fact(group)
        day = rng.randint(0, 300)
        kind = rng.random()
        if kind < 0.55:  # written once
            notes.append(Planned(day, fact))
        elif kind < 0.85:  # restated by agents that did not know
            for n in range(rng.randint(2, 4)):
                notes.append(Planned(day + 3 * n + rng.randint(0, 2), fact, version=n))
        else:  # a supersession chain, sometimes restated once more afterwards
            length = rng.randint(2, 3)
            for n in range(length):
                notes.append(Planned(day + 5 * n, fact, supersede=n > 0, version=n))
            if rng.random() < 0.5:
                notes.append(Planned(day + 5 * length, fact, version=length))
    notes.sort(key=lambda p: (p.day, p.fact.group, p.version))
    return notes


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def write_diary(vault: Vault, diary: Diary, notes: list[Planned], similar: int) -> dict[str, Any]:
    specs: dict[str, ToolSpec] = {s.name: s for s in tools_for(False)}
    latest: dict[int, str] = {}  # group -> uid of its newest chain version
    group_of: dict[str, int] = {}
    times: list[float] = []
    for note in notes:
        title, body = diary.text(note.fact, note.day, note.version > 0)
        args = {"agent": AGENTS[note.day % len(AGENTS)], "title": title, "content": body, "type": "lesson"}
        if note.supersede:
            tool, args = "memory_supersede", args | {"ref": latest[note.fact.group]}
        else:
            tool, args = "memory_write", args | {"domain": "diary"}
        spec = specs[tool]
        handler = partial(writes.memory_supersede if note.supersede else writes.memory_write, similar=similar)
        start = time.perf_counter()
        answer = call(vault, ToolSpec(spec.name, spec.description, spec.params, handler, read_only=False), args)
        times.append((time.perf_counter() - start) * 1000)
        if answer.get("status") != "ok":
            raise SystemExit(f"{tool} answered {answer}")
        note.path = answer["path"]
        note.similar = [row["permalink"].removeprefix("memory://") + ".md" for row in answer.get("similar", [])]
        group_of[note.path] = note.fact.group
        if note.supersede or note.version == 0:
            latest[note.fact.group] = answer["uid"]
    return {"times": times, "group_of": group_of}


def similar_scores(notes: list[Planned], group_of: dict[str, int], limit: int) -> dict[str, float]:
    listed = true_listed = could = restated = found_one = 0
    seen: dict[int, int] = {}
    for note in notes:
        earlier = seen.get(note.fact.group, 0) - (1 if note.supersede else 0)  # the replaced one is never listed
        hits = sum(1 for p in note.similar if group_of.get(p) == note.fact.group)
        listed += len(note.similar)
        true_listed += hits
        could += min(limit, earlier)
        if earlier > 0:
            restated += 1
            found_one += hits > 0
        seen[note.fact.group] = seen.get(note.fact.group, 0) + 1
    return {"listed": listed, "precision": true_listed / listed if listed else 1.0,
            "pair recall": true_listed / could if could else 1.0,
            "restatements": restated, "found one": found_one / restated if restated else 1.0}


def tidy_scores(found: list[Cluster], notes: list[Planned], current: set[str]) -> dict[str, float]:
    by_group: dict[int, list[str]] = {}
    for note in notes:
        if note.path in current:
            by_group.setdefault(note.fact.group, []).append(note.path)
    truth = {frozenset((a, b)) for paths in by_group.values() for i, a in enumerate(paths) for b in paths[i + 1:]}
    predicted = set()
    for cluster in found:
        paths = [cluster.keep.path, *(m.path for m in cluster.others)]
        predicted |= {frozenset((a, b)) for i, a in enumerate(paths) for b in paths[i + 1:]}
    hits = len(truth & predicted)
    return {"clusters": len(found), "true pairs": len(truth), "proposed pairs": len(predicted),
            "precision": hits / len(predicted) if predicted else 1.0,
            "recall": hits / len(truth) if truth else 1.0}


def tidy_of(vault: Vault, threshold: float) -> tuple[list[Cluster], set[str], float]:
    from vault_mem.reads.lineage import Lineage

    start = time.perf_counter()
    with vault.index.searching() as searcher:
        found = clusters(lambda: View(vault, Snapshot(searcher, config=vault.index.config)), threshold=threshold)
        view = View(vault, Snapshot(searcher, config=vault.index.config))
        lineage = Lineage(view)
        current = {view.snapshot.record(d)["path"] for d in view.snapshot.all_docs() if not lineage.superseded(d)}
    return found, current, time.perf_counter() - start


def run_diary(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    diary = Diary(rng)
    notes = plan(diary, args.facts, rng)
    with tempfile.TemporaryDirectory(prefix="vault-mem-diary-") as tmp:
        root = Path(tmp) / "vault"
        root.mkdir()
        index = VaultIndex(root, Path(tmp) / "index", config=settings.current())
        build(index)
        vault = Vault(root, index)
        wrote = write_diary(vault, diary, notes, args.limit)
        times = wrote["times"]
        print(f"diary: {len(notes)} notes of {args.facts} facts written; write p50 {statistics.median(times):.1f} ms, "
              f"p99 {pct(times, 0.99):.1f} ms (similar on, the vault growing from empty)")
        s = similar_scores(notes, wrote["group_of"], args.limit)
        print(f"similar: {s['listed']} listed, precision {s['precision']:.3f}, pair recall {s['pair recall']:.3f}, "
              f"restatements with one found {s['found one']:.3f} of {s['restatements']}")
        found, current, seconds = tidy_of(vault, args.threshold)
        t = tidy_scores(found, notes, current)
        print(f"tidy: {t['clusters']} clusters in {seconds:.1f} s, {t['proposed pairs']} pairs proposed of "
              f"{t['true pairs']} true; precision {t['precision']:.3f}, recall {t['recall']:.3f}")
        index.close()


def run_latency(args: argparse.Namespace) -> None:
    root = Path(args.latency_vault)
    index = VaultIndex(root, root / ".vault-mem", config=settings.current())
    vault = Vault(root, index)
    rng = random.Random(args.seed)
    diary = Diary(rng)
    spec = {s.name: s for s in tools_for(False)}["memory_write"]
    on: list[float] = []
    off: list[float] = []
    listed = 0
    with index.searching() as searcher:
        print(f"vault of {searcher.doc_count()} notes")
    for i in range(args.runs):
        fact = diary.fact(i)
        for similar, times in ((3, on), (0, off)) if i % 2 else ((0, off), (3, on)):
            title, body = diary.text(fact, i, similar == 0)
            handler = partial(writes.memory_write, similar=similar)
            start = time.perf_counter()
            answer = call(vault, ToolSpec("memory_write", spec.description, spec.params, handler, read_only=False),
                          {"agent": "bench", "title": title, "content": body, "domain": "diary-bench"})
            times.append((time.perf_counter() - start) * 1000)
            if answer.get("status") != "ok":
                raise SystemExit(f"memory_write answered {answer}")
            listed += len(answer.get("similar", []))
    index.close()
    print(f"{'memory_write':<24} {'calls':>5} {'p50 ms':>8} {'p99 ms':>8}")
    for label, times in (("similar on", on), ("similar off", off)):
        print(f"{label:<24} {len(times):>5} {statistics.median(times):>8.1f} {pct(times, 0.99):>8.1f}")
    print(f"(each fact written twice, once each way: {listed} similar notes listed)")


def run_tidy(args: argparse.Namespace) -> None:
    root = Path(args.tidy_vault)
    index = VaultIndex(root, root / ".vault-mem", config=settings.current())
    vault = Vault(root, index)
    found, current, seconds = tidy_of(vault, args.threshold)
    index.close()
    members = sum(1 + len(c.others) for c in found)
    print(f"tidy on {len(current)} current notes: {len(found)} clusters ({members} notes) in {seconds:.1f} s")
    sample = random.Random(args.seed).sample(found, min(args.sample, len(found)))
    for cluster in sample:
        print(f"- keep {cluster.keep.path}")
        for member in cluster.others:
            print(f"    {member.similarity:.2f} {member.path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--facts", type=int, default=700)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=3, help="similar notes listed per write")
    parser.add_argument("--threshold", type=float, default=0.35, help="tidy's resemblance threshold")
    parser.add_argument("--latency-vault", metavar="DIR", help="measure write latency on this indexed vault")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--tidy-vault", metavar="DIR", help="tidy's clusters on this indexed vault")
    parser.add_argument("--sample", type=int, default=15)
    args = parser.parse_args()
    if args.latency_vault:
        run_latency(args)
    elif args.tidy_vault:
        run_tidy(args)
    else:
        run_diary(args)


if __name__ == "__main__":
    main()
