"""The small file locks beside the index (the journal's, the agents' state), taken by many threads.

``filelock`` makes a waiter poll the lock file at a long default interval: under a busy
server's saves, a dozen call threads of one process waiting so for the journal's lock spent
most of a save asleep between tries (docs/perf/file-locks.md). Here the threads of one process queue on a
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

_guard = threading.Lock()
# Lock file -> this process's turn on it, and one FileLock object for it: the turn lets one thread
# at a time use it (a new object per use cost more than the lock itself).
_locks: dict[str, tuple[threading.Lock, FileLock]] = {}


@contextlib.contextmanager
def locked(path: Path, poll: float) -> Iterator[None]:
    """Hold the file lock ``path`` for the block: first this process's turn on it, then the file
    (asked again every ``poll`` seconds, the ``file_lock_poll`` setting, while another process
    holds it)."""
    key = os.path.abspath(path)
    with _guard:
        pair = _locks.get(key)
        if pair is None:
            pair = _locks[key] = (threading.Lock(), FileLock(path, thread_local=False))
    turn, lock = pair
    with turn:
        lock.acquire(poll_interval=poll)
        try:
            yield
        finally:
            lock.release()
