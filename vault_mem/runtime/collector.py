"""Python's garbage collector in a serving process, kept out of the calls' way.

Every collection holds the interpreter lock, so each one is a pause of every call in the
process. Under load, the worker that answers the clients collected its young objects every
second, its middle generation every few seconds and, once its caches had filled, everything,
each a pause of every call (docs/perf/gc-freeze.md). Nearly all they looked at was alive (the
shared caches, the calls in flight) and they freed next to nothing.

So once the server is ready (``freeze_after_start``): what it loaded for good is frozen out of reach
(``gc.freeze``); young objects are still collected, every ``young`` allocations; and what
survives is frozen every ``FREEZE_EVERY`` seconds instead of being walked again and again by
the older generations, which are never collected on their own (``NEVER``). Garbage that forms
a cycle among frozen objects waits for a full collection (unfreeze, collect, freeze), which
runs whatever the load once the objects frozen since the last one reach ``GROWTH_SHARE`` of
those it left alive (at least ``GROWTH_FLOOR``): waiting garbage stays a bounded share of what
the process holds, and each full collection's pause is paid for by that much growth. Besides,
one runs when no tool call has run for a tick and ``IDLE_GROWTH`` objects were frozen since the
last one (at most every ``IDLE_EVERY`` seconds: an agent pausing between calls should not cost
a whole collection each time), and at least every ``FULL_EVERY`` seconds while anything was
(docs/index-and-scale.md).

Idle means no call, not little CPU: a worker whose calls all wait for a lock uses no CPU, and a
full collection then only made their wait longer.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable

from vault_mem.settings import Settings

log = logging.getLogger("vault_mem.runtime")
NEVER = 1_000_000_000  # a generation threshold that is never reached


def freeze_after_start(young: int, quiet: Callable[[float], bool], *, config: Settings) -> Collector:
    """Freeze what is loaded, collect young objects every ``young`` allocations, and start the
    thread that freezes survivors and runs the full collections (see the module); ``quiet(s)``:
    no tool call ran in the last ``s`` seconds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(young, NEVER, NEVER)
    collector = Collector(quiet, config=config)
    threading.Thread(target=collector.run, name="vault-mem-collector", daemon=True).start()
    return collector


class Collector:
    """One tick every ``FREEZE_EVERY`` seconds: a full collection when it is due, else a freeze."""

    def __init__(self, quiet: Callable[[float], bool], *, config: Settings) -> None:
        self.config = config
        self.quiet = quiet
        self.made = 0  # net growth of the tracked objects since the last full collection (``grown``)
        # ``made`` that makes one due
        self.bound = max(config.gc_growth_floor, int(config.gc_growth_share * gc.get_freeze_count()))
        self.last_full = time.monotonic()
        self.full_collections = 0
        self.young_collections: int = gc.get_stats()[0]["collections"]

    def run(self) -> None:
        while True:
            time.sleep(self.config.gc_freeze_every)
            self.tick()

    def tick(self) -> None:
        self.step(self.quiet(self.config.gc_freeze_every), time.monotonic())

    def step(self, idle: bool, now: float) -> None:
        """Freeze what survived; collect everything if it is due (``idle``: no call in the last tick)."""
        config = self.config
        self.made += self.grown()
        gc.freeze()
        since = now - self.last_full
        if self.made and (self.made >= self.bound or since >= config.gc_full_every
                          or (idle and since >= config.gc_idle_every and self.made >= config.gc_idle_growth)):
            self.full(now)

    def grown(self) -> int:
        """The tracked objects made since the last tick, net of those freed, from counts the
        collector keeps: a young collection runs each time allocations outnumber deallocations
        by the young threshold, and the young count holds what came since (a freeze resets it).

        Never from the collector's debugging calls (``gc.get_objects`` and the like): they hand
        out every tracked object, among them a tuple that another thread is still building from
        a generator, and CPython then refuses to grow it (``SystemError`` in that thread; issue
        of 0.5.2, docs/perf/gc-freeze.md). ``gc.get_freeze_count`` is safe but walks every frozen
        object, so it is read only at full collections."""
        collections: int = gc.get_stats()[0]["collections"]
        grown = (collections - self.young_collections) * gc.get_threshold()[0] + gc.get_count()[0]
        self.young_collections = collections
        return grown

    def full(self, now: float) -> None:
        config = self.config
        started = time.perf_counter()
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        self.made = 0
        self.bound = max(config.gc_growth_floor, int(config.gc_growth_share * gc.get_freeze_count()))
        self.last_full = now
        self.full_collections += 1
        log.debug("full collection: %d unreachable objects, %.0f ms", found, (time.perf_counter() - started) * 1000)
