"""Known items: words a user remembers from one note, and whether a one-word search finds it.

    python bench/known_items.py make CORPUS [--out tests/relevance/known_items.json]
    python bench/known_items.py hub DIR        # write the hub-like vault (stem-sharing titles)

A *known item* is a word of 6 or more letters (``str.isalpha``, lower-cased) taken from
the title or body of a sampled note that is a case-insensitive substring of at most three
notes (in the fields memory_search searches: title and aliases, permalink, tags, body,
counted from the index's lexicons, so exactly what a search can match). The set maps each
such word to every note holding it. ``bench/relevance_bench.py --known-items`` asks
memory_search for each word alone and counts the notes found in the first 10 and first 1.

``make`` samples 300 notes of CORPUS with seed 18 and writes the set; ``known_items``
computes the same set for any indexed vault (all of its notes when it has 300 or fewer).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vault_mem import settings
from vault_mem.search.api import install_whoosh_patches
from vault_mem.search.build import build
from vault_mem.search.segments import segments
from vault_mem.search.store import VaultIndex
from vault_mem.search.substring import segment_terms_containing
from vault_mem.vault.names import words
from vault_mem.vault.reader import read_note
from vault_mem.vault.walk import walk_vault

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)

REPO = Path(__file__).resolve().parent.parent
KNOWN_ITEMS = REPO / "tests" / "relevance" / "known_items.json"
SAMPLE = 300
SEED = 18
MIN_LETTERS = 6
MAX_NOTES = 3
FIELDS = ("title", "perm", "tagtext", "body")


def candidate_words(root: Path, rel: str) -> list[str]:
    """The distinct words of 6+ letters in a note's title, aliases and body, lower-cased."""
    note = read_note(root, rel, config=settings.current())
    text = " ".join([note.title, *note.aliases, note.body])
    return list(dict.fromkeys(w for w in words(text) if len(w) >= MIN_LETTERS and w.isalpha()))


def notes_holding(searcher: object, needle: str, limit: int) -> set[str] | None:
    """The paths of the notes whose searched fields contain ``needle``; None past ``limit``."""
    docs: set[int] = set()
    for seg in segments(searcher):  # type: ignore[arg-type]
        reader, offset = seg.reader, seg.offset
        deleted = reader.deleted_docs_set if reader.has_deletions() else frozenset()
        for field in FIELDS:
            for token in segment_terms_containing(seg, field, needle):
                for docid in reader.postings(field, token).all_ids():
                    if docid not in deleted:
                        docs.add(docid + offset)
                if len(docs) > limit:
                    return None
    return {searcher.stored_fields(d)["path"] for d in docs}  # type: ignore[attr-defined]


def known_items(root: Path, index: VaultIndex, sample: int = SAMPLE, seed: int = SEED) -> dict[str, list[str]]:
    """word -> the notes holding it, for the known items of ``sample`` notes of an indexed vault."""
    files = sorted(walk_vault(root).files)
    chosen = files if len(files) <= sample else random.Random(seed).sample(files, sample)
    items: dict[str, list[str]] = {}
    with index.searching() as searcher:
        reader = searcher.reader()
        for rel in chosen:
            for word in candidate_words(root, rel):
                if word in items:
                    continue
                # a word in more than MAX_NOTES notes as a whole token is out already: cheap first cut
                if sum(reader.doc_frequency(f, word) for f in FIELDS) > MAX_NOTES * len(FIELDS):
                    continue
                holding = notes_holding(searcher, word, MAX_NOTES)
                if holding and rel in holding:
                    items[word] = sorted(holding)
    return dict(sorted(items.items()))


def hub_vault(root: Path) -> None:
    """A small vault shaped like the Obsidian Hub: many plugin notes whose titles share the stem
    of a rare word ("Color", "Colored", "Colorful" ...) and a few bodies that hold the word itself."""
    rng = random.Random(SEED)
    stems = {"color": ["Color", "Colored", "Colorful", "Colors", "Coloring"],
             "visual": ["Visual", "Visuals", "Visualizer"], "transition": ["Transition", "Transitions"],
             "utter": ["Utter", "Utters"], "highlight": ["Highlight", "Highlighter", "Highlights"]}
    rare = {"color": "colorizing", "visual": "visualizes", "transition": "transitionable",
            "utter": "utterances", "highlight": "highlighting"}
    filler = ["plugin", "adds", "a", "command", "palette", "entry", "settings", "pane", "and", "hotkeys",
              "for", "the", "editor", "works", "on", "desktop", "mobile", "see", "readme", "options"]
    (root / "plugins").mkdir(parents=True, exist_ok=True)
    (root / "topics").mkdir(parents=True, exist_ok=True)
    for k, (stem, forms) in enumerate(stems.items()):
        for i in range(12):
            title = f"{rng.choice(forms)} {rng.choice(['Tools', 'Picker', 'Palette', 'Blocks', 'Themes'])} {i}"
            body = " ".join(rng.choice(filler) for _ in range(40))
            text = f"---\ntitle: {title}\ntags: [plugin, {stem}]\n---\n# {title}\n\n{forms[0]} {body}\n"
            (root / "plugins" / f"{title}.md").write_text(text, encoding="utf-8")
        for j in range(2):
            body = " ".join(rng.choice(filler) for _ in range(60))
            text = (f"---\ntitle: Theme notes {k}{j}\n---\n{body} One option is {rare[stem]} "
                    f"the output. {body}\n")
            (root / "topics" / f"Theme notes {k}{j}.md").write_text(text, encoding="utf-8")


def seed_rare_words(root: Path, words_of_vault: list[str], every: int = 20) -> None:
    """Add to every ``every``-th note of a generated vault one rare word made of a common one and
    a suffix ("deployable", "cachelike"): its stem is in the titles of many notes, the word in one."""
    suffixes = ["able", "izing", "ations", "ingly", "ness", "ward", "like"]
    rng = random.Random(SEED)
    common = [w for w in words_of_vault if len(w) >= 4]
    for i, rel in enumerate(sorted(walk_vault(root).files)):
        if i % every:
            continue
        rare = rng.choice(common) + rng.choice(suffixes)
        path = root / rel
        path.write_text(path.read_text(encoding="utf-8") + f"\nIn the end it was {rare}, said the review.\n",
                        encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("make", help="write the known-item set of a corpus")
    make.add_argument("corpus", type=Path)
    make.add_argument("--out", type=Path, default=KNOWN_ITEMS)
    hub = sub.add_parser("hub", help="write the hub-like vault")
    hub.add_argument("dir", type=Path)
    args = parser.parse_args()
    if args.command == "hub":
        hub_vault(args.dir)
        print(f"hub-like vault in {args.dir}")
        return
    with tempfile.TemporaryDirectory(prefix="vault-mem-known-") as tmp:
        index = VaultIndex(args.corpus, Path(tmp) / "index", config=settings.current())
        report = build(index, procs=1)
        items = known_items(args.corpus, index)
        index.close()
    notes = {p for paths in items.values() for p in paths}
    document = {
        "about": (f"Known items of a {report.total}-note corpus: for {SAMPLE} notes sampled with "
                  f"random.Random({SEED}), each word of {MIN_LETTERS}+ letters from the note's title or "
                  f"body that is a substring of at most {MAX_NOTES} notes, with every note holding it "
                  "(bench/known_items.py make; checked by bench/relevance_bench.py --known-items)."),
        "notes": report.total,
        "items": items,
    }
    args.out.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(items)} words, {len(notes)} notes -> {args.out}")


if __name__ == "__main__":
    main()
