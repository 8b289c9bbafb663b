"""Several vaults served at once (docs/vaults.md), through real MCP client sessions: the
in-process server with three vaults (every protection, each with a call that tries to get
around it) and the server process over stdio (the default vault by working directory)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ToolClient, open_vault, write_notes
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from vault_mem import settings
from vault_mem.mcp_server.app import build_server
from vault_mem.served.agents import Agent
from vault_mem.served.context import SteadyHealth
from vault_mem.served.vaults import Served
from vault_mem.vault.reader import read_note

pytestmark = pytest.mark.anyio

WORK = {
    "acme/Plan.md": "---\nid: plan-w\ntitle: Work plan\n---\nThe zebra rollout at work.\n",
    "acme/Old.md": "---\nid: old-w\ntitle: Old work plan\n---\nThe first zebra rollout.\n",
}
HOME = {
    "acme/Plan.md": "---\nid: plan-h\ntitle: Home plan\n---\nA zebra party at home.\n",
    "garden/Roses.md": "---\nid: roses\ntitle: Roses\n---\nZebra roses in the garden.\n",
}
TEAM = {
    "projects/Board.md": "---\nid: board\ntitle: Board\n---\nThe zebra board of the team.\n",
    "private/Pay.md": "---\nid: pay\ntitle: Pay\n---\nZebra salaries.\n",
}
ALL = {"work": WORK, "home": HOME, "team": TEAM}
CODER = Agent("coder", ("projects/**",), ("projects/**",), False)


def three(tmp_path: Path) -> Served:
    vaults = {name: open_vault(write_notes(tmp_path / name, notes)) for name, notes in ALL.items()}
    return Served(vaults, "work")


@asynccontextmanager
async def session(served: Served, reach: dict[str, Agent | None] | None = None) -> AsyncIterator[ToolClient]:
    async with Client(build_server(served, reach=reach), mode="legacy") as client:
        yield ToolClient(client)


def permalinks(answer: dict[str, Any], rows: str = "notes") -> set[str]:
    return {row["permalink"] for row in answer.get(rows, [])}


async def test_each_tool_names_the_vault_it_works_in_and_writes_land_there(tmp_path: Path) -> None:
    served = three(tmp_path)
    async with session(served) as c:
        listed = await c.client.list_tools()
        assert all("vault" in tool.input_schema["properties"] for tool in listed.tools)
        home = await c.call("memory_search", agent="t", query="zebra", vault="home")
        assert permalinks(home) == {"memory://home/acme/Plan", "memory://home/garden/Roses"}
        default = await c.call("memory_search", agent="t", query="zebra")
        assert permalinks(default) == {"memory://work/acme/Plan", "memory://work/acme/Old"}, "the default: work"
        written = await c.call("memory_write", agent="t", title="Tulips", content="Quokka tulips.",
                               domain="garden", vault="home")
        assert written["status"] == "ok" and written["permalink"] == "memory://home/garden/Tulips"
        assert (tmp_path / "home" / "garden" / "Tulips.md").is_file()
        assert not (tmp_path / "work" / "garden").exists() and not (tmp_path / "team" / "garden").exists()
        assert (await c.call("memory_search", agent="t", query="quokka"))["count"] == 0, "not in work"
        assert (await c.call("memory_search", agent="t", query="quokka", vault="team"))["count"] == 0
        found = await c.call("memory_search", agent="t", query="quokka", vault="home")
        assert permalinks(found) == {"memory://home/garden/Tulips"}
        # a permalink names its vault: read where it is, whatever the default
        read = await c.call("memory_read", ref="memory://home/acme/Plan")
        assert read["uid"] == "plan-h" and read["permalink"] == "memory://home/acme/Plan"
        missing = await c.call("memory_read", ref="memory://home/acme/Nothing")
        assert missing["status"] == "not_found" and "'memory://home/acme/Nothing'" in missing["message"]
        # an old permalink (no vault name) is read in the default vault
        assert (await c.call("memory_read", ref="memory://acme/Plan"))["uid"] == "plan-w"
        assert (await c.call("memory_read", ref="memory://acme/Plan", vault="home"))["uid"] == "plan-h"
        domains = await c.call("list_domains")
        assert domains["vaults"] == [{"name": "work", "notes": 2, "default": True},
                                     {"name": "home", "notes": 3, "default": False},
                                     {"name": "team", "notes": 2, "default": False}]


async def test_every_vault_search_merges_rows_naming_their_vault_and_stays_honest(tmp_path: Path) -> None:
    served = three(tmp_path)
    async with session(served) as c:
        everywhere = await c.call("memory_search", agent="t", query="zebra", vault="*")
        assert {(row["vault"], row["permalink"]) for row in everywhere["notes"]} == {
            ("work", "memory://work/acme/Plan"), ("work", "memory://work/acme/Old"),
            ("home", "memory://home/acme/Plan"), ("home", "memory://home/garden/Roses"),
            ("team", "memory://team/projects/Board"), ("team", "memory://team/private/Pay")}
        scores = [row["score"] for row in everywhere["notes"]]
        assert scores == sorted(scores, reverse=True) and not everywhere["truncated"]
        two = await c.call("memory_search", agent="t", query="zebra", vault="*", limit=2)
        assert two["count"] == 2 and two["truncated"], "the limit cut the merged page: it says so"
        recent = await c.call("memory_search", agent="t", vault="*")
        assert recent["count"] == 6 and all("vault" in row for row in recent["notes"])


async def test_a_vault_not_served_or_not_reached_is_refused_in_the_same_words(tmp_path: Path) -> None:
    served = three(tmp_path)
    async with session(served, reach={"team": CODER}) as coder:
        for name in ("work", "nowhere", "../work", "team/..", "", "*x"):
            refused = await coder.call("memory_search", agent="coder", query="zebra", vault=name)
            assert refused["status"] == "invalid" and refused["param"] == "vault", refused
            assert "'team'" in refused["message"]
            assert "work" not in refused["message"].replace(repr(name[:80]), "") and "home" not in refused["message"]
        assert (await coder.call("memory_read", ref="pay"))["status"] == "not_found", "its globs apply in team"
        domains = await coder.call("list_domains")
        assert domains["vaults"] == [{"name": "team", "notes": 1, "default": True}]
        everywhere = await coder.call("memory_search", agent="coder", query="zebra", vault="*")
        assert {(row["vault"], row["permalink"]) for row in everywhere["notes"]} == {
            ("team", "memory://team/projects/Board")}
        # a permalink naming a hidden vault is a path in the reached one: nothing, and no name confirmed
        hidden = await coder.call("memory_read", ref="memory://work/acme/Plan")
        assert hidden["status"] == "not_found" and "vault" not in hidden["message"]
        resources = {str(r.uri) for r in (await coder.client.list_resources()).resources}
        assert resources == {"memory://team/projects/Board"}
        for uri in ("memory://work/acme/Plan", "memory://home/garden/Roses", "memory://team/private/Pay"):
            with pytest.raises(MCPError, match="no note matches"):
                await coder.client.read_resource(uri)
        written = await coder.call("memory_write", agent="coder", title="X", content="x", domain="projects",
                                   vault="work")
        assert written["status"] == "invalid" and not (tmp_path / "work" / "projects").exists()


async def test_every_vault_is_for_search_only_and_a_ref_cannot_name_another_vault_than_vault(tmp_path: Path) -> None:
    served = three(tmp_path)
    async with session(served) as c:
        for tool, arguments in (("memory_write", {"agent": "t", "title": "Star", "content": "x"}),
                                ("memory_edit", {"agent": "t", "ref": "plan-w", "append": "x"}),
                                ("memory_delete", {"agent": "t", "ref": "plan-w"}),
                                ("memory_read", {"ref": "plan-w"}), ("list_domains", {})):
            refused = await c.call(tool, **arguments, vault="*")
            assert refused["status"] == "invalid" and refused["param"] == "vault", (tool, refused)
        assert not any(p.name.startswith("Star") for p in tmp_path.rglob("*.md"))
        before = (tmp_path / "home" / "acme" / "Plan.md").read_bytes()
        crossed = await c.call("memory_edit", agent="t", ref="memory://home/acme/Plan", append="more", vault="team")
        assert crossed["status"] == "invalid" and crossed["param"] == "ref", crossed
        assert (tmp_path / "home" / "acme" / "Plan.md").read_bytes() == before
        wrong_type = await c.call("memory_read", ref="plan-w", vault=3)
        assert wrong_type["status"] == "invalid" and wrong_type["param"] == "vault"
        edited = await c.call("memory_edit", agent="t", ref="memory://home/acme/Plan", append="more")
        assert edited["status"] == "ok" and edited["permalink"] == "memory://home/acme/Plan"
        assert (tmp_path / "home" / "acme" / "Plan.md").read_text(encoding="utf-8").endswith("more\n")
        assert "more" not in (tmp_path / "work" / "acme" / "Plan.md").read_text(encoding="utf-8")


async def test_the_inbox_gathers_notes_handed_over_in_any_vault(tmp_path: Path) -> None:
    served = three(tmp_path)
    async with session(served) as c:
        sent = await c.call("memory_write", agent="lead", title="For coder", content="Review the board.",
                            domain="projects", vault="team", to=["coder"])
        assert sent["status"] == "ok"
        mine = await c.call("memory_search", agent="coder", query="zebra", vault="work")
        assert [(row["vault"], row["permalink"]) for row in mine["inbox"]] == [
            ("team", "memory://team/projects/For coder")]
        read = await c.call("memory_read", ref=mine["inbox"][0]["permalink"], agent="coder")
        assert read["status"] == "ok"
        assert (await c.call("memory_search", agent="coder", vault="home"))["inbox"] == [], "read: gone"


async def test_one_vault_served_takes_its_own_name_and_star_but_lists_no_vault(tmp_path: Path) -> None:
    vault = open_vault(write_notes(tmp_path / "solo", WORK))
    served = Served({"solo": vault}, "solo")
    async with session(served) as c:
        listed = await c.client.list_tools()
        assert not any("vault" in tool.input_schema["properties"] for tool in listed.tools)
        plain = await c.call("memory_search", agent="t", query="zebra")
        assert plain == await c.call("memory_search", agent="t", query="zebra", vault="solo")
        assert plain == await c.call("memory_search", agent="t", query="zebra", vault="*")
        assert permalinks(plain) == {"memory://acme/Plan", "memory://acme/Old"}
        assert "vault" not in plain["notes"][0] and "vaults" not in await c.call("list_domains")
        refused = await c.call("memory_search", agent="t", vault="other")
        assert refused["status"] == "invalid" and "'solo'" in refused["message"]


def _stdio(tmp_path: Path, cwd: Path) -> StdioServerParameters:
    args = ["-m", "vault_mem", "serve"]
    for name in ALL:
        args += ["--vault", f"{name}={tmp_path / name}"]
    # The whole environment: the server process imports this very tree (PYTHONPATH), as the test does.
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(cwd), env=dict(os.environ))


async def test_over_stdio_the_default_vault_is_the_one_the_client_works_in(tmp_path: Path) -> None:
    for name, notes in ALL.items():
        write_notes(tmp_path / name, notes)
    inside = tmp_path / "home" / "garden"
    async with Client(_stdio(tmp_path, inside), mode="legacy") as client:
        c = ToolClient(client)
        deadline = time.monotonic() + 60
        while True:
            domains = await c.call("list_domains")
            if "indexing" not in domains and all(v["notes"] for v in domains.get("vaults", [])):
                break
            assert time.monotonic() < deadline, domains
        assert [(v["name"], v["default"]) for v in domains["vaults"]] == [
            ("work", False), ("home", True), ("team", False)]
        assert (await c.call("memory_read", ref="memory://acme/Plan"))["uid"] == "plan-h", "old permalink: home"
        written = await c.call("memory_write", agent="t", title="Fern", content="A fern.", domain="garden")
        assert written["permalink"] == "memory://home/garden/Fern" and (inside / "Fern.md").is_file()
        everywhere = await c.call("memory_search", agent="t", query="zebra", vault="*")
        assert {row["vault"] for row in everywhere["notes"]} == {"work", "home", "team"}
        with pytest.raises(MCPError, match="no note matches"):
            await client.read_resource("memory://nowhere/acme/Plan")
        text = (await client.read_resource("memory://team/projects/Board")).contents[0]
        assert "zebra board" in getattr(text, "text", "")


async def test_supersede_across_vaults_writes_each_side_in_its_vault_with_lineage_both_ways(tmp_path: Path) -> None:
    served = three(tmp_path)
    async with session(served) as c:
        new = await c.call("memory_supersede", agent="t", ref="memory://home/garden/Roses", vault="work",
                           title="Roses at work", content="The roses moved to the office.")
        assert new["status"] == "ok" and new["permalink"] == "memory://work/garden/Roses at work", new
        assert (tmp_path / "work" / "garden" / "Roses at work.md").is_file()
        assert not (tmp_path / "home" / "garden" / "Roses at work.md").exists()
        old_text = (tmp_path / "home" / "garden" / "Roses.md").read_text(encoding="utf-8")
        assert "valid_until:" in old_text and "memory://work/garden/Roses at work" in old_text
        read_new = await c.call("memory_read", ref=new["permalink"])
        assert read_new["lineage"]["supersedes"] == ["memory://home/garden/Roses"]
        read_old = await c.call("memory_read", ref="memory://home/garden/Roses")
        assert read_old["lineage"]["superseded_by"] == ["memory://work/garden/Roses at work"]
        assert read_old["valid_until"] == new["updated"]


async def test_supersede_across_vaults_writes_nothing_when_either_side_is_refused(tmp_path: Path) -> None:
    served = three(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.md")}
    reader = Agent("coder", (), ("projects/**",), False)  # reads all of team, writes projects/ only
    works = Agent("coder", (), ("acme/**",), False)  # in work: writes acme/ only
    async with session(served, reach={"team": reader, "work": works}) as c:
        old_refused = await c.call("memory_supersede", agent="coder", ref="memory://team/private/Pay",
                                   vault="work", title="New pay", content="x", domain="acme")
        assert old_refused["status"] == "forbidden", old_refused
        new_refused = await c.call("memory_supersede", agent="coder", ref="memory://team/projects/Board",
                                   vault="work", title="New board", content="x", domain="garden")
        assert new_refused["status"] == "forbidden", new_refused
        hidden = await c.call("memory_supersede", agent="coder", ref="memory://home/garden/Roses",
                              vault="work", title="New roses", content="x", domain="acme")
        assert hidden["status"] == "not_found", "a vault it does not reach is a path in work: nothing there"
    read_only = Agent("coder", (), (), True)
    async with session(served, reach={"work": None, "team": read_only}) as c:
        refused = await c.call("memory_supersede", agent="coder", ref="memory://team/projects/Board",
                               vault="work", title="New board", content="x", domain="acme")
        assert refused["status"] == "forbidden", refused
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.md")} == before, "nothing written on either side"


class Building(SteadyHealth):
    """The health of a vault whose first build is under way (``runtime/lifecycle.py`` reports
    the same): ``indexing`` says how far, and a call does not wait for it."""

    def indexing(self) -> dict[str, int] | None:
        return {"done": 1, "total": 40}


async def test_a_vault_still_building_says_so_and_the_others_answer_as_usual(tmp_path: Path) -> None:
    served = three(tmp_path)
    served.vaults["team"].health = Building()
    async with session(served) as c:
        work = await c.call("memory_search", agent="t", query="zebra")
        assert "indexing" not in work and work["count"] == 2
        team = await c.call("memory_search", agent="t", query="zebra", vault="team")
        assert team["indexing"] == {"done": 1, "total": 40} and any("being built" in h for h in team["hints"])
        every = await c.call("memory_search", agent="t", query="zebra", vault="*")
        assert every["indexing"] == {"done": 1, "total": 40} and every["count"] == 6


async def test_over_stdio_an_agent_reaches_the_vaults_where_it_has_a_key(tmp_path: Path, capsys) -> None:
    import json

    from vault_mem.cli import main

    for name, notes in ALL.items():
        write_notes(tmp_path / name, notes)
    capsys.readouterr()
    assert main(["agents", "add", "coder", "--vault", str(tmp_path / "team"), "--read", "projects/", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agent"] == "coder"
    params = _stdio(tmp_path, tmp_path / "work")  # started in work, which the agent does not reach
    params.args += ["--agent", "coder"]
    async with Client(params, mode="legacy") as client:
        c = ToolClient(client)
        deadline = time.monotonic() + 60
        while "indexing" in (domains := await c.call("list_domains")) or not domains["vaults"][0]["notes"]:
            assert time.monotonic() < deadline, domains
        assert domains["vaults"] == [{"name": "team", "notes": 1, "default": True}]
        found = await c.call("memory_search", query="zebra", vault="*")
        assert [(row["vault"], row["permalink"]) for row in found["notes"]] == [
            ("team", "memory://team/projects/Board")]
        refused = await c.call("memory_read", ref="plan-w", vault="work")
        assert refused["status"] == "invalid" and refused["message"].endswith("vaults: 'team'")
    nobody = subprocess.run([sys.executable, *_stdio(tmp_path, tmp_path).args, "--agent", "stranger"],
                            input=b"", capture_output=True, cwd=tmp_path, env=dict(os.environ), timeout=120)
    assert nobody.returncode == 1 and b"'stranger' has no key in any of the vaults served" in nobody.stderr


async def test_one_meaning_model_serves_every_vault_each_with_its_own_vectors(tmp_path: Path) -> None:
    from meaning_model import make_tiny_model
    from test_meaning import NOTES as MEANING_NOTES
    from test_meaning import QUESTION

    model = make_tiny_model(tmp_path / "tiny-model")
    write_notes(tmp_path / "one", MEANING_NOTES)
    write_notes(tmp_path / "two", {"queues/phones.md": "---\ntitle: Queue for the phones\n---\nNATS JetStream.\n"})
    args = ["-m", "vault_mem", "serve", "--vault", f"one={tmp_path / 'one'}", "--vault", f"two={tmp_path / 'two'}",
            "--meaning-model", str(model)]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path), env=dict(os.environ))
    async with Client(params, mode="legacy") as client:
        c = ToolClient(client)
        deadline = time.monotonic() + 90
        wanted = {("one", "memory://one/decisions/queue-v3"), ("two", "memory://two/queues/phones")}
        while True:  # until both vaults are embedded: each note shares no word with the question
            found = await c.call("memory_search", agent="t", query=QUESTION, vault="*")
            by_meaning = {(row["vault"], row["permalink"]) for row in found["notes"]
                          if row.get("found_by") == "meaning"}
            if wanted <= by_meaning and not {"indexing", "checking", "meaning"} & set(found):
                break
            assert time.monotonic() < deadline, found
            await anyio.sleep(0.1)
        # With the model on, the current version still comes first across vaults: the decision
        # superseded from vault two heads its chain, the old one folded into it, both found by meaning.
        old = "memory://one/decisions/queue-v3"
        new = await c.call("memory_supersede", agent="t", ref=old, vault="two", title="Queue decision v4",
                           content="We chose NATS JetStream, with a second cluster.")
        assert new["status"] == "ok", new
        while True:
            found = await c.call("memory_search", agent="t", query=QUESTION, vault="*")
            rows = {row["permalink"]: row for row in found["notes"]}
            if new["permalink"] in rows and "meaning" not in found:
                break
            assert time.monotonic() < deadline, found
            await anyio.sleep(0.1)
        assert old not in rows and rows[new["permalink"]]["older"] == [old], found
        alone = await c.call("memory_search", agent="t", query=QUESTION, vault="one")
        assert next(row for row in alone["notes"] if row["permalink"] == old)["superseded_by"] == [new["permalink"]]
    stores = [list((tmp_path / name / ".vault-mem" / "meaning").glob("*-texts*")) for name in ("one", "two")]
    assert all(len(found) == 1 for found in stores) and stores[0][0].name == stores[1][0].name, stores


async def test_an_edge_to_another_vault_never_resolves_to_a_note_of_the_same_path_here(tmp_path: Path) -> None:
    served = three(tmp_path)
    write_notes(tmp_path / "work", {"home/garden/Roses.md": "---\nid: decoy\ntitle: Decoy\n---\nA zebra decoy.\n"})
    served.vaults["work"].index.apply([(read_note(tmp_path / "work", "home/garden/Roses.md",
                                                  config=settings.current()), "home/garden/Roses.md")], [])
    async with session(served) as c:
        new = await c.call("memory_supersede", agent="t", ref="memory://home/garden/Roses", vault="work",
                           title="Roses at work", content="Moved.")
        assert new["status"] == "ok"
        decoy = await c.call("memory_read", ref="decoy")
        assert decoy["lineage"]["superseded_by"] == [], "the decoy in work is not the home note"
        assert (await c.call("memory_read", ref=new["permalink"]))["lineage"]["supersedes"] == [
            "memory://home/garden/Roses"]


async def test_a_chain_across_vaults_is_one_row_headed_by_the_current_version(tmp_path: Path) -> None:
    """The old note outranks its successor in another vault, yet every-vault search shows the
    current version first, the old one folded into it (as one vault does: docs/ranking.md), and
    a search of the old note's vault marks it superseded by the other vault's note."""
    served = three(tmp_path)
    async with session(served) as c:
        new = await c.call("memory_supersede", agent="t", ref="memory://home/garden/Roses", vault="work",
                           title="Office plants", content="The roses moved to the office.")
        assert new["status"] == "ok", new
        apart = await c.call("memory_search", agent="t", query="zebra roses", follow="all", vault="*")
        ranks = [row["permalink"] for row in apart["notes"]]
        old, current = "memory://home/garden/Roses", new["permalink"]
        assert ranks.index(old) < ranks.index(current), "the old note ranks higher on its own"
        chained = await c.call("memory_search", agent="t", query="zebra roses", vault="*")
        first = chained["notes"][0]
        assert (first["permalink"], first["vault"], first["older"], first["older_count"]) == (current, "work", [old], 1)
        assert old not in [row["permalink"] for row in chained["notes"]]
        assert first["score"] == max(row["score"] for row in apart["notes"] if row["permalink"] in (old, current))
        history = await c.call("memory_search", agent="t", query="zebra roses", follow="full_history", vault="*")
        assert [row["permalink"] for row in history["notes"]][:2] == [current, old]
        home = await c.call("memory_search", agent="t", query="zebra roses", vault="home")
        marked = next(row for row in home["notes"] if row["permalink"] == old)
        assert marked["superseded_by"] == [current]
