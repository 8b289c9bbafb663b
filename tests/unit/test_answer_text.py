"""Every client sees the whole answer: the text block carries the same JSON as the
structured content, for every tool and every status; resource URIs are valid RFC 3986
URIs that read back their note, whatever characters the note's name holds."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from conftest import open_vault, write_notes
from mcp import Client

from vault_mem.mcp_server.app import build_server

pytestmark = pytest.mark.anyio

ODD_NAMES = {
    "00 Meta/Vault Infos/Contribution.md": "Spaces in folder and file names.",
    "topics/C# #tips.md": "Hash signs in the name.",
    "topics/100% done.md": "A percent sign and a space.",
    "topics/50%ab.md": "A percent sign that looks like an escape.",
    "topics/Why? Because.md": "A question mark.",
    "Ünïcødé/Привет мир.md": "Cyrillic letters.",
    "Ünïcødé/日本語のノート.md": "Japanese letters.",
    "emoji/🚀 launch plan.md": "An emoji.",
    "plain/simple.md": "Nothing special.",
}

NOTES = {
    **ODD_NAMES,
    "work/decision.md": "---\nid: d1\ntitle: Queue décision ✓\ntype: decision\ntags: [queue]\n"
                        "created: 2025-03-01\n---\nWe chose NATS for the queue — « vite ».\n",
    "work/task.md": "---\nid: t1\ntitle: Ship it\ntype: task\ncreated: 2025-03-02\n---\n- [ ] ship\n",
}

# One call per tool and status; the session's own check (conftest.ToolClient.call) compares
# the text block with the structured content on every one of them.
CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("memory_search", {"agent": "me", "query": "queue"}, "ok"),
    ("memory_search", {"agent": "me", "query": "zzqqxxnothing"}, "none"),
    ("memory_search", {"agent": "Claude Code"}, "invalid"),
    ("list_by_domain", {"domain": "work"}, "ok"),
    ("list_by_domain", {"domain": "nosuchdomain"}, "none"),
    ("list_by_domain", {"domain": "work", "limit": 0}, "invalid"),
    ("mem_recall", {"since": "2025-03"}, "ok"),
    ("mem_recall", {"since": "2025-03", "output_format": "structured"}, "ok"),
    ("mem_recall", {"since": "1990-01", "until": "1990-02"}, "none"),
    ("mem_recall", {"since": "March"}, "invalid"),
    ("memory_list", {"query": "queue"}, "ok"),
    ("memory_list", {"query": "zzqqxxnothing"}, "none"),
    ("memory_list", {"fields": ["nosuchfield"]}, "invalid"),
    ("memory_read", {"ref": "d1"}, "ok"),
    ("memory_read", {"ref": "no such note"}, "not_found"),
    ("memory_read", {"ref": "../etc/passwd"}, "invalid"),
    ("list_domains", {}, "ok"),
    ("list_domains", {"offset": -1}, "invalid"),
    ("get_memory", {"uid": "d1"}, "ok"),
    ("memory_get", {"memory_id": "no such note"}, "not_found"),
    ("memory_write", {"agent": "me", "title": "Fresh ✨ note", "content": "Body é.", "domain": "work"}, "ok"),
    ("memory_write", {"agent": "me", "title": "", "content": "x"}, "invalid"),
    ("memory_edit", {"agent": "me", "ref": "d1", "append": "More."}, "ok"),
    ("memory_edit", {"agent": "me", "ref": "d1", "append": "x", "if_etag": "0" * 24}, "conflict"),
    ("memory_edit", {"agent": "me", "ref": "nowhere", "append": "x"}, "not_found"),
    ("task_close", {"agent": "me", "ref": "t1", "state": "completed"}, "ok"),
    ("task_close", {"agent": "me", "ref": "t1", "state": "finished"}, "invalid"),
    ("memory_supersede", {"agent": "me", "ref": "d1", "title": "Queue decision v2", "content": "Kafka."}, "ok"),
    ("memory_delete", {"agent": "me", "ref": "plain/simple"}, "ok"),
    ("memory_delete", {"agent": "me", "ref": "plain/simple"}, "not_found"),
]


async def test_every_tool_and_status_carries_the_whole_answer_as_text(tmp_path: Path, mcp_session) -> None:
    vault = open_vault(write_notes(tmp_path / "v", NOTES), compat=True)
    seen: dict[str, set[str]] = {}
    async with mcp_session(vault) as c:
        listed = {tool.name for tool in (await c.client.list_tools()).tools}
        for tool, args, expected in CALLS:
            answer = await c.call(tool, **args)
            assert answer["status"] == expected, (tool, args, answer)
            seen.setdefault(tool, set()).add(answer["status"])
    assert set(seen) == listed, "every listed tool is called at least once"
    assert set().union(*seen.values()) >= {"ok", "none", "not_found", "invalid", "conflict"}


async def test_text_block_is_compact_json_with_characters_kept(tmp_path: Path, mcp_session) -> None:
    vault = open_vault(write_notes(tmp_path / "v", NOTES))
    async with mcp_session(vault) as c:
        result = await c.raw("memory_read", {"ref": "d1"})
        text = result.content[0].text
        assert text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        assert "décision ✓" in text and "« vite »" in text and "\\u" not in text
        assert "\n" not in text.replace("\\n", "")


# RFC 3986: a URI is ASCII; outside percent-escapes only unreserved, sub-delims, ':', '@' and '/'.
URI_CHARS = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$")


async def all_resources(client: Client) -> list[Any]:
    resources, cursor = [], None
    while True:
        page = await client.list_resources(cursor=cursor)
        resources.extend(page.resources)
        cursor = page.next_cursor
        if not cursor:
            return resources


async def test_resource_uris_are_valid_and_read_back_their_note(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    vault = open_vault(root)
    async with Client(build_server(vault), mode="legacy") as client:
        resources = await all_resources(client)
        by_readable = {}
        for resource in resources:
            uri = str(resource.uri)
            assert URI_CHARS.match(uri), f"not a valid URI: {uri!r}"
            parts = urlsplit(uri)
            assert parts.scheme == "memory" and not parts.query and not parts.fragment, uri
            readable = unquote(parts.netloc + parts.path)
            by_readable[readable] = uri
        assert set(by_readable) == {rel[:-3] for rel in NOTES}
        for rel in NOTES:
            expected = (root / rel).read_text(encoding="utf-8")
            encoded = by_readable[rel[:-3]]
            for uri in (encoded, "memory://" + rel[:-3]):  # the encoded URI and the readable permalink
                result = await client.read_resource(uri)
                assert result.contents[0].text == expected, uri  # type: ignore[union-attr]


async def test_answers_keep_readable_permalinks_that_refs_accept(tmp_path: Path, mcp_session) -> None:
    vault = open_vault(write_notes(tmp_path / "v", ODD_NAMES))
    async with mcp_session(vault) as c:
        answer = await c.call("memory_list", limit=-1)
        permalinks = {row["permalink"] for row in answer["memories"]}
        assert permalinks == {"memory://" + rel[:-3] for rel in ODD_NAMES}
        for permalink in permalinks:
            read = await c.call("memory_read", ref=permalink)
            assert read["status"] == "ok" and read["permalink"] == permalink


class HalfBuilt:
    """The health of a vault whose build is half done (what the server's runtime reports then)."""

    def indexing(self) -> dict[str, int] | None:
        return {"done": 1, "total": 2}

    def checking(self) -> dict[str, int] | None:
        return None

    def check(self) -> None:
        return None

    def answering(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


async def test_every_answer_during_a_build_says_the_index_is_incomplete(tmp_path: Path, mcp_session) -> None:
    vault = open_vault(write_notes(tmp_path / "v", NOTES))
    vault.health = HalfBuilt()
    async with mcp_session(vault) as c:
        for tool, args in (("memory_read", {"ref": "not there yet"}), ("memory_read", {"ref": "d1"}),
                           ("memory_search", {"agent": "me", "query": "queue"}),
                           ("memory_edit", {"agent": "me", "ref": "not there yet", "append": "x"})):
            answer = await c.call(tool, **args)
            assert answer["indexing"] == {"done": 1, "total": 2}, (tool, answer)
            assert any("still being built" in h for h in answer["hints"]), answer
