"""The field table (vault/fields.py) and the parts that derive from it: a field known to one
part and not to another fails here. Then the two bugs the table fixed, through a real MCP
session: ``metadata_filters`` on ``supersedes``, and a tag with a trailing ``/``."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from vault_mem.cli import queries
from vault_mem.reads import memory_list, read, rows
from vault_mem.search.schema import EXACT, FILE_FIELDS, document_of, make_schema, record_of
from vault_mem.settings import Settings
from vault_mem.vault.fields import CORE_KEYS, FIELD, FIELDS, READ_LAYOUT, filter_names, normalize_tag
from vault_mem.vault.note import NOTE_ATTRIBUTES
from vault_mem.vault.reader import parse_text
from vault_mem.vault.yamlstyle import KEY_ORDER

# One note that sets every key of every row (and one key of no row).
EVERY_KEY = textwrap.dedent("""\
    ---
    id: n-1
    title: Every key
    aliases: [One]
    alias: Two
    type: task
    kind: fact
    tags: [a/b]
    created: 2024-01-02
    date: 2023-01-01
    created_at: 2023-01-01
    updated: 2024-01-03
    modified: 2023-01-01
    updated_at: 2023-01-01
    status: active
    state: open
    importance: 0.7
    namespace: work
    scope: project_shared
    project: p
    paths: [src/x.py]
    agent: bot
    supersedes: old-1
    superseded_by: new-1
    owner: Dana
    ---
    # Body
    - [ ] a task
    """)


def every_key_note():
    return parse_text("d/every.md", EVERY_KEY, "etag", len(EVERY_KEY), 1_700_000_000 * 10**9, [], config=Settings())


def test_every_frontmatter_key_of_a_row_is_read_by_it_and_kept_out_of_metadata() -> None:
    note = every_key_note()
    assert note.problems == []
    assert note.metadata == {"owner": "Dana"}
    assert {key for row in FIELDS for key in row.keys} == CORE_KEYS
    for row in FIELDS:
        assert row.name in NOTE_ATTRIBUTES or row.name in note.more, row.name


# A value each row reads as something other than its default ("x1" for the rest).
SAMPLE = {"created": "2020-01-01", "updated": "2020-01-01", "state": "completed", "status": "archived",
          "importance": "0.3", "tags": "zz", "paths": "p/q", "valid_from": "2020-01-01", "valid_until": "2020-01-01"}


@pytest.mark.parametrize(("name", "key"), [(row.name, key) for row in FIELDS for key in row.keys])
def test_each_key_of_a_row_alone_gives_the_row_its_value(name: str, key: str) -> None:
    """A key the table names but no parser reads would vanish: kept out of metadata, read by no row."""
    def value(text: str) -> object:
        return parse_text("n.md", text, "etag", len(text), 1_700_000_000 * 10**9, [], config=Settings()).value(name)

    given = f"---\n{key}: {SAMPLE.get(name, 'x1')}\n---\nbody\n"
    assert value(given) != value("---\nother: 1\n---\nbody\n")


def test_the_stored_record_holds_every_row_under_its_name() -> None:
    record = record_of(every_key_note(), "d/every.md", Settings().record_head_chars)
    assert set(record) >= {row.name for row in FIELDS}
    assert record["progress"] == {"done": 0, "total": 1}
    assert record["supersedes"] == ["old-1"]


def test_the_schema_holds_exactly_the_rows_index_fields_and_the_files_own() -> None:
    from_rows = {name for row in FIELDS for name in row.indexed} | {row.name for row in EXACT}
    names = set(make_schema().names())
    assert names == from_rows | set(FILE_FIELDS)
    assert not from_rows & set(FILE_FIELDS)
    note = every_key_note()
    head = Settings().record_head_chars
    assert set(document_of(note, "d/every.md", head)) == names - {"real"}  # only a symlinked note has one
    note.real = "elsewhere/every.md"
    assert set(document_of(note, "d/every.md", head)) == names


def test_exact_rows_make_the_terms_a_filter_value_asks_for() -> None:
    document = document_of(every_key_note(), "d/every.md", Settings().record_head_chars)
    assert document["type"] == "task" and document["namespace"] == "work" and document["state"] == "open"
    assert document["tags"].split("\x1f") == ["a", "a/b"]
    for row in EXACT:
        assert row.exact is not None
        held = document[row.name].split("\x1f") if row.exact.multi else [document[row.name]]
        assert row.exact.query(held[-1]) == held[-1], row.name


def test_memory_read_shows_every_row_and_may_cut_every_cuttable_one() -> None:
    shown = {"uid", *READ_LAYOUT}
    assert shown == {row.name for row in FIELDS}
    assert {row.name for row in FIELDS if row.cut} <= set(read.CUTTABLE)


def test_rows_show_the_rows_the_table_names_and_cut_the_cuttable_ones() -> None:
    named = {memory_list.ROW_NAMES.get(row.name, row.name) for row in FIELDS if row.row}
    not_fields = {"permalink", "path", "etag", "content_preview", "content"}
    assert set(memory_list.ROW_FIELDS) == named | not_fields
    assert {row.name for row in FIELDS if row.cut} <= set(rows.ROW_CUTTABLE)
    cut_not_fields = {"hierarchy"}
    assert set(rows.ROW_CUTTABLE) - cut_not_fields == {row.name for row in FIELDS if row.cut}


def test_metadata_filters_know_every_filterable_row_by_its_name_and_keys() -> None:
    for row in FIELDS:
        for name in (row.name, *row.keys):
            assert (memory_list.CORE_KEYS.get(name) == row.name) is row.filter, name
    assert set(memory_list.CORE_KEYS) == set(filter_names()) | {"path"}


def test_the_vault_format_reference_names_every_key_of_every_row() -> None:
    text = (Path(__file__).parent.parent.parent / "docs" / "vault-format.md").read_text(encoding="utf-8")
    table = text.partition("| key | meaning | when absent |")[2].partition("\n\n")[0]
    documented = {key for line in table.splitlines()[2:] for key in re.findall(r"`([^`]+)`", line.split("|")[1])}
    keys = {key for row in FIELDS for key in row.keys}
    assert documented == keys, (keys - documented, documented - keys)


def test_the_cli_record_view_lays_out_only_fields_of_the_table() -> None:
    assert set(FIELD) >= queries._SHOWN_ABOVE


def test_a_new_note_starts_with_the_rows_marked_first() -> None:
    assert KEY_ORDER == ("id", "title", "type", "tags", "created", "updated")


@pytest.mark.parametrize(("given", "tag"), [
    ("project/", "project"), ("#Project", "project"), (" # project/api/ ", "project/api"), ("/", ""), ("#", ""),
])
def test_normalize_tag_drops_hashes_spaces_and_slashes_at_the_ends(given: str, tag: str) -> None:
    assert normalize_tag(given) == tag


# -- the two bugs, through a real session ---------------------------------------------------

NOTES = {
    "old.md": "---\nid: old-1\ntitle: Old\n---\nThe old one.\n",
    "new.md": "---\nid: new-1\ntitle: New\nsupersedes: old-1\ntags: [project]\n---\nThe new one.\n",
    "other.md": "---\nid: other\ntitle: Other\ntags: [project/api]\n---\nSomething else.\n",
}


def ids(answer: dict) -> list[str]:
    return [row["id"] for row in answer["memories"]]


@pytest.mark.anyio
async def test_a_supersedes_filter_finds_the_note_that_declares_it(make_vault, mcp_session) -> None:
    async with mcp_session(make_vault(NOTES)) as c:
        found = await c.call("memory_list", metadata_filters={"supersedes": "old-1"}, follow="all")
        missing = await c.call("memory_list", metadata_filters={"supersedes": None}, follow="all")
        by_key = await c.call("memory_list", metadata_filters={"superseded_by": None}, follow="all")
    assert ids(found) == ["new-1"]
    assert sorted(ids(missing)) == ["old-1", "other"]
    assert sorted(ids(by_key)) == ["new-1", "old-1", "other"]


@pytest.mark.anyio
async def test_a_tag_with_a_trailing_slash_is_the_tag(make_vault, mcp_session) -> None:
    async with mcp_session(make_vault(NOTES)) as c:
        slash = await c.call("memory_list", tags_any=["project/"])
        plain = await c.call("memory_list", tags_any=["project"])
        hashed = await c.call("memory_list", tags_all=["#project/api/"])
        none = await c.call("memory_list", tags_none=["project/"], follow="all")
        recall = await c.call("mem_recall", since="2000", tag_filter="project/", output_format="structured")
        search = await c.call("memory_search", agent="t", tag="project/")
    assert sorted(ids(slash)) == sorted(ids(plain)) == ["new-1", "other"]
    assert ids(hashed) == ["other"]
    assert ids(none) == ["old-1"]
    assert sorted(r["uid"] for r in recall["results"]) == ["new-1", "other"]
    assert sorted(n["permalink"] for n in search["notes"]) == ["memory://new", "memory://other"]
