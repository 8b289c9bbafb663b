"""Several vaults served at once over streamable HTTP (docs/vaults.md), through the server
process: what each credential reaches (the token, an agent key in one vault or two, no
credential), vault names hidden from whom cannot reach them, and ``--workers 2``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import ToolClient, write_notes
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from serving import free_port

from vault_mem.cli import main

pytestmark = pytest.mark.anyio

TOKEN = "vaults-s3cret-token"
NOTES = {
    "work": {"acme/Plan.md": "---\nid: plan-w\ntitle: Work plan\n---\nThe zebra rollout at work.\n"},
    "home": {"garden/Roses.md": "---\nid: roses\ntitle: Roses\n---\nZebra roses in the garden.\n"},
    "team": {"projects/Board.md": "---\nid: board\ntitle: Board\n---\nThe zebra board.\n",
             "private/Pay.md": "---\nid: pay\ntitle: Pay\n---\nZebra salaries.\n"},
}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def add_key(capsys: pytest.CaptureFixture[str], root: Path, name: str, *options: str) -> str:
    capsys.readouterr()
    assert main(["agents", "add", name, "--vault", str(root), "--json", *options]) == 0
    return str(json.loads(capsys.readouterr().out)["key"])


class Server:
    """``vault-mem serve --http`` of the three vaults, in its own process."""

    def __init__(self, tmp_path: Path, token: str | None, workers: int = 1, names: tuple[str, ...] = tuple(NOTES)):
        self.roots = {name: tmp_path / name for name in names}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = tmp_path / f"serve-{self.port}.log"
        env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_TOKEN"} | ({"VAULT_MEM_TOKEN": token}
                                                                                 if token else {})
        args = [sys.executable, "-m", "vault_mem", "serve", "--http", "--port", str(self.port),
                "--workers", str(workers)]
        for name, root in self.roots.items():
            args += ["--vault", f"{name}={root}"]
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                         env=env, cwd=tmp_path)

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=60)


@pytest.fixture
def vaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """work (open: no key), home (a key for lead), team (keys for lead and for coder, who reads
    projects/ only): the keys by agent."""
    roots = {name: write_notes(tmp_path / name, notes) for name, notes in NOTES.items()}
    lead = add_key(capsys, roots["home"], "lead")
    # the same agent, one key for both vaults: its key is registered in team as it is
    keys = {"lead": lead, "coder": add_key(capsys, roots["team"], "coder", "--read", "projects/")}
    _register_same_key(roots["team"], "lead", lead)
    return {"roots": roots, "keys": keys}


def _register_same_key(root: Path, name: str, key: str) -> None:
    """``name``'s ``key`` of another vault registered for ``root`` too, with no limits (what
    ``agents add --key-stdin`` is for): the key ring keeps each key's hash per vault (served/keys.py)."""
    from vault_mem import settings
    from vault_mem.served import keys as keyring

    path = keyring.key_file()
    with keyring._locked(path, settings.Settings()):
        data = keyring._load(path)
        data["vaults"].setdefault(keyring.vault_key(root), {})[name] = {
            "sha256": keyring.hashed(key), "read": [], "write": [], "read_only": False, "created": ""}
        keyring._set_closed(data, root, True)
        keyring._save(path, data)
    keyring._mark_vault(root)


@asynccontextmanager
async def session(url: str, key: str | None, mode: str = "legacy") -> AsyncIterator[ToolClient]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"} if key else None)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield ToolClient(client)


async def settled(server: Server, c: ToolClient, vaults: int) -> dict[str, Any]:
    """list_domains once every vault the caller reaches is indexed (with a deadline)."""
    deadline = time.monotonic() + 90
    while True:
        try:
            domains = await c.call("list_domains")
        except MCPError:
            domains = {}
        if domains and "indexing" not in domains and len(domains.get("vaults", [])) == vaults \
                and all(v["notes"] for v in domains["vaults"]):
            return domains
        assert server.proc.poll() is None and time.monotonic() < deadline, (domains, server.stderr())
        await anyio.sleep(0.1)


async def listening(server: Server) -> None:
    deadline = time.monotonic() + 90
    async with httpx2.AsyncClient() as raw:
        while True:
            try:
                await raw.get(server.url.replace("/mcp", "/healthz-none"))
                return
            except httpx2.TransportError:
                assert server.proc.poll() is None and time.monotonic() < deadline, server.stderr()
                await anyio.sleep(0.1)


@pytest.fixture
def server(tmp_path: Path, vaults: dict[str, Any]) -> Iterator[Server]:
    served = Server(tmp_path, token=None)
    try:
        yield served
    finally:
        served.stop()
    for key in vaults["keys"].values():
        assert key not in served.stderr(), "no key is ever logged"


def names_in(answer: Any) -> str:
    return json.dumps(answer)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_each_credential_reaches_its_own_vaults_and_never_sees_the_others_names(
        server: Server, vaults: dict[str, Any], mode: str) -> None:
    await listening(server)
    keys = vaults["keys"]
    async with session(server.url, None, mode) as anyone:
        domains = await settled(server, anyone, 1)
        assert domains["vaults"] == [{"name": "work", "notes": 1, "default": True}], "only the open vault"
        assert "home" not in names_in(domains) and "team" not in names_in(domains)
        refused = await anyone.call("memory_search", agent="t", query="zebra", vault="team")
        assert refused["status"] == "invalid" and refused["message"].split("vaults:")[1] == " 'work'", refused
        every = await anyone.call("memory_search", agent="t", query="zebra", vault="*")
        assert {row["vault"] for row in every["notes"]} == {"work"}
        written = await anyone.call("memory_write", agent="t", title="Open note", content="x", domain="acme")
        assert written["permalink"] == "memory://work/acme/Open note"
        assert (vaults["roots"]["work"] / "acme" / "Open note.md").is_file()
    async with session(server.url, keys["coder"], mode) as coder:
        domains = await settled(server, coder, 1)
        assert domains["vaults"] == [{"name": "team", "notes": 1, "default": True}]
        every = await coder.call("memory_search", agent="coder", query="zebra", vault="*")
        assert [(row["vault"], row["permalink"]) for row in every["notes"]] == [
            ("team", "memory://team/projects/Board")]
        for name in ("work", "home", "*", "../team"):
            answer = await coder.call("memory_read", ref="board", vault=name)
            assert answer["status"] == "invalid" and answer["message"].split("vaults:")[1] == " 'team'", answer
        resources = {str(r.uri) for r in (await coder.client.list_resources()).resources}
        assert resources == {"memory://team/projects/Board"}
        with pytest.raises(MCPError, match="no note matches"):
            await coder.client.read_resource("memory://home/garden/Roses")
        outside = await coder.call("memory_write", agent="coder", title="Pay rise", content="x", domain="private")
        assert outside["status"] == "forbidden" and not (vaults["roots"]["team"] / "private" / "Pay rise.md").exists()
    async with session(server.url, keys["lead"], mode) as lead:
        domains = await settled(server, lead, 2)
        assert [(v["name"], v["default"]) for v in domains["vaults"]] == [("home", True), ("team", False)]
        every = await lead.call("memory_search", agent="lead", query="zebra", vault="*")
        assert {(row["vault"], row["permalink"]) for row in every["notes"]} == {
            ("home", "memory://home/garden/Roses"), ("team", "memory://team/projects/Board"),
            ("team", "memory://team/private/Pay")}
        sent = await lead.call("memory_write", agent="lead", title="Handoff", content="Look at the board.",
                               domain="projects", vault="team", to=["coder"])
        assert sent["status"] == "ok" and (vaults["roots"]["team"] / "projects" / "Handoff.md").is_file()
        assert not (vaults["roots"]["home"] / "projects").exists()


async def test_a_request_that_reaches_no_vault_is_refused_as_before(tmp_path: Path, capsys) -> None:
    roots = {name: write_notes(tmp_path / name, notes) for name, notes in NOTES.items()}
    add_key(capsys, roots["home"], "lead")
    add_key(capsys, roots["team"], "coder")
    server = Server(tmp_path, token=TOKEN, names=("home", "team"))
    try:
        await listening(server)
        async with httpx2.AsyncClient() as raw:
            for headers in ({}, {"Authorization": "Bearer vmk_not-a-key"}):
                refused = await raw.post(server.url, json=INIT, headers=HEADERS | headers)
                assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
        async with session(server.url, TOKEN) as owner:
            domains = await settled(server, owner, 2)
            assert [v["name"] for v in domains["vaults"]] == ["home", "team"]
    finally:
        server.stop()
    assert TOKEN not in server.stderr()


async def test_with_two_workers_a_write_through_worker_2_lands_in_the_vault_it_names(tmp_path: Path) -> None:
    for name, notes in NOTES.items():
        write_notes(tmp_path / name, notes)
    server = Server(tmp_path, token=None, workers=2, names=("work", "home"))
    try:
        await listening(server)
        seen: list[str | None] = []

        async def note(response: httpx2.Response) -> None:
            seen.append(response.headers.get("vault-mem-worker"))

        http = httpx2.AsyncClient(event_hooks={"response": [note]})
        async with http, Client(streamable_http_client(server.url, http_client=http), mode="2026-07-28") as client:
            c = ToolClient(client)
            await settled(server, c, 2)
            written = await c.call("memory_write", agent="t", title="Second worker", content="Quokka.",
                                   domain="garden", vault="home")
            assert written["status"] == "ok" and written["permalink"] == "memory://home/garden/Second worker"
            edited = await c.call("memory_edit", agent="t", ref="memory://work/acme/Plan", append="Edited.")
            assert edited["status"] == "ok" and edited["permalink"] == "memory://work/acme/Plan"
            refused = await c.call("memory_write", agent="t", title="Nowhere", content="x", vault="team")
            assert refused["status"] == "invalid" and refused["param"] == "vault"
        assert set(seen) == {"1"}, seen  # every request answered by worker 2 (worker 1 makes the writes)
        assert (tmp_path / "home" / "garden" / "Second worker.md").is_file()
        assert not (tmp_path / "work" / "garden").exists()
        assert (tmp_path / "work" / "acme" / "Plan.md").read_text(encoding="utf-8").endswith("Edited.\n")
        assert not any(p.name.startswith("Nowhere") for p in tmp_path.rglob("*.md"))
    finally:
        server.stop()
    said = server.stderr()
    assert f"serving 2 vaults: work ({tmp_path / 'work'}), home ({tmp_path / 'home'})" in said, said


async def test_the_page_of_serve_http_reaches_what_the_mcp_endpoint_does(tmp_path: Path, capsys) -> None:
    """The page at ``/`` of ``serve --http`` with several vaults: the token logs in to every vault, a
    key to the vaults whose rings hold it (the very rings the MCP endpoint checks), the others'
    names nowhere, and a key removed ends what it opened on the page as on the endpoint."""
    roots = {name: write_notes(tmp_path / name, notes) for name, notes in NOTES.items() if name != "work"}
    coder = add_key(capsys, roots["team"], "coder", "--read", "projects/")
    server = Server(tmp_path, token=TOKEN, names=("home", "team"))
    try:
        await listening(server)
        async with session(server.url, TOKEN) as owner:
            await settled(server, owner, 2)
        base = server.url.removesuffix("/mcp")
        async with httpx2.AsyncClient(base_url=base) as page:
            login = await page.post("/api/login", json={"secret": TOKEN})
            mine = {"X-Page-Secret": login.json()["page_secret"]}
            state = (await page.get("/api/session", headers=mine)).json()
            assert state["vaults"] == ["home", "team"] and state["default"] == "home", state
            roses = (await page.get("/api/search?vault=home&query=zebra", headers=mine)).json()
            assert "Roses" in json.dumps(roses) and "Board" not in json.dumps(roses)
        async with httpx2.AsyncClient(base_url=base) as page:
            login = await page.post("/api/login", json={"secret": coder})
            assert login.status_code == 200, login.text
            mine = {"X-Page-Secret": login.json()["page_secret"]}
            answers = [(await page.get(path, headers=mine)) for path in
                       ("/api/session", "/api/search?query=zebra", "/api/search?vault=team&query=zebra")]
            assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
            assert "Board" in answers[1].text and "Pay" not in answers[1].text
            assert not any("home" in a.text for a in answers), "the vault coder's key does not reach is never named"
            hidden = await page.get("/api/search?vault=home&query=zebra", headers=mine)
            nothing = await page.get("/api/search?vault=nosuch&query=zebra", headers=mine)
            assert hidden.status_code == nothing.status_code == 400 and hidden.content == nothing.content
            assert main(["agents", "remove", "coder", "--vault", str(roots["team"])]) == 0
            gone = await page.get("/api/session", headers=mine)
            assert gone.status_code == 401, gone.text
        async with httpx2.AsyncClient() as raw:
            refused = await raw.post(server.url, json=INIT, headers=HEADERS | {"Authorization": f"Bearer {coder}"})
            assert refused.status_code == 401
    finally:
        server.stop()
    assert TOKEN not in server.stderr() and coder not in server.stderr()


async def test_after_a_restart_each_vault_catches_up_honestly_and_keys_still_hold(tmp_path: Path, capsys) -> None:
    """Several vaults, keys and a restart together: what an agent wrote through one server is there
    after the next starts; a note edited and one deleted while no server ran show in their own vault
    once its start-up check is done, and every answer before says ``checking`` (or ``indexing``);
    the agent's key still reaches its vault alone, with its limits."""
    roots = {name: write_notes(tmp_path / name, notes) for name, notes in NOTES.items() if name != "work"}
    coder = add_key(capsys, roots["team"], "coder", "--read", "projects/")
    first = Server(tmp_path, token=TOKEN, names=("home", "team"))
    try:
        await listening(first)
        async with session(first.url, coder) as c:
            await settled(first, c, 1)
            wrote = await c.call("memory_write", agent="coder", title="Sprint log", content="Quokka sprint.",
                                 domain="projects")
            assert wrote["status"] == "ok" and wrote["permalink"] == "memory://team/projects/Sprint log", wrote
    finally:
        first.stop()
    roses = roots["home"] / "garden" / "Roses.md"
    roses.write_text(roses.read_text(encoding="utf-8") + "Wombat mulch since spring.\n", encoding="utf-8")
    (roots["team"] / "projects" / "Board.md").unlink()
    second = Server(tmp_path, token=TOKEN, names=("home", "team"))
    try:
        await listening(second)
        async with session(second.url, TOKEN) as owner:
            deadline = time.monotonic() + 90
            while True:
                every = await owner.call("memory_search", agent="owner", query="wombat quokka zebra", vault="*")
                shown = {(row["vault"], row["permalink"]) for row in every["notes"]}
                caught_up = ("home", "memory://home/garden/Roses") in shown and \
                    ("team", "memory://team/projects/Board") not in shown
                wombat = await owner.call("memory_search", agent="owner", query="wombat", vault="home")
                if caught_up and wombat["count"] == 1 and not {"checking", "indexing"} & set(every):
                    break
                assert {"checking", "indexing"} & set(every) or {"checking", "indexing"} & set(wombat), \
                    (every, wombat)  # not caught up yet, and says so
                assert time.monotonic() < deadline, every
                await anyio.sleep(0.05)
            assert ("team", "memory://team/projects/Sprint log") in shown, "nothing an agent wrote is lost"
            assert (await owner.call("memory_search", agent="owner", query="wombat", vault="team"))["count"] == 0
        async with session(second.url, coder) as c:
            mine = await c.call("memory_search", agent="coder", query="quokka wombat", vault="*")
            assert [(row["vault"], row["permalink"]) for row in mine["notes"]] == [
                ("team", "memory://team/projects/Sprint log")], mine
            hidden = await c.call("memory_read", ref="roses", vault="home")
            assert hidden["status"] == "invalid" and "home" not in hidden["message"].split("vaults:")[1], hidden
    finally:
        second.stop()
    assert TOKEN not in second.stderr() and coder not in second.stderr()
