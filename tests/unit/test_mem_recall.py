"""mem_recall (docs/tools.md) through a real MCP client session, on real files."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.anyio


def note(created: str, body: str = "Body.\n", **keys: str) -> str:
    front = "".join(f"{k}: {v}\n" for k, v in {"created": created, **keys}.items())
    return f"---\n{front}---\n{body}"


async def recall(c, **args):
    return await c.call("mem_recall", output_format="structured", limit=500, **args)


def paths(answer) -> list[str]:
    return list(dict.fromkeys(r["source"] for r in answer.get("results", [])))


DATES = {
    "feb/leap.md": note("2024-02-29T12:00:00Z"),
    "feb/before-leap.md": note("2024-02-28T23:59:59Z"),
    "mar/first.md": note("2025-03-01T00:00:00Z"),
    "mar/last-second.md": note("2025-03-31T23:59:59Z"),
    "apr/first.md": note("2025-04-01T00:00:00Z"),
    "feb/last.md": note("2025-02-28T23:59:59Z"),
    "mar/mid-b.md": note("2025-03-15T10:00:00Z"),
    "mar/mid-a.md": note("2025-03-15T10:00:00Z"),
}


async def test_created_range_newest_first_ties_by_path(make_vault, mcp_session):
    async with mcp_session(make_vault(DATES)) as c:
        march = await recall(c, since="2025-03", until="2025-03")
        assert march["status"] == "ok" and march["kind"] == "recall"
        assert paths(march) == ["mar/last-second.md", "mar/mid-a.md", "mar/mid-b.md", "mar/first.md"]
        assert march["hints"] == ["until=2025-03 resolved to 2025-04-01T00:00:00+00:00 (exclusive)"]
        assert march["count"] == 4
        everything = await recall(c)
        assert paths(everything)[0] == "apr/first.md" and len(paths(everything)) == len(DATES)
        assert "hints" not in everything


async def test_partial_until_includes_the_last_second_of_its_month(make_vault, mcp_session):
    async with mcp_session(make_vault(DATES)) as c:
        answer = await recall(c, since="2025-03-31", until="2025-03")
        assert paths(answer) == ["mar/last-second.md"]
        feb = await recall(c, since="2025-02-28", until="2025-02-28")
        assert paths(feb) == ["feb/last.md"]
        year = await recall(c, since="2025", until="2025")
        assert len(paths(year)) == 6
        assert "resolved to 2026-01-01T00:00:00+00:00" in year["hints"][0]


async def test_leap_day(make_vault, mcp_session):
    async with mcp_session(make_vault(DATES)) as c:
        answer = await recall(c, since="2024-02-29", until="2024-02-29")
        assert paths(answer) == ["feb/leap.md"]
        leap_month = await recall(c, since="2024-02", until="2024-02")
        assert paths(leap_month) == ["feb/leap.md", "feb/before-leap.md"]
        assert "until=2024-02 resolved to 2024-03-01T00:00:00+00:00 (exclusive)" in leap_month["hints"]
        bad = await c.call("mem_recall", since="2025-02-29")
        assert bad["status"] == "invalid" and "since" in bad["message"]


async def test_full_datetime_until_is_exclusive(make_vault, mcp_session):
    async with mcp_session(make_vault(DATES)) as c:
        answer = await recall(c, since="2025-03-01T00:00:00Z", until="2025-04-01T00:00:00Z")
        assert "apr/first.md" not in paths(answer) and "mar/first.md" in paths(answer)
        assert "hints" not in answer  # a full datetime is used as written
        shifted = await recall(c, since="2025-03-15T11:00:00+01:00", until="2025-03-15T10:00:01Z")
        assert paths(shifted) == ["mar/mid-a.md", "mar/mid-b.md"]
        just_before = await recall(c, until="2025-03-15T10:00:00Z", since="2025-03-15")
        assert just_before["status"] == "none"


@pytest.mark.parametrize(("since", "until"), [("2025-04", "2025-03"), ("2025-03-02", "2025-03-02T00:00:00Z"),
                                              ("2025-03-01T00:00:00Z", "2025-03-01T00:00:00Z")])
async def test_since_not_before_until_is_invalid(make_vault, mcp_session, since, until):
    async with mcp_session(make_vault(DATES)) as c:
        answer = await c.call("mem_recall", since=since, until=until)
        assert answer["status"] == "invalid" and "since" in answer["message"] and "until" in answer["message"]


@pytest.mark.parametrize("bad", [
    {"limit": 0}, {"limit": 501}, {"limit": "ten"}, {"limit": -1}, {"offset": -1},
    {"output_format": "yaml"}, {"since": "last week"}, {"until": "2025-13"}, {"since": ""},
    {"namespace": "a,b*"}, {"scope": "user,project_*"}, {"namespace": " , "}, {"tag_filter": ","},
    {"source_filter": "  "}, {"bogus": 1}, {"since": "7d"},
])
async def test_bad_input_is_invalid_and_names_the_parameter(make_vault, mcp_session, bad):
    async with mcp_session(make_vault(DATES)) as c:
        answer = await c.call("mem_recall", **bad)
        assert answer["status"] == "invalid"
        assert next(iter(bad)) in answer["message"]


async def test_limit_500_and_coerced_limit_are_accepted(make_vault, mcp_session):
    async with mcp_session(make_vault(DATES)) as c:
        assert (await c.call("mem_recall", limit=500))["status"] == "ok"
        assert (await c.call("mem_recall", limit="3"))["count"] == 3
        assert (await c.call("mem_recall", output_format="STRUCTURED", limit=1))["count"] == 1


NAMESPACES = {
    "a.md": note("2025-01-01", namespace="work"),
    "b.md": note("2025-01-02", namespace="Personal"),
    "c.md": note("2025-01-03"),
    "old1.md": note("2025-01-04", "# One\ntext\n# Two\ntext\n", namespace="archive:old"),
    "old2.md": note("2025-01-05", namespace="archive:older"),
    "proj.md": note("2025-01-06", namespace="project:x"),
}


async def test_archive_namespaces_hidden_with_a_hint_and_shown_when_named(make_vault, mcp_session):
    async with mcp_session(make_vault(NAMESPACES)) as c:
        default = await recall(c)
        assert sorted(paths(default)) == ["a.md", "b.md", "c.md", "proj.md"]
        hint = next(h for h in default["hints"] if "hidden" in h)
        assert "archive:old (2 chunks)" in hint and "archive:older (1 chunks)" in hint
        star = await recall(c, namespace="*")
        assert sorted(paths(star)) == ["a.md", "b.md", "c.md", "proj.md"]
        assert any("archive:old (2 chunks)" in h for h in star["hints"])
        archived = await recall(c, namespace="archive:*")
        assert paths(archived) == ["old2.md", "old1.md"] and "hints" not in archived
        one = await recall(c, namespace="archive:old")
        assert paths(one) == ["old1.md"]
        mixed = await recall(c, namespace="work,archive:older")
        assert paths(mixed) == ["old2.md", "a.md"]
        assert all(r["namespace"] == "archive:older" for r in mixed["results"][:1])


async def test_namespace_value_list_and_glob(make_vault, mcp_session):
    async with mcp_session(make_vault(NAMESPACES)) as c:
        assert paths(await recall(c, namespace="WORK")) == ["a.md"]
        assert paths(await recall(c, namespace="work, personal")) == ["b.md", "a.md"]
        assert paths(await recall(c, namespace="project:*")) == ["proj.md"]
        assert paths(await recall(c, namespace="default")) == ["c.md"]
        none = await recall(c, namespace="nowhere")
        assert none["status"] == "none" and "namespace 'nowhere' matched no memory" in none["hints"]
        glob = await recall(c, namespace="zz*")
        assert glob["status"] == "none" and any("matched no namespace" in h for h in glob["hints"])


SCOPES = {
    "user.md": note("2025-01-01"),
    "p-shared.md": note("2025-01-02", scope="project_shared", project="p"),
    "p-local.md": note("2025-01-03", scope="project_local", project="P"),
    "q-local.md": note("2025-01-04", scope="project_local", project="q"),
    "q-shared.md": note("2025-01-05", scope="project_shared", project="q"),
}


async def test_default_scope_is_user_outside_a_project(make_vault, mcp_session):
    async with mcp_session(make_vault(SCOPES)) as c:
        assert paths(await recall(c)) == ["user.md"]
        assert paths(await recall(c, scope="project_local")) == ["q-local.md", "p-local.md"]
        assert paths(await recall(c, scope="user,project_shared")) == ["q-shared.md", "p-shared.md", "user.md"]
        assert paths(await recall(c, scope="project_*")) == ["q-shared.md", "q-local.md", "p-local.md", "p-shared.md"]


async def test_default_scope_in_a_project_adds_that_projects_tiers(make_vault, mcp_session):
    async with mcp_session(make_vault(SCOPES, project="p")) as c:
        default = await recall(c)
        assert paths(default) == ["p-local.md", "p-shared.md", "user.md"]
        assert {r["scope"] for r in default["results"]} == {"user", "project_shared", "project_local"}
        assert paths(await recall(c, scope="project_local")) == ["p-local.md"]
        assert paths(await recall(c, scope="user")) == ["user.md"]


SOURCES = {
    "Notes/Meetings/2025 standup.md": note("2025-01-01"),
    "notes/ideas.md": note("2025-01-02"),
    "work/notes-archive/x.md": note("2025-01-03"),
    "work/deep/a/b/c.md": note("2025-01-04"),
}


async def test_source_filter_substring_and_whole_path_glob(make_vault, mcp_session):
    async with mcp_session(make_vault(SOURCES)) as c:
        assert paths(await recall(c, source_filter="NOTES")) == [
            "work/notes-archive/x.md", "notes/ideas.md", "Notes/Meetings/2025 standup.md"]
        assert paths(await recall(c, source_filter="notes/*")) == ["notes/ideas.md", "Notes/Meetings/2025 standup.md"]
        assert paths(await recall(c, source_filter="*standup*")) == ["Notes/Meetings/2025 standup.md"]
        # A glob must match the whole path ('*' crosses '/'; '.md' may be left out).
        assert (await recall(c, source_filter="deep/*"))["status"] == "none"
        assert paths(await recall(c, source_filter="work/*/c.md")) == ["work/deep/a/b/c.md"]
        assert paths(await recall(c, source_filter="work/deep/a/b/?")) == ["work/deep/a/b/c.md"]
        assert paths(await recall(c, source_filter="[n]otes/ideas")) == ["notes/ideas.md"]
        nothing = await recall(c, source_filter="zzz")
        assert nothing["status"] == "none" and nothing["count"] == 0
        assert "source_filter 'zzz' matched no path in the vault" in nothing["hints"]


TAGS = {
    "py.md": note("2025-01-01", tags="[lang/python, tools]"),
    "rust.md": note("2025-01-02", tags="[lang/rust]"),
    "plain.md": note("2025-01-03", tags="[misc]"),
    "inline.md": note("2025-01-04", "Body with #Ops/Deploy inline.\n"),
    "newest.md": note("2025-01-05"),
}


async def test_tag_filter_any_of_nested_and_before_limit(make_vault, mcp_session):
    async with mcp_session(make_vault(TAGS)) as c:
        assert paths(await recall(c, tag_filter="lang")) == ["rust.md", "py.md"]
        assert paths(await recall(c, tag_filter="tools, misc")) == ["plain.md", "py.md"]
        assert paths(await recall(c, tag_filter="#ops")) == ["inline.md"]
        assert paths(await recall(c, tag_filter="LANG/Python")) == ["py.md"]
        first = await c.call("mem_recall", tag_filter="lang", limit=1, output_format="structured")
        assert paths(first) == ["rust.md"] and first["next_offset"] == 1
        assert first["results"][0]["tags"] == ["lang/rust"]
        partly = await recall(c, tag_filter="misc,nosuch")
        assert paths(partly) == ["plain.md"] and "tag_filter: tag 'nosuch' matched no memory" in partly["hints"]
        none = await recall(c, tag_filter="nosuch")
        assert none["status"] == "none" and none["results"] == []
        assert any("nosuch" in h for h in none["hints"])


def long_section(paragraphs: int = 20) -> str:
    return "\n\n".join(f"Para {i:02d} " + ("lorem ipsum dolor " * 16).strip() for i in range(paragraphs))


CHUNKY = {
    "plain.md": note("2025-01-01", "Just text, no headings.\nSecond line.\n"),
    "outline.md": note("2025-01-02", (
        "Intro before headings.\n\n# Project\n\n## Goals\nShip it.\n\n## Empty\n\n### Deep\nDeep text.\n\n"
        "# Other\nOther text.\n\n## Trailing\n")),
    "code.md": note("2025-01-03", (
        "# Real\nText.\n\n```bash\n# not a heading\necho hi\n```\n\n    ```\n    # indented fence\n    ```\n"
        "## Sub\nSub text.\n")),
    "long.md": note("2025-01-04", "# Big\n\n## Long\n" + long_section() + "\n\n## After\nTail.\n"),
    "lines.md": note("2025-01-05", "## Lines\n" + "\n".join(f"line {i} " + "x" * 60 for i in range(80)) + "\n"),
    "sentences.md": note("2025-01-06", "## Sentences\n" + "".join(f"Sentence {i} says a thing. " for i in range(200))),
    "hard.md": note("2025-01-07", "## Hard\n" + "y" * 4500 + "\n"),
    "empty.md": note("2025-01-08", ""),
    "only-headings.md": note("2025-01-09", "# Alone\n\n## Nothing\n"),
}


def chunks_of(answer, path):
    return [r for r in answer["results"] if r["source"] == path]


async def test_heading_chunks_hierarchy_and_numbering(make_vault, mcp_session):
    async with mcp_session(make_vault(CHUNKY)) as c:
        answer = await recall(c)
        plain = chunks_of(answer, "plain.md")
        assert len(plain) == 1 and plain[0]["hierarchy"] == [] and plain[0]["content"].startswith("Just text")
        outline = chunks_of(answer, "outline.md")
        assert [r["hierarchy"] for r in outline] == [
            [], ["Project", "Goals"], ["Project", "Empty", "Deep"], ["Other"]]
        assert [r["chunk_id"] for r in outline] == [f"{outline[0]['uid']}#{i}" for i in range(4)]
        assert outline[0]["content"] == "Intro before headings."
        # A heading with nothing under it is folded into the next chunk, never a chunk on its own.
        assert outline[1]["content"] == "# Project\n\n## Goals\nShip it."
        assert outline[2]["content"] == "## Empty\n\n### Deep\nDeep text."
        assert outline[3]["content"] == "# Other\nOther text.\n\n## Trailing"
        only = chunks_of(answer, "only-headings.md")
        assert len(only) == 1 and only[0]["content"] == "# Alone\n\n## Nothing"
        empty = chunks_of(answer, "empty.md")
        assert len(empty) == 1 and empty[0]["content"] == "" and empty[0]["chunk_id"].endswith("#0")
        row = outline[0]
        assert set(row) == {"chunk_id", "uid", "permalink", "namespace", "scope", "source", "hierarchy",
                            "content", "created", "tags", "status"}
        assert row["permalink"] == "memory://outline" and row["created"] == "2025-01-02T00:00:00+00:00"
        assert (row["namespace"], row["scope"], row["status"]) == ("default", "user", "active")


async def test_headings_inside_code_are_not_headings(make_vault, mcp_session):
    async with mcp_session(make_vault(CHUNKY)) as c:
        code = chunks_of(await recall(c), "code.md")
        assert [r["hierarchy"] for r in code] == [["Real"], ["Real", "Sub"]]
        assert "# not a heading" in code[0]["content"] and "# indented fence" in code[0]["content"]


async def test_long_sections_split_near_2000_at_the_best_break(make_vault, mcp_session):
    async with mcp_session(make_vault(CHUNKY)) as c:
        answer = await recall(c)
        long = chunks_of(answer, "long.md")
        assert long[-1]["hierarchy"] == ["Big", "After"]
        pieces = [r for r in long if r["hierarchy"] == ["Big", "Long"]]
        assert len(pieces) >= 3
        for r in pieces[1:]:
            assert r["content"].startswith("## Long\n")  # continuations repeat the heading line
        for r in pieces:
            assert len(r["content"]) <= 2000 + len("# Big\n\n## Long\n")
        assert all(len(r["content"]) >= 1000 for r in pieces[:-1])
        first = pieces[0]["content"]
        assert first.startswith("# Big\n\n## Long\nPara 00")
        # Paragraph breaks: every piece holds whole paragraphs.
        texts = [r["content"].split("\n", 1)[1] for r in pieces[1:]]
        assert all(t.startswith("Para ") and t.rstrip().endswith("dolor") for t in texts)
        rejoined = "\n\n".join([first.split("## Long\n", 1)[1], *texts])
        assert rejoined == long_section()
        lines = chunks_of(answer, "lines.md")
        assert len(lines) >= 3 and all(r["content"].startswith("## Lines\nline ") for r in lines)
        assert all(r["content"].endswith("x" * 60) and len(r["content"]) <= 2000 + 9 for r in lines)
        sentences = chunks_of(answer, "sentences.md")
        assert len(sentences) >= 3
        assert all(r["content"].endswith("says a thing.") and len(r["content"]) <= 2000 + 14 for r in sentences)
        hard = chunks_of(answer, "hard.md")
        assert len(hard) == 3 and len(hard[0]["content"]) == 2000
        assert "".join(r["content"].removeprefix("## Hard\n") for r in hard) == "y" * 4500


async def test_page_walk_with_limit_one_returns_every_chunk_once(make_vault, mcp_session):
    async with mcp_session(make_vault(CHUNKY)) as c:
        whole = await recall(c)
        assert "next_offset" not in whole
        expected = [r["chunk_id"] for r in whole["results"]]
        seen, offset = [], 0
        while True:
            page = await c.call("mem_recall", limit=1, offset=offset, output_format="structured")
            seen += [r["chunk_id"] for r in page["results"]]
            if "next_offset" not in page:
                break
            assert page["next_offset"] == offset + 1
            assert any("limit 1 reached" in h for h in page["hints"])
            offset = page["next_offset"]
        assert seen == expected and len(set(seen)) == len(seen)
        past = await c.call("mem_recall", offset=len(expected))
        assert past["status"] == "none" and any("past the last chunk" in h for h in past["hints"])


async def test_answers_stay_under_the_size_bound_and_page(make_vault, mcp_session):
    notes = {f"big/n{i:02d}.md": note(f"2025-01-{i + 1:02d}", "\n\n".join(
        f"## Part {j}\n" + "word " * 390 for j in range(6))) for i in range(20)}
    async with mcp_session(make_vault(notes)) as c:
        for output in ("structured", "compact"):
            seen, offset, pages = 0, 0, 0
            while True:
                page = await c.call("mem_recall", limit=500, offset=offset, output_format=output)
                assert len(json.dumps(page, ensure_ascii=False)) <= 40_000
                seen += page["count"]
                pages += 1
                if "next_offset" not in page:
                    break
                assert any("size bound" in h for h in page["hints"])
                offset = page["next_offset"]
            assert seen == 120 and (pages > 1 or output == "compact")


async def test_compact_text_shape(make_vault, mcp_session):
    async with mcp_session(make_vault(CHUNKY)) as c:
        answer = await c.call("mem_recall", limit=500)
        assert set(answer) <= {"status", "kind", "count", "text", "hints", "next_offset"}
        assert answer["kind"] == "recall" and "results" not in answer
        blocks = answer["text"].split("\n\n[")
        assert len(blocks) == answer["count"]
        header = re.compile(r"^\[?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00)\] (memory://\S+)#(\d+)( \| .+)?$")
        for block in blocks:
            head, _, content = block.partition("\n")
            assert header.match(head), head
            if len(content) > 400:
                assert re.search(r"… \[\+\d+ chars, see memory_read\]$", content)
        assert blocks[0].startswith("[2025-01-09T00:00:00+00:00] memory://only-headings#0 | Alone")
        long = next(b for b in blocks if "memory://long#1 | Big > Long" in b)
        cut = long.split("\n", 1)[1]
        content = chunks_of(await recall(c), "long.md")[1]["content"]
        assert cut == f"{content[:400]}… [+{len(content) - 400} chars, see memory_read]"


async def test_nothing_matched_answers_none_with_reasons(make_vault, mcp_session):
    async with mcp_session(make_vault(DATES)) as c:
        answer = await c.call("mem_recall", since="1990", until="1991")
        assert answer["status"] == "none" and answer["count"] == 0
        assert "until '1991' is before the oldest memory (created 2024-02-28T23:59:59+00:00)" in answer["hints"]
        assert answer["text"]
        together = await recall(c, since="2025-04", source_filter="feb/")
        assert together["status"] == "none"
        assert "no memory matches all the filters together" in together["hints"]


async def test_archived_memories_are_recalled_with_their_status(make_vault, mcp_session):
    vault = make_vault({"done.md": note("2025-01-01", "- [x] shipped\n", type="task"),
                        "live.md": note("2025-01-02")})
    async with mcp_session(vault) as c:
        answer = await recall(c)
        rows = [(r["source"], r["status"]) for r in answer["results"]]
        assert rows == [("live.md", "active"), ("done.md", "archived")]


async def test_body_comes_from_the_file(make_vault, mcp_session):
    vault = make_vault({"a.md": note("2025-01-01", "# Old\nold text\n")})
    (vault.root / "a.md").write_text(note("2025-01-01", "# New\nnew text\n"), encoding="utf-8")
    async with mcp_session(vault) as c:
        answer = await recall(c)
        assert answer["results"][0]["content"] == "# New\nnew text"
