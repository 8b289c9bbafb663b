"""The small file locks beside the index (the journal's, the agents' state), taken by many threads.

``filelock`` makes a waiter poll the lock file, every 50 ms by default: under a busy server's
saves, a dozen call threads of one process waiting so for the journal's lock spent most of a
save asleep between tries (docs/concurrency.md). Here the threads of one process queue on a
plain lock first, each woken the moment the one before it is done, so only one of them at a
time asks the file lock, which then waits only for another process (polled every ``POLL`` s).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock

POLL = 0.002  # seconds between tries while another process holds the lock (it holds it ~1 ms)

_guard = threading.Lock()
_turns: dict[str, threading.Lock] = {}  # lock file -> this process's turn on it


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold the file lock ``path`` for the block: first this process's turn on it, then the file."""
    key = os.path.abspath(path)
    with _guard:
        turn = _turns.setdefault(key, threading.Lock())
    with turn:
        lock = FileLock(path)
        lock.acquire(poll_interval=POLL)
        try:
            yield
        finally:
            lock.release()
