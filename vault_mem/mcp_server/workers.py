"""``serve --http --workers N``: N server processes behind one port.

The parent binds the port once and hands that listening socket to N children, each a whole
``vault-mem serve --http`` with its own index reader and call threads; the
operating system gives each new connection to one of them. No process sits in front, so a
stateless request (2026-07-28 protocol) costs no extra hop. A legacy session stays on the
worker that opened it (mcp_server/affinity.py): each child also gets a private loopback
socket, where the others pass it the requests of its sessions.

The socket travels portably: on Linux and macOS as an inherited file descriptor
(``pass_fds``), on Windows (no fork, no SO_REUSEPORT) as ``socket.share`` bytes written to
the child's stdin. Every child reads its stdin to the end and stops when it ends, so a
child never outlives its parent, even one killed with no chance to clean up. Worker 0 alone
runs the background merges, the git sync, the file watcher, and every write tool call (the
others pass theirs to it on a socket of its own: mcp_server/delegate.py; docs/concurrency.md).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ENV = "VAULT_MEM_WORKER"
TOKEN_ENV = "VAULT_MEM_TOKEN"  # how a worker gets the bearer token (cli/serve.py reads it)
# Seconds between two looks at the children: Ctrl-C and SIGTERM reach the waiting thread only
# between two sleeps, on every platform; any short pause does.
SIGNAL_POLL = 0.2
# Seconds each worker still gets once the stop's deadline passed: a moment to be seen ended, so one
# that stopped just then is not killed (and a killed one is reaped).
STOP_LAST_LOOK = 0.1


@dataclass(frozen=True)
class Seat:
    """A worker's seat among the workers of ``serve --http --workers N``, what the parent tells
    it in ``VAULT_MEM_WORKER``: its number (0 is worker 1, which writes), how many there are,
    every private port, and (POSIX) the file descriptors of its sockets."""

    index: int
    count: int
    ports: list[int]
    fds: list[int]
    secret: str = ""  # what worker 1's write calls socket asks of the others (mcp_server/delegate.py)
    write_port: int = 0  # that socket's port (0: one worker, none)

    @property
    def leads(self) -> bool:
        """The worker that runs background merges and git sync."""
        return self.index == 0

    def to_env(self) -> str:
        return json.dumps({"index": self.index, "count": self.count, "ports": self.ports, "fds": self.fds,
                           "secret": self.secret, "write_port": self.write_port})

    @property
    def takes_writes(self) -> bool:
        """Worker 1 of several: it also gets the socket of the others' write calls."""
        return self.leads and self.count > 1


def seat_from_env() -> Seat | None:
    raw = os.environ.get(ENV)
    if not raw:
        return None
    data = json.loads(raw)
    return Seat(int(data["index"]), int(data["count"]), [int(p) for p in data["ports"]],
                [int(f) for f in data["fds"]], str(data.get("secret", "")), int(data.get("write_port", 0)))


def worker_sockets(seat: Seat) -> tuple[list[socket.socket], socket.socket | None]:
    """The worker's listening sockets for its web server (the shared one, then its private one)
    and, for worker 1 of several, the socket of the others' write calls; and a thread that ends
    the process when the parent goes (its stdin closes)."""
    stdin = sys.stdin.buffer
    if sys.platform == "win32":
        sockets = []
        for _ in range(3 if seat.takes_writes else 2):
            (size,) = struct.unpack(">I", stdin.read(4))
            sockets.append(socket.fromshare(stdin.read(size)))
    else:
        sockets = [socket.socket(fileno=fd) for fd in seat.fds]
    writes = sockets.pop() if seat.takes_writes else None

    def watch_parent() -> None:
        while stdin.read(4096):
            pass
        os._exit(0)  # the parent is gone: so is this worker (every write is a rename)

    threading.Thread(target=watch_parent, name="vault-mem-parent", daemon=True).start()
    if writes is not None:
        # Worker 1 makes the writes the others pass it (mcp_server/delegate.py) and takes no
        # client connection: its core goes to the writes, the others' to the reads.
        sockets[0].close()
        return sockets[1:], writes
    return sockets, None


def _listener(family: int, address: tuple[str, int]) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    if sys.platform != "win32":  # as uvicorn binds: a port in TIME_WAIT is free (on Windows it would share it)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class Workers:
    """The parent: binds, starts the N children, waits, and stops them all."""

    def __init__(self, command: list[str], host: str, port: int, count: int, token: str | None = None, *,
                 stop_wait: float) -> None:
        self.command = command
        self.stop_wait = stop_wait  # worker_stop_wait
        self.token = token
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.shared = _listener(family, (host.strip("[]"), port))
        self.private = [_listener(socket.AF_INET, ("127.0.0.1", 0)) for _ in range(count)]
        self.ports = [int(s.getsockname()[1]) for s in self.private]
        self.writes = _listener(socket.AF_INET, ("127.0.0.1", 0)) if count > 1 else None
        self.write_port = int(self.writes.getsockname()[1]) if self.writes is not None else 0
        self.secret = secrets.token_hex(16)
        self.children: list[subprocess.Popen[bytes]] = []

    def start(self) -> list[int]:
        """Start every worker; their pids."""
        count = len(self.private)
        for i, private in enumerate(self.private):
            mine = [self.shared, private, *([self.writes] if i == 0 and self.writes is not None else [])]
            fds = [] if sys.platform == "win32" else [s.fileno() for s in mine]
            env = os.environ | {ENV: Seat(i, count, self.ports, fds, self.secret, self.write_port).to_env()}
            # The token by environment (only the same user can read it), never in the arguments.
            env.pop(TOKEN_ENV, None)
            if self.token:
                env[TOKEN_ENV] = self.token
            child = subprocess.Popen(self.command, stdin=subprocess.PIPE, env=env,
                                     pass_fds=tuple(fds), **_own_group())
            if sys.platform == "win32":
                assert child.stdin is not None
                for sock in mine:
                    data = sock.share(child.pid)
                    child.stdin.write(struct.pack(">I", len(data)) + data)
                child.stdin.flush()
            self.children.append(child)
        return [c.pid for c in self.children]

    def wait(self, poll: Callable[[], None] = lambda: None) -> int:
        """Block until a worker exits (then stop the others) and return its status."""
        while True:
            for child in self.children:
                code = child.poll()
                if code is not None:
                    self.stop()
                    return code
            poll()
            time.sleep(SIGNAL_POLL)

    def stop(self) -> None:
        """Ask every worker to stop, give them ``stop_wait`` seconds, kill what is left."""
        for child in self.children:
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + self.stop_wait
        for child in self.children:
            try:
                child.wait(timeout=max(STOP_LAST_LOOK, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            if child.stdin is not None:
                child.stdin.close()
        for sock in (self.shared, *self.private, *([self.writes] if self.writes is not None else [])):
            sock.close()


def _own_group() -> dict[str, Any]:
    """Children in their own process group: a Ctrl-C reaches the parent, which stops them (one
    line on the terminal, not N+1).

    In the parent's session, not a new one each (as up to 0.4.19): Linux's autogroup scheduling
    (the default of most distributions) shares the CPU between sessions first, and one session
    per worker made worker 1's writes, which run in short bursts between waits on the disk,
    queue as a group behind the serving worker's steady work. In one session the scheduler sees
    their threads side by side (docs/concurrency.md, "One session for all").
    A worker in the terminal's session but not its foreground group ignores SIGTTOU
    (``keep_writing_to_the_terminal``)."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"process_group": 0}


def keep_writing_to_the_terminal() -> None:
    """A worker's log lines go to the terminal from a background process group: on a terminal set
    to ``stty tostop`` each would stop the worker (SIGTTOU) until someone resumed it. Call from the
    worker's main thread."""
    if sys.platform != "win32":
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
