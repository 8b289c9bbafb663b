"""Where a note's ``created`` comes from when its frontmatter gives none (docs/vault-format.md): a date in the
file name (daily notes), else the file's mtime; ``updated`` stays the mtime."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from vault_mem import settings
from vault_mem.vault.dates import date_in_name
from vault_mem.vault.reader import read_note

MTIME = dt.datetime(2030, 5, 6, 7, 8, 9, tzinfo=dt.UTC)


def note_at(root: Path, rel: str, text: str = "# A day\n\nsome words\n") -> tuple[str, str]:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (MTIME.timestamp(), MTIME.timestamp()))
    note = read_note(root, rel, config=settings.current())
    return note.created, note.updated


@pytest.mark.parametrize("rel, created", [
    ("Daily/2022-01-02.md", "2022-01-02T00:00:00+00:00"),
    ("Journal 2021-12-31 evening.md", "2021-12-31T00:00:00+00:00"),
    ("2022-13-45 then 2020-02-29.md", "2020-02-29T00:00:00+00:00"),  # an impossible date is skipped
])
def test_a_date_in_the_file_name_is_the_created_date(tmp_path: Path, rel: str, created: str) -> None:
    assert note_at(tmp_path, rel) == (created, MTIME.isoformat())


@pytest.mark.parametrize("rel", ["2019-03-04/Meeting.md", "ticket 20220102-7.md", "v12022-01-023.md",
                                 "Plain note.md"])
def test_without_a_date_in_the_name_created_is_the_mtime(tmp_path: Path, rel: str) -> None:
    assert note_at(tmp_path, rel) == (MTIME.isoformat(), MTIME.isoformat())


def test_frontmatter_dates_win_over_the_file_name(tmp_path: Path) -> None:
    created, _ = note_at(tmp_path, "2022-01-02.md", "---\ncreated: 2023-04-05\n---\nbody\n")
    assert created == "2023-04-05T00:00:00+00:00"


def test_a_broken_created_falls_back_to_the_name_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "2022-01-02.md").write_text("---\ncreated: soon\n---\nbody\n", encoding="utf-8")
    note = read_note(tmp_path, "2022-01-02.md", config=settings.current())
    assert note.created == "2022-01-02T00:00:00+00:00"
    assert any("date in the file name" in p for p in note.problems)


def test_date_in_name_reads_only_the_file_name() -> None:
    assert date_in_name("2024-01-01/notes.md") is None
    assert date_in_name("a/b/2024-02-03.md") == dt.datetime(2024, 2, 3, tzinfo=dt.UTC)
