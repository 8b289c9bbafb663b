"""The shape of sample_vault/ (the README runs it): what the demos and the other tests rely on."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from vault_mem import settings
from vault_mem.vault.note import KNOWN_TYPES, SCOPES, TASK_STATES, Note
from vault_mem.vault.reader import read_note
from vault_mem.vault.walk import walk_vault

SAMPLE = Path(__file__).resolve().parent.parent.parent / "sample_vault"
BROKEN = {"Broken frontmatter.md"}


@pytest.fixture(scope="module")
def notes() -> dict[str, Note]:
    return {rel: read_note(SAMPLE, rel, config=settings.current()) for rel in walk_vault(SAMPLE).files}


def test_enough_notes_over_three_domain_levels(notes: dict[str, Note]) -> None:
    assert len(notes) >= 40
    assert max(note.domain.count("/") + 1 for note in notes.values() if note.domain) >= 3
    assert any(note.domain == "" for note in notes.values())
    # The same folder name under two branches: a domain filter on "p200" is ambiguous.
    assert {n.domain for n in notes.values() if n.domain.endswith("/p200")} == {
        "acme/x100/p200", "acme/x200/p200"}


def test_only_the_deliberately_broken_notes_have_problems(notes: dict[str, Note]) -> None:
    assert {rel for rel, note in notes.items() if note.problems} == BROKEN
    for rel in BROKEN:
        assert not notes[rel].frontmatter_ok
        assert any("malformed YAML" in p for p in notes[rel].problems)


def test_ignored_files_are_not_memories(notes: dict[str, Note]) -> None:
    ignored = [
        "templates/Daily note.md",  # Obsidian userIgnoreFilters
        "private/Salary negotiation.md",  # .gitignore folder
        "drafts/Half-written.tmp.md",  # .gitignore pattern
        ".github/PULL_REQUEST_TEMPLATE.md",  # hidden folder
        ".trash/Old idea.md",
    ]
    for rel in ignored:
        assert (SAMPLE / rel).is_file(), f"{rel} should exist so that ignoring it is tested"
        assert rel not in notes
    assert not any(rel.split("/")[0] in ("templates", "private") for rel in notes)


def test_every_type_namespace_and_scope_is_present(notes: dict[str, Note]) -> None:
    types = Counter(note.type for note in notes.values())
    assert set(KNOWN_TYPES) <= set(types)
    assert {n.namespace for n in notes.values()} >= {"default", "work", "archive:old"}
    assert {n.scope for n in notes.values()} == set(SCOPES)
    assert all(n.project for n in notes.values() if n.scope != "user")
    assert any(n.paths for n in notes.values())
    assert any(n.excalidraw for n in notes.values())
    assert 0 < sum(not n.has_id for n in notes.values()) < len(notes) / 2


def test_tasks_in_every_state(notes: dict[str, Note]) -> None:
    tasks = [n for n in notes.values() if n.type == "task"]
    assert {t.state for t in tasks} == set(TASK_STATES)
    assert all(t.status == "archived" for t in tasks if t.state != "open")
    written = {t.state for t in tasks if t.fields.get("state")}
    derived = {t.state for t in tasks if not t.fields.get("state") and t.progress.total}
    assert {"open", "completed"} <= written
    assert derived == set(TASK_STATES)


def test_tags_come_in_every_accepted_form(notes: dict[str, Note]) -> None:
    raw = [n.fields.get("tags") for n in notes.values()]
    assert any(isinstance(t, list) for t in raw)
    assert any(isinstance(t, str) and "," in t for t in raw)
    assert any(isinstance(t, str) and "," not in t and " " in t for t in raw)
    assert any(isinstance(t, list) and None in t for t in raw)
    assert any("/" in tag for n in notes.values() for tag in n.tags)
    inline_only = notes["personal/cooking/Sourdough.md"]
    assert inline_only.tags == ["cooking", "baking/bread"]


def test_supersession_chain_and_branch(notes: dict[str, Note]) -> None:
    by_ref = {}
    for note in notes.values():
        by_ref[note.uid] = note
        by_ref[note.title] = note
        by_ref[note.path.rpartition("/")[2][:-3]] = note
    v3 = by_ref["dec-queue-v3"]
    v2 = by_ref[v3.supersedes[0]]
    v1 = by_ref[v2.supersedes[0]]
    assert (v2.uid, v1.uid) == ("dec-queue-v2", "dec-queue-v1")
    assert v1.superseded_by == ["dec-queue-v2"]  # declared on the older side too
    branch = [n for n in notes.values() if n is not v2 and any(by_ref.get(r) is v1 for r in n.supersedes)]
    assert [n.uid for n in branch] == ["dec-queue-v2b"]


def test_dates_spread_and_links_dangle(notes: dict[str, Note]) -> None:
    years = {n.created[:4] for n in notes.values() if "created" in n.fields or "date" in n.fields}
    assert {"2024", "2025", "2026"} <= years
    known = {n.title.lower() for n in notes.values()} | {
        n.path.rpartition("/")[2][:-3].lower() for n in notes.values()}
    known |= {a.lower() for n in notes.values() for a in n.aliases}
    targets = {lk["target"].lower() for n in notes.values() for lk in n.links if lk["target"]}
    assert targets - known, "a few links should dangle"
    assert len(targets & known) >= 20
