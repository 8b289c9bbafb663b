"""One lookup of a note by name (vault_mem/served/refs.py), tested once for every place that
uses it: a ``[[wikilink]]`` and a ``supersedes`` target written in the same note resolve to
the same note by the same tie-break, and a caller's ref (``ref``, the compat tools' ``uid``
and ``memory_id``) is never resolved by a guess."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


def writer(target: str) -> str:
    return f'---\nsupersedes: "[[{target}]]"\n---\nSee [[{target}]].\n'


NOTES = {
    # 1. the longest shared folder prefix wins, even over a shorter path
    "a/b/new1.md": writer("Plan1"),
    "a/b/c/Plan1.md": "deep, but in the writer's folder\n",
    "a/Plan1.md": "shorter, but further away\n",
    # 2. then the shortest path
    "new2.md": writer("Plan2"),
    "zz/Plan2.md": "shortest\n",
    "b/c/Plan2.md": "first by path order, but longer\n",
    # 3. then the path, ascending
    "new3.md": writer("Plan3"),
    "x/Plan3.md": "x\n",
    "y/Plan3.md": "y\n",
    # a uid that two files declare (a copied note): a tie like any other
    "d/e/new4.md": "---\nsupersedes: twin\n---\nReplaces the twin.\n",
    "d/e/f/twin.md": "---\nid: twin\n---\nnear\n",
    "g/twin copy.md": "---\nid: twin\n---\nfar\n",
}
EXPECTED = {
    "new1": "memory://a/b/c/Plan1",
    "new2": "memory://zz/Plan2",
    "new3": "memory://x/Plan3",
}


async def test_a_wikilink_and_a_supersedes_target_resolve_to_the_same_nearest_note(make_vault, mcp_session) -> None:
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        for ref, expected in EXPECTED.items():
            read = await c.call("memory_read", ref=ref)
            assert [link["permalink"] for link in read["links"]] == [expected], (ref, read["links"])
            assert read["lineage"]["supersedes"] == [expected], (ref, read["lineage"])
        twin = await c.call("memory_read", ref="new4")
        assert twin["lineage"]["supersedes"] == ["memory://d/e/f/twin"]


async def test_the_superseded_note_is_the_one_the_wikilink_names(make_vault, mcp_session) -> None:
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        listed = await c.call("memory_list", limit=-1, fields=["permalink"], follow="active")
        shown = {m["permalink"] for m in listed["memories"]}
        hidden = {"memory://a/b/c/Plan1", "memory://zz/Plan2", "memory://x/Plan3", "memory://d/e/f/twin"}
        assert shown == {"memory://" + path[:-3] for path in NOTES} - hidden


CALLER_REFS = [("memory_read", "ref"), ("get_memory", "uid"), ("memory_get", "memory_id")]


@pytest.mark.parametrize(("tool", "param"), CALLER_REFS)
async def test_a_callers_ambiguous_ref_is_refused_with_the_candidates_never_guessed(
        make_vault, mcp_session, tool: str, param: str) -> None:
    vault = make_vault(NOTES, compat=True)
    async with mcp_session(vault) as c:
        twin = await c.call(tool, **{param: "twin"})
        assert twin["status"] == "invalid" and twin["param"] == param, twin
        assert twin["candidates"] == ["memory://d/e/f/twin", "memory://g/twin copy"]
        named = await c.call(tool, **{param: "Plan3"})
        assert named["status"] == "invalid" and "memory://x/Plan3" in named["message"], named
        exact = await c.call(tool, **{param: "memory://y/Plan3"})
        assert exact["status"] == "ok" and exact["body"] == "y\n"
