"""Duplicates by fact, not topic (docs/ranking.md, "Notes that say the same"): on the labelled
set of tests/duplicates/ (tests/duplicate_set.py), ``similar`` and ``tidy`` propose the planted
restatements and not the notes made from one template with other names and facts, nor a list of
links for a page of embeds (the rule's parts, one by one: tests/engine/test_facts.py)."""

from __future__ import annotations

from pathlib import Path

import duplicate_set
import pytest
from conftest import open_vault

from vault_mem.reads.tidy import clusters
from vault_mem.search.api import resembling
from vault_mem.served.context import view_of


@pytest.mark.parametrize("half", duplicate_set.HALVES)
def test_tidy_and_similar_propose_restatements_not_template_siblings(tmp_path: Path, half: str) -> None:
    notes = duplicate_set.notes(half)
    truth = duplicate_set.true_pairs(notes)
    vault = open_vault(duplicate_set.write(tmp_path / "v", notes))
    with view_of(vault) as view:
        tidied = {frozenset((c.keep.path, m.path)) for c in clusters(view.fresh) for m in c.others}
        snapshot = view.snapshot
        listed = set()
        for doc in snapshot.all_docs():
            record = snapshot.record(doc)
            for near in resembling(snapshot, record["title"], record["head"], exclude={doc}):
                listed.add(frozenset((record["path"], snapshot.record(near.docnum)["path"])))
    for found in (tidied, listed):
        right = len(found & truth)
        assert right / len(found) >= 0.9, sorted(map(sorted, found - truth))
        assert right / len(truth) >= 0.8, sorted(map(sorted, truth - found))
    families = {n.path: n.group for n in notes if n.group.startswith("family ")}
    assert not [p for p in tidied if all(x in families for x in p)], "no two notes of one template are proposed"


