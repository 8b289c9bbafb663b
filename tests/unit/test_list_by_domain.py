"""list_by_domain (docs/tools.md) through a real MCP client session."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

NOTES = {
    "acme/x100/p200/a.md": """
        ---
        id: a
        updated: 2025-01-03
        type: fact
        ---
        Alpha body.
        """,
    "acme/x200/p200/b.md": """
        ---
        id: b
        updated: 2025-01-02
        type: task
        ---
        - [x] one
        - [ ] two
        """,
    "acme/x100/c.md": """
        ---
        id: c
        updated: 2025-01-01
        ---
        Charlie.
        """,
    "Other/P200x/d.md": "Delta, not a p200 segment.\n",
}


async def test_literal_inner_run_and_branches(make_vault, mcp_session):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        lit = await c.call("list_by_domain", domain="ACME/x100/")
        assert lit["status"] == "ok"
        assert [r["uid"] for r in lit["results"]] == ["a", "c"]
        assert lit["domains"] == ["acme/x100"]
        inner = await c.call("list_by_domain", domain="p200")
        assert sorted(inner["domains"]) == ["acme/x100/p200", "acme/x200/p200"]
        assert [r["uid"] for r in inner["results"]] == ["a", "b"]
        task = inner["results"][1]
        assert task["state"] == "open" and task["progress"] == {"done": 1, "total": 2}
        none = await c.call("list_by_domain", domain="zzz")
        assert none == {"status": "none", "results": [], "est_tokens": 0, "domains": [], "message": none["message"],
                        "hints": ["domain: no folder is named 'zzz'"]}


async def test_paging_limit_one_returns_each_row_once(make_vault, mcp_session):
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        seen, offset = [], 0
        while True:
            page = await c.call("list_by_domain", domain="", limit=1, offset=offset)
            seen += [r["path"] for r in page["results"]]
            if "next_offset" not in page:
                break
            offset = page["next_offset"]
        assert sorted(seen) == sorted(NOTES) and len(seen) == len(set(seen))


@pytest.mark.parametrize("bad", [{"limit": 0}, {"limit": 201}, {"limit": "ten"}, {"limit": -1},
                                 {"status": "gone"}, {"bogus": 1}, {"domain": "../etc"}, {"subtree": "maybe"}])
async def test_bad_input_is_invalid_and_names_the_parameter(make_vault, mcp_session, bad):
    vault = make_vault(NOTES)
    args = {"domain": "acme"} | bad
    async with mcp_session(vault) as c:
        answer = await c.call("list_by_domain", **args)
        assert answer["status"] == "invalid"
        assert next(iter(bad)) in answer["message"]
