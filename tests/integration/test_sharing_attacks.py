"""Attacks on agent keys and limits (docs/sharing.md), each through a real server process over
HTTP with keys, or the real CLI: a removed key, a bogus bearer, a key file deleted or swapped,
globs stretched to folders, names chosen after the check, writes that land on another note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx2
import pytest
from conftest import write_notes
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from serving import start_http
from test_sharing import HEADERS, INIT, WRITE_TOOLS, Session, add_key

from vault_mem.cli import main
from vault_mem.served import keys

pytestmark = pytest.mark.anyio

TOKEN = "owner-t0ken-for-attacks"
NOTES = {
    "shared/Open.md": "---\nid: open\ntitle: Open\n---\nAnyone may read this.\n",
    "private/S.md": "---\nid: s\ntitle: S\n---\nThe secret.\n",
}


@contextmanager
def serving(root: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    proc, url = start_http(root, cwd=root.parent, env=env)
    try:
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@asynccontextmanager
async def session(url: str, key: str | None) -> AsyncIterator[Session]:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    authed = httpx2.AsyncClient(headers=headers)
    async with authed, Client(streamable_http_client(url, http_client=authed), mode="legacy") as client:
        agent = Session(client)
        await agent.settled()
        yield agent


async def status_of(url: str, key: str | None) -> int:
    """The HTTP status of an ``initialize`` sent with ``key`` as bearer (None: no header); a 401
    must say what is needed, as JSON, without echoing what was sent."""
    headers = HEADERS | ({"Authorization": f"Bearer {key}"} if key is not None else {})
    async with httpx2.AsyncClient() as raw:
        answer = await raw.post(url, json=INIT, headers=headers)
    if answer.status_code == 401:
        assert answer.headers["www-authenticate"] == "Bearer"
        body = answer.json()
        assert (body["error"] == "unauthorized" and "bearer token or an agent key" in body["message"]) \
            or "bearer token or agent key sent" in body["message"]
        assert key is None or key not in answer.text
    return answer.status_code


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


async def test_a_removed_key_and_a_bogus_one_are_refused_and_the_vault_stays_closed_until_opened(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], own_config_folder: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    solo = add_key(capsys, root, "solo", "--read", "shared/", "--read-only")
    with serving(root) as url:
        async with session(url, solo) as agent:
            assert (await agent.call("memory_read", ref="private/S"))["status"] == "not_found"
            assert not await agent.tools() & WRITE_TOOLS
        code, said = cli(capsys, "agents", "remove", "solo", "--vault", str(root))
        assert code == 0 and "refused from now on" in said and "stays closed" in said
        for key in (solo, "vmk_bogus", None):
            assert await status_of(url, key) == 401, key
        # The key file emptied, then deleted, and the vault's own mark deleted: still closed.
        key_file = own_config_folder / "vault-mem" / "agents.json"
        key_file.write_text('{"version": 1, "vaults": {}}\n', encoding="utf-8")
        assert await status_of(url, None) == 401
        key_file.unlink()
        keys.vault_mark(root).unlink()
        for key in (solo, "vmk_bogus", None):
            assert await status_of(url, key) == 401, key
        code, said = cli(capsys, "agents", "open", "--vault", str(root))
        assert code == 0 and "is open" in said
        assert await status_of(url, None) == 200, "opened by its owner: no credential is the owner again"
        for key in (solo, "vmk_bogus", TOKEN):
            assert await status_of(url, key) == 401, "a credential that is no key is refused, always"
    assert not (root / "private" / "pwn.md").exists()


async def test_a_closed_vault_stays_closed_for_a_server_reading_another_config_folder_or_missing_its_mark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    add_key(capsys, root, "solo", "--read", "shared/")
    assert cli(capsys, "agents", "remove", "solo", "--vault", str(root))[0] == 0
    elsewhere = os.environ | {"XDG_CONFIG_HOME": str(tmp_path / "other-config")}
    with serving(root, elsewhere) as url:
        assert await status_of(url, None) == 401, "the vault's mark keeps it closed"
        assert await status_of(url, "vmk_bogus") == 401
    keys.vault_mark(root).unlink()  # all that write access to the vault alone can do
    with serving(root, os.environ | {"VAULT_MEM_TOKEN": TOKEN}) as url:
        assert await status_of(url, None) == 401, "the key file keeps it closed"
        async with session(url, TOKEN) as owner:
            assert (await owner.call("memory_read", ref="private/S"))["status"] == "ok", "the token still works"
    code, said = cli(capsys, "agents", "list", "--vault", str(root), "--json")
    assert code == 0 and json.loads(said)["closed"] is True


def test_agents_open_refuses_while_keys_remain_and_says_so(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    add_key(capsys, root, "solo")
    code, said = cli(capsys, "agents", "open", "--vault", str(root))
    assert code == 1 and "still has agent keys (solo)" in said
    assert keys.is_closed(root)
    assert main(["agents", "remove", "solo", "--vault", str(root)]) == 0
    listed = subprocess.run([sys.executable, "-m", "vault_mem", "agents", "list", "--vault", str(root)],
                            capture_output=True, text=True, timeout=60)  # the real CLI, as a person runs it
    assert listed.returncode == 0 and "it is closed" in listed.stderr + listed.stdout


LIMITS_NOTES = {
    "projects/acme/Acme.md": "---\nid: acme\ntitle: Acme\n---\nThe one note worker may write here.\n",
    "projects/acme/Plan.md": "---\nid: plan\ntitle: Plan\n---\nRead, not written, by worker.\n",
    "projects/Mine.md": "---\nid: mine\ntitle: Mine\nagent: worker\n---\nWorker's own.\n",
    "handoffs/H.md": "---\nid: h\ntitle: H\nagent: research\n---\nFrom research.\n",
    "private/S.md": "---\nid: s\ntitle: S\n---\nThe secret.\n",
}


async def test_a_limited_agent_cannot_write_around_its_globs(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = write_notes(tmp_path / "v", LIMITS_NOTES)
    worker = add_key(capsys, root, "worker", "--read", "projects/", "--read", "handoffs/",
                     "--write", "projects/acme/Acme", "--write", "projects/*.md", "--write", "handoffs/")
    before = {p: p.read_bytes() for p in root.rglob("*.md")}
    with serving(root, os.environ | {"VAULT_MEM_TOKEN": TOKEN}) as url:
        async with session(url, worker) as agent:
            # A note glob is that note: no folder of its name, no folder named like a note.
            for domain in ("projects/acme/Acme", "projects/acme/Acme/deep/er", "projects/notes.md"):
                refused = await agent.call("memory_write", title="evil", content="x", domain=domain)
                assert refused["status"] == "forbidden" and refused["rule"] == "write", (domain, refused)
            # The name taken, the file another: checked as written, and removed again.
            taken = await agent.call("memory_write", title="Acme", content="x", domain="projects/acme")
            assert taken["status"] == "forbidden" and "that name is taken" in taken["message"]
            # Retiring or re-attributing another note needs that note's write rule and one's own name.
            retire = await agent.call("memory_supersede", ref="plan", title="Plan v2", content="x",
                                      domain="projects")
            assert retire["status"] == "forbidden" and "projects/acme/Plan.md" in retire["message"]
            lineage = await agent.call("memory_edit", ref="mine", set={"supersedes": ["plan"]})
            assert lineage["status"] == "forbidden" and lineage["rule"] == "write"
            backward = await agent.call("memory_edit", ref="mine", set={"superseded_by": "[[Plan]]"})
            assert backward["status"] == "forbidden"
            hidden = await agent.call("memory_edit", ref="mine", set={"supersedes": ["s"]})
            missing = await agent.call("memory_edit", ref="mine", set={"supersedes": ["nosuch"]})
            assert hidden["status"] == missing["status"] == "not_found"
            assert hidden["message"].replace("'s'", "X") == missing["message"].replace("'nosuch'", "X")
            forged = await agent.call("memory_edit", ref="mine", set={"agent": "research", "to": ["reviewer"]})
            assert forged["status"] == "forbidden" and forged["rule"] == "name"
            readdressed = await agent.call("memory_edit", ref="handoffs/H", to=["reviewer"])
            assert readdressed["status"] == "forbidden" and "sent by 'research'" in readdressed["message"]
            own = await agent.call("memory_edit", ref="mine", to=["reviewer"])
            assert own["status"] == "ok", "addressing its own note is what handoffs are for"
            # A hidden folder looks like a missing one.
            answers = [await agent.call("list_by_domain", domain=d, subtree=False) for d in ("private", "nosuch")]
            assert [a["hints"][0].split(" ")[:5] for a in answers] == [["domain:", "no", "folder", "is", "named"]] * 2
        async with session(url, TOKEN) as owner:
            plan = await owner.call("memory_read", ref="plan")
            assert plan["lineage"]["superseded_by"] == [], "plan is not retired"
    after = {p: p.read_bytes() for p in root.rglob("*.md")}
    changed = {p.relative_to(root).as_posix() for p in after if before.get(p) != after[p]}
    assert changed == {"projects/Mine.md"}, "only the allowed edit landed; nothing else was created"
