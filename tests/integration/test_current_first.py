"""The current version first, and what was true when (docs/ranking.md, "The current version first";
docs/vault-format.md, "Validity"; docs/tools.md, ``follow`` and ``as_of``): memory_search groups a
chain's matches at its best one, led by the current version; ``as_of`` answers with the versions
current then; over an in-process session, the real server over stdio and HTTP, and the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import open_vault, write_notes
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from serving import serve_args, start_http

pytestmark = pytest.mark.anyio

SAMPLE = Path(__file__).resolve().parent.parent.parent / "sample_vault"
QUEUE = "memory://acme/x100/p200/Queue decision "


def note(uid: str, created: str, extra: str = "", body: str = "") -> str:
    return f"---\nid: {uid}\ncreated: {created}\n{extra}---\n{body}\n"


# Three versions of one fact, each replacing the one before; v1 states its own end.
CHAIN = {
    "broker/v1.md": note("b1", "2024-01-10", "title: Broker v1\nvalid_until: 2024-05-31\n",
                         "We run the broker on Redis streams."),
    "broker/v2.md": note("b2", "2024-06-01", "title: Broker v2\nsupersedes: b1\n",
                         "We run the broker on RabbitMQ streams."),
    "broker/v3.md": note("b3", "2025-02-01T09:00:00Z", "title: Broker v3\nsupersedes: b2\n",
                         "We run the broker on NATS streams."),
    "other.md": note("o", "2023-01-01", "title: Unrelated\n", "Nothing about it."),
}
# before v1, during v1, during v2, after v3
WALK = [("2023-12-31", []), ("2024-03", ["b1"]), ("2024-06-01", ["b2"]), ("2026-01-01T12:00:00Z", ["b3"])]


def perms(answer: dict[str, Any]) -> list[str]:
    return [n["permalink"] for n in answer["notes"]]


async def test_the_queue_example_answers_the_current_decision_first(make_vault, mcp_session, tmp_path):
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE, root)
    vault = open_vault(root)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_search", agent="t", query="queue decision")
        first, second = answer["notes"][:2]
        assert first["permalink"] == QUEUE + "v3" and first["status"] == "active"
        # v3 carries the chain's best score (v1's and v2b's, above its own) and names the older versions
        assert first["score"] == max(n["score"] for n in answer["notes"])
        assert first["older_count"] == 2
        assert first["older"] == [QUEUE + "v1", QUEUE + "v2"]
        assert second["permalink"] == QUEUE + "v2b - Kafka trial" and second["status"] == "archived"
        # nothing is hidden without a word: every version is on the page, in a row or a row's older list
        flat = perms(answer) + [o for n in answer["notes"] for o in n.get("older", [])]
        assert {QUEUE + v for v in ("v1", "v2", "v3", "v2b - Kafka trial")} <= set(flat)
        # follow='all': the rank order as it was (the abandoned branch and v1 first)
        plain = await c.call("memory_search", agent="t", query="queue decision", follow="all")
        assert perms(plain)[:2] == [QUEUE + "v2b - Kafka trial", QUEUE + "v1"]
        assert plain["notes"][1]["superseded_by"] == [QUEUE + "v2", QUEUE + "v2b - Kafka trial"]
        history = await c.call("memory_search", agent="t", query="queue decision", follow="full_history")
        assert perms(history)[:4] == [QUEUE + "v3", QUEUE + "v1", QUEUE + "v2", QUEUE + "v2b - Kafka trial"]


async def test_an_old_version_that_matches_alone_is_marked_with_its_successor(make_vault, mcp_session):
    vault = make_vault(CHAIN)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_search", agent="t", query="redis")
        assert perms(answer) == ["memory://broker/v1"]
        row = answer["notes"][0]
        assert row["superseded_by"] == ["memory://broker/v2"]
        assert row["ended"] is True and row["valid_until"] == "2024-05-31"
        latest = await c.call("memory_search", agent="t", query="redis", follow="latest")
        assert perms(latest) == ["memory://broker/v3"] and latest["notes"][0]["older"] == ["memory://broker/v1"]


async def test_paging_is_the_start_of_one_row_sequence(make_vault, mcp_session):
    notes = dict(CHAIN)
    for i in range(12):  # other notes that match between the chain's versions
        notes[f"misc/n{i}.md"] = note(f"n{i}", "2024-02-01", f"title: Streams {i}\n", "streams " * (i % 4 + 1))
    vault = make_vault(notes)
    async with mcp_session(vault) as c:
        whole = await c.call("memory_search", agent="t", query="streams", limit=50)
        assert not whole["truncated"]
        for limit in range(1, len(whole["notes"]) + 1):
            page = await c.call("memory_search", agent="t", query="streams", limit=limit)
            assert perms(page) == perms(whole)[:limit]
            assert page["truncated"] == (limit < len(whole["notes"]))
        chain_rows = [n for n in whole["notes"] if n["permalink"].startswith("memory://broker/")]
        assert [n["permalink"] for n in chain_rows] == ["memory://broker/v3"]
        assert chain_rows[0]["older_count"] == 2


async def test_as_of_walks_a_chain_of_three_versions(make_vault, mcp_session):
    vault = make_vault(CHAIN)
    async with mcp_session(vault) as c:
        for when, expected in WALK:
            found = await c.call("memory_search", agent="t", query="broker streams", as_of=when)
            assert [n["permalink"].rpartition("/")[2].replace("v", "b") for n in found["notes"]] == expected, when
            assert "not current at as_of" in found["message"]  # what was left out is said, never silent
            listed = await c.call("memory_list", query="streams", as_of=when)
            assert [m["id"] for m in listed["memories"]] == expected, when
        every = await c.call("memory_list", query="streams", follow="all")
        ended = {m["id"]: m.get("ended", False) for m in every["memories"]}
        assert ended == {"b1": True, "b2": True, "b3": False}  # marked in every row, never dropped
        assert next(m for m in every["memories"] if m["id"] == "b1")["valid_until"] == "2024-05-31"


async def test_as_of_refuses_what_is_not_a_date(make_vault, mcp_session):
    vault = make_vault(CHAIN)
    async with mcp_session(vault) as c:
        for tool, args in (("memory_search", {"agent": "t"}), ("memory_list", {}), ("list_by_domain", {"domain": ""})):
            answer = await c.call(tool, **args, as_of="last spring")
            assert answer["status"] == "invalid" and answer["param"] == "as_of"
            assert "YYYY-MM-DD" in answer["message"], answer


async def test_supersede_ends_the_old_note_and_as_of_follows(make_vault, mcp_session):
    vault = make_vault({"k.md": note("k1", "2020-01-01", "title: Key policy\n", "Rotate keys yearly.")})
    async with mcp_session(vault) as c:
        answer = await c.call("memory_supersede", agent="t", ref="k1", title="Key policy v2",
                              content="Rotate keys quarterly.")
        assert answer["status"] == "ok", answer
        text = (vault.root / "k.md").read_text(encoding="utf-8")
        assert f"valid_until: {answer['updated']}" in text or f"valid_until: '{answer['updated']}'" in text
        then = await c.call("memory_search", agent="t", query="rotate keys", as_of="2021")
        assert perms(then) == ["memory://k"]
        now = await c.call("memory_search", agent="t", query="rotate keys")
        assert perms(now) == [answer["permalink"]] and now["notes"][0]["older"] == ["memory://k"]
        # a second supersession of the same note keeps the end it already has
        again = await c.call("memory_supersede", agent="t", ref="k1", title="Key policy v2b", content="x")
        assert again["status"] == "ok"
        assert (vault.root / "k.md").read_text(encoding="utf-8") == text


def _walk_answers(answers: list[dict[str, Any]]) -> list[list[str]]:
    return [[n["permalink"].rpartition("/")[2] for n in a["notes"]] for a in answers]


EXPECTED_WALK = [[], ["v1"], ["v2"], ["v3"]]


async def _walk(call) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60  # the index is built in the background; wait for it
    while "indexing" in await call({"agent": "t"}) and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    return [await call({"agent": "t", "query": "broker streams", "as_of": when}) for when, _ in WALK]


async def test_as_of_over_stdio(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", CHAIN)
    params = StdioServerParameters(command=sys.executable, args=serve_args(root), cwd=str(tmp_path))
    async with Client(params, mode="legacy") as client:
        async def call(args: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool("memory_search", args)
            assert result.structured_content is not None
            return result.structured_content

        assert _walk_answers(await _walk(call)) == EXPECTED_WALK


async def test_as_of_over_http(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", CHAIN)
    env = os.environ | {"VAULT_MEM_TOKEN": "s3cret-token"}
    proc, url = start_http(root, cwd=tmp_path, env=env)
    try:
        authed = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret-token"})
        async with authed, Client(streamable_http_client(url, http_client=authed), mode="legacy") as client:
            async def call(args: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool("memory_search", args)
                assert result.structured_content is not None
                return result.structured_content

            assert _walk_answers(await _walk(call)) == EXPECTED_WALK
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_as_of_and_follow_from_the_cli(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", CHAIN)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "vault_mem", *args, "--vault", str(root)],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)

    got = []
    for when, _ in WALK:
        done = run("search", "broker", "streams", "--as-of", when, "--json")
        got.append(json.loads(done.stdout))
    assert _walk_answers(got) == EXPECTED_WALK
    listed = run("list", "broker", "--as-of", "2024-06-01", "--json")
    assert [r["uid"] for r in json.loads(listed.stdout)["results"]] == ["b2"]
    grouped = run("search", "streams")
    assert "also 2 older versions: v1, v2" in grouped.stdout
    bad = run("search", "streams", "--as-of", "soon")
    assert bad.returncode != 0 and "as_of" in bad.stderr and "YYYY-MM-DD" in bad.stderr
