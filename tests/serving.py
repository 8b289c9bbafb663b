"""``vault-mem serve`` as its own process, for the tests that talk to it over stdio or HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def serve_args(root: Path, *extra: str) -> list[str]:
    """The arguments of ``python -m vault_mem serve`` on ``root``, its index beside the vault."""
    return ["-m", "vault_mem", "serve", "--vault", str(root), "--index-dir", str(root.parent / "ix"), *extra]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_args() -> tuple[str, ...]:
    """``--http --port N`` with N free now: no test needs the default port (8765) to be free."""
    return "--http", "--port", str(free_port())


def start_http(root: Path, cwd: Path, env: dict[str, str] | None = None,
               stdout: int = subprocess.PIPE, workers: int = 1,
               extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen[bytes], str]:
    """``vault-mem serve --http`` on a free port, once it accepts connections: the process and its URL.
    Fails (with the server's stderr) if it exits first, or if it does not listen within 60 s.
    One worker unless asked: these tests are about what one server answers; several workers on
    one port are tests/integration/test_workers.py's subject. ``extra``: more options of serve."""
    port = free_port()
    http = ("--http", "--port", str(port), "--workers", str(workers), *extra)
    proc = subprocess.Popen([sys.executable, *serve_args(root, *http)], env=env,
                            stdout=stdout, stderr=subprocess.PIPE, cwd=cwd)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.05)


class Site:
    """A static HTTP server on its own port of 127.0.0.1: one origin, serving ``files``."""

    def __init__(self, files: dict[str, bytes]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = files.get(self.path.split("?")[0])
                if body is None:
                    self.send_error(404)
                    return
                kind = "text/javascript" if self.path.endswith(".js") else "text/html; charset=utf-8"
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
