"""memory_list (docs/tools.md) through a real MCP client session: filters, order, paging,
content modes, projection and the size bound. Lineage (``follow``) is in test_lineage.py."""

from __future__ import annotations

import datetime as dt
import json

import pytest

pytestmark = pytest.mark.anyio

NOTES = {
    "a.md": """
        ---
        id: a
        title: Alpha plan
        created: 2025-01-31T23:59:59
        tags: [proj/x, red]
        importance: 0.9
        namespace: work
        owner: Dana
        priority: 2
        ---
        The alpha body mentions foo-bar and Baz.
        """,
    "b.md": """
        ---
        id: b
        title: Bravo
        created: 2025-02-01
        tags: [blue]
        importance: 0.2
        type: fact
        owner: Eli
        ---
        Nothing special here. FOO BAR spaced.
        """,
    "f.md": """
        ---
        id: f
        title: Foxtrot
        created: 2025-02-01
        ---
        Same day as bravo.
        """,
    "sub/c.md": """
        ---
        id: c
        title: Charlie
        created: 2025-02-28T12:00:00
        tags: [proj]
        status: archived
        type: decision
        owner: dana
        ---
        Gamma text.
        """,
    "sub/d.md": """
        ---
        id: d
        title: Delta
        created: 2025-03-01T00:00:00
        tags: [red, blue]
        status: draft
        ---
        delta
        """,
    "e.md": """
        ---
        id: e
        title: Echo
        created: 2024-12-31
        ---
        echo mentions Alpha in passing
        """,
    "g.md": """
        ---
        id: g
        title: Golf
        created: 2024-02-29T23:59:59
        ---
        leap day
        """,
}
NEWEST_FIRST = ["d", "c", "b", "f", "a", "e", "g"]


def ids(answer):
    return [m["id"] for m in answer["memories"]]


async def test_default_newest_created_first_ties_by_path_and_row_shape(make_vault, mcp_session):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list")
        assert answer["status"] == "ok"
        assert ids(answer) == NEWEST_FIRST  # b and f share a created instant: path order
        assert answer["count"] == len(NOTES) and "next_offset" not in answer and "warnings" not in answer
        row = next(m for m in answer["memories"] if m["id"] == "a")
        assert set(row) == {"id", "title", "type", "tags", "metadata", "created", "updated", "importance",
                            "permalink", "path", "status", "etag", "supersedes", "superseded_by",
                            "valid_from", "valid_until", "content_preview"}
        assert row["metadata"] == {"owner": "Dana", "priority": 2}
        assert row["permalink"] == "memory://a" and row["path"] == "a.md"
        assert row["importance"] == 0.9 and row["tags"] == ["proj/x", "red"]
        archived = next(m for m in answer["memories"] if m["id"] == "c")
        assert archived["status"] == "archived"


async def test_listing_order_over_segments_ties_and_deletions_equals_a_full_sort(make_vault, mcp_session):
    """With no filter, the listing is merged lazily from each segment's cached order: across
    several segments, shared dates and importances, edits and deletions, every page (both
    orders, paged with offsets) must be what sorting every note would give."""
    import random

    from conftest import churn

    rng = random.Random(5)
    days = ["2025-01-01", "2025-01-02", "2025-02-01", "2025-03-01"]
    meta: dict[str, tuple[str, float]] = {}  # path -> (created, importance)

    def text(rel: str) -> str:
        created, importance = meta[rel]
        return f"---\nid: {rel}\ncreated: {created}\nimportance: {importance}\n---\nbody\n"

    for i in range(90):
        meta[f"d{i % 3}/n{i:03d}.md"] = (rng.choice(days), rng.choice([0.2, 0.5, 0.9]))
    vault = make_vault({rel: text(rel) for rel in meta})
    # each edit: a deletion in an old segment, a new one
    churn(vault.index, meta, rng, 12, 9, lambda rel: (rng.choice(days), rng.choice([0.2, 0.5, 0.9])), text)

    def expected(by_importance: bool) -> list[str]:
        return sorted(meta, key=lambda rel: (-meta[rel][1] if by_importance else 0,
                                             -int(meta[rel][0].replace("-", "")), rel))

    async with mcp_session(vault) as c:
        for by_importance in (False, True):
            want = expected(by_importance)
            for offset, limit in ((0, 20), (0, 1), (7, 13), (60, 50), (len(want), 5)):
                answer = await c.call("memory_list", offset=offset, limit=limit, sort_by_importance=by_importance)
                assert [m["path"] for m in answer["memories"]] == want[offset:offset + limit], (offset, limit)
                assert ("next_offset" in answer) == (offset + limit < len(want))


async def test_a_filtered_listing_over_segments_ties_and_deletions_equals_a_full_sort(make_vault, mcp_session):
    """A listing of some notes (a query word, a tag) is each segment's share put in the segment's
    cached order and merged: across several segments, shared dates and importances, edits and
    deletions, every page (both orders, paged with offsets) must be what sorting the matches
    would give, the one-segment case included."""
    import random

    from conftest import churn

    rng = random.Random(11)
    days = ["2025-01-01", "2025-01-02", "2025-02-01"]
    meta: dict[str, tuple[str, float, bool]] = {}  # path -> (created, importance, marked)

    def text(rel: str) -> str:
        created, importance, marked = meta[rel]
        tags = "[kiwi]" if marked else "[plain]"
        return (f"---\nid: {rel}\ncreated: {created}\nimportance: {importance}\ntags: {tags}\n---\n"
                f"{'a kiwi note' if marked else 'a plain note'}\n")

    def fresh() -> tuple[str, float, bool]:
        return rng.choice(days), rng.choice([0.2, 0.5, 0.9]), rng.random() < 0.6

    for i in range(80):
        meta[f"d{i % 4}/n{i:03d}.md"] = fresh()
    vault = make_vault({rel: text(rel) for rel in meta})
    calls = [{"query": "kiwi"}, {"tags_any": ["kiwi"]}]

    def expected(by_importance: bool) -> list[str]:
        marked = [rel for rel in meta if meta[rel][2]]
        return sorted(marked, key=lambda rel: (-meta[rel][1] if by_importance else 0,
                                               -int(meta[rel][0].replace("-", "")), rel))

    async def check() -> None:
        async with mcp_session(vault) as c:
            for by_importance in (False, True):
                want = expected(by_importance)
                for args in calls:
                    for offset, limit in ((0, 15), (0, 1), (5, 11), (30, 50), (len(want), 5)):
                        answer = await c.call("memory_list", offset=offset, limit=limit,
                                              sort_by_importance=by_importance, **args)
                        got = [m["path"] for m in answer["memories"]]
                        assert got == want[offset:offset + limit], (args, by_importance, offset, limit)

    await check()  # one segment
    churn(vault.index, meta, rng, 12, 9, lambda rel: fresh(), text)  # several segments, with deletions
    await check()


async def test_sort_by_importance_then_newest_then_path(make_vault, mcp_session):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", sort_by_importance=True)
        assert ids(answer) == ["a", "d", "c", "f", "e", "g", "b"]


@pytest.mark.parametrize(("query", "expected"), [
    ("alpha", ["a", "e"]),            # title of a, body of e
    ("ALPHA PL", ["a"]),              # spaces: exact substring, case-insensitive
    ("foo-bar", ["a"]),               # punctuation: b holds "FOO BAR", not "foo-bar"
    ("foo bar", ["b"]),
    ("o-b", ["a"]),                   # word parts inside tokens
    ("lph", ["a", "e"]),              # inside a word
    ("-", ["a"]),                     # no word characters at all
    ("zzz", []),
])
async def test_query_is_a_case_insensitive_substring_of_title_or_body(make_vault, mcp_session, query, expected):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", query=query)
        assert ids(answer) == expected
        assert answer["status"] == ("ok" if expected else "none")


async def test_query_checks_the_whole_body_on_disk_past_the_stored_head(make_vault, mcp_session):
    long_body = "word " * 1000 + "needle, in a haystack"
    vault = make_vault({"long.md": long_body, "short.md": "needle in a haystack"})
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", query="needle, in")
        assert [m["path"] for m in answer["memories"]] == ["long.md"]


@pytest.mark.parametrize(("filters", "expected"), [
    ({"owner": "dana"}, ["c", "a"]),                  # case-insensitive, metadata key
    ({"owner": ["Eli", "DANA"]}, ["c", "b", "a"]),    # a list is any of
    ({"priority": 2}, ["a"]),
    ({"priority": "2"}, ["a"]),                       # numbers compare by value
    ({"type": "decision"}, ["c"]),                    # core, indexed
    ({"kind": "FACT"}, ["b"]),
    ({"status": "archived"}, ["c"]),
    ({"status": "draft"}, ["d"]),                     # kept as written in metadata
    ({"namespace": "work"}, ["a"]),
    ({"importance": 0.9}, ["a"]),
    ({"tags": "proj"}, ["c", "a"]),                   # nested tags match their parent
    ({"owner": "dana", "tags": "red"}, ["a"]),        # every key must match
    ({"owner": None}, ["d", "f", "e", "g"]),          # null: the key is missing
    ({"nosuchkey": "x"}, []),
])
async def test_metadata_filters(make_vault, mcp_session, filters, expected):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", metadata_filters=filters)
        assert ids(answer) == expected


async def test_metadata_filters_as_a_json_string(make_vault, mcp_session):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", metadata_filters='{"owner": "eli"}')
        assert ids(answer) == ["b"]


@pytest.mark.parametrize("bad", ["x", ["owner"], 5, {"owner": {"nested": 1}}, {"owner": [["x"]]}])
async def test_metadata_filters_not_a_mapping_is_invalid(make_vault, mcp_session, bad):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", metadata_filters=bad)
        assert answer["status"] == "invalid" and "metadata_filters" in answer["message"]


@pytest.mark.parametrize(("dates", "expected"), [
    ({"date_from": "2025-02", "date_to": "2025-02"}, ["c", "b", "f"]),   # the whole month, both ends
    ({"date_to": "2025-01-31"}, ["a", "e", "g"]),                        # a partial date_to covers its day
    ({"date_from": "2025-02-01"}, ["d", "c", "b", "f"]),                 # from midnight, inclusive
    ({"date_from": "2025-01-31T23:59:59Z", "date_to": "2025-02-01T00:00:00"}, ["b", "f", "a"]),  # instants inclusive
    ({"date_from": "2025-01-31T23:59:59", "date_to": "2025-01-31T23:59:59"}, ["a"]),
    ({"date_from": "2024-02", "date_to": "2024-02"}, ["g"]),             # leap month end
    ({"date_from": "2024-02-29", "date_to": "2024-02-29"}, ["g"]),
    ({"date_from": "2025-02-28", "date_to": "2025-02-28"}, ["c"]),       # month end, noon
    ({"date_from": "2025"}, ["d", "c", "b", "f", "a"]),
    ({"date_to": "2024"}, ["e", "g"]),
    ({"date_from": "2025-03", "date_to": "2025-03"}, ["d"]),
])
async def test_date_range_on_created(make_vault, mcp_session, dates, expected):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", **dates)
        assert ids(answer) == expected


async def test_relative_dates_count_back_from_now(make_vault, mcp_session):
    now = dt.datetime.now(dt.UTC)
    recent = (now - dt.timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    older = (now - dt.timedelta(days=40)).strftime("%Y-%m-%dT%H:%M:%SZ")
    vault = make_vault({
        "recent.md": f"---\nid: recent\ncreated: {recent}\n---\nr\n",
        "older.md": f"---\nid: older\ncreated: {older}\n---\no\n",
        "ancient.md": "---\nid: ancient\ncreated: 2001-01-01\n---\nx\n",
    })
    async with mcp_session(vault) as c:
        assert ids(await c.call("memory_list", date_from="7d")) == ["recent"]
        assert ids(await c.call("memory_list", date_from="1w")) == ["recent"]
        assert ids(await c.call("memory_list", date_from="2m")) == ["recent", "older"]
        assert ids(await c.call("memory_list", date_from="1y", date_to="1m")) == ["older"]
        assert ids(await c.call("memory_list", date_to="7d")) == ["older", "ancient"]


@pytest.mark.parametrize("bad", [
    {"date_from": "2025-03", "date_to": "2025-02"},
    {"date_from": "2025-02-02", "date_to": "2025-02-01T23:59:59"},
    {"date_from": "yesterday"},
    {"date_to": "2025-02-30"},
    {"date_to": "7x"},
    {"date_from": ""},
])
async def test_bad_dates_are_invalid(make_vault, mcp_session, bad):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", **bad)
        assert answer["status"] == "invalid"
        assert any(name in answer["message"] for name in bad)


@pytest.mark.parametrize(("tags", "expected"), [
    ({"tags_any": ["red", "blue"]}, ["d", "b", "a"]),
    ({"tags_any": "proj"}, ["c", "a"]),              # one string; nested proj/x matches proj
    ({"tags_any": "#PROJ/X"}, ["a"]),
    ({"tags_all": ["red", "blue"]}, ["d"]),
    ({"tags_all": ["proj", "red"]}, ["a"]),
    ({"tags_none": "red"}, ["c", "b", "f", "e", "g"]),
    ({"tags_none": ["proj"]}, ["d", "b", "f", "e", "g"]),
    ({"tags_any": ["red"], "tags_none": ["blue"]}, ["a"]),
    ({"tags_any": "nope"}, []),
])
async def test_tag_filters(make_vault, mcp_session, tags, expected):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        assert ids(await c.call("memory_list", **tags)) == expected


@pytest.mark.parametrize("bad", [{"tags_any": 5}, {"tags_all": {"a": 1}}, {"tags_none": [["x"]]}])
async def test_bad_tag_arrays_are_invalid(make_vault, mcp_session, bad):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", **bad)
        assert answer["status"] == "invalid" and next(iter(bad)) in answer["message"]


async def test_limit_default_and_no_limit(make_vault, mcp_session):
    vault = make_vault({f"n{i:02}.md": f"---\ncreated: 2025-01-{i + 1:02}\n---\nnote {i}\n" for i in range(25)})
    async with mcp_session(vault) as c:
        default = await c.call("memory_list")
        assert default["count"] == 20 and default["next_offset"] == 20
        assert [m["path"] for m in default["memories"]][:2] == ["n24.md", "n23.md"]
        everything = await c.call("memory_list", limit=-1)
        assert everything["count"] == 25 and "next_offset" not in everything
        lenient = await c.call("memory_list", limit="5")
        assert lenient["count"] == 5
        last = await c.call("memory_list", offset=24)
        assert last["count"] == 1 and "next_offset" not in last
        past = await c.call("memory_list", offset=25)
        assert past["status"] == "none" and past["memories"] == [] and "25" in past["message"]


async def test_paging_with_limit_one_walks_every_row_exactly_once(make_vault, mcp_session):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        seen, offset = [], 0
        while True:
            page = await c.call("memory_list", limit=1, offset=offset, fields="id")
            seen += ids(page)
            if "next_offset" not in page:
                break
            offset = page["next_offset"]
        assert seen == NEWEST_FIRST


@pytest.mark.parametrize("bad", [
    {"limit": 0}, {"limit": -2}, {"limit": "ten"}, {"limit": 2.5}, {"offset": -1}, {"offset": "x"},
    {"preview_chars": 0}, {"preview_chars": 2001}, {"content_mode": "summary"},
    {"follow": "newest"}, {"sort_by_importance": "maybe"}, {"bogus": 1}, {"query": ["a"]},
])
async def test_bad_input_is_invalid_and_names_the_parameter(make_vault, mcp_session, bad):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", **bad)
        assert answer["status"] == "invalid"
        assert next(iter(bad)) in answer["message"]


async def test_preview_counts_code_points_and_marks_the_cut(make_vault, mcp_session):
    vault = make_vault({"long.md": "é" * 300, "short.md": "tiny"})
    async with mcp_session(vault) as c:
        rows = {m["path"]: m for m in (await c.call("memory_list"))["memories"]}
        assert rows["long.md"]["content_preview"] == "é" * 120 + "…"
        assert rows["short.md"]["content_preview"] == "tiny"
        rows = {m["path"]: m for m in (await c.call("memory_list", preview_chars=2000))["memories"]}
        assert rows["long.md"]["content_preview"] == "é" * 300
        one = (await c.call("memory_list", preview_chars=1, query="tiny"))["memories"][0]
        assert one["content_preview"] == "t…" and "content" not in one


async def test_fields_projection(make_vault, mcp_session):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        one = await c.call("memory_list", fields="title")
        assert one["memories"][0] == {"id": "d", "title": "Delta"}
        some = await c.call("memory_list", fields=["tags", "content_preview"], query="alpha plan")
        assert some["memories"] == [{"id": "a", "tags": ["proj/x", "red"],
                                     "content_preview": "The alpha body mentions foo-bar and Baz.\n"}]
        full = await c.call("memory_list", fields=["content"], content_mode="full", query="gamma")
        assert full["memories"] == [{"id": "c", "content": "Gamma text.\n"}]
        unknown = await c.call("memory_list", fields=["title", "colour"])
        assert unknown["status"] == "invalid"
        assert "fields" in unknown["message"] and "colour" in unknown["message"]
        assert "content_preview" in unknown["message"] and "superseded_by" in unknown["message"]
        mismatch = await c.call("memory_list", fields=["content"])
        assert mismatch["status"] == "invalid" and "content_mode" in mismatch["message"]


async def test_full_content_reads_the_file(make_vault, mcp_session):
    body = "line\n" * 1000
    vault = make_vault({"big.md": "---\nid: big\n---\n" + body})
    async with mcp_session(vault) as c:
        row = (await c.call("memory_list", content_mode="full"))["memories"][0]
        assert row["content"] == body and "content_preview" not in row and "warnings" not in row


async def test_full_content_of_a_huge_note_is_cut_with_a_warning_and_pages(make_vault, mcp_session):
    huge = ("x" * 99 + "\n") * 1000  # 100 KB
    notes = {
        "huge.md": f"---\nid: huge\ncreated: 2025-01-02\n---\n{huge}",
        "after.md": "---\nid: after\ncreated: 2025-01-01\n---\nsmall\n",
        "before.md": "---\nid: before\ncreated: 2025-01-03\n---\nsmall\n",
    }
    vault = make_vault(notes)
    async with mcp_session(vault) as c:
        seen, offset = [], 0
        for _ in range(5):
            result = await c.raw("memory_list", {"content_mode": "full", "limit": -1, "offset": offset})
            page = result.structured_content
            assert len(json.dumps(page, ensure_ascii=False)) <= 40_000
            assert len(json.dumps(page)) <= 40_000
            seen += ids(page)
            if "huge" in ids(page):
                row = next(m for m in page["memories"] if m["id"] == "huge")
                assert 20_000 < len(row["content"]) < len(huge) and huge.startswith(row["content"])
                assert row["content_truncated"] is True
                warning = " ".join(page["warnings"])
                assert "memory_read" in warning and f"offset={len(row['content'])}" in warning
            if "next_offset" not in page:
                break
            offset = page["next_offset"]
        assert seen == ["before", "huge", "after"]


async def test_full_content_pages_several_big_notes_under_the_bound(make_vault, mcp_session):
    notes = {f"n{i}.md": f"---\ncreated: 2025-01-0{i + 1}\n---\n" + f"{i}" * 15_000 for i in range(4)}
    vault = make_vault(notes)
    async with mcp_session(vault) as c:
        seen, offset, pages = [], 0, 0
        while True:
            page = await c.call("memory_list", content_mode="full", limit=-1, offset=offset)
            pages += 1
            assert len(json.dumps(page, ensure_ascii=False)) <= 40_000
            assert all(len(m["content"]) == 15_000 for m in page["memories"])  # whole, never cut
            seen += [m["path"] for m in page["memories"]]
            if "next_offset" not in page:
                break
            assert any("offset=" in w for w in page["warnings"])
            offset = page["next_offset"]
        assert seen == ["n3.md", "n2.md", "n1.md", "n0.md"] and pages == 2
