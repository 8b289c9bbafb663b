"""Confinement (docs/safety.md) through a real MCP client session: no ref and no domain leaves the
vault or reaches a hidden folder, whatever the tool; titles are not paths.

Every refused form is tried against every ref (memory_read, memory_edit, memory_delete,
task_close, memory_supersede) and every domain (memory_write, memory_supersede,
list_by_domain); each must answer ``invalid`` naming the parameter, and no file anywhere
(inside the vault or beside it) may change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import open_vault, write_notes
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

AGENT = "test-agent"
NOTES = {
    "a/n.md": "---\nid: n1\ntitle: Plain note\n---\nInside the vault.\n",
    "a/b/deep.md": "---\nid: d1\n---\nDeeper.\n",
    "t.md": "---\nid: t1\ntype: task\n---\n- [ ] step\n",
    ".obsidian/x.md": "---\nid: hidden1\n---\nObsidian settings note.\n",
}
SECRET = "SECRET-OUTSIDE-THE-VAULT"

REFUSED = {
    "dotdot_up": "../x",
    "dotdot_inner": "a/../../x",
    "dotdot_alone": "..",
    "dotdot_trailing": "a/..",
    "dot_leading": "./x",
    "dot_inner": "a/./n",
    "leading_slash": "/etc/passwd",
    "leading_tilde": "~/x",
    "leading_tilde_user": "~root/x",
    "drive_upper": "C:/x",
    "drive_backslash": "c:\\x",
    "backslash": "a\\n",
    "backslash_dotdot": "..\\x",
    "percent_dotdot": "%2e%2e/x",
    "percent_dot_upper": "%2E",
    "percent_slash": "a%2fb",
    "percent_backslash": "%5c",
    "percent_nul": "a%00b",
    "nul": "a\x00b",
    "control": "a\x01b",
    "newline": "a\nb",
    "delete": "a\x7fb",
    "c1_control": "a\x85b",
    "fraction_slash_2044": "..\u2044x",
    "division_slash_2215": "..\u2215x",
    "fullwidth_solidus_ff0f": "a\uff0fb",
    "fullwidth_backslash_ff3c": "a\uff3cb",
    "one_dot_leader_2024": "\u2024\u2024/x",
    "two_dot_leader_2025": "\u2025/x",
    "fullwidth_stop_ff0e": "\uff0e\uff0e/x",
    "hidden_top": ".obsidian/x",
    "hidden_inner": "a/.git/b",
    "hidden_trash": ".trash",
    "hidden_index": ".vault-mem",
    "hidden_after_space": " .obsidian",
    "hidden_trailing_slash": ".obsidian/",
}
# A permalink is a ref form only (as a domain, "memory:" is just a folder name).
REFUSED_PERMALINKS = {
    "permalink_dotdot": "memory://../x",
    "permalink_absolute": "memory:///etc/passwd",
    "permalink_hidden": "memory://.obsidian/x",
    "permalink_percent": "memory://%2e%2e/x",
}


def snapshot(base: Path) -> dict[str, bytes | str]:
    """Every entry under ``base`` (the vault and its neighbours, the index folder excepted)."""
    out: dict[str, bytes | str] = {}
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base).as_posix()
        if rel.split("/")[0].endswith("-index"):
            continue
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = path.read_bytes()
        else:
            out[rel] = "dir"
    return out


@pytest.fixture
def world(tmp_path: Path) -> Any:
    """A vault beside an ``outside`` folder, with a symlinked folder and a symlinked note
    pointing out of it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"---\nid: sec\ntype: task\n---\n{SECRET}\n- [ ] x\n", encoding="utf-8")
    root = write_notes(tmp_path / "v", NOTES)
    os.symlink(outside, root / "link", target_is_directory=True)
    os.symlink(outside / "secret.md", root / "sl.md")
    return open_vault(root)


def ref_calls(ref: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("memory_read", {"ref": ref}),
        ("memory_edit", {"agent": AGENT, "ref": ref, "append": "more"}),
        ("memory_delete", {"agent": AGENT, "ref": ref}),
        ("task_close", {"agent": AGENT, "ref": ref, "state": "completed"}),
        ("memory_supersede", {"agent": AGENT, "ref": ref, "title": "Newer", "content": "x"}),
    ]


def domain_calls(domain: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("memory_write", {"agent": AGENT, "title": "Escapee", "content": "x", "domain": domain}),
        ("memory_supersede", {"agent": AGENT, "ref": "n1", "title": "Escapee", "content": "x", "domain": domain}),
        ("list_by_domain", {"domain": domain}),
    ]


@pytest.mark.parametrize("form", list(REFUSED.values()), ids=list(REFUSED))
async def test_refused_in_every_ref_and_domain(world, mcp_session, tmp_path: Path, form: str) -> None:
    before = snapshot(tmp_path)
    async with mcp_session(world) as c:
        for param, calls in (("ref", ref_calls(form)), ("domain", domain_calls(form))):
            for tool, args in calls:
                answer = await c.call(tool, **args)
                assert answer["status"] == "invalid", (tool, param, answer)
                assert answer["param"] == param, (tool, answer)
                assert answer["message"].startswith(f"{param}: "), (tool, answer)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("ref", list(REFUSED_PERMALINKS.values()), ids=list(REFUSED_PERMALINKS))
async def test_refused_permalinks_in_every_ref(world, mcp_session, tmp_path: Path, ref: str) -> None:
    before = snapshot(tmp_path)
    async with mcp_session(world) as c:
        for tool, args in ref_calls(ref):
            answer = await c.call(tool, **args)
            assert answer["status"] == "invalid" and answer["param"] == "ref", (tool, answer)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("uri", ["memory://../x", "memory://a/../../x", "memory://%2e%2e/x",
                                 "memory:///etc/passwd", "memory://.obsidian/x", "memory://a%5cn"])
async def test_resource_read_refuses_escapes(world, mcp_session, uri: str) -> None:
    async with mcp_session(world) as c:
        with pytest.raises(MCPError) as caught:
            await c.client.read_resource(uri)
        assert "uri" in str(caught.value)
        ok = await c.client.read_resource("memory://a/n")
        assert "Inside the vault." in ok.contents[0].text


async def test_write_into_a_symlinked_folder_pointing_outside_is_refused(world, mcp_session, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    async with mcp_session(world) as c:
        for domain in ("link", "link/", "link/sub", "link/sub/deeper"):
            for tool in ("memory_write", "memory_supersede"):
                args: dict[str, Any] = {"agent": AGENT, "title": "Escapee", "content": "x", "domain": domain}
                if tool == "memory_supersede":
                    args["ref"] = "n1"
                answer = await c.call(tool, **args)
                assert answer["status"] == "invalid", (tool, domain, answer)
                assert answer["param"] == "domain" and "outside the vault" in answer["message"]
    assert snapshot(tmp_path) == before
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["secret.md"]


READS = [
    pytest.param("memory_read", {"ref": "sl"}, id="memory_read"),
    pytest.param("memory_read", {"ref": "link/secret"}, id="memory_read_through_folder"),
    pytest.param("memory_search", {"agent": AGENT, "query": "SECRET"}, id="memory_search_query"),
    pytest.param("memory_search", {"agent": AGENT}, id="memory_search_recent"),
    pytest.param("memory_list", {"query": "SECRET"}, id="memory_list_query"),
    pytest.param("memory_list", {"content_mode": "full"}, id="memory_list_full"),
    pytest.param("list_by_domain", {"domain": ""}, id="list_by_domain"),
    pytest.param("mem_recall", {"since": "1970", "output_format": "structured"}, id="mem_recall"),
]


@pytest.mark.parametrize(("tool", "args"), READS)
async def test_reads_never_show_what_lies_outside(world, mcp_session, tool: str, args: dict[str, Any]) -> None:
    async with mcp_session(world) as c:
        answer = await c.call(tool, **args)
    assert SECRET not in json.dumps(answer)


async def test_a_symlinked_note_pointing_outside_is_no_note(world, mcp_session) -> None:
    async with mcp_session(world) as c:
        through_folder = await c.call("memory_read", ref="link/secret")
        assert through_folder["status"] in ("invalid", "not_found")
        note = await c.call("memory_read", ref="sl")
        assert note["status"] == "not_found", note
    from vault_mem.vault.walk import walk_vault

    walked = walk_vault(world.root)
    assert "sl.md" not in walked.files and "outside the vault" in walked.skipped_links["sl.md"]


async def test_edit_through_a_symlinked_note_pointing_outside_is_refused(world, mcp_session, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    async with mcp_session(world) as c:
        answer = await c.call("memory_edit", agent=AGENT, ref="sl", append="written from the vault")
        assert answer["status"] == "not_found", answer  # no note: the indexer skips it
    assert snapshot(tmp_path) == before


async def test_resource_read_does_not_follow_a_symlink_outside(world, mcp_session) -> None:
    async with mcp_session(world) as c:
        try:
            result = await c.client.read_resource("memory://sl")
        except MCPError:
            return
        assert SECRET not in result.contents[0].text


async def test_list_by_domain_refuses_a_symlinked_folder_pointing_outside(world, mcp_session) -> None:
    async with mcp_session(world) as c:
        answer = await c.call("list_by_domain", domain="link")
        assert answer["status"] == "invalid" and answer["param"] == "domain"


@pytest.mark.parametrize("ref", ["C: notes", "c:notes", "Wait... what", "50% done", "a/b: c..."])
async def test_titles_that_look_a_little_like_paths_are_refs(make_vault, mcp_session, ref: str) -> None:
    vault = make_vault({"n.md": f"---\nid: x1\ntitle: {json.dumps(ref)}\n---\nBody.\n"})
    async with mcp_session(vault) as c:
        answer = await c.call("memory_read", ref=ref)
        assert answer["status"] == "ok" and answer["uid"] == "x1", answer


@pytest.mark.parametrize(("title", "filename"), [
    ("../../etc/passwd", "etcpasswd.md"),
    ("a/b: c...", "ab c.md"),
    ("C:/Windows\\system32", "CWindowssystem32.md"),
    (".obsidian", "obsidian.md"),
    ("~/notes", "~notes.md"),
    ("..", "Untitled.md"),
])
async def test_titles_are_not_paths(make_vault, mcp_session, tmp_path: Path, title: str, filename: str) -> None:
    vault = make_vault({"a/keep.md": "Keep.\n"})
    before_outside = {p for p in tmp_path.iterdir()}
    async with mcp_session(vault) as c:
        written = await c.call("memory_write", agent=AGENT, title=title, content="Body.", domain="a")
        assert written["status"] == "ok", written
        assert written["path"] == f"a/{filename}"
        assert (vault.root / "a" / filename).is_file()
        read = await c.call("memory_read", ref=written["uid"])
        assert read["title"] == title and read["path"] == f"a/{filename}"
    assert {p for p in tmp_path.iterdir()} - {vault.index.history_dir} == before_outside  # the journal's
    made = sorted(p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*") if p.is_file())
    assert made == sorted([f"a/{filename}", "a/keep.md"])


async def test_a_plain_domain_and_ref_still_work(world, mcp_session) -> None:
    async with mcp_session(world) as c:
        written = await c.call("memory_write", agent=AGENT, title="Fresh", content="x", domain="a/b/")
        assert written["status"] == "ok" and written["path"] == "a/b/Fresh.md"
        assert (await c.call("memory_read", ref="memory://a/b/Fresh"))["status"] == "ok"
        assert (await c.call("list_by_domain", domain="a/b/"))["status"] == "ok"


def test_inside_check_agrees_with_resolves_inside_on_every_kind_of_link(tmp_path: Path) -> None:
    from vault_mem.vault.paths import InsideCheck, resolves_inside

    root, outside = tmp_path / "vault", tmp_path / "outside"
    (root / "plain").mkdir(parents=True)
    outside.mkdir()
    (root / "plain" / "a.md").write_text("a", encoding="utf-8")
    (outside / "secret.md").write_text("s", encoding="utf-8")
    try:
        os.symlink(outside, root / "out", target_is_directory=True)
        os.symlink(root / "plain", root / "in", target_is_directory=True)
        os.symlink(outside / "secret.md", root / "plain" / "leak.md")
        os.symlink(root / "plain" / "a.md", root / "plain" / "alias.md")
        os.symlink(root / "plain" / "loop.md", root / "plain" / "loop.md")
        os.symlink(root / "dloop", root / "dloop", target_is_directory=True)
        (root / "deep" / "er").mkdir(parents=True)
        os.symlink(outside, root / "deep" / "er" / "away", target_is_directory=True)
    except (OSError, NotImplementedError):
        pytest.skip("symlinks cannot be made here")
    targets = ["plain/a.md", "plain/leak.md", "plain/alias.md", "plain/gone.md", "plain/loop.md",
               "out/secret.md", "out/none.md", "in/a.md", "in/leak.md", "a.md", "dloop/x.md", "deep/er/b.md",
               "deep/er/away/secret.md", "deep/er/away/../../er/b.md", "plain/../../outside/secret.md"]
    check = InsideCheck(root)
    for _ in range(2):  # the second round answers from the folders resolved in the first
        assert {t: check(root / t) for t in targets} == {t: resolves_inside(root, root / t) for t in targets}
