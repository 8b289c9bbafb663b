"""The HTTP server's limits (docs/safety.md, "Limits"), through the real ``serve --http`` process:
connections, the time and bytes of a request's headers, legacy sessions per caller, and a log
that a flood never fills."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from conftest import write_notes
from serving import free_port, serve_args, start_http
from test_sharing import add_key

from vault_mem import settings

pytestmark = pytest.mark.anyio

TOKEN = "limits-s3cret"
NOTES = {"work/a.md": "---\nid: a\ntitle: A\n---\nAbout the queue.\n"}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HALF = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # a request whose headers never end


def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)


def initialize(url: str, key: str = TOKEN, timeout: float = 30) -> httpx2.Response:
    return httpx2.post(url, json=INIT, headers=HEADERS | {"Authorization": f"Bearer {key}"}, timeout=timeout)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_NOFILE is POSIX")
def test_a_flood_of_half_sent_requests_on_few_descriptors_neither_starves_calls_nor_floods_the_log(
        tmp_path: Path) -> None:
    """With 256 file descriptors, 300 connections that never finish their headers: an
    authenticated call still gets through during the flood and after it, and stderr gets a line
    or two, not a traceback per failed accept."""
    import resource

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    root = write_notes(tmp_path / "v", NOTES)
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, *serve_args(root, "--http", "--port", str(port), "--workers", "1")],
                                env=os.environ | {"VAULT_MEM_TOKEN": TOKEN}, stdout=subprocess.DEVNULL,
                                stderr=err, cwd=tmp_path, preexec_fn=few_descriptors)
    url = f"http://127.0.0.1:{port}/mcp"
    flood: list[socket.socket] = []
    try:
        wait_listening(port, proc)
        for _ in range(300):
            conn = socket.create_connection(("127.0.0.1", port), timeout=30)
            conn.sendall(HALF)
            flood.append(conn)
        during = initialize(url)
        assert during.status_code == 200, during.text
        for conn in flood:
            conn.close()
        flood.clear()
        after = initialize(url)
        assert after.status_code == 200, after.text
    finally:
        for conn in flood:
            conn.close()
        proc.terminate()
        proc.wait(timeout=60)
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text and len(text) < 4000, text[:4000]
    assert TOKEN not in text


@pytest.fixture
def served(tmp_path: Path):
    root = write_notes(tmp_path / "v", NOTES)
    proc, url = start_http(root, cwd=tmp_path, env=os.environ | {"VAULT_MEM_TOKEN": TOKEN})
    yield url, proc, root
    proc.terminate()
    proc.communicate(timeout=60)


def answer_of(conn: socket.socket) -> bytes:
    """What the server sends until it closes the connection (a hang fails on the socket's timeout)."""
    got = b""
    while chunk := conn.recv(65536):
        got += chunk
    return got


def test_headers_that_trickle_past_the_header_timeout_are_cut_off(served) -> None:
    """A client that sends its headers a few bytes at a time never gets a longer deadline:
    HEADER_TIMEOUT after it connected it gets 408 and the connection ends."""
    url, _proc, _root = served
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    conn = socket.create_connection(("127.0.0.1", port), timeout=settings.current().header_timeout + 60)
    with conn:
        conn.sendall(HALF)
        conn.setblocking(False)
        deadline = time.monotonic() + settings.current().header_timeout + 60
        answer = b""
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):  # the server closed it
                conn.sendall(b"X-Slow: 1\r\n")
            try:
                chunk = conn.recv(65536)
            except BlockingIOError:
                time.sleep(0.5)
                continue
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer


def test_headers_over_the_byte_bound_are_refused(served) -> None:
    url, _proc, _root = served
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        conn.sendall(HALF)
        with contextlib.suppress(OSError):  # closed as soon as it was over
            for _ in range(settings.current().max_header_bytes // 1000 + 2):
                conn.sendall(b"X-Pad: " + b"a" * 991 + b"\r\n")
        assert answer_of(conn).startswith(b"HTTP/1.1 431")
    assert initialize(url).status_code == 200  # the server goes on


async def open_session(client: httpx2.AsyncClient, url: str, key: str) -> str:
    answer = await client.post(url, json=INIT, headers=HEADERS | {"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


async def list_tools(client: httpx2.AsyncClient, url: str, key: str, session: str) -> httpx2.Response:
    return await client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=HEADERS | {
        "Authorization": f"Bearer {key}", "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})


async def test_a_caller_at_its_session_bound_ends_its_oldest_idle_session_and_never_locks_out_others(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An agent opening sessions without end keeps at most MAX_SESSIONS_PER_CALLER: each new
    one ends its least recently used idle one (404 from then on), one it still uses stays; when
    every one of them has a request in flight (an open GET stream) a new one is refused with a
    message naming the bound; the owner and another agent open sessions all along."""
    root = write_notes(tmp_path / "v", NOTES)
    greedy = add_key(capsys, root, "greedy", "--read-only")
    other = add_key(capsys, root, "other", "--read-only")
    proc, url = start_http(root, cwd=tmp_path, env=os.environ | {"VAULT_MEM_TOKEN": TOKEN})
    try:
        limits = httpx2.Limits(max_connections=settings.current().max_sessions_per_caller + 20)
        async with httpx2.AsyncClient(timeout=60, limits=limits) as client:
            bound = settings.current().max_sessions_per_caller
            sessions = [await open_session(client, url, greedy) for _ in range(bound)]
            assert (await list_tools(client, url, greedy, sessions[0])).status_code == 200  # used: now the newest
            newer = await open_session(client, url, greedy)
            assert (await list_tools(client, url, greedy, sessions[1])).status_code == 404  # the oldest idle one
            assert (await list_tools(client, url, greedy, sessions[0])).status_code == 200
            assert (await list_tools(client, url, greedy, newer)).status_code == 200
            live = [s for s in sessions if s != sessions[1]] + [newer]
            async with anyio.create_task_group() as tg:
                opened = 0

                async def hold(session: str) -> None:
                    nonlocal opened
                    async with client.stream("GET", url, headers={
                            "Accept": "text/event-stream", "Authorization": f"Bearer {greedy}",
                            "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}) as stream:
                        assert stream.status_code == 200
                        opened += 1
                        await anyio.sleep_forever()

                for session in live:
                    tg.start_soon(hold, session)
                with anyio.fail_after(60):
                    while opened < len(live):
                        await anyio.sleep(0.05)
                refused = await client.post(url, json=INIT, headers=HEADERS | {"Authorization": f"Bearer {greedy}"})
                assert refused.status_code == 503
                message = refused.json()["error"]["message"]
                assert f"agent 'greedy' already has {settings.current().max_sessions_per_caller}" in message, message
                assert "docs/safety.md" in message
                await open_session(client, url, other)
                await open_session(client, url, TOKEN)
                tg.cancel_scope.cancel()
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode(errors="replace")[-3000:]


@pytest.mark.anyio
async def test_a_session_answers_only_the_key_that_opened_it(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A session id is no credential: another agent's key, or the owner's token, that presents it
    gets the answer an unknown session gets (404), and its opener keeps using it."""
    root = write_notes(tmp_path / "v", NOTES)
    reader = add_key(capsys, root, "reader", "--read-only")
    other = add_key(capsys, root, "other", "--read-only")
    proc, url = start_http(root, cwd=tmp_path, env=os.environ | {"VAULT_MEM_TOKEN": TOKEN})
    try:
        async with httpx2.AsyncClient(timeout=60) as client:
            theirs = await open_session(client, url, reader)
            owners = await open_session(client, url, TOKEN)
            assert (await list_tools(client, url, other, theirs)).status_code == 404
            assert (await list_tools(client, url, TOKEN, theirs)).status_code == 404
            assert (await list_tools(client, url, reader, owners)).status_code == 404
            assert (await list_tools(client, url, reader, theirs)).status_code == 200
            assert (await list_tools(client, url, TOKEN, owners)).status_code == 200
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode(errors="replace")[-3000:]


def test_the_sdk_still_keeps_its_sessions_where_the_bound_reads_them() -> None:
    """SessionBound reads the SDK manager's open sessions (it offers no public view)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=None)  # type: ignore[arg-type]
    assert manager._server_instances == {}


def test_a_repeated_event_is_logged_once_then_summarised_once_a_period(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from vault_mem.mcp_server.throttled import Throttled

    now = [0.0]
    events = Throttled(logging.getLogger("vault_mem.test"), "refused: %d is the bound", 5, every=60,
                       clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="vault_mem.test"):
        for step in range(10_000):
            now[0] = step * 0.01  # 100 s of events, 100 a second
            events.note("busy")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("refused: 5 is the bound (busy; 1 time(s)")
    assert "6000 time(s)" in lines[1]
