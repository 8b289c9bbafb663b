"""Supersession lineage (docs/vault-format.md; docs/tools.md, memory_list): memory_list's ``follow`` modes through a
real MCP client session, and the Lineage API memory_read uses, on real indexed vaults."""

from __future__ import annotations

import pytest

from vault_mem.reads.lineage import Lineage
from vault_mem.served.context import view_of

pytestmark = pytest.mark.anyio


def note(uid: str, created: str, extra: str = "", body: str = "") -> str:
    return f"---\nid: {uid}\ncreated: {created}\n{extra}---\n{body or uid + ' body'}\n"


# v2 declares the edge by uid, v3 by a wikilink to v2's title; the branch B/C is declared
# on the old note's side; the cycle X <-> Y; D names a note that is gone; O is superseded by
# an archived note N.
CHAINS = {
    "chain/v1.md": note("v1", "2025-01-01", "title: Plan one\n", "plan chain"),
    "chain/v2.md": note("v2", "2025-01-02", "title: Plan two\nsupersedes: v1\n", "plan chain"),
    "chain/v3.md": note("v3", "2025-01-03", 'title: Plan three\nsupersedes: "[[plan TWO]]"\n', "plan chain"),
    "branch/a.md": note("a", "2025-02-01", "superseded_by: [b, \"[[branch/c]]\"]\n", "fork"),
    "branch/b.md": note("b", "2025-02-02", "", "fork"),
    "branch/c.md": note("c", "2025-02-03", "", "fork"),
    "cycle/x.md": note("x", "2025-03-01", "supersedes: y\n", "loop"),
    "cycle/y.md": note("y", "2025-03-02", "supersedes: '[[x]]'\n", "loop"),
    "dangling/d.md": note("d", "2025-04-01", 'supersedes: "[[Gone note]]"\n', "orphan"),
    "arch/o.md": note("o", "2025-05-01", "", "archived chain"),
    "arch/n.md": note("n", "2025-05-02", "status: archived\nsupersedes: o\n", "archived chain"),
    "plain.md": note("plain", "2025-06-01", "", "no lineage"),
}


def ids(answer):
    return [m["id"] for m in answer["memories"]]


async def test_active_hides_what_a_live_memory_supersedes(make_vault, mcp_session):
    vault = make_vault(CHAINS)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list")
        # hidden: v1, v2 (chain), a (branch), x (older member of the cycle), o (archived superseder)
        assert ids(answer) == ["plain", "n", "d", "y", "c", "b", "v3"]
        assert any("5 superseded" in w for w in answer["warnings"])
        explicit = await c.call("memory_list", follow="ACTIVE")
        assert ids(explicit) == ids(answer)


async def test_all_applies_no_lineage_filter(make_vault, mcp_session):
    vault = make_vault(CHAINS)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", follow="all", limit=-1)
        assert sorted(ids(answer)) == sorted(p.rpartition("/")[2][:-3] for p in CHAINS)
        assert "warnings" not in answer


@pytest.mark.parametrize(("query", "expected"), [
    ("plan chain", ["v3"]),               # every hit of a straight chain resolves to its head
    ("fork", ["c", "b"]),                 # a branch has two newest versions, no duplicates
    ("loop", ["y"]),                      # a cycle: the one created last
    ("orphan", ["d"]),                    # a dangling target is not a version
    ("archived chain", ["n"]),            # an archived superseder is still live
    ("no lineage", ["plain"]),
])
async def test_latest_resolves_each_hit_to_its_newest_versions(make_vault, mcp_session, query, expected):
    vault = make_vault(CHAINS)
    async with mcp_session(vault) as c:
        assert ids(await c.call("memory_list", query=query, follow="latest")) == expected


async def test_latest_brings_in_versions_outside_the_filters(make_vault, mcp_session):
    vault = make_vault(CHAINS)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", date_to="2025-01-01", follow="latest")
        assert ids(answer) == ["v3"]
        branch_b = await c.call("memory_list", query="fork", date_to="2025-02-02", follow="latest")
        assert ids(branch_b) == ["c", "b"]  # a's newest versions, b's own self, once each


@pytest.mark.parametrize(("query", "expected"), [
    ("plan three", ["v1", "v2", "v3"]),
    ("fork", ["a", "b", "c"]),
    ("loop", ["x", "y"]),
    ("orphan", ["d"]),
    ("archived chain", ["o", "n"]),
])
async def test_full_history_expands_each_hit_to_its_chain_oldest_first(make_vault, mcp_session, query, expected):
    vault = make_vault(CHAINS)
    async with mcp_session(vault) as c:
        assert ids(await c.call("memory_list", query=query, follow="full_history")) == expected


async def test_full_history_keeps_chains_whole_in_hit_order(make_vault, mcp_session):
    vault = make_vault(CHAINS)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", follow="full_history", date_from="2025-02-02",
                              date_to="2025-03-01", limit=-1)
        # hits newest first: x (cycle), c, b (branch); each chain once, oldest first
        assert ids(answer) == ["x", "y", "a", "b", "c"]
        paged = await c.call("memory_list", follow="full_history", date_from="2025-02-02",
                             date_to="2025-03-01", limit=2, offset=2)
        assert ids(paged) == ["a", "b"] and paged["next_offset"] == 4


async def test_rows_show_edges_from_either_side_and_dangling_targets(make_vault, mcp_session):
    vault = make_vault(CHAINS)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", follow="all", limit=-1, fields=["supersedes", "superseded_by"])
        rows = {m["id"]: m for m in answer["memories"]}
        # a superseded memory is no longer true: its rows say so, whatever fields asks for
        assert rows["v1"] == {"id": "v1", "supersedes": [], "superseded_by": ["v2"], "ended": True}
        assert rows["v2"] == {"id": "v2", "supersedes": ["v1"], "superseded_by": ["v3"], "ended": True}
        assert "ended" not in rows["v3"] and "ended" not in rows["y"]  # y: the cycle's newest stays current
        assert rows["a"]["superseded_by"] == ["b", "c"]
        assert rows["b"]["supersedes"] == ["a"] and rows["c"]["supersedes"] == ["a"]
        assert rows["x"] == {"id": "x", "supersedes": ["y"], "superseded_by": ["y"], "ended": True}
        assert rows["d"]["supersedes"] == ["Gone note"]
        assert rows["o"]["superseded_by"] == ["n"]


async def test_the_same_edge_declared_on_both_sides_counts_once(make_vault, mcp_session):
    vault = make_vault({
        "old.md": note("old", "2025-01-01", "superseded_by: new\n"),
        "new.md": note("new", "2025-01-02", "supersedes: [old, OLD, '[[old]]']\n"),
        "self.md": note("self", "2025-01-03", "supersedes: self\n"),
    })
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", follow="all", fields=["supersedes", "superseded_by"])
        rows = {m["id"]: m for m in answer["memories"]}
        assert rows["new"]["supersedes"] == ["old"] and rows["old"]["superseded_by"] == ["new"]
        assert rows["self"]["supersedes"] == [] and rows["self"]["superseded_by"] == []
        assert ids(await c.call("memory_list")) == ["self", "new"]  # a self edge hides nothing


async def test_targets_resolve_by_uid_path_file_name_then_title(make_vault, mcp_session):
    vault = make_vault({
        "deep/Target By Name.md": note("t-name", "2025-01-01"),
        "deep/path/target.md": note("t-path", "2025-01-02"),
        "other/titled.md": note("t-title", "2025-01-03", "title: Target Title\n"),
        "uidnote.md": note("T-UID", "2025-01-04"),
        "new.md": note("new", "2025-02-01", "supersedes:\n  - '[[target by name]]'\n"
                       "  - '[[Deep/Path/Target.md]]'\n  - '[[target title]]'\n  - t-uid\n"
                       "  - memory://deep/path/target\n"),
    })
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", query="new body", follow="all", fields="supersedes")
        assert answer["memories"] == [{"id": "new", "supersedes": ["t-name", "t-path", "t-title", "T-UID"]}]
        assert ids(await c.call("memory_list")) == ["new"]


async def test_a_name_shared_by_two_files_resolves_to_the_nearest(make_vault, mcp_session):
    vault = make_vault({
        "a/twin.md": note("twin-a", "2025-01-01"),
        "b/twin.md": note("twin-b", "2025-01-01"),
        "b/newer.md": note("newer", "2025-02-01", "supersedes: '[[twin]]'\n"),
    })
    async with mcp_session(vault) as c:
        assert ids(await c.call("memory_list")) == ["newer", "twin-a"]


async def test_a_long_cycle_and_a_cycle_with_an_exit(make_vault, mcp_session):
    ring = {f"ring/r{i}.md": note(f"r{i}", f"2025-01-{i + 1:02}", f"supersedes: r{(i + 1) % 6}\n", "ring")
            for i in range(6)}
    exit_notes = {
        "exit/p.md": note("p", "2025-03-01", "supersedes: q\n", "exit"),
        "exit/q.md": note("q", "2025-03-02", "supersedes: p\n", "exit"),
        "exit/out.md": note("out", "2025-01-01", "supersedes: q\n", "exit"),
    }
    vault = make_vault(ring | exit_notes)
    async with mcp_session(vault) as c:
        assert ids(await c.call("memory_list", query="ring")) == ["r5"]
        assert ids(await c.call("memory_list", query="ring", follow="latest")) == ["r5"]
        assert len(ids(await c.call("memory_list", query="ring", follow="full_history"))) == 6
        # p <-> q, and out supersedes q: out is the one version nothing supersedes
        assert ids(await c.call("memory_list", query="exit")) == ["out"]
        assert ids(await c.call("memory_list", query="exit", follow="latest")) == ["out"]
        assert ids(await c.call("memory_list", query="exit", follow="full_history")) == ["out", "p", "q"]


def test_lineage_api_for_memory_read(make_vault):
    vault = make_vault(CHAINS)
    with view_of(vault) as view:
        lineage = Lineage(view)
        doc = {view.snapshot.record(d)["uid"]: d for d in view.snapshot.all_docs()}
        assert lineage.lineage_of(doc["v2"]) == {
            "supersedes": ["memory://chain/v1"],
            "superseded_by": ["memory://chain/v3"],
            "latest": ["memory://chain/v3"],
        }
        assert lineage.lineage_of(doc["a"])["latest"] == ["memory://branch/c", "memory://branch/b"]
        assert lineage.lineage_of(doc["plain"]) == {"supersedes": [], "superseded_by": [],
                                                    "latest": ["memory://plain"]}
        assert lineage.superseded(doc["o"]) and not lineage.superseded(doc["n"])
        assert lineage.superseded(doc["x"]) and not lineage.superseded(doc["y"])
        assert [view.snapshot.record(d)["uid"] for d in lineage.history(doc["c"])] == ["a", "b", "c"]
        assert lineage.latest(doc["x"]) == [doc["y"]] == lineage.latest(doc["y"])
        assert lineage.dangling(doc["d"]) == ["Gone note"] and lineage.dangling(doc["v2"]) == []


def test_memory_reads_lineage_from_the_chain_alone_equals_the_whole_graphs_answer(make_vault) -> None:
    """lineage_for walks one chain by index terms; on a tangle of chains (branches, cycles, targets
    by uid, path, file name and title, the same title in two folders, dangling targets) it must
    agree with the graph built from every note that declares an edge."""
    import random

    from vault_mem.reads.lineage import Lineage, lineage_for
    from vault_mem.served.context import view_of

    rng = random.Random(7)
    notes: dict[str, str] = {}
    names = [f"{'ab'[i % 2]}/n{i}.md" for i in range(40)]
    for i, rel in enumerate(names):
        lines = [f"id: u{i}", f"title: Title {i % 30}", f"aliases: [Alias {i % 25}]"]  # some shared
        for key in ("supersedes", "superseded_by"):
            if rng.random() < 0.35:
                j = rng.randrange(len(names) + 3)
                target = (f"u{j}", f"'[[{names[j % len(names)][:-3]}]]'", f"n{j}", f"Title {j % 30}",
                          f"memory://{names[j % len(names)][:-3]}", f"Alias {j % 25}",
                          f"'[[../{names[j % len(names)][:-3]}]]'")[rng.randrange(7)]
                lines.append(f"{key}: {target if j < len(names) else 'gone-' + str(j)}")
        notes[rel] = "---\n" + "\n".join(lines) + f"\n---\nbody {i}\n"
    vault = make_vault(notes)
    with view_of(vault) as view:
        whole = Lineage(view)
        assert whole.has_edges() and whole.superseded_docs()
        for doc in view.snapshot.all_docs():
            assert lineage_for(view, doc).lineage_of(doc) == whole.lineage_of(doc), view.snapshot.record(doc)["path"]
