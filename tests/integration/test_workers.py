"""``serve --http --workers N``: real processes on one port, real SDK clients.

Every request here goes over a fresh connection (no keep-alive), so the operating system picks
a worker for each one; the ``Vault-Mem-Worker`` header of each answer says which worker gave it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import write_notes
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from vault_mem import settings

pytestmark = pytest.mark.anyio

NOTES = {f"work/n{i}.md": f"---\nid: n{i}\ntitle: Note {i}\n---\nAbout the queue, part {i}.\n" for i in range(20)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(pid: int) -> bool:
    """The process runs (a zombie left to a container's init that does not reap counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class Served:
    def __init__(self, tmp_path: Path, workers: int = 2, extra: tuple[str, ...] = (),
                 env: dict[str, str] | None = None) -> None:
        self.root = write_notes(tmp_path / "v", NOTES)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = tmp_path / "serve.log"
        env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_TOKEN"} | (env or {})
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "vault_mem", "serve", "--vault", str(self.root), "--index-dir",
                 str(tmp_path / "ix"), "--http", "--port", str(self.port), "--workers", str(workers), *extra],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=tmp_path)

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def pids(self) -> list[int]:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"worker processes on one port \(pids ([\d, ]+)\)", self.stderr())):
            assert self.proc.poll() is None, self.stderr()
            assert time.monotonic() < deadline, self.stderr()
            time.sleep(0.05)
        return [int(p) for p in found.group(1).split(", ")]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=60)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def client(url: str, mode: str, seen: list[tuple[str | None, str | None]],
           token: str | None = None) -> tuple[httpx2.AsyncClient, Client]:
    """An SDK client whose every request opens a new connection; ``seen`` gets (worker, session)."""
    async def note(response: httpx2.Response) -> None:
        seen.append((response.headers.get("vault-mem-worker"), response.request.headers.get("mcp-session-id")))

    http = httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), event_hooks={"response": [note]},
                              headers={"Authorization": f"Bearer {token}"} if token else None)
    return http, Client(streamable_http_client(url, http_client=http), mode=mode)  # type: ignore[arg-type]


async def ready(served: Served, token: str | None = None) -> None:
    """Wait for both workers to say they serve, then for the index (one folder for all of them)."""
    served.pids()
    deadline = time.monotonic() + 120
    while not all(f"worker {i} of 2" in served.stderr() for i in (1, 2)):
        assert served.proc.poll() is None and time.monotonic() < deadline, served.stderr()
        await anyio.sleep(0.05)
    deadline = time.monotonic() + 120
    seen: list[tuple[str | None, str | None]] = []
    http, mcp = client(served.url, "2026-07-28", seen, token)
    async with http:
        while True:
            try:
                async with mcp as c:
                    answer = (await c.call_tool("memory_list", {"limit": -1, "fields": ["id"]})).structured_content
                    if answer and answer["status"] == "ok" and "indexing" not in answer and answer["count"] == 20:
                        return
            except Exception:  # not listening yet
                assert served.proc.poll() is None, served.stderr()
            assert time.monotonic() < deadline, served.stderr()
            await anyio.sleep(0.1)
            http, mcp = client(served.url, "2026-07-28", seen, token)


async def test_a_legacy_session_stays_on_its_worker_across_many_calls(served: Served) -> None:
    await ready(served)
    seen: list[tuple[str | None, str | None]] = []
    http, mcp = client(served.url, "legacy", seen)
    async with http, mcp as c:
        for i in range(40):
            answer = (await c.call_tool("memory_read", {"ref": f"n{i % 20}"})).structured_content
            assert answer is not None and answer["status"] == "ok" and answer["uid"] == f"n{i % 20}", answer
    sessions = {session for _, session in seen if session}
    assert len(sessions) == 1 and next(iter(sessions)).startswith(("w0-", "w1-")), sessions
    owners = {worker for worker, session in seen if session}
    assert len(owners) == 1, f"one session answered by workers {owners}"


async def test_worker_1_takes_no_client_and_a_write_through_worker_2_is_found(served: Served) -> None:
    """Worker 1 makes the writes the others pass it (mcp_server/delegate.py) and serves no client."""
    await ready(served)
    seen: list[tuple[str | None, str | None]] = []
    http, mcp = client(served.url, "2026-07-28", seen)
    async with http, mcp as c:
        written = (await c.call_tool("memory_write", {"agent": "t", "title": "Zephyrine plan",
                                                      "content": "The zephyrine rollout.", "domain": "work"}))
        assert written.structured_content and written.structured_content["status"] == "ok", written
        for _ in range(10):
            answer = (await c.call_tool("memory_search", {"agent": "t", "query": "zephyrine"})).structured_content
            assert answer is not None and [n["title"] for n in answer["notes"]] == ["Zephyrine plan"], answer
    assert {worker for worker, _ in seen} == {"1"}, seen  # every connection went to worker 2 (index 1)
    assert (served.root / "work" / "Zephyrine plan.md").is_file()


async def test_a_file_saved_in_an_editor_is_found_through_the_workers(served: Served) -> None:
    await ready(served)
    (served.root / "work" / "saved.md").write_text("# Quillwort\n\nSaved by hand.\n", encoding="utf-8")
    seen: list[tuple[str | None, str | None]] = []
    http, mcp = client(served.url, "2026-07-28", seen)
    async with http, mcp as c:
        deadline = time.monotonic() + 60  # the watchers' debounce
        while True:
            answer = (await c.call_tool("memory_search", {"agent": "t", "query": "quillwort"})).structured_content
            if answer and [n["title"] for n in answer.get("notes", [])] == ["Quillwort"]:
                break
            assert time.monotonic() < deadline, answer
            await anyio.sleep(0.02)


async def test_stopping_the_parent_stops_every_worker(served: Served) -> None:
    await ready(served)
    pids = served.pids()
    assert len(pids) == 2 and all(alive(p) for p in pids)
    text = served.stderr()
    assert "2 worker processes on one port" in text and served.url in text
    assert text.count("runs the background merges and the git sync") == 1, text
    assert "worker 2 of 2" in text and "worker 1 of 2" in text
    served.proc.terminate()
    assert served.proc.wait(timeout=60) == 130
    deadline = time.monotonic() + 30
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, f"workers still running: {[p for p in pids if alive(p)]}"
        time.sleep(0.05)
    assert "Traceback" not in served.stderr()


def thread_nice(task: Path) -> int | None:
    """A Linux thread's nice value (``/proc/PID/task/TID/stat``), None when it has ended meanwhile."""
    try:
        return int((task / "stat").read_text().rsplit(")", 1)[1].split()[16])
    except FileNotFoundError:
        return None


@pytest.mark.skipif(sys.platform == "win32", reason="sessions, process groups and nice values are POSIX")
def test_workers_share_the_parents_session_and_the_serving_one_gives_way_to_the_writer(served: Served) -> None:
    """A Ctrl-C in the terminal reaches the parent alone (its workers are in other process groups),
    while the workers stay in its session: Linux shares the CPU between sessions first
    (mcp_server/workers.py, _own_group). Worker 2, and every thread it runs, is ``serving_nice``
    below worker 1. Each ignores SIGTTOU, which a terminal set to ``stty tostop`` sends a
    background process that writes to it."""

    pids = served.pids()
    deadline = time.monotonic() + 120
    while not all(f"worker {i} of 2" in served.stderr() for i in (1, 2)):
        assert served.proc.poll() is None and time.monotonic() < deadline, served.stderr()
        time.sleep(0.05)
    parent = served.proc.pid
    base = os.getpriority(os.PRIO_PROCESS, parent)
    for number, pid in enumerate(pids, 1):
        assert os.getpgid(pid) == pid != os.getpgid(parent)
        assert os.getsid(pid) == os.getsid(parent)
        expected = min(19, base + (settings.current().serving_nice if number > 1 else 0))  # 19: the lowest priority
        assert os.getpriority(os.PRIO_PROCESS, pid) == expected
        tasks = Path(f"/proc/{pid}/task")
        if tasks.exists():  # Linux: a nice value per thread
            nices = {nice for task in tasks.iterdir() if (nice := thread_nice(task)) is not None}
            assert nices == {expected}, f"worker {number}'s threads: {nices}"
            status = Path(f"/proc/{pid}/status").read_text()
            ignored = int(re.search(r"^SigIgn:\s*([0-9a-f]+)", status, re.M).group(1), 16)  # type: ignore[union-attr]
            assert ignored >> (signal.SIGTTOU - 1) & 1, f"worker {number} does not ignore SIGTTOU"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX (on Windows a killed parent's pipes close too)")
def test_workers_end_when_the_parent_is_killed(tmp_path: Path) -> None:
    served = Served(tmp_path)
    pids = served.pids()
    served.proc.kill()  # no chance to stop them: their stdin closes, and they go
    served.proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, f"orphan workers: {[p for p in pids if alive(p)]}"
        time.sleep(0.05)


def test_the_handshake_versions_are_the_sdks() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from vault_mem.mcp_server.affinity import HANDSHAKES

    assert {v.encode() for v in HANDSHAKE_PROTOCOL_VERSIONS} == HANDSHAKES


async def test_sessions_are_opened_on_the_workers_that_serve_clients(served: Served) -> None:
    await ready(served)
    seen: list[tuple[str | None, str | None]] = []
    http = httpx2.AsyncClient(event_hooks={"response": [lambda r: _note(r, seen)]})  # keep-alive: one connection
    async with http:
        for _ in range(4):
            async with Client(streamable_http_client(served.url, http_client=http), mode="legacy") as c:  # type: ignore[arg-type]
                await c.call_tool("memory_write", {"agent": "t", "title": "Dealt", "content": "x"})
    opened = {session[:3] for _, session in seen if session}
    assert opened == {"w1-"}, opened  # of two workers, worker 1 (w0-) only writes


def test_new_sessions_are_dealt_in_turn_to_every_worker_but_the_writer() -> None:
    from vault_mem.mcp_server.affinity import Affinity

    async def app(scope: object, receive: object, send: object) -> None:
        pass

    for me in range(4):
        dealt = [Affinity(app, me, [1, 2, 3, 4], connect_wait=1.0)._dealt(turn) for turn in range(1, 7)]  # type: ignore[arg-type]
        assert sorted(set(dealt)) == [1, 2, 3] and dealt[:3] != dealt[3:4] * 3, dealt
    assert {Affinity(app, 0, [1], connect_wait=1.0)._dealt(turn) for turn in range(3)} == {0}  # type: ignore[arg-type]


async def _note(response: httpx2.Response, seen: list[tuple[str | None, str | None]]) -> None:
    seen.append((response.headers.get("vault-mem-worker"), response.request.headers.get("mcp-session-id")))


def test_workers_need_http_and_a_count(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", NOTES)
    base = [sys.executable, "-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(tmp_path / "ix")]
    stdio = subprocess.run([*base, "--workers", "2"], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert stdio.returncode == 1 and b"--workers" in stdio.stderr and b"applies to --http only" in stdio.stderr
    zero = subprocess.run([*base, "--http", "--port", str(free_port()), "--workers", "0"], capture_output=True,
                          timeout=60)
    assert zero.returncode == 2 and b"give 1..64" in zero.stderr and b"Traceback" not in zero.stderr


async def test_a_write_call_passed_to_the_writer_needs_the_secret_and_comes_back_whole() -> None:
    """mcp_server/delegate.py over a real loopback socket: the call, its arguments and its agent
    arrive and the answer comes back as the tool result (its text block as worker 1 made it,
    even a lone surrogate of a file name kept), on one connection kept for the next call; a
    connection without the secret is closed unheard and its caller gets an error answer; calls
    at once each get their own answer."""
    import socket

    from vault_mem.mcp_server.answers import answer_json
    from vault_mem.mcp_server.delegate import Delegate, WriteServer
    from vault_mem.served.agents import Agent

    got: list[tuple[str, object, Agent | None]] = []

    def run_call(name: str, arguments: dict[str, object] | None, caller: Agent | None) -> str:
        got.append((name, arguments, caller))
        return answer_json({"status": "ok", "uid": "u1", "echo": arguments, "text": "é\udcff" * 35_000})

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    config = settings.Settings()
    WriteServer(listener, "s3cret", run_call, threads=8, config=config).start()
    try:
        agent = Agent("scribe", ("work/**",), ("work/**",), False)
        right = Delegate(port, "s3cret", config=dataclasses.replace(config, delegate_connections=3))
        wrong = Delegate(port, "wrong", config=config)
        try:
            with anyio.fail_after(60):
                result = await right.call("memory_write", {"title": "T", "tags": ["a"]}, agent)
                whole = {"status": "ok", "uid": "u1", "echo": {"title": "T", "tags": ["a"]}, "text": "é\udcff" * 35_000}
                assert result.structured_content == whole and not result.is_error
                assert [c.text for c in result.content if isinstance(c, TextContent)] == [answer_json(whole)]
                assert got == [("memory_write", {"title": "T", "tags": ["a"]}, agent)]
                refused = await wrong.call("memory_edit", {"ref": "x"}, None)
                assert refused.is_error and refused.structured_content is not None
                assert refused.structured_content["status"] == "error"
                assert "worker 1" in refused.structured_content["message"], refused
                assert len(got) == 1  # nothing ran
                answers: dict[int, dict[str, Any]] = {}

                async def one(k: int) -> None:
                    answers[k] = (await right.call("memory_edit", {"ref": f"n{k}"}, None)).structured_content or {}

                async with anyio.create_task_group() as tg:
                    for k in range(10):
                        tg.start_soon(one, k)
                assert {k: a["echo"] for k, a in answers.items()} == {k: {"ref": f"n{k}"} for k in range(10)}
                assert 1 <= len(right._idle) <= 3  # connections kept, never more than asked for
        finally:
            await right.aclose()
            await wrong.aclose()
    finally:
        listener.close()


def test_the_writer_worker_takes_the_interpreter_lock_back_quickly() -> None:
    """Worker 1 of several (cli/serve.py calls this before it takes write calls) runs with a switch
    interval a tenth of Python's default, so that a write's many short waits on the disk do not
    each wait for a computing thread's 5 ms turn."""
    from vault_mem.runtime.tuning import writer_takes_writes_quickly

    before = sys.getswitchinterval()
    try:
        writer_takes_writes_quickly(settings.current())
        assert sys.getswitchinterval() == pytest.approx(settings.current().writer_switch_interval)
        assert before / 5 >= settings.current().writer_switch_interval
    finally:
        sys.setswitchinterval(before)


def write_port_of(pid: int) -> int:
    """Worker 1's write-call port, from its environment (Linux: /proc/PID/environ)."""
    for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        name, _, value = entry.partition(b"=")
        if name == b"VAULT_MEM_WORKER":
            return int(json.loads(value)["write_port"])
    raise AssertionError("no seat in worker 1's environment")


def closed_by_the_server(conn: socket.socket) -> bool:
    """The server ended ``conn`` (EOF or reset) before the socket's timeout."""
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_worker_1s_write_socket_checks_the_secret_first_and_bounds_its_threads(served: Served) -> None:
    """Worker 1's write-call socket, attacked on the real server: a first frame that claims to be
    huge is refused unread (once it buffered up to 64 MiB); connections beyond write_threads(2)
    are closed at once and worker 1 never runs more threads than that for them; a connection
    that sends nothing is closed after SECRET_WAIT; then a write through worker 2 still works."""
    from vault_mem.mcp_server.delegate import FRAME, MAX_FRAME, write_threads

    await ready(served)
    writer = served.pids()[0]
    port = write_port_of(writer)
    baseline = len(os.listdir(f"/proc/{writer}/task"))
    with socket.create_connection(("127.0.0.1", port), timeout=60) as huge:
        huge.sendall(FRAME.pack(MAX_FRAME))  # "the secret is MAX_FRAME bytes long"
        assert closed_by_the_server(huge)
    bound = write_threads(2, settings.current().delegate_connections)
    wait = settings.current().delegate_secret_wait + 60
    silent = [socket.create_connection(("127.0.0.1", port), timeout=wait) for _ in range(bound + 10)]
    try:
        threads = len(os.listdir(f"/proc/{writer}/task"))
        assert threads <= baseline + bound, (baseline, threads)
        assert all(closed_by_the_server(conn) for conn in silent)  # the extra at once, the others on SECRET_WAIT
    finally:
        for conn in silent:
            conn.close()
    seen: list[tuple[str | None, str | None]] = []
    http, mcp = client(served.url, "2026-07-28", seen)
    async with http, mcp as c:
        written = await c.call_tool("memory_write", {"agent": "t", "title": "After the flood",
                                                     "content": "Still written.", "domain": "work"})
        assert written.structured_content and written.structured_content["status"] == "ok", written
    assert "Traceback" not in served.stderr()
