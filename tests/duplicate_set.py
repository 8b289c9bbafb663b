"""The labelled set of duplicates (tests/duplicates/): notes that say the same thing (same.yaml,
planted paraphrases), notes made from one template with different names and facts
(different.yaml, link lists and embeds among them) and notes on one topic that say different
things in plain words (related.yaml), written into a vault for `similar` and
`tidy` to judge (bench/duplicates_bench.py, tests/unit/test_duplicates.py).

The set has two fixed halves: ``tune`` (the even-numbered groups of same.yaml and related.yaml
and the even-numbered fills of each family) to choose the defaults on, and ``test`` (the odd
ones) to report. A pair of notes is a duplicate exactly when both come from one group of same.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent / "duplicates"
HALVES = ("tune", "test")


@dataclass(frozen=True)
class SetNote:
    path: str
    title: str
    body: str
    group: str  # "same N": one group of same.yaml; "family NAME": made from one template

    def text(self, updated: str) -> str:
        title = self.title.replace('"', "'")
        return f'---\ntitle: "{title}"\nupdated: {updated}\n---\n{self.body.rstrip()}\n'


def _file_name(title: str) -> str:
    return re.sub(r"[\\/:*?\"<>|#^\[\]]", " ", title).strip() + ".md"


def notes(half: str | None = None) -> list[SetNote]:
    """The set's notes (of one half, or all)."""
    if half not in (None, *HALVES):
        raise ValueError(f"half must be one of {HALVES}, got {half!r}")
    out = []
    for file, folder, group_name in (("same.yaml", "restated", "same"), ("related.yaml", "related", "related")):
        for n, group in enumerate(yaml.safe_load((HERE / file).read_text(encoding="utf-8"))):
            if half is None or HALVES[n % 2] == half:
                for i, note in enumerate(group):
                    out.append(SetNote(f"{folder}/{n:02d}-{i} {_file_name(note['title'])}", note["title"],
                                       note["body"], f"{group_name} {n}"))
    for family in yaml.safe_load((HERE / "different.yaml").read_text(encoding="utf-8")):
        for n, fill in enumerate(family["fills"]):
            if half is None or HALVES[n % 2] == half:
                title = family["title"].format(**fill)
                out.append(SetNote(f"templates/{family['family']}/{_file_name(title)}", title,
                                   family["body"].format(**fill), f"family {family['family']}"))
    return out


def duplicate(a: SetNote, b: SetNote) -> bool:
    return a.group == b.group and a.group.startswith("same ")


def true_pairs(found: list[SetNote]) -> set[frozenset[str]]:
    """Every pair of ``found`` that is a duplicate, as a pair of paths."""
    return {frozenset((a.path, b.path)) for i, a in enumerate(found) for b in found[i + 1:] if duplicate(a, b)}


def write(root: Path, found: list[SetNote]) -> Path:
    """Write the notes into ``root``: within a group, a later note is updated later (a
    restatement comes after what it restates)."""
    for i, note in enumerate(found):
        target = root / note.path
        target.parent.mkdir(parents=True, exist_ok=True)
        day = 1 + i % 28
        target.write_text(note.text(f"2026-0{1 + (i // 28) % 9}-{day:02d}T10:00:00+00:00"), encoding="utf-8")
    return root
