"""Agent keys and limits (docs/sharing.md): the globs, the key file, the agents command, and
what a limited agent sees in every read tool (real in-process sessions)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ToolClient, open_vault, write_notes
from mcp import Client

from vault_mem.cli import main
from vault_mem.mcp_server.app import build_server
from vault_mem.served import keys
from vault_mem.served.agents import Agent
from vault_mem.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("glob", "path", "matches"), [
    ("projects/", "projects/a.md", True),
    ("projects", "projects/deep/b.md", False),  # a plain name is the note projects.md (agents add resolves it)
    ("projects", "projects.md", True),
    ("projects/**", "projects/deep/b.md", True),
    ("projects/", "projects-old/a.md", False),
    ("projects/", "Projects/a.md", False),  # case-sensitive: another folder on Linux
    ("projects/*", "projects/deep/b.md", True),  # the folder projects/deep matches, so all inside
    ("projects/*.md", "projects/deep/b.md", False),
    ("**/drafts/**", "a/b/drafts/c.md", True),
    ("**/drafts/**", "drafts/c.md", True),
    ("projects/plan", "projects/plan.md", True),
    ("projects/plan", "projects/planning.md", False),
    ("projects/acme/Acme", "projects/acme/Acme/evil.md", False),  # a note glob is that note, no folder
    ("projects/acme/Acme", "projects/acme/Acme/deep/er/evil2.md", False),
    ("projects/acme/Acme.md", "projects/acme/Acme.md/x.md", False),
    ("projects/*.md", "projects/notes.md/x.md", False),
    ("projects/*", "projects/notes.md/x.md", True),  # a wildcard name without .md matches folders too
    ("*.md", "top.md", True),
    ("*.md", "projects/a.md", False),
    ("notes/a?.md", "notes/ab.md", True),
    ("notes/[x].md", "notes/[x].md", True),  # brackets are plain characters
])
def test_a_glob_covers_a_path_itself_or_a_folder_of_it(glob: str, path: str, matches: bool) -> None:
    assert Agent("a", read=(glob,)).may_read(path) is matches


def test_agents_add_makes_a_plain_name_a_folder_or_a_note_by_what_the_vault_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"projects/a.md": "# a\n", "projects/acme/Acme.md": "# A\n",
                                        "both.md": "# b\n", "both/x.md": "# x\n"})
    code, out, _err = run(capsys, "agents", "add", "w", "--vault", str(root), "--read", "projects",
                          "--write", "projects/acme/Acme", "--json")
    stored = json.loads(out)
    assert code == 0 and stored["read"] == ["projects/"] and stored["write"] == ["projects/acme/Acme.md"]
    for glob, said in (("both", "names both the folder both/ and the note both.md"),
                       ("nothing", "names no folder or note of the vault")):
        code, _out, err = run(capsys, "agents", "add", "x", "--vault", str(root), "--read", glob)
        assert code == 1 and said in err


def test_writing_needs_reading_and_read_only_writes_nothing() -> None:
    agent = Agent("a", read=("projects/",), write=("projects/acme/", "inbox/"))
    assert agent.may_write("projects/acme/x.md") and not agent.may_write("projects/other.md")
    assert not agent.may_write("inbox/x.md"), "inbox/ is outside the read globs"
    assert Agent("b").may_write("anything.md") and not Agent("b", read_only=True).may_write("anything.md")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_key_is_shown_once_and_kept_only_as_a_hash_outside_the_vault(
        tmp_path: Path, own_config_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "# a\n"})
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    code, out, err = run(capsys, "agents", "add", "coder", "--vault", str(root), "--read", "projects/")
    assert code == 0
    key = out.strip()
    assert key.startswith("vmk_") and len(key) > 40 and "shown only this once" in err
    stored = (own_config_folder / "vault-mem" / "agents.json").read_text(encoding="utf-8")
    assert key not in stored and keys.hashed(key) in stored
    added = set(p.relative_to(root) for p in root.rglob("*")) - set(before)
    assert added == {Path(".vault-mem"), Path(".vault-mem/keyed")}, "only the mark that the vault has had keys"
    assert key not in keys.vault_mark(root).read_text(encoding="utf-8")
    data = json.loads(stored)
    assert list(data["vaults"]) == [str(root.resolve())]
    assert data["vaults"][str(root.resolve())]["coder"]["read"] == ["projects/"]
    if os.name == "posix":
        assert stat.S_IMODE((own_config_folder / "vault-mem").stat().st_mode) == 0o700
        assert stat.S_IMODE((own_config_folder / "vault-mem" / "agents.json").stat().st_mode) == 0o600
    assert [p.name for p in (own_config_folder / "vault-mem").iterdir()] == ["agents.json"], "no temp file left"
    assert keys.KeyRing(root).agent_for(key) == Agent("coder", read=("projects/",))
    assert keys.KeyRing(root).agent_for(key + "x") is None


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need special rights on Windows")
def test_keys_belong_to_the_vaults_resolved_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "# a\n"})
    (tmp_path / "link").symlink_to(root)
    _code, out, _err = run(capsys, "agents", "add", "coder", "--vault", str(tmp_path / "link"), "--json")
    key = json.loads(out)["key"]
    assert keys.KeyRing(root).agent_for(key) is not None
    other = write_notes(tmp_path / "w", {"a.md": "# a\n"})
    assert keys.KeyRing(other).agent_for(key) is None, "a key opens only its own vault"


def test_agents_list_and_remove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "# a\n"})
    code, _out, err = run(capsys, "agents", "--vault", str(root))
    assert code == 0 and "no agent keys" in err
    run(capsys, "agents", "add", "coder", "--vault", str(root), "--read", "projects/")
    run(capsys, "agents", "add", "reviewer", "--vault", str(root), "--read-only")
    code, out, _err = run(capsys, "agents", "list", "--vault", str(root), "--json")
    listed = json.loads(out)
    assert code == 0 and listed["status"] == "ok"
    assert [(a["agent"], a["read"], a["write"], a["read_only"]) for a in listed["agents"]] == [
        ("coder", ["projects/"], ["**"], False), ("reviewer", ["**"], ["**"], True)]
    assert "sha256" not in out
    code, out, _err = run(capsys, "agents", "list", "--vault", str(root))
    assert code == 0 and out.splitlines()[0].split() == ["agent", "read", "write", "read-only", "created"]
    assert run(capsys, "agents", "remove", "coder", "--vault", str(root))[0] == 0
    code, _out, err = run(capsys, "agents", "remove", "coder", "--vault", str(root))
    assert code == 1 and "'coder' has no key for this vault (agents with keys: reviewer)" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["add"], "'agents add' needs the agent's name"),
    (["add", "Claude Code"], "'Claude Code' is not a valid agent name"),
    (["add", "x", "--read", "../elsewhere"], "--read: '.' and '..' segments are not allowed"),
    (["add", "x", "--write", "/etc"], "--write: must be relative to the vault"),
    (["add", "x", "--read", " "], "--read: ' ' is empty"),
    (["list", "--read", "p/"], "only 'agents add' takes --read"),
    (["remove"], "'agents remove' needs the agent's name"),
])
def test_bad_agents_arguments_are_one_line_naming_the_option(
        argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "# a\n"})
    code, _out, err = run(capsys, "agents", *argv, "--vault", str(root))
    assert code == 1 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_second_key_for_the_same_agent_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "# a\n"})
    run(capsys, "agents", "add", "coder", "--vault", str(root))
    code, _out, err = run(capsys, "agents", "add", "coder", "--vault", str(root))
    assert code == 1 and "already has a key" in err and "agents remove coder" in err


def test_a_damaged_key_file_is_one_clear_line(tmp_path: Path, own_config_folder: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "# a\n"})
    (own_config_folder / "vault-mem").mkdir(parents=True)
    (own_config_folder / "vault-mem" / "agents.json").write_text("{oops", encoding="utf-8")
    code, _out, err = run(capsys, "agents", "list", "--vault", str(root))
    assert code == 1 and "is not valid JSON" in err


NOTES = {
    "projects/Plan.md": "---\nid: plan\ntitle: Plan\ntags: [zebra]\ncreated: 2025-01-02\nsupersedes: old\n---\n"
                        "## Steps\nZebra steps; see [[Old plan]].\n",
    "private/Old plan.md": "---\nid: old\ntitle: Old plan\ntags: [zebra]\ncreated: 2025-01-01\n---\n"
                           "## Steps\nZebra secret steps, [[Plan]].\n",
    "private/Task.md": "---\nid: task\ntitle: Task\ntype: task\ntags: [zebra]\ncreated: 2025-01-03\n---\nDo it.\n",
    "private/Pay.md": "---\nid: pay\ntitle: Pay\ntype: payroll\nnamespace: hr\n---\nSalaries.\n",
}


async def limited_session(root: Path, agent: Agent) -> Any:
    vault = open_vault(root)
    return Client(build_server(vault, caller=agent), mode="legacy")


async def test_every_read_tool_leaves_out_what_the_agent_may_not_read(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    async with await limited_session(root, Agent("coder", read=("projects/",))) as client:
        c = ToolClient(client)
        recall = await c.call("mem_recall", since="2024-01-01", output_format="structured")
        assert {row["source"] for row in recall["results"]} == {"projects/Plan.md"}
        tagged = await c.call("memory_list", tags_any=["zebra"], follow="all")
        assert [row["permalink"] for row in tagged["memories"]] == ["memory://projects/Plan"]
        history = await c.call("memory_list", query="steps", follow="full_history")
        assert [row["permalink"] for row in history["memories"]] == ["memory://projects/Plan"]
        read = await c.call("memory_read", ref="plan")
        assert "Old plan" not in json.dumps(read["backlinks"]) and "memory://private" not in json.dumps(read)
        tasks = await c.call("memory_search", agent="coder", kind="task")
        assert tasks["status"] == "none"
        by_tag = await c.call("memory_search", agent="coder", tag="zebra")
        assert [row["permalink"] for row in by_tag["notes"]] == ["memory://projects/Plan"]
        kinds = await c.call("memory_search", agent="coder", kind="payrol")
        assert kinds["status"] == "invalid" and "payroll" not in kinds["message"], "no kind of a hidden note"
        spaces = await c.call("mem_recall", since="2000", namespace="hr*")
        assert "matched no namespace" in json.dumps(spaces), "no namespace of a hidden note"
        closed = await c.call("task_close", agent="coder", ref="task")
        assert closed["status"] == "not_found"
    assert "status: archived" not in (root / "private/Task.md").read_text(encoding="utf-8")


LINKED = {
    "projects/Plan.md": "---\nid: plan\n---\nOpen plan about apples.\n",
    "private/Secret.md": "---\nid: secret\ntags: [pay]\ncreated: 2025-01-01\n---\nClassified payroll numbers.\n",
    "private/deep/Other.md": "---\nid: other\n---\nClassified other things.\n",
}


def linked_vault(tmp_path: Path) -> Path:
    """``projects/Link.md`` is a symlink to ``private/Secret.md``, ``projects/deeplink`` to ``private/deep``."""
    root = write_notes(tmp_path / "v", LINKED)
    os.symlink(os.path.join("..", "private", "Secret.md"), root / "projects" / "Link.md")
    os.symlink(os.path.join("..", "private", "deep"), root / "projects" / "deeplink", target_is_directory=True)
    return root


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need special rights on Windows")
async def test_a_symlinked_note_is_read_only_by_an_agent_that_may_read_the_file_it_links_to(tmp_path: Path) -> None:
    root = linked_vault(tmp_path)
    vault = open_vault(root)
    seen = {}
    for who, caller in (("coder", Agent("coder", read=("projects/",))),
                        ("both", Agent("both", read=("projects/", "private/"))), ("owner", None)):
        async with Client(build_server(vault, caller=caller), mode="legacy") as client:
            c = ToolClient(client)
            answers = [await c.call("memory_search", agent=who, query="classified"),
                       await c.call("memory_list", query="classified"),
                       await c.call("list_by_domain", domain="projects"),
                       await c.call("mem_recall", since="2000", output_format="structured"),
                       await c.call("memory_read", ref="projects/Link"),
                       await c.call("memory_read", ref="projects/deeplink/Other")]
            listed = [r.uri for r in (await client.list_resources()).resources]
            seen[who] = (json.dumps(answers), [str(uri) for uri in listed])
            if who == "coder":
                assert [a["status"] for a in answers[-2:]] == ["not_found", "not_found"]
    text, resources = seen["coder"]
    assert "payroll numbers" not in text and "other things" not in text and "secret" not in text
    assert "memory://projects/Link" not in text and "memory://projects/deeplink" not in text
    assert "Open plan about apples" in text  # its own note is there
    assert resources == ["memory://projects/Plan"]
    for who in ("both", "owner"):
        text, resources = seen[who]
        assert "Classified payroll numbers" in text and "Classified other things" in text
        assert "memory://projects/Link" in resources and "memory://projects/deeplink/Other" in resources


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need special rights on Windows")
async def test_a_write_through_a_symlink_needs_the_right_to_write_where_it_lands(tmp_path: Path) -> None:
    root = linked_vault(tmp_path)
    agent = Agent("coder", read=("projects/", "private/"), write=("projects/",))
    async with await limited_session(root, agent) as client:
        c = ToolClient(client)
        edit = await c.call("memory_edit", agent="coder", ref="projects/Link", append="Leaked.")
        assert edit["status"] == "forbidden" and "private/Secret.md" in edit["message"]
        into = await c.call("memory_write", agent="coder", title="Planted", content="x", domain="projects/deeplink")
        assert into["status"] == "forbidden" and "private/deep/Planted.md" in into["message"]
        mine = await c.call("memory_write", agent="coder", title="Fine", content="x", domain="projects")
        assert mine["status"] == "ok"
    assert "Leaked" not in (root / "private" / "Secret.md").read_text(encoding="utf-8")
    assert not (root / "private" / "deep" / "Planted.md").exists()


async def test_a_supersede_needs_the_new_notes_folder_and_the_old_note_to_be_writable(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    agent = Agent("coder", read=("projects/", "private/"), write=("projects/",))
    async with await limited_session(root, agent) as client:
        c = ToolClient(client)
        into_private = await c.call("memory_supersede", agent="coder", ref="old", title="Newer", content="x")
        assert into_private["status"] == "forbidden" and into_private["rule"] == "write"
        retired = await c.call("memory_supersede", agent="coder", ref="old", title="Newer", content="x",
                               domain="projects")
        assert retired["status"] == "forbidden" and "private/Old plan.md" in retired["message"], \
            "superseding retires the old note: its write rule applies"
        moved = await c.call("memory_supersede", agent="coder", ref="plan", title="Newer", content="x",
                             domain="projects")
        assert moved["status"] == "ok" and moved["path"] == "projects/Newer.md"
        deleted = await c.call("memory_delete", agent="coder", ref="task")
        assert deleted["status"] == "forbidden" and "outside its write globs (projects/)" in deleted["message"]
    assert (root / "private/Task.md").exists()


async def test_two_agents_hiding_as_many_notes_each_get_their_own_folder_counts(tmp_path: Path) -> None:
    """Per-segment results cached by deletion count must tell masks apart (columns.deletions_key)."""
    root = write_notes(tmp_path / "v", {"a/one.md": "# one\n", "b/two.md": "# two\n", "c/three.md": "# three\n"})
    vault = open_vault(root)
    seen = {}
    for agent in (Agent("x", read=("a/", "b/")), Agent("y", read=("b/", "c/")), None):
        async with Client(build_server(vault, caller=agent), mode="legacy") as client:
            answer = await ToolClient(client).call("list_domains")
            seen[agent.name if agent else "owner"] = sorted(row["domain"] for row in answer["domains"])
    assert seen == {"x": ["", "a", "b"], "y": ["", "b", "c"], "owner": ["", "a", "b", "c"]}


def test_agents_added_at_the_same_time_all_keep_their_keys(tmp_path: Path) -> None:
    import threading

    root = write_notes(tmp_path / "v", {"a.md": "# a\n"})
    issued: dict[str, str] = {}
    config = Settings()
    threads = [threading.Thread(target=lambda n=n: issued.__setitem__(n, keys.add_agent(root, n, [], [], False,
                                                                                        config=config)[1]))
               for n in (f"agent-{i}" for i in range(8))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    ring = keys.KeyRing(root)
    assert sorted(issued) == [f"agent-{i}" for i in range(8)]
    assert all(ring.agent_for(key) == Agent(name) for name, key in issued.items())


async def test_a_title_shared_with_a_hidden_note_names_the_visible_one(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {"projects/Plan.md": "---\nid: mine\n---\nmine\n",
                                        "private/Plan.md": "---\nid: theirs\n---\ntheirs\n"})
    vault = open_vault(root)
    async with Client(build_server(vault), mode="legacy") as client:
        owner = await ToolClient(client).call("memory_read", ref="Plan")
        assert owner["status"] == "invalid" and "memory://private/Plan" in owner["candidates"]
    async with Client(build_server(vault, caller=Agent("coder", read=("projects/",))), mode="legacy") as client:
        coder = await ToolClient(client).call("memory_read", ref="Plan")
        assert coder["status"] == "ok" and coder["uid"] == "mine"


HIDDEN_WORDS = ("private", "payroll", "payslip", "confidential", "quarterly", "zebrafish")
MISSES = [
    ("list_by_domain", {"domain": "payrol"}), ("list_by_domain", {"domain": "", "type": "payslp"}),
    ("memory_search", {"agent": "coder", "query": "quartrly"}), ("memory_search", {"agent": "coder", "kind": "payslp"}),
    ("memory_search", {"agent": "coder", "tag": "confidentail"}), ("memory_list", {"query": "zebrafsh"}),
    ("memory_list", {"tags_any": ["confidental"]}), ("mem_recall", {"since": "2000", "tag_filter": "confidentia"}),
]


@pytest.mark.parametrize(("tool", "arguments"), MISSES,
                         ids=[f"{t}-{'-'.join(map(str, a.values()))}" for t, a in MISSES])
async def test_hints_on_a_miss_never_suggest_what_the_agent_may_not_read(
        tool: str, arguments: dict[str, Any], tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {
        "projects/acme/Plan.md": "---\nid: plan\ntags: [alpha]\n---\nThe zebra plan.\n",
        "private/payroll/Salary.md": "---\nid: sal\ntype: payslip\ntags: [confidential]\n---\nZebrafish quarterly.\n"})
    vault = open_vault(root)
    texts = {}
    for who, caller in (("owner", None), ("coder", Agent("coder", read=("projects/",)))):
        async with Client(build_server(vault, caller=caller), mode="legacy") as client:
            texts[who] = json.dumps(await ToolClient(client).call(tool, **arguments)).lower()
    assert any(word in texts["owner"] for word in HIDDEN_WORDS), "the owner is offered the hidden note's word"
    assert not [word for word in HIDDEN_WORDS if word in texts["coder"]]
