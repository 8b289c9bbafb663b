"""Symlinks inside the vault (docs/vault-format.md "Which files are memories", docs/sharing.md
"Symlinks", docs/safety.md): a note's content shows only to whoever may read the file its path
leads to, wherever it shows (the read tools, the page's journal views), and a path that leads
through a link out of the vault or into a hidden folder is no note: nothing indexes, reads or
writes through it (the write tools, ``undo --apply``, ``tidy --apply``). Each test tries to get
around the rule with a kind of link: relative, absolute, a link to a link, ``..`` inside the
target, a linked folder, a case variant of a hidden folder, a journal naming a linked path.

Symlinks need a right Windows gives only to administrators or in developer mode: where
``os.symlink`` fails, these tests skip and say so."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import ToolClient, eventually, open_vault, write_notes
from mcp import Client
from test_ui import page_of

from vault_mem import settings
from vault_mem.cli import main
from vault_mem.history import journal
from vault_mem.mcp_server.app import build_server
from vault_mem.search.api import VaultIndex, sync
from vault_mem.served.agents import Agent
from vault_mem.served.context import Vault
from vault_mem.served.keys import add_agent
from vault_mem.settings import Settings
from vault_mem.writes.landing import change
from vault_mem.writes.undo import change_id

pytestmark = pytest.mark.anyio
LIMITED = Agent("lim", read=("research/",))


def link(at: Path, target: str | Path, folder: bool = False) -> None:
    """``at`` becomes a symlink to ``target``; the test skips where this system makes none."""
    at.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.symlink(target, at, target_is_directory=folder)
    except (OSError, NotImplementedError) as exc:  # Windows without the right to make symlinks
        pytest.skip(f"symlinks cannot be made here: {exc}")


def secret(n: int) -> str:
    return f"---\nid: secret-{n}\ntitle: Salary talk {n}\n---\nClassified payroll number {n}.\n"


def hidden_files(root: Path) -> dict[str, bytes]:
    """Every file under the vault's hidden folders (the index's and the history's excepted)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink() and p.relative_to(root).parts[0].startswith(".")
            and p.relative_to(root).parts[0] not in (".vault-mem", ".vault-mem-history")}


async def call(vault: Vault, caller: Agent | None, tool: str, **arguments: Any) -> dict[str, Any]:
    async with Client(build_server(vault, caller=caller), mode="legacy") as client:
        return await ToolClient(client).call(tool, **arguments)


# -- the page: a change shows only to whoever may read the file its path led to ----------------


def leaking_vault(root: Path) -> dict[str, str]:
    """Five notes under ``personal/`` reached from ``research/`` by five kinds of link; returns
    {the ref the owner edits: the secret phrase it shows}."""
    write_notes(root, {"research/Plan.md": "---\nid: plan\n---\nOpen plan.\n",
                       **{f"personal/S{n}.md": secret(n) for n in range(1, 6)}, "personal/hop.md": secret(3)})
    os.remove(root / "personal/hop.md")
    link(root / "research/Relative.md", os.path.join("..", "personal", "S1.md"))
    link(root / "research/Absolute.md", root / "personal" / "S2.md")
    link(root / "personal/hop.md", "S3.md")
    link(root / "research/Chain.md", os.path.join("..", "personal", "hop.md"))  # a link to a link
    link(root / "research/Dots.md", os.path.join("..", "research", "..", "personal", "S4.md"))
    link(root / "research/pdir", os.path.join("..", "personal"), folder=True)
    return {"research/Relative": "payroll number 1", "research/Absolute": "payroll number 2",
            "research/Chain": "payroll number 3", "research/Dots": "payroll number 4",
            "research/pdir/S5": "payroll number 5"}


@pytest.fixture
def page_vault(tmp_path: Path) -> Iterator[tuple[str, str, Path, dict[str, str]]]:
    """A vault whose owner appended to a note through each kind of link (one of the links is gone
    since), served by ``vault-mem ui``: its base URL, its one-time login link, the vault, and the
    journal's change ids of those appends -> their secret phrase."""
    root = tmp_path / "v"
    refs = leaking_vault(root)
    index = VaultIndex(root, tmp_path / "ix", config=settings.current())
    sync(index, procs=1)
    vault = Vault(root, index)
    for ref in refs:
        answer = anyio.run(lambda ref=ref: call(vault, None, "memory_edit", agent="owner", ref=ref,
                                                append="The owner's appended line."))
        assert answer["status"] == "ok", answer
    index.close()
    os.remove(root / "research/Relative.md")  # the journal still knows where it led
    ids = {change_id(e): refs[e.path.removesuffix(".md")] for e in journal.entries(index.history_dir)}
    assert len(ids) == 5
    with page_of(root, tmp_path / "ix", tmp_path) as (base, login, _):
        yield base, login, root, ids


def test_the_page_shows_a_change_through_a_link_only_to_whoever_may_read_where_it_led(
        page_vault: tuple[str, str, Path, dict[str, str]]) -> None:
    base, login, root, ids = page_vault
    _, key = add_agent(root.resolve(), "lim", ["research/"], [], False, config=Settings())
    with httpx2.Client(base_url=base) as owner:
        mine = {"X-Page-Secret": eventually(lambda: _logged_in(owner, code=login.rpartition("login=")[2]),
                                            timeout=60, what="the page answered")}
        shown = {ident: owner.get("/api/change", params={"id": ident}, headers=mine).json() for ident in ids}
        assert all(answer["status"] == "ok" for answer in shown.values()), "the owner sees every change"
        with_diff = [ident for ident, answer in shown.items() if answer["diff"] is not None]
        assert len(with_diff) == 4, "the link taken away leaves its change without its later version"
        assert all(ids[ident] in json.dumps(shown[ident]["diff"]) for ident in with_diff)
    with httpx2.Client(base_url=base) as agent:
        theirs = {"X-Page-Secret": _logged_in(agent, secret=key)}
        activity = agent.get("/api/activity", headers=theirs).json()
        assert activity["status"] == "ok" and activity["changes"] == [], activity
        text = json.dumps(activity)
        assert "Salary" not in text and "secret-" not in text
        for ident, phrase in ids.items():
            answer = agent.get("/api/change", params={"id": ident}, headers=theirs)
            assert answer.status_code == 404, (phrase, answer.text)
            assert "payroll" not in answer.text and "Salary" not in answer.text


def _logged_in(client: httpx2.Client, **what: str) -> str | None:
    """Log in as the page's script does (``code=`` or ``secret=``): its page secret, or None while
    the page does not answer yet (docs/ui.md, "Logging in")."""
    try:
        answer = client.post("/api/login", json=what)
    except httpx2.TransportError:
        return None
    assert answer.status_code == 200, answer.text
    secret: str = answer.json()["page_secret"]
    return secret


# -- the read tools judge where a path leads now, not only what the index noted ----------------


async def test_a_note_swapped_for_a_link_after_indexing_shows_nothing_of_the_linked_file(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {"research/Plain.md": "---\nid: plain\nto: lim\n---\nPlain words here.\n",
                                        "personal/Secret.md": secret(1)})
    vault = open_vault(root)  # indexed while research/Plain.md is a file of its own
    os.replace(root / "research/Plain.md", tmp_path / "kept.md")
    link(root / "research/Plain.md", os.path.join("..", "personal", "Secret.md"))
    answers = [await call(vault, LIMITED, "memory_read", ref="research/Plain", agent="lim"),
               await call(vault, LIMITED, "memory_search", agent="lim", query="plain words"),
               await call(vault, LIMITED, "memory_search", agent="lim"),
               await call(vault, LIMITED, "memory_list", query="plain", content_mode="full"),
               await call(vault, LIMITED, "mem_recall", since="2000", output_format="structured"),
               await call(vault, LIMITED, "list_by_domain", domain="research"),
               await call(vault, LIMITED, "memory_list", as_of="2100-01-01", content_mode="full")]
    assert answers[0]["status"] == "not_found", answers[0]
    assert "payroll" not in json.dumps(answers), answers
    async with Client(build_server(vault, caller=LIMITED), mode="legacy") as client:
        try:
            resource = await client.read_resource("memory://research/Plain")
            assert "payroll" not in resource.contents[0].text  # type: ignore[union-attr]
        except Exception as exc:  # refused: the resource names no note it may see
            assert "payroll" not in str(exc)
    owner = await call(vault, None, "memory_read", ref="research/Plain")
    assert "payroll number 1" in owner["body"], "the owner reads where the link leads"


def test_a_read_agrees_with_where_the_path_led_when_a_link_is_swapped_during_it(tmp_path: Path) -> None:
    from vault_mem.vault.reader import _read_bytes, read_agreeing

    root = write_notes(tmp_path / "v", {"research/Open.md": "open words\n", "personal/Secret.md": "payroll\n"})
    link(root / "research/Link.md", "Open.md")
    swaps = []

    def swap_to(target: str) -> None:
        os.remove(root / "research/Link.md")
        os.symlink(target, root / "research/Link.md")

    def hostile_read(path: Path) -> Any:
        """Swap the link to the secret just before the first read and back right after it."""
        if not swaps:
            swaps.append(1)
            swap_to(os.path.join("..", "personal", "Secret.md"))
            try:
                return _read_bytes(path, Settings())
            finally:
                swap_to("Open.md")
        return _read_bytes(path, Settings())

    found, real = read_agreeing(root, "research/Link.md", hostile_read, None)
    assert real == "research/Open.md"
    assert found is not None and found[0] == b"open words\n", "never the secret's bytes under the open note's name"


# -- a link out of the vault or into a hidden folder is no note -------------------------------

HIDDEN_LINKS = {  # link -> target (relative to the link's folder, unless absolute)
    "research/evil.md": os.path.join("..", ".obsidian", "x.md"),
    "research/Case.md": os.path.join("..", ".OBSIDIAN", "x.md"),
    "research/hop.md": "evil.md",  # a link to a link
    "research/dots.md": os.path.join("..", "research", "..", ".obsidian", "x.md"),
    "research/index.md": os.path.join("..", ".vault-mem-history", "README.md"),
    "research/notes.md": os.path.join("..", "plain.txt"),  # a file that is not a note
}


def hidden_vault(root: Path) -> Path:
    write_notes(root, {"research/Plan.md": "---\nid: plan\n---\nOpen plan.\n",
                       ".obsidian/x.md": "obsidian settings, not a note\n",
                       ".OBSIDIAN/x.md": "another hidden folder\n",
                       ".vault-mem-history/README.md": "history\n", "plain.txt": "not a note\n"})
    for at, target in HIDDEN_LINKS.items():
        link(root / at, target)
    link(root / "research/abs.md", root / ".obsidian" / "x.md")
    link(root / "research/linkdir", os.path.join("..", ".obsidian"), folder=True)
    link(root / "research/up", "..", folder=True)  # the vault's top: the parent of its hidden folders
    return root


NOT_NOTES = [*(p.removesuffix(".md") for p in HIDDEN_LINKS), "research/abs", "research/linkdir/x",
             "research/up/research/Plan"]


@pytest.mark.parametrize("caller", [None, Agent("free")], ids=["owner", "key without limits"])
async def test_nothing_reads_or_writes_through_a_link_into_a_hidden_folder(tmp_path: Path,
                                                                           caller: Agent | None) -> None:
    root = hidden_vault(tmp_path / "v")
    vault = open_vault(root)
    before = hidden_files(root)
    name = caller.name if caller else "owner"
    listed = await call(vault, caller, "memory_list", limit=-1)
    assert [m["path"] for m in listed["memories"]] == ["research/Plan.md"], "only the note is indexed"
    for ref in NOT_NOTES:
        for tool, args in (("memory_read", {}), ("memory_edit", {"append": "PWNED", "agent": name}),
                           ("task_close", {"agent": name}), ("memory_delete", {"agent": name}),
                           ("memory_supersede", {"title": "Newer", "content": "PWNED", "agent": name})):
            answer = await call(vault, caller, tool, ref=ref, **args)
            assert answer["status"] in ("not_found", "invalid"), (tool, ref, answer)
    for domain in ("research/linkdir", "research/linkdir/deeper", "research/up/.obsidian"):
        written = await call(vault, caller, "memory_write", agent=name, title="Planted", content="PWNED",
                             domain=domain)
        assert written["status"] == "invalid" and written["param"] == "domain", written
        moved = await call(vault, caller, "memory_supersede", agent=name, ref="plan", title="Planted",
                           content="PWNED", domain=domain)
        assert moved["status"] == "invalid", moved
    assert hidden_files(root) == before


@pytest.mark.parametrize("caller", [None, Agent("free")], ids=["owner", "key without limits"])
async def test_an_edit_of_a_note_that_became_a_link_into_a_hidden_folder_is_refused(
        tmp_path: Path, caller: Agent | None) -> None:
    # No declared id: the index knows them by path, and nothing but the link rule stands in the way.
    root = write_notes(tmp_path / "v", {"research/evil.md": "# evil\nA plain note.\n",
                                        "research/sub/deep.md": "# deep\nA plain note too.\n",
                                        ".obsidian/x.md": "obsidian settings\n",
                                        ".obsidian/deep.md": "obsidian settings too\n"})
    vault = open_vault(root)  # indexed while both are plain notes; no watcher runs
    os.remove(root / "research/evil.md")
    link(root / "research/evil.md", os.path.join("..", ".obsidian", "x.md"))
    os.replace(root / "research/sub", tmp_path / "sub")
    link(root / "research/sub", os.path.join("..", ".obsidian"), folder=True)
    before = hidden_files(root)
    name = caller.name if caller else "owner"
    for ref in ("evil", "deep"):
        edit = await call(vault, caller, "memory_edit", agent=name, ref=ref, append="PWNED")
        assert edit["status"] == "invalid" and "hidden folder .obsidian/" in edit["message"], edit
        read = await call(vault, caller, "memory_read", ref=ref)
        assert read["status"] != "ok" or "obsidian settings" not in read["body"], read
        closed = await call(vault, caller, "memory_supersede", agent=name, ref=ref, title="New", content="x",
                            domain="research")
        assert "PWNED" not in json.dumps(closed)
    assert hidden_files(root) == before


# -- undo and tidy: the CLI writes through no such link either ---------------------------------


def test_undo_apply_refuses_a_journal_that_names_a_path_through_a_link_into_a_hidden_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {"research/Plan.md": "---\nid: plan\n---\nOpen plan.\n",
                                        ".obsidian/x.md": "obsidian settings\n",
                                        ".obsidian/y.md": "more settings\n",
                                        ".trash/away.md": "gone\n"})
    link(root / "research/linkdir", os.path.join("..", ".obsidian"), folder=True)
    link(root / "research/evil.md", os.path.join("..", ".obsidian", "y.md"))
    os.remove(root / ".trash/away.md")
    link(root / ".trash/away.md", os.path.join("..", ".obsidian", "x.md"))
    index = VaultIndex(root, tmp_path / "ix", config=settings.current())
    crafted = [  # each entry says the agent changed the file into what it is now; undo would put "PWNED" back
        change("research/linkdir/x.md", "research/linkdir/x.md", "x", "x", b"PWNED\n",
               (root / ".obsidian/x.md").read_bytes()),
        change("research/evil.md", "research/evil.md", "evil", "evil", b"PWNED\n",
               (root / ".obsidian/y.md").read_bytes()),
        change("research/linkdir/new.md", "research/linkdir/new.md", "new", "new", b"PWNED\n", None),
        change("research/away.md", "research/away.md", "away", "away", b"PWNED\n", None, trash=".trash/away.md"),
    ]
    assert journal.record(index.history_dir, "evil", "memory_edit", crafted, config=settings.current()) is None
    before = hidden_files(root)
    capsys.readouterr()
    assert main(["undo", "--vault", str(root), "--index-dir", str(tmp_path / "ix"), "--agent", "evil",
                 "--since", "1d", "--apply", "--json"]) in (0, 1)
    answer = json.loads(capsys.readouterr().out)
    assert answer.get("restored", []) == [], answer
    refused = {row["path"] for row in answer["refused"]}
    assert refused == {"research/linkdir/x.md", "research/evil.md", "research/linkdir/new.md",
                       "research/away.md"}, answer
    assert hidden_files(root) == before
    assert not (root / "research/away.md").exists()


TIDY_BODY = ("Session log of the agent. The billing exporter drops invoices when the ledger batch exceeds 500 "
             "rows; splitting the nightly reconciliation into chunks of 150 fixes the staging timeout. Next "
             "steps: run the full test suite, update the changelog and push the branch for review.")


def tidy_note(title: str, updated: str) -> str:
    return f"---\ntitle: {title}\ntype: lesson\nupdated: {updated}\n---\n{TIDY_BODY}\n"


def test_tidy_apply_supersedes_into_no_note_reached_through_a_link_into_a_hidden_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", {
        "research/Billing.md": tidy_note("Billing exporter", "2026-01-01T10:00:00+00:00"),
        ".obsidian/Billing copy.md": tidy_note("Billing exporter copy", "2026-06-01T10:00:00+00:00"),
        ".obsidian/Billing third.md": tidy_note("Billing exporter third", "2026-05-01T10:00:00+00:00")})
    link(root / "research/linkdir", os.path.join("..", ".obsidian"), folder=True)
    link(root / "research/third.md", os.path.join("..", ".obsidian", "Billing third.md"))
    before = hidden_files(root)
    capsys.readouterr()
    assert main(["tidy", "--vault", str(root), "--apply", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert all(".obsidian" not in json.dumps(c) and "linkdir" not in json.dumps(c) and "third.md" not in json.dumps(c)
               for c in answer["clusters"]), answer
    assert hidden_files(root) == before


def test_the_writer_itself_writes_no_vault_file_through_a_link_into_a_hidden_folder(tmp_path: Path) -> None:
    """The last line, below every caller's check: ``within`` names the vault."""
    from vault_mem.errors import WriteFailed
    from vault_mem.vault.writer import atomic_write, create_at, create_exclusive

    root = write_notes(tmp_path / "v", {"research/Plan.md": "plan\n", ".obsidian/x.md": "settings\n"})
    link(root / "research/evil.md", os.path.join("..", ".obsidian", "x.md"))
    link(root / "research/linkdir", os.path.join("..", ".obsidian"), folder=True)
    before = hidden_files(root)
    for write in (lambda: atomic_write(root / "research/evil.md", b"PWNED", within=root, config=settings.current()),
                  lambda: atomic_write(root / "research/linkdir/x.md", b"PWNED", within=root,
                      config=settings.current()),
                  lambda: create_exclusive(root / "research/linkdir", "new.md", b"PWNED", within=root,
                      config=settings.current()),
                  lambda: create_at(root / "research/linkdir/new.md", b"PWNED", within=root,
                      config=settings.current())):
        with pytest.raises(WriteFailed, match=r"hidden folder \.obsidian/"):
            write()
    assert hidden_files(root) == before
    atomic_write(root / "research/Plan.md", b"still fine\n", within=root, config=settings.current())
    assert (root / "research/Plan.md").read_bytes() == b"still fine\n"
