"""Hostile files (docs/vault-format.md: bad files never stop indexing): each is recorded as a problem,
the rest of the vault is indexed and searchable, nothing stalls and memory stays bounded.

One vault holds every hostile input beside ordinary notes. ``vault-mem index`` and
``vault-mem doctor`` run as the real CLI in a child process, with a generous timeout that
only catches a hang; the child's peak RSS (``RUSAGE_CHILDREN`` once it has exited) must stay
far below what an alias bomb or a runaway parse would take. The answers of the read tools
then come through the real MCP session on the index that child built.

``chmod 000`` does not stop root. When the tests run as root, the CLI child drops the
capabilities that let root ignore permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from
its bounding set and re-executes itself, so it meets the unreadable file as any user
would; where that is impossible, only the assertions about that file are skipped.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ToolClient, connect

from vault_mem import settings
from vault_mem.search.api import VaultIndex
from vault_mem.served.context import Vault

pytestmark = pytest.mark.anyio

HANG = 300  # seconds: only a stalled child comes near this
RSS_BOUND_KB = 1024 * 1024  # 1 GB; ru_maxrss is in kilobytes on Linux
BAD_NAME = b"bad\xff.md"
SHOWN_BAD_NAME = "bad\ufffd.md"
FRONTMATTER_MB = 5

ORDINARY = {
    "ok.md": "---\nid: ok\n---\nA normal note about zebras.\n",
    "work/plan.md": "---\nid: plan\ntags: [plan]\n---\n# Plan\n\nThe plan mentions giraffes.\n",
    "loop/inside.md": "---\nid: inside\n---\nA note beside the looping link, about okapis.\n",
}


def alias_bomb() -> str:
    """Billion laughs: nine levels of nine aliases each (9**9 strings if expanded)."""
    lines = ["---", "id: bomb", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n---\nThe bomb's body about lemurs.\n"


def string_alias_bomb() -> str:
    """One 1 MB string repeated through a thousand aliases: a gigabyte once expanded."""
    refs = ", ".join(["*a"] * 1000)
    return f"---\nid: strbomb\na: &a {'x' * 2**20}\nb: [{refs}]\nkept: yes\n---\nBody about quokkas.\n"


def many_keys() -> str:
    """200,000 keys in under 2 MiB: past the value budget, yet only one problem line."""
    return "---\nid: keys\n" + "".join(f"k{i}: 1\n" for i in range(200_000)) + "---\nBody about wombats.\n"


def big_frontmatter() -> str:
    keys = "".join(f"key{i:06d}: {'v' * 40}\n" for i in range(FRONTMATTER_MB * 2**20 // 52))
    return f"---\nid: bigfm\n{keys}---\nThe body after megabytes of frontmatter.\n"


@dataclass(frozen=True)
class Hostile:
    """One hostile input: how to make it, and how doctor and memory_read must report it."""

    name: str
    shown: str  # the path doctor prints (a folder ends with '/')
    problem: str  # a phrase of the recorded problem
    ref: str | None  # a ref that reaches it through memory_read, when it is a note


HOSTILE = [
    Hostile("alias bomb", "bomb.md", "alias bomb", "bomb"),
    Hostile("deep nesting", "deep.md", "nesting", "deep"),
    Hostile("deep mapping", "deepmap.md", "nesting", "deepmap"),
    Hostile("nesting past the depth limit", "deep500.md", "too deeply nested", "deep500"),
    Hostile("string alias bomb", "strbomb.md", "alias bomb", "strbomb"),
    Hostile("200,000 keys", "keys.md", "99,996 more keys", "keys"),
    Hostile("huge frontmatter", "bigfm.md", "not closed within the first", "bigfm.md"),
    Hostile("symlink loop", "loop/up/", "loop", None),
    Hostile("folder outside", "outdir/", "outside the vault", None),
    Hostile("file outside", "outfile.md", "outside the vault", None),  # a link out of the vault is no note
    Hostile("unreadable", "locked.md", "unreadable: Permission denied", "locked.md"),
    Hostile("non-UTF-8 name", SHOWN_BAD_NAME, "not valid UTF-8", "badname"),
    Hostile("FIFO", "x.md", "not a regular file", "x.md"),
    Hostile("UNIX socket", "y.md", "not a regular file", "y.md"),
]


def make_hostile_vault(root: Path, outside: Path) -> socket.socket:
    """Write the vault; returns the bound socket (closed by the caller)."""
    for rel, text in ORDINARY.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "bomb.md").write_text(alias_bomb(), encoding="utf-8")
    (root / "deep.md").write_text("---\nid: deep\nx: " + "[" * 10_000 + "\n---\nDeep body.\n", encoding="utf-8")
    (root / "deepmap.md").write_text("---\nid: deepmap\nx: " + "{a: " * 10_000 + "1" + "}" * 10_000
                                     + "\n---\nDeep mapping body.\n", encoding="utf-8")
    (root / "deep500.md").write_text("---\nid: deep500\nx:\n" + "".join(f"{'  ' * i}- k{i}:\n" for i in range(500))
                                     + "---\nDepth body.\n", encoding="utf-8")
    (root / "strbomb.md").write_text(string_alias_bomb(), encoding="utf-8")
    (root / "keys.md").write_text(many_keys(), encoding="utf-8")
    (root / "bigfm.md").write_text(big_frontmatter(), encoding="utf-8")
    os.symlink("..", root / "loop" / "up")
    (outside / "folder").mkdir(parents=True)
    (outside / "folder" / "secret.md").write_text("secret outside the vault: narwhals\n", encoding="utf-8")
    (outside / "file.md").write_text("a file outside the vault: narwhals\n", encoding="utf-8")
    os.symlink(outside / "folder", root / "outdir")
    os.symlink(outside / "file.md", root / "outfile.md")
    (root / "locked.md").write_text("---\nid: locked\n---\nLocked body.\n", encoding="utf-8")
    os.chmod(root / "locked.md", 0)
    fd = os.open(os.fsencode(root) + b"/" + BAD_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, b"---\nid: badname\n---\nThe badly named note about tapirs.\n")
    finally:
        os.close(fd)
    os.mkfifo(root / "x.md")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(root / "y.md"))
    return sock


# Drop the capabilities that let root ignore file permissions, then run the CLI afresh: a
# bounding-set drop takes effect at the next exec.
_UNPRIVILEGED = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
    if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
        sys.exit(97)
os.execv(sys.executable, [sys.executable, "-m", "vault_mem", *sys.argv[1:]])
"""
CANNOT_DROP = 97


def run_cli(*args: str, privileged: bool = False) -> subprocess.CompletedProcess[str]:
    """``vault-mem ARGS`` in a child process that cannot read a ``chmod 000`` file (unless
    ``privileged``); exit code CANNOT_DROP when root cannot shed its permission override."""
    if os.geteuid() == 0 and not privileged:
        argv = [sys.executable, "-c", _UNPRIVILEGED, *args]
    else:
        argv = [sys.executable, "-m", "vault_mem", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=HANG, check=False)


@dataclass
class Built:
    root: Path
    index_run: subprocess.CompletedProcess[str]
    doctor: dict[str, list[str]]  # path as printed -> its problems
    doctor_run: subprocess.CompletedProcess[str]
    peak_rss_kb: int
    permissions_hold: bool


def parse_doctor(out: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    current = ""
    for line in out.splitlines():
        if line.startswith("  - "):
            found.setdefault(current, []).append(line[4:])
        elif line.strip():
            current = line
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    base = tmp_path_factory.mktemp("hostile")
    root = base / "vault"
    sock = make_hostile_vault(root, base / "outside")
    try:
        index_run = run_cli("index", "--vault", str(root))
        permissions_hold = index_run.returncode != CANNOT_DROP
        if not permissions_hold:  # root without CAP_SETPCAP: run as we are
            index_run = run_cli("index", "--vault", str(root), privileged=True)
        doctor_run = run_cli("doctor", "--vault", str(root), privileged=not permissions_hold)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        doctor = parse_doctor(doctor_run.stdout)
        yield Built(root, index_run, doctor, doctor_run, peak, permissions_hold)
    finally:
        sock.close()
        os.chmod(root / "locked.md", 0o644)


@asynccontextmanager
async def session(root: Path) -> AsyncIterator[ToolClient]:
    # The index the CLI child built, as it built it (no reconcile from this process).
    async for client in connect(Vault(root, VaultIndex(root, config=settings.current()))):
        yield client


def size(answer: dict[str, Any]) -> int:
    return len(json.dumps(answer, ensure_ascii=False))


# -- the CLI completes, reports, and stays bounded ---------------------------------------------


def test_index_completes_within_bounded_memory(built: Built) -> None:
    assert built.index_run.returncode == 0, built.index_run.stderr
    assert "Traceback" not in built.index_run.stderr
    assert "notes" in built.index_run.stderr
    assert built.peak_rss_kb < RSS_BOUND_KB, f"peak RSS {built.peak_rss_kb} kB"


def test_doctor_exits_3_for_problems_and_lists_every_hostile_input(built: Built) -> None:
    assert built.doctor_run.returncode == 3, built.doctor_run.stderr  # issue 12: problems found
    assert "Traceback" not in built.doctor_run.stderr
    # the ordinary notes read cleanly
    assert not {"ok.md", "work/plan.md", "loop/inside.md"} & set(built.doctor)


@pytest.mark.parametrize("hostile", HOSTILE, ids=[h.name for h in HOSTILE])
def test_doctor_records_the_problem(built: Built, hostile: Hostile) -> None:
    if hostile.name == "unreadable" and not built.permissions_hold:
        pytest.skip("running as root without CAP_SETPCAP: no way to make a file unreadable here")
    problems = built.doctor.get(hostile.shown)
    assert problems, f"{hostile.shown} missing from doctor: {sorted(built.doctor)}"
    assert any(hostile.problem in p for p in problems), problems


def test_the_alias_bomb_and_huge_blocks_give_few_problem_lines(built: Built) -> None:
    for shown in ("bomb.md", "strbomb.md", "keys.md", "deep.md", "deepmap.md", "deep500.md", "bigfm.md"):
        assert 1 <= len(built.doctor[shown]) <= 10, built.doctor[shown]
    assert len(built.doctor_run.stdout) < 20_000


# -- the rest of the vault is indexed and searchable -------------------------------------------


@pytest.mark.parametrize("word, permalink", [
    ("zebras", "memory://ok"), ("giraffes", "memory://work/plan"), ("okapis", "memory://loop/inside"),
    ("lemurs", "memory://bomb"), ("tapirs", "memory://bad\ufffd"), ("quokkas", "memory://strbomb"),
    ("wombats", "memory://keys"),
])
async def test_the_rest_is_searchable(built: Built, word: str, permalink: str) -> None:
    async with session(built.root) as c:
        found = await c.call("memory_search", agent="tester", query=word)
    assert [n["permalink"] for n in found["notes"]] == [permalink]


async def test_nothing_outside_the_vault_is_indexed(built: Built) -> None:
    async with session(built.root) as c:
        found = await c.call("memory_search", agent="tester", query="narwhals")
        listed = await c.call("memory_list", limit=-1)
    assert found["status"] == "none"
    paths = {m["path"] for m in listed["memories"]}
    assert not any(p.startswith(("outdir/", "loop/up/")) for p in paths)
    assert {"ok.md", "work/plan.md", "loop/inside.md", "bomb.md", SHOWN_BAD_NAME, "x.md"} <= paths


# -- memory_read shows the problems where the note is reachable --------------------------------


@pytest.mark.parametrize("hostile", [h for h in HOSTILE if h.ref], ids=[h.name for h in HOSTILE if h.ref])
async def test_memory_read_shows_the_problem(built: Built, hostile: Hostile) -> None:
    assert hostile.ref is not None
    if hostile.name == "unreadable" and os.geteuid() == 0:
        # This process is root and reads the file anyway: ask the CLI child, which cannot.
        if not built.permissions_hold:
            pytest.skip("running as root without CAP_SETPCAP: no way to make a file unreadable here")
        done = run_cli("read", "--vault", str(built.root), "--json", hostile.ref)
        answer = json.loads(done.stdout)
    else:
        async with session(built.root) as c:
            answer = await c.call("memory_read", ref=hostile.ref)
    assert answer["status"] == "ok", answer
    assert any(hostile.problem in p for p in answer["problems"]), answer["problems"]
    assert size(answer) < 40_000


async def test_a_name_that_is_not_utf8_is_shown_with_fffd_and_reachable_by_uid(built: Built) -> None:
    async with session(built.root) as c:
        read = await c.call("memory_read", ref="badname")
        by_path = await c.call("memory_read", ref=SHOWN_BAD_NAME)
        listed = await c.call("list_by_domain", domain="", limit=200)
        full = await c.call("memory_list", query="tapirs", content_mode="full")
        recalled = await c.call("mem_recall", output_format="structured", limit=500)
        domains = await c.call("list_domains")
        resource = await c.client.read_resource("memory://bad\ufffd")
    assert read["path"] == SHOWN_BAD_NAME and read["permalink"] == "memory://bad\ufffd"
    assert "tapirs" in read["body"] and by_path["uid"] == "badname"
    assert SHOWN_BAD_NAME in {r["path"] for r in listed["results"]}
    assert [m["path"] for m in full["memories"]] == [SHOWN_BAD_NAME]
    assert "tapirs" in full["memories"][0]["content"]
    assert "bad\ufffd.md" in {r["source"] for r in recalled["results"]}
    assert domains["status"] == "ok"
    assert "tapirs" in resource.contents[0].text  # type: ignore[union-attr]


async def test_special_files_answer_at_once_with_an_empty_body(built: Built) -> None:
    async with session(built.root) as c:
        fifo = await c.call("memory_read", ref="x")
        listed = await c.call("memory_list", query="x", content_mode="full", limit=-1)
    assert fifo["body"] == "" and fifo["etag"] == ""
    assert listed["status"] in ("ok", "none")


async def test_resource_read_of_a_fifo_is_refused_at_once(built: Built) -> None:
    from mcp.shared.exceptions import MCPError

    async with session(built.root) as c:
        with pytest.raises(MCPError, match="not a regular file"):
            await c.client.read_resource("memory://x")
