"""Starting and stopping as a person does it in a terminal: Ctrl-C stops serve (stdio and HTTP)
at once with one line; an interrupted index says so in one line, keeps its work, and the next
run says it resumes and finishes; the progress moves per file, not per batch."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from holding import held_environment, wait_held
from serving import free_port

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="sends POSIX signals to a process group")
HANG = 60.0  # generous: only a hang fails


def spawn(*args: str, stdin: int | None = subprocess.PIPE, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    # A session of its own, so that a signal to the group reaches it as Ctrl-C in a terminal does.
    if env is None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_MEM_")}
    return subprocess.Popen([sys.executable, "-m", "vault_mem", *args], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)


def wait_for_line(proc: subprocess.Popen[str], needle: str) -> list[str]:
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never came; stderr so far: {''.join(seen)}")


def interrupt(proc: subprocess.Popen[str], sig: int = signal.SIGINT) -> tuple[int, str]:
    os.killpg(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("still running long after the signal") from None
    return proc.returncode, err


@pytest.fixture
def small_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "note.md").write_text("# A note\n\nabout queues\n", encoding="utf-8")
    return root


def test_ctrl_c_stops_stdio_serve_at_once_with_one_line(small_vault: Path) -> None:
    proc = spawn("serve", "--vault", str(small_vault))
    wait_for_line(proc, "Ctrl-C to stop")
    code, err = interrupt(proc)
    assert code == 130 and "Traceback" not in err, err
    assert [line for line in err.splitlines() if line.strip()][-1] == "vault-mem: stopped"
    assert err.count("stopped") == 1


def test_status_sees_a_running_server_and_then_none(small_vault: Path) -> None:
    proc = spawn("serve", "--vault", str(small_vault))
    wait_for_line(proc, "Ctrl-C to stop")
    try:
        servers = status_of(small_vault)["servers"]
        assert [(s["pid"], s["transport"]) for s in servers] == [(proc.pid, "stdio")]
    finally:
        interrupt(proc)
    assert status_of(small_vault)["servers"] == [], "a stopped server is gone from status"


def status_of(root: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "vault_mem", "status", "--vault", str(root), "--json"],
                          capture_output=True, text=True, timeout=HANG)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_sigterm_stops_stdio_serve_quietly(small_vault: Path) -> None:
    proc = spawn("serve", "--vault", str(small_vault))
    wait_for_line(proc, "Ctrl-C to stop")
    code, err = interrupt(proc, signal.SIGTERM)
    assert code == 130 and "Traceback" not in err and "leaked" not in err, err


def test_ctrl_c_stops_http_serve_at_once_even_with_a_client_connected(small_vault: Path) -> None:
    port = free_port()
    proc = spawn("serve", "--vault", str(small_vault), "--http", "--port", str(port))
    wait_for_line(proc, "Ctrl-C to stop")
    deadline = time.monotonic() + HANG
    while True:  # a client holding a connection open: a graceful shutdown would wait for it
        try:
            client = socket.create_connection(("127.0.0.1", port), timeout=1)
            break
        except OSError:
            assert time.monotonic() < deadline, "the HTTP server never listened"
            time.sleep(0.05)
    with client:
        client.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        code, err = interrupt(proc)
    assert code == 130 and "Traceback" not in err and err.count("stopped") == 1, err


def many_notes(root: Path, count: int) -> Path:
    root.mkdir()
    for i in range(count):
        folder = root / f"area{i % 7}"
        folder.mkdir(exist_ok=True)
        (folder / f"note {i:05d}.md").write_text(
            f"---\ntags: [t{i % 13}]\n---\n# Note {i}\n\n" + f"words about topic {i % 97} and more. " * 20,
            encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def big_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return many_notes(tmp_path_factory.mktemp("life") / "vault", 4000)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_index_says_so_once_and_the_next_run_resumes(
        big_vault: Path, tmp_path: Path, sig: int) -> None:
    index_dir = tmp_path / f"index-{sig}"
    held = tmp_path / "held"  # the build stops after its first batch until the signal (search/hold.py)
    proc = spawn("index", "--vault", str(big_vault), "--index-dir", str(index_dir), "--rebuild",
                 stdin=subprocess.DEVNULL, env=held_environment("build-batch", held))
    wait_held(held, proc)
    code, err = interrupt(proc, sig)
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "leaked" not in err, err
    said = [line for line in err.splitlines() if "interrupted" in line]
    assert len(said) == 1 and "next 'vault-mem index'" in said[0], err
    state = json.loads((index_dir / "state.json").read_text(encoding="utf-8"))
    assert not state.get("complete"), state

    again = subprocess.run([sys.executable, "-m", "vault_mem", "index", "--vault", str(big_vault),
                            "--index-dir", str(index_dir)], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "resuming the interrupted build" in again.stderr, again.stderr
    assert "Traceback" not in again.stderr
    status = subprocess.run([sys.executable, "-m", "vault_mem", "status", "--vault", str(big_vault),
                             "--index-dir", str(index_dir), "--json"], capture_output=True, text=True,
                            timeout=HANG)
    answer = json.loads(status.stdout)
    assert answer["notes"] == 4000 and answer["build"] == "complete"


def test_the_progress_moves_per_file_not_per_batch(big_vault: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "vault_mem", "index", "--vault", str(big_vault),
                           "--index-dir", str(tmp_path / "ix"), "--rebuild"], capture_output=True, text=True,
                          timeout=600)
    steps = [line for line in done.stderr.splitlines() if line.startswith("indexing: ")]
    # Four worker batches of 1,000: reported per batch, at most four distinct steps would show.
    assert done.returncode == 0 and len(steps) >= 9, done.stderr
    assert any("/s" in line and "left" in line for line in steps), "rate and time left"
