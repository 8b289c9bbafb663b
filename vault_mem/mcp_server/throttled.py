"""Log lines for events a client can repeat at will, at most one per ``log_every`` seconds.

A refused connection, a failed accept: each may come thousands of times a second under a
flood (asyncio logged a traceback for every failed accept of its backlog). The first is logged
at once, then at most one line a period saying how many came meanwhile, never a traceback.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable


class Throttled:
    """``note(detail)`` for each event; ``logger`` gets ``message`` with the count and last detail."""

    def __init__(self, logger: logging.Logger, message: str, *args: object, every: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.message = message
        self.args = args
        self.every = every
        self.clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None
        self._count = 0

    def note(self, detail: str) -> None:
        with self._lock:
            now = self.clock()
            self._count += 1
            if self._last is not None and now - self._last < self.every:
                return
            count, self._count, self._last = self._count, 0, now
        self.logger.warning(self.message + " (%s; %d time(s) since the last such line; at most one line "
                            "every %d s)", *self.args, detail, count, int(self.every))
