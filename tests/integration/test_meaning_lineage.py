"""One ranking, one fold: with a meaning model loaded, ``memory_search`` keeps the lineage rules
(docs/ranking.md, "The current version first"): the current version first, its older versions
folded into its row, the same rows as without a model. Over a real MCP client session, with the
tiny model of tests/meaning_model.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from meaning_model import make_tiny_model
from test_meaning import note, with_meaning

pytestmark = pytest.mark.anyio


def versions(title: str, body: str, updated: str, supersedes: str | None = None) -> str:
    text = note(title, body, updated)
    return text.replace("---\n", f"---\nsupersedes: \"[[{supersedes}]]\"\n", 1) if supersedes else text


NOTES = {
    "decisions/Queue v1.md": versions("Queue v1", "The queue: Redis lists.", "2024-01-01T00:00:00Z"),
    "decisions/Queue v2.md": versions("Queue v2", "The queue: Postgres.", "2025-01-01T00:00:00Z", "Queue v1"),
    "decisions/Queue v3.md": versions("Queue v3", "The queue: NATS JetStream, the broker we chose.",
                                      "2026-01-01T00:00:00Z", "Queue v2"),
    "trials/Kafka.md": versions("Kafka trial", "A message queue trial with Kafka, abandoned.", "2025-06-01T00:00:00Z",
                                "Queue v1"),
    "reading/Broker.md": note("Reading", "The broker chapter: messages and the queue.", "2025-03-01T00:00:00Z"),
    "garden/Tomatoes.md": note("Tomatoes", "Water the tomatoes and the soil.", "2025-01-05T00:00:00Z"),
}


def rows(answer: dict[str, Any]) -> list[tuple[str, int]]:
    """Each row's note and how many older versions fold into it, in answer order."""
    return [(n["permalink"].removeprefix("memory://"), n.get("older_count", 0)) for n in answer["notes"]]


def folds(answer: dict[str, Any]) -> set[tuple[str, frozenset[str]]]:
    return {(n["permalink"], frozenset(n.get("older", []))) for n in answer["notes"]}


@pytest.mark.parametrize("query", ["queue", "queue broker", "which message broker did we pick?"])
async def test_the_same_rows_fold_with_and_without_a_model(make_vault, mcp_session, tmp_path: Path,
                                                           query: str) -> None:
    vault = make_vault(NOTES)
    async with mcp_session(vault) as c:
        words = await c.call("memory_search", agent="t", query=query, limit=50)
    with_meaning(vault, make_tiny_model(tmp_path / "tiny"))
    async with mcp_session(vault) as c:
        fused = await c.call("memory_search", agent="t", query=query, limit=50)
    keyword_rows = {p for p, _ in rows(words)}
    # every row the words made is a row again, with at least the versions folded into it (the model
    # may find more, and more rows); no version the words folded stands as a row of its own
    by_head = dict(folds(fused))
    for head, older in folds(words):
        assert head in by_head and older <= by_head[head], (head, rows(fused))
    for permalink, _ in rows(fused):
        assert not permalink.startswith(("decisions/Queue v1", "decisions/Queue v2")), rows(fused)
    assert "decisions/Queue v3" in keyword_rows


async def test_the_current_decision_leads_its_chain_with_a_model(make_vault, mcp_session, tmp_path: Path) -> None:
    vault = make_vault(NOTES)
    with_meaning(vault, make_tiny_model(tmp_path / "tiny"))
    async with mcp_session(vault) as c:
        answer = await c.call("memory_search", agent="t", query="queue")
    chain = [p for p, _ in rows(answer) if p.startswith("decisions/")]
    assert chain == ["decisions/Queue v3"]
    assert dict(rows(answer))["decisions/Queue v3"] == 2


async def test_after_a_supersede_with_a_model_the_old_version_is_folded(make_vault, mcp_session,
                                                                       tmp_path: Path) -> None:
    vault = make_vault(NOTES)
    with_meaning(vault, make_tiny_model(tmp_path / "tiny"))
    async with mcp_session(vault) as c:
        done = await c.call("memory_supersede", agent="t", ref="Queue v3", title="Queue v4",
                            content="The queue: NATS JetStream in two regions, the broker we keep.")
        assert done["status"] == "ok", done
        answer = await c.call("memory_search", agent="t", query="queue broker")
    found = rows(answer)
    decisions = [(p, older) for p, older in found if p.startswith("decisions/")]
    assert decisions == [("decisions/Queue v4", 3)], found
    row = next(n for n in answer["notes"] if n["permalink"].endswith("decisions/Queue v4"))
    assert "memory://decisions/Queue v3" in row["older"]


@pytest.mark.parametrize("query", ["queue", "which message broker did we pick?"])
def test_with_a_model_and_a_limited_key_the_fold_shows_no_version_the_key_may_not_read(
        make_vault, tmp_path: Path, query: str) -> None:
    """The fold with meaning on, for an agent whose key reads decisions/ only: the Kafka trial
    (trials/, on the same chain) is neither a row nor among the older versions of one."""
    from vault_mem.mcp_server.app import call
    from vault_mem.mcp_server.tools import TOOLS_BY_NAME
    from vault_mem.served.agents import Agent

    vault = make_vault(NOTES)
    with_meaning(vault, make_tiny_model(tmp_path / "tiny"))
    reader = Agent("reader", read=("decisions/**",))
    answer = call(vault, TOOLS_BY_NAME["memory_search"], {"agent": "reader", "query": query, "limit": 50}, reader)
    shown = [n["permalink"] for n in answer["notes"]] + [p for n in answer["notes"] for p in n.get("older", [])]
    assert shown and all(p.startswith("memory://decisions/") for p in shown), answer
    assert rows(answer)[0][0] == "decisions/Queue v3", rows(answer)
