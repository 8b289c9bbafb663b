"""Generate a realistic synthetic vault for benchmarks: N notes of about 1.5 KB over three
domain levels, with frontmatter like a person's (ids on most, tags in several forms, dates,
types, tasks, wikilinks). Deterministic for a given seed.

    python bench/gen_vault.py DIR [--notes 10000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from pathlib import Path

WORDS = (
    "index cache vault memory agent query domain schema writer reader lock segment merge commit "
    "latency throughput watcher event rename folder branch release deploy rollback incident review "
    "design decision tradeoff benchmark profile memory leak socket timeout retry backoff queue worker "
    "python rust typescript database postgres sqlite redis kafka search token parser grammar lexer "
    "customer invoice meeting roadmap budget hiring onboarding security audit compliance backup restore "
    "garden recipe travel reading book film music running cycling climbing sleep health family weekend"
).split()
TYPES = ["note", "fact", "lesson", "gotcha", "handoff", "research", "decision", "task", "checkpoint",
         "anti_pattern", "reasoning"]
TOP = ["acme", "personal", "research", "ops", "clients"]


def sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng, rng.randint(8, 16)) for _ in range(rng.randint(3, 5)))


def domains(rng: random.Random) -> list[str]:
    out = []
    for top in TOP:
        for i in range(rng.randint(4, 7)):
            mid = f"{top}/x{100 + i * 100}"
            out.append(mid)
            for j in range(rng.randint(2, 5)):
                out.append(f"{mid}/p{200 + j * 100}")
    return out


def note_text(rng: random.Random, i: int, titles: list[str]) -> str:
    note_type = rng.choice(TYPES)
    tags = rng.sample(WORDS, rng.randint(1, 4))
    year = rng.choice([2024, 2025, 2026])
    created = f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    lines = ["---"]
    if rng.random() < 0.85:
        lines.append(f"id: n{i:06d}")
    lines.append(f"title: {titles[i]}")
    lines.append(f"type: {note_type}")
    if rng.random() < 0.5:
        lines.append("tags:")
        lines += [f"  - {t}" for t in tags]
    else:
        lines.append(f"tags: {', '.join(tags)}")
    lines.append(f"created: {created}")
    lines.append(f"updated: {created}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z")
    lines.append(f"importance: {rng.random():.2f}")
    if rng.random() < 0.2:
        lines.append(f"paths: [src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py]")
    lines.append("---")
    body = [f"# {titles[i]}", "", paragraph(rng), "", "## Details", "", paragraph(rng), ""]
    if note_type == "task":
        body += [f"- [{rng.choice(' x-')}] {sentence(rng, 5)}" for _ in range(rng.randint(1, 4))] + [""]
    links = rng.sample(titles, 2)
    body += [f"See [[{links[0]}]] and [[{links[1]}]]. #{rng.choice(WORDS)}", ""]
    return "\n".join(lines + body)


def generate(root: Path, notes: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    doms = domains(rng)
    titles = [f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {i}" for i in range(notes)]
    for d in doms:
        (root / d).mkdir(parents=True, exist_ok=True)
    for i in range(notes):
        folder = root / rng.choice(doms)
        (folder / f"{titles[i]}.md").write_text(note_text(rng, i, titles), encoding="utf-8")


def generator_main(doc: str, make: Callable[[Path, int, int], None], default_notes: int, what: str) -> None:
    """``DIR [--notes N] [--seed S]``: the command line of a vault generator (this one and gen_hub.py)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--notes", type=int, default=default_notes)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    make(args.dir, args.notes, args.seed)
    print(f"generated {args.notes} {what} in {args.dir}")


def main() -> None:
    generator_main(__doc__ or "", generate, 10_000, "notes")


if __name__ == "__main__":
    main()
