"""The reader conformance corpus: every tests/corpus/<name>.md against <name>.expected.json."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import note_dict

from vault_mem import settings
from vault_mem.vault.reader import read_note

CORPUS = Path(__file__).parent.parent / "corpus"
FALLBACK_MTIME = 1_577_836_800  # 2020-01-01T00:00:00Z: what dates fall back to
CASES = sorted(p for p in CORPUS.glob("*.md") if p.name != "README.md")


def _case_id(path: Path) -> str:
    return path.name[: -len(".md")]


def test_every_case_has_an_expectation() -> None:
    expected = {p.name[: -len(".expected.json")] for p in CORPUS.glob("*.expected.json")}
    assert expected == {_case_id(p) for p in CASES}


@pytest.mark.parametrize("source", CASES, ids=_case_id)
def test_corpus_case(source: Path, tmp_path: Path) -> None:
    spec: dict[str, Any] = json.loads(
        (CORPUS / f"{_case_id(source)}.expected.json").read_text(encoding="utf-8")
    )
    shutil.copyfile(source, tmp_path / source.name)
    os.utime(tmp_path / source.name, (FALLBACK_MTIME, FALLBACK_MTIME))

    note = note_dict(read_note(tmp_path, source.name, config=settings.current()))

    for key, want in spec["note"].items():
        assert key in note, f"unknown Note field {key!r} in the expectation"
        assert note[key] == want, f"{key}: {spec['about']}"
    wanted_problems: list[str] = spec["problems"]
    assert len(note["problems"]) == len(wanted_problems), note["problems"]
    for got, want in zip(note["problems"], wanted_problems, strict=True):
        assert want.lower() in got.lower(), note["problems"]


def test_derived_uids_differ_for_names_differing_only_in_case(tmp_path: Path) -> None:
    (tmp_path / "Notes").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "Notes" / "A.md").write_text("one\n", encoding="utf-8")
    (tmp_path / "notes" / "a.md").write_text("two\n", encoding="utf-8")
    first, second = read_note(tmp_path, "Notes/A.md",
        config=settings.current()), read_note(tmp_path, "notes/a.md", config=settings.current())
    assert not first.has_id and not second.has_id
    assert first.uid != second.uid
    assert read_note(tmp_path, "Notes/A.md", config=settings.current()).uid == first.uid  # stable across reads
