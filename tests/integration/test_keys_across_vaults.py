"""One agent, one key, several vaults (docs/sharing.md, "One key, several vaults"): ``agents add
NAME --vault a --vault b`` registers one key on each, ``--key-stdin`` registers on another vault the
key the agent already has, with that vault's own globs; the key reaches those vaults only, each
with its globs, through real servers (``serve --vault NAME`` over HTTP), and every way around it
is refused: a key that is not one, another agent's key, a vault not named, half an add."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from conftest import write_notes
from serving import start_http
from test_sharing import HEADERS, INIT, http_session, permalinks

from vault_mem.cli import main

pytestmark = pytest.mark.anyio


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def cli(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The CLI in its own process, ``stdin`` piped in (the test's own configuration folder)."""
    return subprocess.run([sys.executable, "-m", "vault_mem", *argv], input=stdin, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def notes(vault: str) -> dict[str, str]:
    return {"projects/Plan.md": f"---\nid: plan-{vault}\n---\n# Plan {vault}\nthe zebra plan of {vault}\n",
            "private/Pay.md": f"---\nid: pay-{vault}\n---\n# Pay {vault}\nthe zebra pay of {vault}\n"}


@pytest.fixture
def vaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    """Three named vaults, a, b and c, each in a folder of its own."""
    roots = {name: write_notes(tmp_path / name / "v", notes(name)) for name in ("a", "b", "c")}
    for name, root in roots.items():
        assert run(capsys, "vaults", "add", name, str(root))[0] == 0
    return roots


def key_file(config: Path) -> Path:
    return config / "vault-mem" / "agents.json"


async def test_one_key_reaches_the_vaults_it_is_on_only_each_with_its_own_globs(
        tmp_path: Path, vaults: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "agents", "add", "coder", "--vault", "a", "--vault", "b", "--read", "projects/",
                         "--json")
    answer = json.loads(out)
    key = answer["key"]
    assert code == 0 and [v["name"] for v in answer["vaults"]] == ["a", "b"]
    assert [v["read"] for v in answer["vaults"]] == [["projects/"], ["projects/"]] and key not in err
    assert run(capsys, "agents", "add", "other", "--vault", "c")[0] == 0  # c is closed, by another agent's key
    # b gets other globs for the same key: its key there is taken off, the agent's own key put back
    assert run(capsys, "agents", "remove", "coder", "--vault", "b")[0] == 0
    given = cli("agents", "add", "coder", "--vault", "b", "--read", "private/", "--key-stdin", stdin=key + "\n")
    assert given.returncode == 0 and key not in given.stdout + given.stderr, "a given key is never shown"
    assert "now reaches" in given.stderr

    servers = {}
    for name in vaults:  # `serve --vault NAME`, from a folder holding no folder of that name
        servers[name] = start_http(Path(name), cwd=tmp_path / name)
    try:
        async with http_session(servers["a"][1], key) as a:
            assert permalinks(await a.call("memory_search", agent="coder", query="zebra")) == {"memory://projects/Plan"}
            assert (await a.call("memory_read", ref="pay-a"))["status"] == "not_found"
            assert (await a.call("memory_read", ref="pay-b"))["status"] == "not_found", "b's notes are not in a"
        async with http_session(servers["b"][1], key) as b:
            assert permalinks(await b.call("memory_search", agent="coder", query="zebra")) == {"memory://private/Pay"}
            assert (await b.call("memory_read", ref="pay-b"))["status"] == "ok"
            assert (await b.call("memory_read", ref="plan-b"))["status"] == "not_found", "b's own globs apply"
        async with httpx2.AsyncClient() as raw:
            refused = await raw.post(servers["c"][1], json=INIT, headers=HEADERS | {"Authorization": f"Bearer {key}"})
            assert refused.status_code == 401, "a vault the key is not on does not let it in"
            assert run(capsys, "agents", "remove", "coder", "--vault", "a")[0] == 0
            gone = await raw.post(servers["a"][1], json=INIT, headers=HEADERS | {"Authorization": f"Bearer {key}"})
            assert gone.status_code == 401, "removed from a: refused there at once"
        async with http_session(servers["b"][1], key) as b:
            assert (await b.call("memory_read", ref="pay-b"))["status"] == "ok", "and still on b"
    finally:
        for proc, _url in servers.values():
            proc.terminate()
            _out, log = proc.communicate(timeout=30)
            assert key.encode() not in log, "no key is ever logged"


def test_a_given_key_must_have_the_form_of_one_and_is_never_echoed(
        vaults: dict[str, Path], own_config_folder: Path) -> None:
    for text, said in (("vmk_this-is-my-secret-password", "is not an agent key"),
                       ("hunter2 " * 3, "is not an agent key"),
                       ("vmk_" + "x" * 43 + "!", "is not an agent key"),
                       ("", "standard input held no key")):
        done = cli("agents", "add", "coder", "--vault", "a", "--key-stdin", stdin=text + "\n")
        assert done.returncode == 1 and said in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
        if text.strip():
            assert text.strip() not in done.stdout + done.stderr
    assert not key_file(own_config_folder).exists(), "nothing was registered"
    done = cli("agents", "list", "--vault", "a", "--key-stdin")
    assert done.returncode == 1 and "only 'agents add' takes --key-stdin" in done.stderr


def test_another_agents_key_is_refused_in_its_vault_and_in_any_other(
        vaults: dict[str, Path], own_config_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "agents", "add", "coder", "--vault", "a", "--json")
    key = json.loads(out)["key"]
    assert code == 0
    before = key_file(own_config_folder).read_bytes()
    for vault, where in (("a", "of this vault"), ("b", f"of another vault ({vaults['a']})")):
        done = cli("agents", "add", "thief", "--vault", vault, "--key-stdin", stdin=key)
        assert done.returncode == 1 and f"this key is the key of agent 'coder' {where}" in done.stderr
        assert key not in done.stderr
    done = cli("agents", "add", "coder", "--vault", "a", "--key-stdin", stdin=key)
    assert done.returncode == 1 and "already has a key for this vault" in done.stderr
    assert key_file(own_config_folder).read_bytes() == before, "nothing was written"


def test_several_vaults_are_all_or_nothing_and_an_unknown_name_is_an_error(
        vaults: dict[str, Path], own_config_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "agents", "add", "coder", "--vault", "b")[0] == 0
    before = key_file(own_config_folder).read_bytes()
    code, out, err = run(capsys, "agents", "add", "coder", "--vault", "a", "--vault", "b")
    assert code == 1 and f"already has a key for the vault {vaults['b']}" in err and "nothing was added" in err
    assert out == "", "no key is shown for an add that did not happen"
    code, _, err = run(capsys, "agents", "add", "helper", "--vault", "a", "--vault", "nope")
    assert code == 1 and "no vault is named 'nope'" in err and "registered: a, b, c" in err
    code, _, err = run(capsys, "agents", "remove", "coder", "--vault", "a", "--vault", "b")
    assert code == 1 and f"no key for the vault {vaults['a']}" in err and "nothing was removed" in err
    code, _, err = run(capsys, "agents", "add", "helper", "--vault", "a", "--vault", "b", "--read", "nowhere")
    assert code == 1 and "names no folder or note of the vault" in err, "globs are checked in each vault"
    assert key_file(own_config_folder).read_bytes() == before
    code, _, err = run(capsys, "agents", "open", "--vault", "a", "--vault", "b")
    assert code == 1 and "one vault at a time" in err
    code, _, err = run(capsys, "agents", "add", "helper")
    assert code == 1 and "no vault given" in err, "a key is added only where a --vault says, never to every vault"


def test_agents_list_shows_each_vault_and_alone_every_named_vault(
        vaults: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VAULT_MEM_VAULT", raising=False)
    assert run(capsys, "agents", "add", "coder", "--vault", "a", "--vault", "c", "--read-only")[0] == 0
    code, out, _ = run(capsys, "agents", "list", "--json")
    listed = json.loads(out)["vaults"]
    assert code == 0 and [(v["name"], v["vault"], [a["agent"] for a in v["agents"]]) for v in listed] == [
        ("a", str(vaults["a"].resolve()), ["coder"]), ("b", str(vaults["b"].resolve()), []),
        ("c", str(vaults["c"].resolve()), ["coder"])]
    code, out, _ = run(capsys, "agents", "list", "--vault", "b", "--vault", "c")
    assert code == 0 and out.startswith(f"b: {vaults['b']}\nno agent keys\n\nc: {vaults['c']}\nagent")
    code, out, _ = run(capsys, "agents", "list", "--vault", "a", "--json")
    assert code == 0 and [a["agent"] for a in json.loads(out)["agents"]] == ["coder"], "one vault: as before"
    assert run(capsys, "agents", "remove", "coder", "--vault", "a", "--vault", "c", "--json")[0] == 0
    code, out, _ = run(capsys, "agents", "list", "--json")
    assert [v["agents"] for v in json.loads(out)["vaults"]] == [[], [], []]
    assert [v["closed"] for v in json.loads(out)["vaults"]] == [True, False, True]
