"""Python's garbage collector in a serving process, kept out of the calls' way.

Every collection holds the interpreter lock, so each one is a pause of every call in the
process. Under 32 sessions (``bench/load_bench.py``, the 13,415-note corpus, two workers) the
worker that answers the clients collected its young objects every second (10-24 ms of CPU),
its middle generation every 12-15 s (60-140 ms) and, once its caches had filled, everything
(100-400 ms in runs of two minutes). Nearly all they looked at was alive (the shared caches,
the calls in flight) and they freed next to nothing: 0 objects in most young collections.

So once the server is ready (``settle``): what it loaded for good is frozen out of reach
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
full collection then (0.1-0.7 s at 13,000 notes) only made their wait longer.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable

from vault_mem import settings

log = logging.getLogger("vault_mem.runtime")
NEVER = 1_000_000_000  # a generation threshold that is never reached


def settle(young: int, quiet: Callable[[float], bool]) -> Collector:
    """Freeze what is loaded, collect young objects every ``young`` allocations, and start the
    thread that freezes survivors and runs the full collections (see the module); ``quiet(s)``:
    no tool call ran in the last ``s`` seconds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(young, NEVER, NEVER)
    collector = Collector(quiet)
    threading.Thread(target=collector.run, name="vault-mem-collector", daemon=True).start()
    return collector


class Collector:
    """One tick every ``FREEZE_EVERY`` seconds: a full collection when it is due, else a freeze."""

    def __init__(self, quiet: Callable[[float], bool]) -> None:
        config = settings.current()
        self.quiet = quiet
        self.made = 0  # objects frozen since the last full collection (some may have died since)
        # ``made`` that makes one due
        self.bound = max(config.gc_growth_floor, int(config.gc_growth_share * gc.get_freeze_count()))
        self.last_full = time.monotonic()
        self.full_collections = 0

    def run(self) -> None:
        while True:
            time.sleep(settings.current().gc_freeze_every)
            self.tick()

    def tick(self) -> None:
        self.step(self.quiet(settings.current().gc_freeze_every), time.monotonic())

    def step(self, idle: bool, now: float) -> None:
        """Freeze what survived; collect everything if it is due (``idle``: no call in the last tick)."""
        config = settings.current()
        # What this freeze takes: the generations below the frozen one, listed (the frozen one's
        # own count walks every frozen object, so it is taken only at full collections).
        self.made += sum(len(gc.get_objects(generation)) for generation in range(3))
        gc.freeze()
        since = now - self.last_full
        if self.made and (self.made >= self.bound or since >= config.gc_full_every
                          or (idle and since >= config.gc_idle_every and self.made >= config.gc_idle_growth)):
            self.full(now)

    def full(self, now: float) -> None:
        config = settings.current()
        started = time.perf_counter()
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        self.made = 0
        self.bound = max(config.gc_growth_floor, int(config.gc_growth_share * gc.get_freeze_count()))
        self.last_full = now
        self.full_collections += 1
        log.debug("full collection: %d unreachable objects, %.0f ms", found, (time.perf_counter() - started) * 1000)
