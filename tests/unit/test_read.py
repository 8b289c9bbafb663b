"""memory_read and list_domains (docs/tools.md) through a real MCP client session."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from vault_mem import settings
from vault_mem.vault.frontmatter import split_frontmatter

pytestmark = pytest.mark.anyio


def size(answer: dict[str, Any]) -> int:
    return len(json.dumps(answer, ensure_ascii=False))


REFS = {
    "proj/sub/Deploy Guide.md": """
        ---
        id: dg-1
        title: Deploy handbook
        aliases: [Shipping]
        type: task
        tags: [ops, deploy/prod]
        updated: 2025-02-01T10:00:00Z
        owner: dana
        ---
        - [x] build
        - [ ] ship
        """,
    "proj/Other.md": "Other note.\n",
}


@pytest.mark.parametrize("ref", [
    "dg-1", "DG-1", "memory://proj/sub/Deploy Guide", "MEMORY://proj/sub/deploy guide",
    "proj/sub/Deploy Guide.md", "proj/sub/Deploy Guide", "PROJ/SUB/deploy guide.MD",
    "Deploy Guide", "deploy guide", "Deploy handbook", "DEPLOY HANDBOOK", "shipping",
])
async def test_every_ref_stage_finds_the_note(make_vault, mcp_session, ref):
    vault = make_vault(REFS)
    async with mcp_session(vault) as c:
        a = await c.call("memory_read", ref=ref)
    assert a["status"] == "ok" and a["uid"] == "dg-1"
    assert a["permalink"] == "memory://proj/sub/Deploy Guide"
    assert a["path"] == "proj/sub/Deploy Guide.md" and a["domain"] == "proj/sub"
    assert a["title"] == "Deploy handbook" and a["aliases"] == ["Shipping"]
    assert a["type"] == "task" and a["tags"] == ["ops", "deploy/prod"]
    assert a["updated"] == "2025-02-01T10:00:00+00:00"
    assert a["memory_status"] == "active"
    assert a["state"] == "open" and a["progress"] == {"done": 1, "total": 2}
    assert a["metadata"] == {"owner": "dana"}
    assert a["body"] == "- [x] build\n- [ ] ship\n"
    assert a["body_chars"] == len(a["body"]) and a["est_tokens"] == -(-len(a["body"]) // 4)
    assert a["offset"] == 0 and "next_offset" not in a
    path = Path(vault.root) / "proj/sub/Deploy Guide.md"
    assert a["etag"] == hashlib.blake2b(path.read_bytes(), digest_size=12).hexdigest()
    for key in ("importance", "namespace", "scope", "project", "paths", "agent", "supersedes",
                "superseded_by", "problems", "links", "backlinks", "lineage"):
        assert key in a


async def test_read_sees_the_file_as_it_is_now_and_a_gone_file_is_not_found(make_vault, mcp_session):
    vault = make_vault(REFS)
    path = Path(vault.root) / "proj/Other.md"
    path.write_text("---\ntitle: Renamed inside\n---\nNew body.\n", encoding="utf-8")
    async with mcp_session(vault) as c:
        a = await c.call("memory_read", ref="proj/Other")
        assert a["title"] == "Renamed inside" and a["body"] == "New body.\n"
        path.unlink()
        gone = await c.call("memory_read", ref="proj/Other")
        assert gone["status"] == "not_found"


async def test_titles_compare_after_nfc(make_vault, mcp_session):
    vault = make_vault({
        "a/decomposed.md": "---\ntitle: \"Cafe\u0301 notes\"\n---\nOne.\n",
        "a/composed.md": "---\ntitle: \"Cr\u00e8me br\u00fbl\u00e9e\"\n---\nTwo.\n",
    })
    async with mcp_session(vault) as c:
        one = await c.call("memory_read", ref="CAF\u00c9 NOTES")
        two = await c.call("memory_read", ref="cre\u0300me bru\u0302le\u0301e")
    assert one["path"] == "a/decomposed.md"
    assert two["path"] == "a/composed.md"


async def test_ambiguous_ref_lists_every_candidate(make_vault, mcp_session):
    vault = make_vault({
        "x/one.md": "---\ntitle: Same\n---\nA.\n",
        "y/two.md": "---\ntitle: same\n---\nB.\n",
    })
    async with mcp_session(vault) as c:
        a = await c.call("memory_read", ref="Same")
        missing = await c.call("memory_read", ref="nothing like it")
    assert a["status"] == "invalid" and a["param"] == "ref"
    assert "memory://x/one" in a["message"] and "memory://y/two" in a["message"]
    assert a["candidates"] == ["memory://x/one", "memory://y/two"]
    assert missing["status"] == "not_found"


@pytest.mark.parametrize("ref", [
    "../x", "a/../../x", "/etc/passwd", "~/x", "C:/x", "c:\\x", "a\\b", "%2e%2e/x", "a%2Fb",
    "a\u2215b", "\uff0e\uff0e/x", "a\u2044b", ".obsidian/app", "a/.git/config", "a\x00b",
    "memory://../x", "memory:///etc/passwd",
])
async def test_paths_that_leave_the_vault_are_refused(make_vault, mcp_session, ref):
    vault = make_vault(REFS)
    async with mcp_session(vault) as c:
        a = await c.call("memory_read", ref=ref)
    assert a["status"] == "invalid" and a["param"] == "ref", a


async def test_problems_are_shown(make_vault, mcp_session):
    vault = make_vault({
        "broken.md": "---\ntitle: [unclosed\ntags: - @x\n---\nBody survives.\n",
        "a/dup1.md": "---\nid: same-id\n---\nOne.\n",
        "b/dup2.md": "---\nid: same-id\n---\nTwo.\n",
    })
    async with mcp_session(vault) as c:
        broken = await c.call("memory_read", ref="broken")
        dup = await c.call("memory_read", ref="a/dup1")
    assert broken["status"] == "ok" and broken["problems"]
    assert "Body survives." in broken["body"]
    assert any("memory://b/dup2" in p for p in dup["problems"])


def varied_body(n: int) -> str:
    pieces = ["plain line {i}\n", "quote \" and back\\slash {i}\n", "caf\u00e9 \U0001f642 {i}\t\n",
              "tab\tcontrol\x01 {i}\n"]
    out: list[str] = []
    total = 0
    i = 0
    while total < n:
        piece = pieces[i % len(pieces)].format(i=i)
        out.append(piece)
        total += len(piece)
        i += 1
    return "".join(out)[:n]


@pytest.mark.parametrize(("body", "max_chars"), [
    (varied_body(200_000), 30_000),
    (varied_body(200_000), 7_777),
    ("\x01" * 60_000, 30_000),  # six JSON characters per code point: pages must shrink
])
async def test_body_paging_walks_every_character_once(make_vault, mcp_session, body, max_chars):
    vault = make_vault({"big.md": "---\nid: big\n---\n" + body})
    text = (Path(vault.root) / "big.md").read_text(encoding="utf-8")
    expected = split_frontmatter(text).body
    assert len(expected) >= 60_000
    pages: list[str] = []
    async with mcp_session(vault) as c:
        offset = 0
        while True:
            a = await c.call("memory_read", ref="big", offset=offset, max_chars=max_chars)
            assert a["status"] == "ok" and a["offset"] == offset
            assert size(a) < settings.current().max_answer_chars
            assert 0 < len(a["body"]) <= max_chars
            assert a["body_chars"] == len(expected) and a["est_tokens"] == -(-len(expected) // 4)
            pages.append(a["body"])
            if "next_offset" not in a:
                break
            assert a["next_offset"] == offset + len(a["body"])
            if len(a["body"]) < max_chars:
                assert "next_offset" in a["message"]
            offset = a["next_offset"]
    assert "".join(pages) == expected
    assert len(pages) >= -(-len(expected) // max_chars)


@pytest.mark.parametrize("bad", [{"max_chars": 0}, {"max_chars": 30001}, {"max_chars": "ten"},
                                 {"max_chars": 2.5}, {"offset": -1}, {"offset": "x"}, {"offset": 999},
                                 {"bogus": 1}])
async def test_bad_paging_input_is_invalid(make_vault, mcp_session, bad):
    vault = make_vault(REFS)
    async with mcp_session(vault) as c:
        a = await c.call("memory_read", ref="dg-1", **bad)
    name = next(iter(bad))
    assert a["status"] == "invalid" and a["param"] == name and name in a["message"]
    async with mcp_session(vault) as c:
        missing = await c.call("memory_read")
    assert missing["status"] == "invalid" and missing["param"] == "ref"


async def test_huge_record_is_cut_and_says_so(make_vault, mcp_session):
    tags = "\n".join(f"  - tag{i}" for i in range(10_000))
    links = " ".join(f"[[Link {i}]]" for i in range(2_000))
    text = (f"---\nid: huge\ntags:\n{tags}\nblob: {'b' * 60_000}\nsmall: kept\n---\n"
            f"{links}\n" + "body text\n" * 5_000)
    vault = make_vault({"huge.md": text})
    expected = split_frontmatter(text).body
    async with mcp_session(vault) as c:
        pages: list[str] = []
        offset = 0
        while True:
            a = await c.call("memory_read", ref="huge", offset=offset)
            assert a["status"] == "ok" and size(a) < settings.current().max_answer_chars
            pages.append(a["body"])
            if "next_offset" not in a:
                break
            offset = a["next_offset"]
    assert "".join(pages) == expected
    cut = a["truncated_fields"]
    assert cut["tags"]["total"] == 10_000 and cut["tags"]["shown"] == len(a["tags"]) < 10_000
    assert cut["links"]["total"] == 2_000 and len(a["links"]) == cut["links"]["shown"]
    assert "metadata" in cut and "tags" in a["message"] and "metadata" in a["message"]
    assert a["uid"] == "huge" and a["etag"] and a["permalink"] == "memory://huge"


LINKS = {
    "work/proj/Linker.md": """
        ---
        see: "[[misc/aliased]]"
        ---
        Path [[work/other/Deep Note]], tail [[other/Deep Note]], name tie [[Twin]],
        title [[Titled One]], alias [[Nick]], parts [[Deep Note#Section|shown text]],
        embed ![[Embedded]], relative [rel](../other/Deep%20Note.md), escaping [out](../../../x.md),
        shortest [[Pair]], missing [[Nowhere]], again [[Nowhere]], self [[#Local]].
        `[[in code]]`
        """,
    "work/other/Deep Note.md": "Deep.\n",
    "work/proj/sub/Twin.md": "Near twin.\n",
    "work/zzz/Twin.md": "Middle twin.\n",
    "elsewhere/Twin.md": "Far twin.\n",
    "misc/t1.md": "---\ntitle: Titled One\n---\nT.\n",
    "misc/aliased.md": "---\naliases: [Nick]\n---\nA.\n",
    "misc/Embedded.md": "E.\n",
    "pp/Pair.md": "longer path.\n",
    "q/Pair.md": "shorter path.\n",
}


async def test_links_resolve_like_obsidian(make_vault, mcp_session):
    vault = make_vault(LINKS)
    async with mcp_session(vault) as c:
        a = await c.call("memory_read", ref="work/proj/Linker")
    got = [(lk["target"], lk["permalink"]) for lk in a["links"]]
    assert got == [
        ("work/other/Deep Note", "memory://work/other/Deep Note"),
        ("other/Deep Note", "memory://work/other/Deep Note"),
        ("Twin", "memory://work/proj/sub/Twin"),
        ("Titled One", "memory://misc/t1"),
        ("Nick", "memory://misc/aliased"),
        ("Deep Note", "memory://work/other/Deep Note"),
        ("Embedded", "memory://misc/Embedded"),
        ("Pair", "memory://q/Pair"),
        ("Nowhere", None),
        ("../other/Deep Note.md", "memory://work/other/Deep Note"),
        ("../../../x.md", None),
        ("misc/aliased", "memory://misc/aliased"),
    ]
    by_target = {lk["target"]: lk for lk in a["links"]}
    assert by_target["Deep Note"]["heading"] == "Section" and by_target["Deep Note"]["resolved"]
    assert by_target["Embedded"]["embed"] is True
    assert by_target["../other/Deep Note.md"]["markdown"] is True
    assert by_target["Nowhere"]["resolved"] is False


async def test_backlinks_count_only_links_that_resolve_here(make_vault, mcp_session):
    vault = make_vault({
        "a/Note.md": "---\ntitle: Alpha Note\naliases: [AN]\n---\nA.\n",
        "b/Note.md": "B.\n",
        "a/Linker1.md": "[[Note]]\n",
        "b/sub/L2.md": "[[Note]]\n",
        "c/L3.md": "[[a/Note]]\n",
        "c/L4.md": "[x](../b/Note.md)\n",
        "d/L5.md": "[[Alpha Note]] and [[an]]\n",
        "d/L6.md": "---\nrelated: \"[[a/Note.md]]\"\n---\nfrom frontmatter\n",
        "e/L7.md": "`[[a/Note]]` in code only\n",
    })
    async with mcp_session(vault) as c:
        a = await c.call("memory_read", ref="a/Note")
        b = await c.call("memory_read", ref="b/Note")
    assert a["backlinks"] == ["memory://a/Linker1", "memory://c/L3", "memory://d/L5", "memory://d/L6"]
    assert b["backlinks"] == ["memory://b/sub/L2", "memory://c/L4"]


async def test_lineage_fields(make_vault, mcp_session):
    vault = make_vault({
        "d/v1.md": "---\nid: v1\ncreated: 2024-01-01\n---\nOld.\n",
        "d/v2.md": "---\nid: v2\ncreated: 2024-02-01\nsupersedes: v1\n---\nMiddle.\n",
        "d/v3.md": "---\nid: v3\ncreated: 2024-03-01\n---\nNew.\n",
        "d/v2b.md": "---\nid: v2b\ncreated: 2024-02-02\nsuperseded_by: \"[[v3]]\"\nsupersedes: v2\n---\nX.\n",
    })
    async with mcp_session(vault) as c:
        one = await c.call("memory_read", ref="v1")
        two = await c.call("memory_read", ref="v2")
    assert one["lineage"]["superseded_by"] == ["memory://d/v2"]
    assert one["lineage"]["latest"] == ["memory://d/v3"]
    assert two["supersedes"] == ["v1"]
    assert two["lineage"]["supersedes"] == ["memory://d/v1"]
    assert two["lineage"]["superseded_by"] == ["memory://d/v2b"]


async def test_compat_aliases_answer_like_memory_read(make_vault, mcp_session):
    plain = make_vault(REFS)
    async with mcp_session(plain) as c:
        names = {tool.name for tool in (await c.client.list_tools()).tools}
        assert {"memory_read", "list_domains"} <= names
        assert not names & {"get_memory", "memory_get"}
    vault = make_vault(REFS, compat=True)
    async with mcp_session(vault) as c:
        names = {tool.name for tool in (await c.client.list_tools()).tools}
        assert {"get_memory", "memory_get"} <= names
        want = await c.call("memory_read", ref="dg-1", max_chars=5)
        assert await c.call("get_memory", uid="dg-1", max_chars=5) == want
        assert await c.call("memory_get", memory_id="dg-1", max_chars=5) == want
        bad = await c.call("get_memory", uid="dg-1", max_chars=0)
        assert bad["status"] == "invalid"


async def test_permalink_is_a_resource(make_vault, mcp_session):
    vault = make_vault(REFS)
    async with mcp_session(vault) as c:
        result = await c.client.read_resource("memory://proj/sub/Deploy Guide")
    text = (Path(vault.root) / "proj/sub/Deploy Guide.md").read_text(encoding="utf-8")
    assert result.contents[0].text == text


def expand_reserved(template: str, path: str) -> str:
    """RFC 6570 reserved expansion (``{+var}``) of ``template``'s one variable: characters
    outside the unreserved and reserved sets are percent-encoded (UTF-8), the rest are kept."""
    from urllib.parse import quote

    name = template[template.index("{+") + 2:template.index("}")]
    return template.replace("{+" + name + "}", quote(path, safe=":/?#[]@!$&'()*+,;=-._~"))


async def test_the_note_template_is_listed_and_reads_every_note_it_expands_to(make_vault, mcp_session):
    notes = {**REFS, "Café/Déjà vu #2.md": "Accents, a hash and a space.\n"}
    vault = make_vault(notes)
    async with mcp_session(vault) as c:
        templates = (await c.client.list_resource_templates()).resource_templates
        assert [(t.uri_template, t.name, t.mime_type) for t in templates] == \
            [("memory://{+path}", "note", "text/markdown")]
        assert templates[0].description
        for rel in notes:
            uri = expand_reserved(templates[0].uri_template, rel[:-3])
            result = await c.client.read_resource(uri)
            assert result.contents[0].text == (Path(vault.root) / rel).read_text(encoding="utf-8"), uri
            assert result.contents[0].mime_type == "text/markdown"


DOMAINS = {
    "root.md": "---\nupdated: 2025-06-01\n---\nAt the root.\n",
    "a/one.md": "---\nupdated: 2025-01-01\n---\n.\n",
    "a/b/two.md": "---\nupdated: 2025-03-01T12:00:00Z\nstatus: archived\n---\n.\n",
    "a/b/c/three.md": "---\nupdated: 2025-02-01\ntype: task\n---\n- [x] done\n",
    "a-b/four.md": "---\nupdated: 2024-01-01\n---\n.\n",
    "B/five.md": "---\nupdated: 2024-05-01\n---\n.\n",
    "b/deep/er/six.md": "---\nupdated: 2024-06-01\n---\n.\n",
}


async def test_list_domains_counts_updated_and_order(make_vault, mcp_session):
    vault = make_vault(DOMAINS)
    async with mcp_session(vault) as c:
        a = await c.call("list_domains")
    rows = {r["domain"]: r for r in a["domains"]}
    assert [r["domain"] for r in a["domains"]] == ["", "a", "a/b", "a/b/c", "a-b", "B", "b", "b/deep", "b/deep/er"]
    assert rows[""] == {"domain": "", "active": 5, "archived": 2, "updated": "2025-06-01T00:00:00+00:00"}
    assert rows["a"] == {"domain": "a", "active": 1, "archived": 2, "updated": "2025-03-01T12:00:00+00:00"}
    assert rows["a/b/c"] == {"domain": "a/b/c", "active": 0, "archived": 1, "updated": "2025-02-01T00:00:00+00:00"}
    assert rows["b"]["active"] == 1 and rows["b/deep"]["active"] == 1
    assert "next_offset" not in a
    async with mcp_session(vault) as c:
        bad = await c.call("list_domains", offset=-1)
        unknown = await c.call("list_domains", domain="a")
        past = await c.call("list_domains", offset=50)
    assert bad["status"] == "invalid" and bad["param"] == "offset"
    assert unknown["status"] == "invalid"
    assert past["status"] == "none"


async def test_list_domains_pages_within_the_bound(make_vault, mcp_session):
    folders = [f"d{i:03d}-" + "x" * 200 for i in range(200)]
    vault = make_vault({f"{folder}/n.md": "x\n" for folder in folders})
    seen: list[str] = []
    pages = 0
    async with mcp_session(vault) as c:
        offset = 0
        while True:
            a = await c.call("list_domains", offset=offset)
            assert a["status"] == "ok" and size(a) < settings.current().max_answer_chars
            seen += [r["domain"] for r in a["domains"]]
            pages += 1
            if "next_offset" not in a:
                break
            offset = a["next_offset"]
    assert pages > 1
    assert seen == ["", *folders]


async def test_list_domains_on_an_empty_vault(make_vault, mcp_session):
    vault = make_vault({})
    async with mcp_session(vault) as c:
        a = await c.call("list_domains")
    assert a["status"] == "none" and a["domains"] == []


async def test_list_domains_counts_follow_archives_edits_and_deletes_across_commits(make_vault, mcp_session):
    vault = make_vault({"p/a.md": "# A\nbody\n", "p/b.md": "# B\nbody\n",
                        "p/t.md": "---\nid: t1\ntype: task\n---\n- [ ] open item\n"})

    async def counts(c: Any) -> dict[str, tuple[int, int]]:
        answer = await c.call("list_domains")
        return {row["domain"]: (row["active"], row["archived"]) for row in answer["domains"]}

    async with mcp_session(vault) as c:
        assert (await counts(c))["p"] == (3, 0)
        await c.call("task_close", agent="t", ref="t1", state="completed")  # one more commit
        assert (await counts(c))["p"] == (2, 1)
        await c.call("memory_write", agent="t", title="New", content="x", domain="p/q")
        assert (await counts(c))["p"] == (3, 1) and (await counts(c))["p/q"] == (1, 0)
        await c.call("memory_delete", agent="t", ref="p/a")
        assert (await counts(c))["p"] == (2, 1)
