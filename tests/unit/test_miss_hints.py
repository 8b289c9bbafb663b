"""Misses explained (docs/tools.md, "Hints on a miss"): when a read finds nothing, or finds a word
only by its stem, ``hints`` says why. Every case through a real MCP session on real files."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import commit_note, commit_removal

from vault_mem import settings
from vault_mem.search.api import reading

pytestmark = pytest.mark.anyio


def note(title: str, body: str, updated: str = "2025-01-01T00:00:00Z", **fields: Any) -> str:
    lines = ["---", f"title: {json.dumps(title)}", f"created: {updated}", f"updated: {updated}"]
    lines += [f"{key}: {json.dumps(value)}" for key, value in fields.items()]
    return "\n".join([*lines, "---", body]) + "\n"


VAULT = {
    "ops/queues/Queue decision.md": note("Queue decision", "Ingest goes through NATS JetStream with replay.",
                                         "2025-06-01T00:00:00Z", type="decision", tags=["queues", "ops/infra"],
                                         paths=["src/ingest"]),
    "ops/Deploy.md": note("Deploy", "Blue green deploys behind the load balancer.", "2025-03-01T00:00:00Z",
                          type="fact", tags=["deploy"]),
    "research/Visual notes.md": note("Visual notes", "Charts make the visual case.", "2024-11-01T00:00:00Z",
                                     tags=["charts"]),
    "research/old/Kafka trial.md": note("Kafka trial", "We tried Kafka first.", "2024-01-01T00:00:00Z",
                                        type="decision", status="archived", tags=["queues"]),
}


async def search(c: Any, **args: Any) -> dict[str, Any]:
    return await c.call("memory_search", **({"agent": "test-agent"} | args))


def said(answer: dict[str, Any]) -> str:
    return " | ".join(answer.get("hints", []))


async def test_a_misspelled_word_gets_did_you_mean_naming_the_real_word(make_vault, mcp_session):
    async with mcp_session(make_vault(VAULT)) as c:
        answer = await search(c, query="jetsream")
        assert answer["status"] == "none"
        assert answer["hints"] == ["no note holds 'jetsream'; did you mean 'jetstream'?"]
        listed = await c.call("memory_list", query="jetsream")
        assert listed["status"] == "none"
        assert "no memory's title or body holds 'jetsream'; did you mean 'jetstream'?" in listed["hints"]
        # a swap of two letters in a short word is offered too
        assert "did you mean 'kafka'?" in said(await search(c, query="kafak"))


async def test_a_word_no_note_holds_is_named_even_when_other_words_found_notes(make_vault, mcp_session):
    async with mcp_session(make_vault(VAULT)) as c:
        answer = await search(c, query="jetstream replya")
        assert answer["status"] == "ok" and answer["count"] == 1
        assert answer["hints"] == ["no note holds 'replya'; did you mean 'replay'?"]
        nothing_close = await search(c, query="xqzvw")
        assert nothing_close["hints"] == ["no note holds 'xqzvw', nor a word close to it"]


async def test_a_stem_only_match_says_so(make_vault, mcp_session):
    async with mcp_session(make_vault(VAULT)) as c:
        answer = await search(c, query="visualizes")  # the vault holds only "visual"
        assert answer["status"] == "ok"
        assert [n["title"] for n in answer["notes"]] == ["Visual notes"]
        assert answer["hints"] == ["no note holds 'visualizes': matched by its stem 'visual' only"]


async def test_a_normal_hit_carries_no_hints(make_vault, mcp_session):
    async with mcp_session(make_vault(VAULT)) as c:
        for args in ({"query": "jetstream replay"}, {"query": "visual"}, {}, {"tag": "queues"}):
            answer = await search(c, **args)
            assert answer["status"] == "ok" and "hints" not in answer, (args, answer)
        assert "hints" not in await c.call("memory_list", query="deploy")
        assert "hints" not in await c.call("list_by_domain", domain="ops")


async def test_a_tag_no_note_carries_names_the_tag_filter(make_vault, mcp_session):
    async with mcp_session(make_vault(VAULT)) as c:
        answer = await search(c, query="jetstream", tag="queus")
        assert answer["status"] == "none"
        assert answer["hints"] == ["tag: tag 'queus' matched no memory; did you mean 'queues'?"]
        listed = await c.call("memory_list", tags_any=["nosuch"])
        assert listed["status"] == "none" and "tags_any: tag 'nosuch' matched no memory" in said(listed)
        recalled = await c.call("mem_recall", tag_filter="queus")
        assert recalled["status"] == "none"
        assert recalled["hints"] == ["tag_filter: tag 'queus' matched no memory; did you mean 'queues'?"]


async def test_a_since_after_the_newest_note_names_since_and_the_newest_date(make_vault, mcp_session):
    async with mcp_session(make_vault(VAULT)) as c:
        answer = await search(c, since="2030-01-01T00:00:00Z")
        assert answer["status"] == "none"
        assert answer["hints"] == ["since: '2030-01-01T00:00:00Z' is after the newest note "
                                   "(updated 2025-06-01T00:00:00+00:00)"]
        recalled = await c.call("mem_recall", since="2030")
        assert recalled["hints"] == ["since '2030' is after the newest memory (created 2025-06-01T00:00:00+00:00)"]
        listed = await c.call("memory_list", date_from="2030-01")
        assert "date_from '2030-01' is after the newest memory (created 2025-06-01T00:00:00+00:00)" in listed["hints"]
        early = await c.call("memory_list", date_to="2020")
        assert "date_to '2020' is before the oldest memory (created 2024-01-01T00:00:00+00:00)" in early["hints"]


async def test_an_absent_kind_path_or_domain_names_its_filter(make_vault, mcp_session):
    async with mcp_session(make_vault(VAULT)) as c:
        kind = await search(c, kind="lesson")
        assert kind["status"] == "none"
        assert kind["hints"] == ["kind: no note is of kind 'lesson' (kinds present: decision, fact, note)"]
        unknown = await search(c, kind="decison")  # neither known nor present: invalid, naming kind
        assert unknown["status"] == "invalid" and unknown["param"] == "kind"
        path = await search(c, path="src/ingst")
        assert path["status"] == "none"
        assert path["hints"] == ["path: no note's code paths overlap 'src/ingst'; did you mean 'src/ingest'?"]
        domain = await c.call("list_by_domain", domain="reserch")
        assert domain["status"] == "none"
        assert domain["hints"] == ["domain: no folder is named 'reserch'; did you mean 'research'?"]
        typed = await c.call("list_by_domain", domain="ops", type="decison")
        assert typed["hints"] == ["type: no memory under 'ops' is of type 'decison'; did you mean 'decision'?"]
        archived = await c.call("list_by_domain", domain="research/old")
        assert archived["hints"] == ["status: every memory under 'research/old' is archived; "
                                     "status='archived' or 'all' lists them"]
        typed_list = await c.call("memory_list", metadata_filters={"type": "lesson"})
        assert "metadata_filters type='lesson': no memory has it" in typed_list["hints"]


async def test_filters_that_only_exclude_each_other_together_say_how_many_each_leaves(make_vault, mcp_session):
    async with mcp_session(make_vault(VAULT)) as c:
        answer = await search(c, query="jetstream", tag="deploy")
        assert answer["hints"] == ["the query matches 1 note, none of them with tag 'deploy'"]
        several = await search(c, query="queue", kind="fact", tag="ops")
        assert several["hints"] == ["the query matches 2 notes, none of them with kind 'fact'"]
        both = await search(c, kind="fact", tag="queues")
        assert both["hints"] == ["no note passes every filter together (kind 'fact' admits 1, tag 'queues' admits 2)"]


async def test_suggestions_come_from_every_segment_and_never_from_deleted_notes(make_vault, mcp_session):
    vault = make_vault(VAULT)
    commit_note(vault.index, "late.md", note("Late", "Observability dashboards.", "2025-07-01T00:00:00Z"))
    commit_note(vault.index, "gone.md", note("Gone", "Zeppelin archive.", "2025-07-02T00:00:00Z"))
    commit_removal(vault.index, "gone.md")
    with reading(vault.index) as snapshot:
        assert snapshot.segment_count() > 1  # the new notes sit in segments of their own
    async with mcp_session(vault) as c:
        late = await search(c, query="observabilty")
        assert late["hints"] == ["no note holds 'observabilty'; did you mean 'observability'?"]
        gone = await search(c, query="zepelin")
        assert gone["hints"] == ["no note holds 'zepelin', nor a word close to it"]


async def test_hints_stay_short_whatever_the_caller_passed(make_vault, mcp_session):
    long_word = "jetsream" + "x" * 900
    many_tags = [f"nosuchtag{i:03d}" for i in range(300)]
    async with mcp_session(make_vault(VAULT)) as c:
        answer = await search(c, query=" ".join([long_word, *many_tags[:30]]))
        listed = await c.call("memory_list", tags_all=many_tags)
        recalled = await c.call("mem_recall", tag_filter=",".join(many_tags[:140]))  # 2,000 characters at most
    for reply in (answer, listed, recalled):
        assert reply["status"] == "none"
        assert len(json.dumps(reply["hints"])) < 2_000, reply["hints"]
        assert len(json.dumps(reply)) < settings.current().max_answer_chars
        assert all(len(h) < 400 for h in reply["hints"])
    assert any("137 more tags match no memory" in h for h in recalled["hints"])
    assert len(answer["hints"]) == 6 and answer["hints"][-1].startswith("26 more words no note holds: ")


async def test_a_hit_with_many_unheld_words_keeps_its_hints_short(make_vault, mcp_session):
    nonsense = [f"zq{i:02d}" + "w" * 300 for i in range(31)]
    async with mcp_session(make_vault(VAULT)) as c:
        answer = await search(c, query=" ".join(["jetstream", *nonsense]), limit=50)
        listed = await c.call("memory_list", query=" ".join(nonsense[:3] + ["qx" + str(i) for i in range(9)]))
    assert listed["status"] == "none" and len(listed["hints"]) == 6
    assert listed["hints"][-1].startswith("7 more words no memory holds: 'qx2'")
    assert answer["status"] == "ok" and answer["count"] == 1
    assert len(answer["hints"]) == 6 and all(len(h) < 400 for h in answer["hints"])
    assert answer["hints"][-1].startswith("26 more words no note holds: 'zq05")


async def test_an_empty_vault_says_so(make_vault, mcp_session):
    async with mcp_session(make_vault({"README.txt": "not a note"})) as c:
        assert (await search(c, query="anything"))["hints"] == ["the index holds no notes yet"]
        assert (await c.call("memory_list", query="anything"))["hints"] == ["the index holds no memories yet"]
        assert (await c.call("list_by_domain", domain="x"))["hints"] == ["the index holds no memories yet"]
