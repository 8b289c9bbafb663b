"""The write tools of docs/tools.md (memory_write, memory_edit, task_close, memory_supersede,
memory_delete) through a real MCP client session, on real files, with the real index.

Every write must be visible to every read tool when the call returns, stay inside the
vault (docs/safety.md) and leave files that look hand-written: a minimal diff, the file's BOM,
line endings and permissions kept, no temp file left behind or indexed.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_mem.runtime.watcher import Watcher
from vault_mem.search.api import reconcile
from vault_mem.vault.reader import file_etag, normalize_tags

pytestmark = pytest.mark.anyio

AGENT = "test-agent"
ANSWER_KEYS = {"status", "uid", "permalink", "path", "updated", "etag"}
ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"

BASE = {
    "proj/x/old.md": """
        ---
        id: old-1
        type: decision
        tags: [alpha, beta/gamma]
        created: 2025-01-10
        ---
        Use the blue widget.
        """,
    "proj/task.md": """
        ---
        id: task-1
        type: task
        ---
        - [ ] first step
        - [ ] second step
        """,
    "plain.md": "No frontmatter at all; just text.\n",
}


def md_files(root: Path) -> set[str]:
    """Every file under ``root`` (hidden ones too), as '/'-separated relative paths."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def index_paths(vault: Any) -> set[str]:
    return set(vault.index.records())


async def write(c: Any, **args: Any) -> dict[str, Any]:
    return await c.call("memory_write", **({"agent": AGENT} | args))


async def edit(c: Any, **args: Any) -> dict[str, Any]:
    return await c.call("memory_edit", **({"agent": AGENT} | args))


async def sees(c: Any, word: str, uid: str, domain: str) -> dict[str, bool]:
    """Which read tools see the note ``uid`` holding ``word``, right now."""
    found = await c.call("memory_search", agent=AGENT, query=word)
    listed = await c.call("list_by_domain", domain=domain, status="all")
    memories = await c.call("memory_list", query=word, follow="all")
    read = await c.call("memory_read", ref=uid)
    return {
        "memory_search": uid in {n["permalink"] for n in found["notes"]} or any(
            n["permalink"] == read.get("permalink") for n in found["notes"]),
        "list_by_domain": uid in {r["uid"] for r in listed["results"]},
        "memory_list": uid in {m["id"] for m in memories["memories"]},
        "memory_read": read["status"] == "ok" and read["uid"] == uid,
    }


# --- memory_write ----------------------------------------------------------------------------

async def test_write_names_the_file_after_the_title_with_block_frontmatter(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        answer = await write(c, title="Plan: ship it... now?", content="Body text", domain="proj/new",
                             type="lesson", tags=["Foo", "#bar/Baz"])
        assert set(answer) == ANSWER_KEYS | {"similar"} and answer["status"] == "ok"
        assert answer["path"] == "proj/new/Plan ship it... now.md"
        assert answer["permalink"] == "memory://proj/new/Plan ship it... now"
        text = (vault.root / answer["path"]).read_text(encoding="utf-8")
        lines = text.split("\n")
        expected = [
            "---", f"id: {re.escape(answer['uid'])}", re.escape("title: 'Plan: ship it... now?'"),
            "type: lesson", "tags:", "  - foo", "  - bar/baz", f"created: {ISO}", f"updated: {ISO}",
            f"agent: {AGENT}", "---", "Body text", "",
        ]
        assert len(lines) == len(expected), text
        for line, pattern in zip(lines, expected, strict=True):
            assert re.fullmatch(pattern, line), (line, pattern)
        assert text.endswith("Body text\n") and not text.endswith("\n\n")
        read = await c.call("memory_read", ref=answer["uid"])
        assert read["title"] == "Plan: ship it... now?"
        assert read["etag"] == answer["etag"] == file_etag((vault.root / answer["path"]).read_bytes())
        assert read["updated"] == read["created"] == answer["updated"]
        assert read["agent"] == AGENT and read["type"] == "lesson" and read["tags"] == ["foo", "bar/baz"]


@pytest.mark.parametrize(("title", "filename"), [
    ("a/b\\c", "abc.md"),
    ("What? *now* <or> never|", "What now or never.md"),
    ("[[Link]] #tag ^block", "Link tag block.md"),
    ("...leading and trailing...", "leading and trailing.md"),
    ("tabs\tand\nnewlines", "tabs and newlines.md"),
    ("***", "Untitled.md"),
    ("drawing.excalidraw", "drawing excalidraw.md"),
    ("Émoji 🚀 and עברית", "Émoji 🚀 and עברית.md"),
])
async def test_write_file_name_is_the_title_cleaned_as_obsidian_would(make_vault, mcp_session, title, filename):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        answer = await write(c, title=title, content="x", domain="names")
        assert answer["path"] == f"names/{filename}"
        read = await c.call("memory_read", ref=answer["uid"])
        assert read["title"] == title.strip()


async def test_write_never_overwrites_and_numbers_collisions_ignoring_case(make_vault, mcp_session):
    vault = make_vault(BASE | {"n/Hello.md": "mine\n", "n/hello 1.md": "also mine\n"})
    before = {p: (vault.root / p).read_bytes() for p in ("n/Hello.md", "n/hello 1.md")}
    async with mcp_session(vault) as c:
        first = await write(c, title="HELLO", content="one", domain="n")
        second = await write(c, title="Hello", content="two", domain="n")
        third = await write(c, title="hello:", content="three", domain="n")
    assert [first["path"], second["path"], third["path"]] == ["n/HELLO 2.md", "n/Hello 3.md", "n/hello 4.md"]
    assert {p: (vault.root / p).read_bytes() for p in before} == before
    assert len({first["uid"], second["uid"], third["uid"]}) == 3


async def test_write_same_title_twice_gets_a_suffix(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        a = await write(c, title="Twice", content="first")
        b = await write(c, title="Twice", content="second")
        assert (a["path"], b["path"]) == ("Twice.md", "Twice 1.md")
        assert (await c.call("memory_read", ref=a["uid"]))["body"] == "first\n"
        assert (await c.call("memory_read", ref=b["uid"]))["body"] == "second\n"


async def test_write_title_is_not_a_path(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        for title in ("../../etc/passwd", "..", "C:/Windows", "~/notes", ".hidden"):
            answer = await write(c, title=title, content="x")
            assert answer["status"] == "ok"
            assert "/" not in answer["path"] and not answer["path"].startswith(".")
            assert (vault.root / answer["path"]).is_file()
            assert (await c.call("memory_read", ref=answer["uid"]))["title"] == title


BAD_DOMAINS = ["../x", "a/../../x", "/abs", "~/x", "C:/x", "c:\\x", "a\\b", "%2e%2e/x", "a%2fb", "a%5cb",
               "a\u2215b", "\uff0e\uff0e/x", "a\u2044b", "a\uff0fb", "\u2024\u2024/x", ".hidden", "a/.obsidian",
               ".trash", ".vault-mem", "a\x00b", "a\nb", "./x", "a/./b"]


@pytest.mark.parametrize("domain", BAD_DOMAINS)
async def test_write_refuses_every_escaping_domain(make_vault, mcp_session, tmp_path, domain):
    vault = make_vault(BASE)
    before = md_files(tmp_path)
    async with mcp_session(vault) as c:
        answer = await write(c, title="Escape", content="x", domain=domain)
    assert answer["status"] == "invalid" and answer["param"] == "domain"
    assert "domain" in answer["message"]
    assert md_files(tmp_path) == before


async def test_write_refuses_a_symlinked_folder_leading_outside(make_vault, mcp_session, tmp_path):
    vault = make_vault(BASE)
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault.root / "link").symlink_to(outside, target_is_directory=True)
    (vault.root / "proj" / "deep").symlink_to(outside, target_is_directory=True)
    async with mcp_session(vault) as c:
        for domain in ("link", "link/sub", "proj/deep", "proj/deep/x/y"):
            answer = await write(c, title="Escape", content="x", domain=domain)
            assert answer["status"] == "invalid" and answer["param"] == "domain", (domain, answer)
            assert "outside the vault" in answer["message"]
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(("args", "param"), [
    ({"agent": None}, "agent"),
    ({"agent": ""}, "agent"),
    ({"agent": "Claude Code"}, "agent"),
    ({"agent": "x" * 65}, "agent"),
    ({"agent": 7}, "agent"),
    ({"title": None}, "title"),
    ({"title": "   "}, "title"),
    ({"title": {"a": 1}}, "title"),
    ({"title": ["a"]}, "title"),
    ({"content": ["x"]}, "content"),
    ({"bogus": 1}, "bogus"),
    ({"tags": 5}, "tags"),
    ({"tags": [{"a": 1}]}, "tags"),
    ({"importance": "high"}, "importance"),
    ({"importance": 2}, "importance"),
    ({"importance": True}, "importance"),
    ({"scope": "galaxy"}, "scope"),
    ({"type": ["fact"]}, "type"),
    ({"paths": {"a": 1}}, "paths"),
    ({"domain": ["a", "b"]}, "domain"),
])
async def test_write_bad_input_is_invalid_naming_the_parameter(make_vault, mcp_session, args, param):
    vault = make_vault(BASE)
    before = md_files(vault.root)
    call = {"agent": AGENT, "title": "T", "content": "x"} | args
    async with mcp_session(vault) as c:
        answer = await c.call("memory_write", **{k: v for k, v in call.items() if v is not None})
    assert answer["status"] == "invalid", answer
    assert answer["param"] == param and param in answer["message"]
    assert md_files(vault.root) == before
    if args.get("agent") == "Claude Code":
        assert "claude-code" in answer["message"]


async def test_write_and_edit_refuse_nul_and_lone_surrogates(make_vault, mcp_session):
    vault = make_vault(BASE)
    before = {p: (vault.root / p).read_bytes() for p in BASE}
    async with mcp_session(vault) as c:
        for tool, args, param in (("memory_write", {"title": "N", "content": "a\x00b"}, "content"),
                                  ("memory_edit", {"ref": "old-1", "append": "\x00"}, "append"),
                                  ("memory_edit", {"ref": "old-1", "content": "x\x00"}, "content")):
            answer = await c.call(tool, agent=AGENT, **args)
            assert answer["status"] == "invalid" and answer["param"] == param and "NUL" in answer["message"]
        surrogate = await write(c, title="S", content="a\ud800b")
        assert surrogate["status"] == "invalid" and surrogate["param"] == "content"
        assert "surrogate" in surrogate["message"]
    assert {p: (vault.root / p).read_bytes() for p in BASE} == before
    assert not (vault.root / "N.md").exists() and not (vault.root / "S.md").exists()


async def test_write_into_a_file_instead_of_a_folder_is_invalid(make_vault, mcp_session):
    vault = make_vault(BASE)
    before = md_files(vault.root)
    async with mcp_session(vault) as c:
        for domain in ("plain.md", "plain.md/below", "proj/task.md/x/y"):
            answer = await write(c, title="Inside", content="x", domain=domain)
            assert answer["status"] == "invalid" and answer["param"] == "domain", answer
            assert "not a folder" in answer["message"] and str(vault.root) not in answer["message"]
    assert md_files(vault.root) == before


async def test_write_defaults_a_blank_type_to_note(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        answer = await write(c, title="Blank type", content="x", type="   ")
        assert (await c.call("memory_read", ref=answer["uid"]))["type"] == "note"


async def test_write_optional_fields(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        answer = await write(c, title="Full", content="x", importance="0.75", namespace="work", scope="project_shared",
                             project="acme", paths=["src/app.py", "docs"], tags="single")
        read = await c.call("memory_read", ref=answer["uid"])
    assert read["importance"] == 0.75 and read["namespace"] == "work"
    assert (read["scope"], read["project"]) == ("project_shared", "acme")
    assert read["paths"] == ["src/app.py", "docs"] and read["tags"] == ["single"]
    assert read["problems"] == []


async def test_write_is_visible_to_every_read_tool_when_it_returns(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        answer = await write(c, title="Fresh memory", content="The zanzibarite finding.", domain="proj/x")
        assert await sees(c, "zanzibarite", answer["uid"], "proj/x") == dict.fromkeys(
            ("memory_search", "list_by_domain", "memory_list", "memory_read"), True)
        for ref in (answer["permalink"], answer["path"], "Fresh memory"):
            assert (await c.call("memory_read", ref=ref))["uid"] == answer["uid"]


# --- memory_edit -----------------------------------------------------------------------------

async def test_edit_content_replaces_the_body_only(make_vault, mcp_session):
    vault = make_vault(BASE)
    path = vault.root / "proj/x/old.md"
    async with mcp_session(vault) as c:
        answer = await edit(c, ref="old-1", content="A new body.\n\nWith two paragraphs.")
        assert set(answer) == ANSWER_KEYS and answer["status"] == "ok"
        read = await c.call("memory_read", ref="old-1")
    text = path.read_text(encoding="utf-8")
    assert text.endswith("---\nA new body.\n\nWith two paragraphs.\n")
    assert text.startswith("---\nid: old-1\ntype: decision\ntags: [alpha, beta/gamma]\ncreated: 2025-01-10\nupdated: ")
    assert read["body"] == "A new body.\n\nWith two paragraphs.\n"
    assert read["etag"] == answer["etag"] == file_etag(path.read_bytes())
    assert re.fullmatch(ISO, answer["updated"]) and read["updated"] == answer["updated"]


async def test_edit_append_adds_a_paragraph_reading_the_file_at_write_time(make_vault, mcp_session):
    vault = make_vault(BASE)
    path = vault.root / "proj/x/old.md"
    async with mcp_session(vault) as c:
        # Someone edits the file in another editor; the index has not seen it yet.
        path.write_text(path.read_text(encoding="utf-8") + "Added by hand.\n", encoding="utf-8")
        answer = await edit(c, ref="old-1", append="Appended by the agent.")
        assert answer["status"] == "ok"
        read = await c.call("memory_read", ref="old-1")
    assert read["body"] == "Use the blue widget.\nAdded by hand.\n\nAppended by the agent.\n"
    assert path.read_text(encoding="utf-8").endswith("Added by hand.\n\nAppended by the agent.\n")


async def test_edit_set_writes_keys(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        answer = await edit(c, ref="old-1", set={"importance": 0.9, "tags": ["new", "Other"], "owner": "ops"})
        assert answer["status"] == "ok"
        read = await c.call("memory_read", ref="old-1")
        by_json = await edit(c, ref="old-1", set='{"status": "archived"}')
        assert by_json["status"] == "ok"
        archived = await c.call("memory_read", ref="old-1")
    assert read["importance"] == 0.9 and read["tags"] == ["new", "other"]
    assert read["metadata"] == {"owner": "ops"}
    assert archived["memory_status"] == "archived"
    text = (vault.root / "proj/x/old.md").read_text(encoding="utf-8")
    assert "tags: [new, Other]\n" in text and "owner: ops\n" in text


HAND_WRITTEN = (
    "\ufeff---\r\n"
    "# written by hand\r\n"
    "id:    hand-1   # keep me\r\n"
    'title:   "Quoted: title"\r\n'
    "tags: [ one,two ]\r\n"
    "importance:   0.3\r\n"
    "created: 2023-12-31T23:00:00Z\r\n"
    "owner: 'ops team'\r\n"
    "updated: 2024-01-05   # last touched\r\n"
    "list:\r\n"
    "    - a\r\n"
    "    -   b\r\n"
    "---\r\n"
    "Body  with  spaces   \r\n"
    "\r\n"
    "- [ ] a box\r\n"
)


@pytest.mark.parametrize(("updates", "changed_key"), [
    ({"importance": 0.9}, "importance"),
    ({"owner": "dev team"}, "owner"),
    ({"title": "New: title"}, "title"),
])
async def test_edit_set_one_key_changes_only_that_line_and_updated(make_vault, mcp_session, updates, changed_key):
    vault = make_vault({"hand.md": HAND_WRITTEN})
    path = vault.root / "hand.md"
    before = path.read_bytes()
    assert before.startswith(b"\xef\xbb\xbf---\r\n")
    async with mcp_session(vault) as c:
        answer = await edit(c, ref="hand-1", set=updates)
        assert answer["status"] == "ok", answer
        read = await c.call("memory_read", ref="hand-1")
    after = path.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf---\r\n")
    old_lines = before.decode("utf-8").splitlines(keepends=True)
    new_lines = after.decode("utf-8").splitlines(keepends=True)
    diff = [d for d in difflib.ndiff(old_lines, new_lines) if d[:1] in "+-"]
    removed = [d[2:] for d in diff if d.startswith("-")]
    added = [d[2:] for d in diff if d.startswith("+")]
    assert sorted(line.split(":")[0] for line in removed) == sorted([changed_key, "updated"]), diff
    assert sorted(line.split(":")[0] for line in added) == sorted([changed_key, "updated"]), diff
    assert all(line.endswith("\r\n") for line in new_lines)
    assert after.count(b"\n") == before.count(b"\n") == after.count(b"\r\n")
    shown = read["metadata"] if changed_key == "owner" else read
    assert shown[changed_key] == updates[changed_key]
    assert read["updated"] == answer["updated"] and read["etag"] == answer["etag"]


async def test_edit_of_a_note_without_id_or_created_pins_both(make_vault, mcp_session):
    vault = make_vault(BASE)
    path = vault.root / "plain.md"
    os.utime(path, (1_700_000_000, 1_700_000_000))
    reconcile(vault.index)
    async with mcp_session(vault) as c:
        before = await c.call("memory_read", ref="plain")
        answer = await edit(c, ref="plain", set={"owner": "ops"})
        after = await c.call("memory_read", ref="plain")
    assert answer["uid"] == before["uid"] == after["uid"]
    assert after["created"] == before["created"] == "2023-11-14T22:13:20+00:00"
    assert after["updated"] == answer["updated"] != before["updated"]
    text = path.read_text(encoding="utf-8")
    assert text == (f"---\nid: {before['uid']}\ncreated: 2023-11-14T22:13:20+00:00\nupdated: {answer['updated']}\n"
                    "owner: ops\n---\nNo frontmatter at all; just text.\n")


async def test_edit_keeps_file_permissions(make_vault, mcp_session):
    vault = make_vault(BASE)
    path = vault.root / "proj/x/old.md"
    path.chmod(0o640)
    async with mcp_session(vault) as c:
        assert (await edit(c, ref="old-1", append="More."))["status"] == "ok"
        assert (await c.call("task_close", agent=AGENT, ref="task-1"))["status"] == "ok"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


async def test_edit_stale_if_etag_is_a_conflict_and_changes_nothing(make_vault, mcp_session):
    vault = make_vault(BASE)
    path = vault.root / "proj/x/old.md"
    async with mcp_session(vault) as c:
        seen = await c.call("memory_read", ref="old-1")
        path.write_text(path.read_text(encoding="utf-8").replace("blue", "red"), encoding="utf-8")
        now = path.read_bytes()
        for change in ({"content": "mine"}, {"append": "more"}, {"set": {"owner": "me"}}):
            answer = await edit(c, ref="old-1", if_etag=seen["etag"], **change)
            assert answer["status"] == "conflict", answer
            assert answer["etag"] == file_etag(now) != seen["etag"]
            assert "updated" in answer and seen["etag"] in answer["message"]
            assert path.read_bytes() == now
        fresh = await c.call("memory_read", ref="old-1")
        assert fresh["etag"] == file_etag(now)
        ok = await edit(c, ref="old-1", if_etag=fresh["etag"], append="more")
        assert ok["status"] == "ok" and ok["etag"] != fresh["etag"]


async def test_edit_stale_if_updated_is_a_conflict(make_vault, mcp_session):
    vault = make_vault({"n.md": "---\nid: n-1\nupdated: 2025-03-01T10:00:00Z\n---\nBody.\n"})
    path = vault.root / "n.md"
    before = path.read_bytes()
    async with mcp_session(vault) as c:
        stale = await edit(c, ref="n-1", if_updated="2025-02-01T10:00:00Z", append="x")
        assert stale["status"] == "conflict"
        assert stale["updated"] == "2025-03-01T10:00:00+00:00" and stale["etag"] == file_etag(before)
        assert path.read_bytes() == before
        bad = await edit(c, ref="n-1", if_updated="yesterday", append="x")
        assert bad["status"] == "invalid" and bad["param"] == "if_updated"
        assert path.read_bytes() == before
        ok = await edit(c, ref="n-1", if_updated="2025-03-01T10:00:00+00:00", append="x")
        assert ok["status"] == "ok"
        assert (await edit(c, ref="n-1", if_updated="2025-03-01T10:00:00Z", append="y"))["status"] == "conflict"


@pytest.mark.parametrize(("text", "why"), [
    ("---\nid: broken-1\ntitle: [unclosed\n---\nBody.\n", "cannot be parsed"),
    ("---\nid: broken-1\ntitle: x\nBody with no closing fence.\n", "never closed"),
    ("---\n- a list\n- not a mapping\n---\nBody.\n", "mapping"),
])
async def test_edit_refuses_a_file_whose_frontmatter_cannot_be_parsed(make_vault, mcp_session, text, why):
    vault = make_vault({"broken.md": text})
    path = vault.root / "broken.md"
    before = path.read_bytes()
    async with mcp_session(vault) as c:
        for change in ({"content": "new"}, {"append": "more"}, {"set": {"a": 1}}):
            answer = await edit(c, ref="broken.md", **change)
            assert answer["status"] == "invalid", answer
            assert answer["param"] == "ref" and why in answer["message"], answer
            assert path.read_bytes() == before


@pytest.mark.parametrize(("args", "param"), [
    ({}, "content"),
    ({"set": [1, 2]}, "set"),
    ({"set": "not json"}, "set"),
    ({"set": 5}, "set"),
    ({"set": {"id": "other"}}, "set"),
    ({"set": {"": 1}}, "set"),
    ({"content": ["not", "text"]}, "content"),
    ({"ref": None, "content": "x"}, "ref"),
    ({"ref": "../etc/passwd", "content": "x"}, "ref"),
    ({"agent": None, "content": "x"}, "agent"),
    ({"content": "x", "colour": "red"}, "colour"),
    ({"content": "x", "if_etag": ["e"]}, "if_etag"),
])
async def test_edit_bad_input_is_invalid(make_vault, mcp_session, args, param):
    vault = make_vault(BASE)
    before = (vault.root / "proj/x/old.md").read_bytes()
    call = {"agent": AGENT, "ref": "old-1"} | args
    async with mcp_session(vault) as c:
        answer = await c.call("memory_edit", **{k: v for k, v in call.items() if v is not None})
    assert answer["status"] == "invalid", answer
    assert answer["param"] == param and param in answer["message"]
    assert (vault.root / "proj/x/old.md").read_bytes() == before


async def test_edit_unknown_ref_is_not_found(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        assert (await edit(c, ref="no-such-note", content="x"))["status"] == "not_found"


async def test_edit_is_visible_to_every_read_tool_when_it_returns(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        assert await sees(c, "quokkaberry", "old-1", "proj") == dict.fromkeys(
            ("memory_search", "list_by_domain", "memory_list", "memory_read"), False) | {
            "list_by_domain": True, "memory_read": True}
        await edit(c, ref="old-1", append="The quokkaberry result.")
        assert all((await sees(c, "quokkaberry", "old-1", "proj")).values())
        await edit(c, ref="old-1", content="Nothing left.")
        found = await c.call("memory_search", agent=AGENT, query="quokkaberry")
        assert found["notes"] == []


# --- task_close ------------------------------------------------------------------------------

@pytest.mark.parametrize("state", ["completed", "cancelled", "CANCELLED"])
async def test_task_close_writes_state_and_archives(make_vault, mcp_session, state):
    vault = make_vault(BASE)
    path = vault.root / "proj/task.md"
    async with mcp_session(vault) as c:
        open_tasks = await c.call("list_by_domain", domain="proj", type="task")
        assert [r["uid"] for r in open_tasks["results"]] == ["task-1"]
        answer = await c.call("task_close", agent=AGENT, ref="task-1", state=state)
        assert set(answer) == ANSWER_KEYS and answer["status"] == "ok"
        archived = await c.call("list_by_domain", domain="proj", type="task", status="archived")
        active = await c.call("list_by_domain", domain="proj", type="task", status="active")
        read = await c.call("memory_read", ref="task-1")
    assert [r["uid"] for r in archived["results"]] == ["task-1"]
    assert archived["results"][0]["state"] == state.lower()
    assert active["status"] == "none"
    assert read["memory_status"] == "archived" and read["state"] == state.lower()
    text = path.read_text(encoding="utf-8")
    assert f"\nstate: {state.lower()}\n" in text and "\nstatus: archived\n" in text
    assert text.endswith("---\n- [ ] first step\n- [ ] second step\n")


async def test_task_close_default_state_is_completed(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        assert (await c.call("task_close", agent=AGENT, ref="task-1"))["status"] == "ok"
        assert (await c.call("memory_read", ref="task-1"))["state"] == "completed"


@pytest.mark.parametrize(("args", "param"), [
    ({"ref": "old-1"}, "ref"),
    ({"ref": "plain"}, "ref"),
    ({"state": "done"}, "state"),
    ({"state": "open"}, "state"),
    ({"state": 1}, "state"),
    ({"agent": "bad agent"}, "agent"),
    ({"extra": True}, "extra"),
])
async def test_task_close_bad_input_is_invalid(make_vault, mcp_session, args, param):
    vault = make_vault(BASE)
    before = {p: (vault.root / p).read_bytes() for p in BASE}
    async with mcp_session(vault) as c:
        answer = await c.call("task_close", **({"agent": AGENT, "ref": "task-1"} | args))
    assert answer["status"] == "invalid", answer
    assert answer["param"] == param and param in answer["message"]
    assert {p: (vault.root / p).read_bytes() for p in BASE} == before


# --- memory_supersede ------------------------------------------------------------------------

async def test_supersede_takes_the_old_domain_type_and_tags(make_vault, mcp_session):
    vault = make_vault(BASE)
    old_path = vault.root / "proj/x/old.md"
    old_bytes = old_path.read_bytes()
    async with mcp_session(vault) as c:
        listed = await c.call("memory_list", query="widget")
        assert [m["id"] for m in listed["memories"]] == ["old-1"]
        answer = await c.call("memory_supersede", agent=AGENT, ref="old-1", title="Widget choice v2",
                              content="Use the green widget.")
        assert set(answer) == ANSWER_KEYS | {"similar"} and answer["status"] == "ok"
        assert answer["path"] == "proj/x/Widget choice v2.md"
        new = await c.call("memory_read", ref=answer["uid"])
        active = await c.call("memory_list", query="widget")
        history = await c.call("memory_list", query="widget", follow="all")
        old = await c.call("memory_read", ref="old-1")
    assert (new["type"], new["tags"], new["domain"]) == ("decision", ["alpha", "beta/gamma"], "proj/x")
    assert new["supersedes"] == ["old-1"] and new["agent"] == AGENT
    assert "\nsupersedes: old-1\n" in (vault.root / answer["path"]).read_text(encoding="utf-8")
    # the old note only gains the moment it stopped being true (docs/vault-format.md, "Validity")
    added = old_path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = old_bytes.decode("utf-8").splitlines(keepends=True)
    assert [line for line in added if line not in kept] == [f"valid_until: {answer['updated']}\n"]
    assert [line for line in added if line.startswith("valid_until")] != [] and len(added) == len(kept) + 1
    assert [m["id"] for m in active["memories"]] == [answer["uid"]]
    assert sorted(m["id"] for m in history["memories"]) == sorted(["old-1", answer["uid"]])
    assert old["lineage"]["superseded_by"] == [answer["permalink"]]


async def test_supersede_given_fields_win(make_vault, mcp_session):
    vault = make_vault(BASE)
    async with mcp_session(vault) as c:
        answer = await c.call("memory_supersede", agent=AGENT, ref="memory://proj/x/old", title="Elsewhere",
                              content="x", type="fact", tags=["Solo"], domain="other/place")
        new = await c.call("memory_read", ref=answer["uid"])
    assert answer["path"] == "other/place/Elsewhere.md"
    assert (new["type"], new["tags"], new["supersedes"]) == ("fact", ["solo"], ["old-1"])


@pytest.mark.parametrize(("args", "status", "param"), [
    ({"ref": "nothing-here"}, "not_found", None),
    ({"domain": "../up"}, "invalid", "domain"),
    ({"title": None}, "invalid", "title"),
    ({"tags": 3}, "invalid", "tags"),
    ({"importance": 0.5}, "invalid", "importance"),
])
async def test_supersede_bad_input(make_vault, mcp_session, args, status, param):
    vault = make_vault(BASE)
    before = md_files(vault.root)
    call = {"agent": AGENT, "ref": "old-1", "title": "T", "content": "x"} | args
    async with mcp_session(vault) as c:
        answer = await c.call("memory_supersede", **{k: v for k, v in call.items() if v is not None})
    assert answer["status"] == status, answer
    if param:
        assert answer["param"] == param
    assert md_files(vault.root) == before


# --- memory_delete ---------------------------------------------------------------------------

async def test_delete_moves_to_a_flat_trash_and_disappears_at_once(make_vault, mcp_session):
    vault = make_vault(BASE | {"other/deep/old.md": "---\nid: old-2\n---\nAnother widget note.\n"})
    async with mcp_session(vault) as c:
        first = await c.call("memory_delete", agent=AGENT, ref="old-1")
        assert first["status"] == "ok" and first["uid"] == "old-1"
        assert first["path"] == ".trash/old.md"
        second = await c.call("memory_delete", agent=AGENT, ref="old-2")
        assert second["path"] == ".trash/old 1.md"
        for uid, permalink in (("old-1", "memory://proj/x/old"), ("old-2", "memory://other/deep/old")):
            assert (await c.call("memory_read", ref=uid))["status"] == "not_found"
            assert (await c.call("memory_read", ref=permalink))["status"] == "not_found"
            assert not any((await sees(c, "widget", uid, "")).values())
        assert (await c.call("memory_search", agent=AGENT, query="widget"))["status"] == "none"
        again = await c.call("memory_delete", agent=AGENT, ref="old-1")
        assert again["status"] == "not_found"
    assert not (vault.root / "proj/x/old.md").exists()
    assert (vault.root / ".trash/old.md").read_text(encoding="utf-8").endswith("Use the blue widget.\n")
    assert (vault.root / ".trash/old 1.md").read_text(encoding="utf-8").endswith("Another widget note.\n")
    assert sorted(p.name for p in (vault.root / ".trash").iterdir()) == ["old 1.md", "old.md"]
    assert not any(p.startswith(".trash") for p in index_paths(vault))
    reconcile(vault.index)
    assert not any(p.startswith(".trash") for p in index_paths(vault))
    assert index_paths(vault) == {"proj/task.md", "plain.md"}


async def test_delete_bad_input(make_vault, mcp_session):
    vault = make_vault(BASE)
    before = md_files(vault.root)
    async with mcp_session(vault) as c:
        for args, param in (({"ref": ".trash/old.md"}, "ref"), ({"agent": None}, "agent"), ({"ref": None}, "ref"),
                            ({"force": True}, "force")):
            call = {"agent": AGENT, "ref": "old-1"} | args
            answer = await c.call("memory_delete", **{k: v for k, v in call.items() if v is not None})
            assert answer["status"] == "invalid" and answer["param"] == param, answer
        stale = await c.call("memory_delete", agent=AGENT, ref="old-1", if_etag="0" * 24)
        assert stale["status"] == "conflict"
    assert md_files(vault.root) == before


# --- temp files ------------------------------------------------------------------------------

async def test_no_temp_file_is_left_or_ever_indexed(make_vault, mcp_session):
    vault = make_vault(BASE)
    indexed: list[str] = []
    real_submit = vault.index.submit  # what the write tools (and apply) hand the index

    def recording_submit(notes: list[Any], removed: list[str]) -> Any:
        indexed.extend(note.path for note, _ in notes)
        return real_submit(notes, removed)

    vault.index.submit = recording_submit
    watcher = Watcher(vault.index)
    watcher.start()
    try:
        async with mcp_session(vault) as c:
            new = await write(c, title="Temp check", content="x", domain="proj/x")
            await edit(c, ref=new["uid"], append="more")
            await edit(c, ref="old-1", set={"owner": "me"})
            await c.call("task_close", agent=AGENT, ref="task-1")
            await c.call("memory_supersede", agent=AGENT, ref="old-1", title="Next", content="y")
            await c.call("memory_delete", agent=AGENT, ref=new["uid"])
        assert watcher.wait_idle(30)
    finally:
        watcher.stop()
    reconcile(vault.index)
    leftovers = [p for p in md_files(vault.root) if p.rpartition("/")[2].startswith(".")
                 and p.endswith(".tmp") and not p.startswith(".vault-mem")]
    assert leftovers == []
    assert indexed and all(p.endswith(".md") and not p.rpartition("/")[2].startswith(".") for p in indexed)
    assert all(p.endswith(".md") and "/." not in f"/{p}" for p in index_paths(vault))


# --- round trip ------------------------------------------------------------------------------

TITLES = st.text(min_size=1, max_size=60).filter(lambda t: t.strip() != "")
TAGS = st.lists(st.text(alphabet=st.characters(categories=("L", "N"), include_characters="-_/"),
                        min_size=1, max_size=12), max_size=5)
# NUL and lone surrogates are refused (tested above); everything else must round-trip.
BODIES = st.text(alphabet=st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=300)


@given(title=TITLES, body=BODIES, tags=TAGS)
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
async def test_write_then_read_round_trips(make_vault, mcp_session, title, body, tags):
    # A fresh vault each example: Hypothesis seeds the global ``random`` the same way for every
    # example, and Whoosh names segments with it, so a second commit to one index would reuse a name.
    vault = make_vault({})
    async with mcp_session(vault) as c:
        answer = await write(c, title=title, content=body, tags=tags, domain="rt")
        assert answer["status"] == "ok", answer
        read = await c.call("memory_read", ref=answer["uid"])
    assert read["title"] == title.strip()
    expected_body = body.replace("\r\n", "\n").replace("\r", "\n")
    if expected_body and not expected_body.endswith("\n"):
        expected_body += "\n"
    assert read["body"] == expected_body
    expected_tags = normalize_tags(tags)
    if "#" in body:
        assert read["tags"][: len(expected_tags)] == expected_tags
    else:
        assert read["tags"] == expected_tags
    assert read["problems"] == []

