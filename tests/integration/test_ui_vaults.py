"""The page for people with several vaults (docs/ui.md, "Several vaults"), over real HTTP, each
protection tried by someone who wants around it: every ``/api`` call names its vault (or gets the
default); a session reaches what its credential reaches, vault by vault; a vault it does not reach
is refused in the very bytes a vault that does not exist gets, and its name shows in no answer; a
key goes from one vault and the session keeps the others; a vault whose key ring cannot be read is
closed to keys; a session of one set of vaults opens nothing on a page of another; and
``vault-mem ui`` refuses what cannot be served. The pages run in this process under uvicorn.
tests/integration/test_ui_vaults_browser.py shows the same in Chromium."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import connect, eventually, open_vault, write_notes
from serving import free_port

from vault_mem.cli import main
from vault_mem.served.context import Vault
from vault_mem.served.keys import KeyRing, add_agent, hashed, key_file, remove_agent, vault_key
from vault_mem.served.vaults import Served, is_vault_name
from vault_mem.settings import Settings
from vault_mem.ui import auth
from vault_mem.ui.web import Page

TOKEN = "the owner's own token"
# Names that no page text or path holds by chance: finding one in an answer is a leak.
VAULTS = {
    "orchard": {"shared/apples.md": "---\nid: apples\ntitle: Apple varieties\n---\nCox and Bramley.\n",
                "private/ledger.md": "---\nid: ledger\ntitle: Orchard ledger\n---\nWhat the harvest paid.\n",
                "shared/handoff.md": "---\nid: handoff\ntitle: Prune the pears\nto: helper\nagent: coder\n---\n"
                                     "Before March.\n"},
    "quarry": {"shared/granite.md": "---\nid: granite\ntitle: Granite seams\n---\nThe east face.\n",
               "private/blasting.md": "---\nid: blasting\ntitle: Blasting schedule\n---\nTuesdays at noon.\n"},
    "lighthouse": {"keeper.md": "---\nid: keeper\ntitle: Keeper's log\n---\nThe lamp was lit.\n"},
}
CHANGED = {"orchard": "shared/apples.md", "quarry": "shared/granite.md", "lighthouse": "keeper.md"}
READS = ["/api/session", "/api/activity", "/api/change?id=0", "/api/inbox", "/api/search", "/api/search?query=seams",
         "/api/note?ref=apples", "/api/agents"]


def write_vaults(base: Path) -> dict[str, Path]:
    """The three test vaults under ``base``, by name, in the order served (orchard the default)."""
    return {name: write_notes(base / name, notes) for name, notes in VAULTS.items()}


def journal_changes(vaults: dict[str, Vault]) -> None:
    """One journaled change by ``coder`` in each vault, made through a real MCP session."""
    async def run() -> None:
        for name, vault in vaults.items():
            async with asynccontextmanager(connect)(vault) as client:
                await client.call("memory_edit", agent="coder", ref=CHANGED[name], append=f"Checked in the {name}.")

    anyio.run(run)


def same_key_in(root: Path, name: str, key: str, read: list[str]) -> None:
    """Register ``key`` (an agent's existing key) in the vault ``root`` as agent ``name`` reading
    ``read``: a new key is issued, then its hash replaced by ``key``'s in the key file (the format
    served/keys.py describes)."""
    add_agent(root.resolve(), name, read, [], False, config=Settings())
    path = key_file()
    data = json.loads(path.read_text(encoding="utf-8"))
    data["vaults"][vault_key(root)][name]["sha256"] = hashed(key)
    path.write_text(json.dumps(data), encoding="utf-8")


class Running:
    """The page of ``served`` (with ``keys``) served by uvicorn in a thread, at ``base``."""

    def __init__(self, served: Served | Vault, keys: Any) -> None:
        import uvicorn

        port = free_port()
        self.page = page = Page(served, keys, TOKEN, [], port)
        self.base = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(page, host="127.0.0.1", port=port, log_level="warning",
                                                    access_log=False, log_config=None))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        eventually(lambda: self.server.started or None, timeout=60, what="the page listening")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    vaults = {name: open_vault(root) for name, root in write_vaults(tmp_path).items()}
    journal_changes(vaults)
    try:
        yield Served(vaults, "orchard")
    finally:
        for vault in vaults.values():
            vault.index.close()


@pytest.fixture
def serve_page() -> Iterator[Callable[..., Running]]:
    running: list[Running] = []

    def start(served: Served | Vault, keys: Any = None) -> Running:
        if keys is None:
            keys = ({name: KeyRing(v.root) for name, v in served.vaults.items()} if isinstance(served, Served)
                    else KeyRing(served.root))
        running.append(Running(served, keys))
        return running[-1]

    yield start
    for one in running:
        one.stop()


def log_in(client: httpx2.Client, **what: str) -> dict[str, str]:
    """Log ``client`` in as the page's script does; the header every later call carries."""
    answer = client.post("/api/login", json=what)
    assert answer.status_code == 200, answer.text
    return {"X-Page-Secret": answer.json()["page_secret"]}


def titles(answer: httpx2.Response) -> list[str]:
    """The titles of a search's notes, sorted."""
    assert answer.status_code == 200, answer.text
    return sorted(row["title"] for row in answer.json()["notes"])


def titles_in(notes: dict[str, str]) -> list[str]:
    return sorted(re.search(r"^title: (.*)$", text, re.M).group(1) for text in notes.values())  # type: ignore[union-attr]


def test_every_call_names_its_vault_and_without_one_gets_the_default(
        served: Served, serve_page: Callable[..., Running]) -> None:
    running = serve_page(served)
    with httpx2.Client(base_url=running.base) as owner:
        mine = log_in(owner, code=running.page.login_link(running.base).rpartition("login=")[2])
        session = owner.get("/api/session", headers=mine).json()
        assert session == {"status": "ok", "agent": None, "vault": "orchard", "git_commit": False,
                           "vaults": ["orchard", "quarry", "lighthouse"], "default": "orchard"}
        assert titles(owner.get("/api/search", headers=mine)) == titles_in(VAULTS["orchard"])
        for name, notes in VAULTS.items():
            assert titles(owner.get(f"/api/search?vault={name}", headers=mine)) == titles_in(notes)
            assert owner.get(f"/api/session?vault={name}", headers=mine).json()["vault"] == name
            changes = owner.get(f"/api/activity?vault={name}", headers=mine).json()["changes"]
            assert [c["path"] for c in changes] == [CHANGED[name]]
        granite = owner.get("/api/note?vault=quarry&ref=granite", headers=mine).json()
        assert granite["title"] == "Granite seams"
        assert owner.get("/api/note?ref=granite", headers=mine).status_code == 404  # not in the default vault
        # An undo names its vault too: the quarry's change, undone from the quarry, and nowhere else.
        change = owner.get("/api/activity?vault=quarry", headers=mine).json()["changes"][0]["id"]
        assert owner.post("/api/undo", json={"id": change}, headers=mine).status_code == 404
        done = owner.post("/api/undo?vault=quarry", json={"id": change}, headers=mine).json()
        assert done["restored"] and "Checked in the quarry" not in \
            (served.vaults["quarry"].root / "shared/granite.md").read_text(encoding="utf-8")
        assert owner.post("/api/logout", json={}, headers=mine).status_code == 200
        assert owner.get("/api/session?vault=quarry", headers=mine).status_code == 401


def test_a_vault_the_session_does_not_reach_is_refused_in_the_words_of_one_that_does_not_exist(
        served: Served, serve_page: Callable[..., Running]) -> None:
    running = serve_page(served)
    _, key = add_agent(served.vaults["orchard"].root.resolve(), "helper", ["shared/"], [], False,
                       config=Settings())
    hidden = [n for n in VAULTS if n != "orchard"]
    with httpx2.Client(base_url=running.base) as agent:
        mine = log_in(agent, secret=key)
        session = agent.get("/api/session", headers=mine).json()
        assert session == {"status": "ok", "agent": "helper", "vault": "orchard", "git_commit": False}
        everything = ""
        for path in READS:
            for named in ("", "&vault=orchard" if "?" in path else "?vault=orchard"):
                answer = agent.get(path + named, headers=mine)
                everything += answer.text
                for other in ("nosuch", *hidden, "*", "ORCHARD", "orchard/", "../quarry", "<b>quarry</b>"):
                    tried = agent.get(path + ("&" if "?" in path else "?") + f"vault={other}", headers=mine)
                    model = agent.get(path + ("&" if "?" in path else "?") + "vault=nosuch", headers=mine)
                    assert (tried.status_code, tried.content) == (model.status_code, model.content) == (400, (
                        b'{"status": "invalid", "message": "vault: none of this page\'s vaults has that name: '
                        b'give one of orchard"}')), (path, other)
                    everything += tried.text
        for write in ("/api/undo", "/api/undo-window"):
            for other in hidden:
                tried = agent.post(f"{write}?vault={other}", json={}, headers=mine)
                model = agent.post(f"{write}?vault=nosuch", json={}, headers=mine)
                assert (tried.status_code, tried.content) == (model.status_code, model.content), write
                everything += tried.text
        assert "Apple varieties" in everything and "Orchard ledger" not in everything  # its globs hold
        for other in hidden:
            assert other not in everything.lower()
        for notes in (VAULTS["quarry"], VAULTS["lighthouse"]):
            assert not any(path in everything for path in notes)


def test_a_key_in_two_vaults_sees_each_with_that_vaults_limits_and_loses_one_when_its_key_goes_there(
        served: Served, serve_page: Callable[..., Running]) -> None:
    running = serve_page(served)
    orchard, quarry = (served.vaults[n].root for n in ("orchard", "quarry"))
    _, key = add_agent(orchard.resolve(), "helper", ["shared/"], [], False, config=Settings())
    same_key_in(quarry, "scout", key, ["private/"])  # another name, other limits, the same key
    with httpx2.Client(base_url=running.base) as agent:
        mine = log_in(agent, secret=key)
        session = agent.get("/api/session", headers=mine).json()
        assert session["vaults"] == ["orchard", "quarry"] and session["agent"] == "helper"
        assert agent.get("/api/session?vault=quarry", headers=mine).json()["agent"] == "scout"
        assert titles(agent.get("/api/search?vault=orchard", headers=mine)) == ["Apple varieties", "Prune the pears"]
        assert titles(agent.get("/api/search?vault=quarry", headers=mine)) == ["Blasting schedule"]
        assert agent.get("/api/activity?vault=quarry", headers=mine).json()["changes"] == []  # shared/ is not its
        assert [a["agent"] for a in agent.get("/api/agents?vault=quarry", headers=mine).json()["agents"]] == ["scout"]
        assert agent.get("/api/search?vault=lighthouse", headers=mine).status_code == 400

        remove_agent(quarry.resolve(), "scout", config=Settings())  # gone from the quarry: the orchard stays
        assert agent.get("/api/search?vault=quarry", headers=mine).status_code == 400
        assert "vaults" not in agent.get("/api/session", headers=mine).json()
        assert titles(agent.get("/api/search", headers=mine)) == ["Apple varieties", "Prune the pears"]
        # A new key of the same name in the quarry does not bring this session back there.
        add_agent(quarry.resolve(), "scout", ["**"], [], False, config=Settings())
        assert agent.get("/api/search?vault=quarry", headers=mine).status_code == 400

        remove_agent(orchard.resolve(), "helper", config=Settings())  # gone everywhere: the session ends
        assert agent.get("/api/session", headers=mine).status_code == 401
        assert not any((auth._sessions(running.page.state)).iterdir())


def test_a_key_reaching_only_a_vault_that_is_not_the_default_is_answered_from_it(
        served: Served, serve_page: Callable[..., Running]) -> None:
    running = serve_page(served)
    _, key = add_agent(served.vaults["lighthouse"].root.resolve(), "keeper", [], [], False, config=Settings())
    with httpx2.Client(base_url=running.base) as agent:
        mine = log_in(agent, secret=key)
        assert agent.get("/api/session", headers=mine).json()["vault"] == "lighthouse"
        assert titles(agent.get("/api/search", headers=mine)) == ["Keeper's log"]
        assert agent.get("/api/search?vault=orchard", headers=mine).status_code == 400


def test_a_vault_whose_key_ring_cannot_be_read_is_closed_to_keys_and_the_others_still_answer(
        served: Served, serve_page: Callable[..., Running]) -> None:
    running = serve_page(served)
    orchard, quarry = (served.vaults[n].root for n in ("orchard", "quarry"))
    _, key = add_agent(orchard.resolve(), "helper", ["shared/"], [], False, config=Settings())
    same_key_in(quarry, "helper", key, ["**"])
    path = key_file()
    data = json.loads(path.read_text(encoding="utf-8"))
    data["vaults"][vault_key(quarry)]["helper"]["read"] = 5  # a damaged entry: the quarry's ring cannot read it
    path.write_text(json.dumps(data), encoding="utf-8")
    with httpx2.Client(base_url=running.base) as agent:
        mine = log_in(agent, secret=key)
        assert "vaults" not in agent.get("/api/session", headers=mine).json()
        assert agent.get("/api/search?vault=quarry", headers=mine).status_code == 400
        assert titles(agent.get("/api/search", headers=mine)) == ["Apple varieties", "Prune the pears"]
    # A page whose key rings are not all given: the vault left out is closed to keys, open to the owner.
    partial = serve_page(served, {"orchard": KeyRing(orchard)})
    with httpx2.Client(base_url=partial.base) as agent, httpx2.Client(base_url=partial.base) as owner:
        mine = log_in(agent, secret=key)
        assert agent.get("/api/search?vault=quarry", headers=mine).status_code == 400
        assert "quarry" not in agent.get("/api/session", headers=mine).text
        theirs = log_in(owner, secret=TOKEN)
        assert owner.get("/api/session", headers=theirs).json()["vaults"] == ["orchard", "quarry", "lighthouse"]


def test_a_session_of_one_set_of_vaults_opens_nothing_on_a_page_of_another(
        served: Served, serve_page: Callable[..., Running]) -> None:
    several = serve_page(served)
    alone = serve_page(served.vaults["orchard"])  # the page of the orchard alone, as before
    with httpx2.Client(base_url=several.base) as owner:
        mine = log_in(owner, code=several.page.login_link(several.base).rpartition("login=")[2])
        cookie = owner.cookies[auth.COOKIE]
    both = {**mine, "Cookie": f"{auth.COOKIE}={cookie}"}
    assert httpx2.get(several.base + "/api/session", headers=both).status_code == 200
    assert httpx2.get(alone.base + "/api/session", headers=both).status_code == 401
    code = several.page.login_link(several.base).rpartition("login=")[2]
    assert httpx2.post(alone.base + "/api/login", json={"code": code}).status_code == 401
    with httpx2.Client(base_url=alone.base) as owner:  # and the other way round
        mine = log_in(owner, code=alone.page.login_link(alone.base).rpartition("login=")[2])
        both = {**mine, "Cookie": f"{auth.COOKIE}={owner.cookies[auth.COOKIE]}"}
        answer = owner.get("/api/session", headers=mine).json()
        assert answer == {"status": "ok", "agent": None, "vault": "orchard", "git_commit": False}  # as 0.7.0
    assert httpx2.get(several.base + "/api/session", headers=both).status_code == 401


def test_a_lone_vault_is_named_and_accepts_its_own_name_and_nothing_else(
        served: Served, serve_page: Callable[..., Running]) -> None:
    alone = serve_page(served.vaults["quarry"])
    with httpx2.Client(base_url=alone.base) as owner:
        mine = log_in(owner, secret=TOKEN)
        assert titles(owner.get("/api/search?vault=quarry", headers=mine)) == titles_in(VAULTS["quarry"])
        refused = owner.get("/api/search?vault=orchard", headers=mine)
        assert refused.status_code == 400 and "orchard" not in refused.text


def test_vault_mem_ui_refuses_what_it_cannot_serve_with_a_clear_message(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    roots = write_vaults(tmp_path)
    work, home = str(roots["orchard"]), str(roots["quarry"])
    for argv, words in (
            (["--vault", f"<b>x</b>={work}"], "vault not found: <b>x</b>="),  # no such name: a folder, not there
            (["--vault", f"a={work}", "--vault", f"a={home}"], "two vaults are named 'a'"),
            (["--vault", f"a={work}", "--vault", f"b={work}"], "is given twice"),
            (["--vault", f"a={work}", "--vault", f"b={home}", "--index-dir", str(tmp_path / "ix")],
             "with several vaults each keeps its own")):
        assert main(["ui", *argv, "--no-browser"]) == 1
        out, err = capsys.readouterr()
        assert words in err and "Traceback" not in err and out == "", (argv, err)
    assert not is_vault_name("<img src=x onerror=alert(1)>")  # no name can carry markup onto the page
