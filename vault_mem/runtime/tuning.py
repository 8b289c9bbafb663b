"""Process-wide tuning, in one room: what vault-mem changes about the process it runs in.

Four things, each switchable by a setting (``vault_mem/settings.py``, "Process-wide tuning") and
described in docs/settings.md#process-wide-tuning:

- ``settle_collector``: once a server is ready, its garbage collector freezes what it loaded and
  collects the rest in steps, off the calls' way (``runtime/collector.py``; ``tune_gc``).
- ``serving_worker_gives_way``: the serving workers of ``serve --workers N`` run at a lower
  priority than worker 1, which makes every write (``tune_serving_nice``).
- ``writer_takes_writes_quickly``: worker 1 hands the interpreter lock over sooner, so a write's
  thread runs soon after its waits on the disk (``tune_switch_interval``).
- ``merge_gives_way``: a background merge runs at a low priority, in a scheduling group of its
  own on Linux (``tune_merge_priority``).

``python -m vault_mem.runtime.tuning INDEX_DIR`` is the background merge process: it gives way,
then merges (``search/merge.py``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

from vault_mem import settings
from vault_mem.runtime.collector import Collector, freeze_after_start
from vault_mem.settings import Settings


def settle_collector(quiet: Callable[[float], bool], config: Settings) -> Collector | None:
    """A ready server's collector (see ``runtime/collector.py``); None when ``tune_gc`` is off:
    Python's own collector then runs as it always does."""
    return freeze_after_start(config.gc_young, quiet, config=config) if config.tune_gc else None


def serving_worker_gives_way(config: Settings) -> None:
    """A serving worker (not worker 1, of several) runs at a nice value ``serving_nice`` above its
    parent's, so that when the cores are short, worker 1's writes (short bursts between waits on
    the disk) get one first. Call from the worker's main thread before it starts any other: on
    Linux a thread's nice value is its own, and the threads it starts inherit it.

    Only where ``os.nice`` exists (Linux, macOS): Windows has priority classes, where a class
    below normal waits for every busy program of the normal class, not a smaller share."""
    if config.tune_serving_nice and hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(config.serving_nice)


def writer_takes_writes_quickly(config: Settings) -> None:
    """Worker 1 of several: a short switch interval for the whole process.

    A write's steps are mostly waits on the disk: its fsyncs, the journal's and the agent's file
    locks, a dozen other calls into the system. Each one lets go of the interpreter lock, and when
    another thread wants it meanwhile (a commit, a searcher's renewal) Python gives it back only
    after the switch interval, so a write held up the locks others queued for. The serving workers
    keep Python's default: their call threads compute, and a shorter interval cost them calls."""
    if config.tune_switch_interval:
        sys.setswitchinterval(config.writer_switch_interval)


def merge_gives_way(config: Settings) -> None:
    """Give the live path (the server's calls and commits) the CPU first: a nice value
    ``merge_nice`` higher, and on Linux a scheduling group of its own."""
    if not config.tune_merge_priority:
        return
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(config.merge_nice)
    _own_autogroup()


def _own_autogroup() -> None:
    """Linux with autogroup scheduling (the default of most distributions) shares the CPU fairly
    between sessions first and applies a nice value only among the processes of one session: in
    its server's session a merge would run on that session's share, level with the serving worker
    whenever the server's own threads wait. A session of its own at the lowest autogroup priority
    gives way to them (docs/index-and-scale.md)."""
    if sys.platform != "linux":
        return
    try:
        os.setsid()
        with open("/proc/self/autogroup", "w", encoding="ascii") as group:
            group.write("19")
    except OSError:  # no autogroup (kernel option off, or a container without /proc): the nice value it is
        pass


def merge_process(argv: list[str] | None = None) -> int:
    """The background merge process: it gives way, then merges (``search/merge.py``)."""
    from vault_mem.search.api import merge_main

    config = settings.from_environment(os.environ)  # a process of its own: its composition root, passed down
    merge_gives_way(config)
    return merge_main(config, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(merge_process())
