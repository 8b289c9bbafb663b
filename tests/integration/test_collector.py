"""runtime/collector.py: a serving process's garbage collector, out of the calls' way.

Each case runs in a child Python: freezing and the collector's thread act on the whole process,
and pytest's own objects must stay collectable for the other tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HANG = 120  # seconds: only catches a hang


def run_child(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=HANG)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_settling_freezes_what_is_loaded_and_leaves_only_young_collections_automatic() -> None:
    out = run_child("""
        import gc, time
        import dataclasses
        from vault_mem import settings
        from vault_mem.runtime import collector
        before = gc.get_threshold()
        c = collector.freeze_after_start(20_000, lambda seconds: False,
                                         config=dataclasses.replace(settings.Settings(), gc_freeze_every=0.02))
        assert gc.get_freeze_count() > 1000, gc.get_freeze_count()  # the modules, loaded for good
        assert gc.get_threshold() == (20_000, collector.NEVER, collector.NEVER) != before
        frozen = gc.get_freeze_count()
        kept = [[i] for i in range(30_000)]  # survivors: the collector's thread freezes them
        deadline = time.monotonic() + 60
        while gc.get_freeze_count() < frozen + 30_000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gc.get_freeze_count() >= frozen + 30_000
        print("ok", len(kept))
    """)
    assert out.split() == ["ok", "30000"]


def test_a_garbage_cycle_that_was_frozen_is_freed_by_a_full_collection_when_idle_or_due() -> None:
    out = run_child("""
        import dataclasses, gc, weakref
        from vault_mem import settings
        from vault_mem.runtime import collector

        def tune(**changes):
            c.config = dataclasses.replace(c.config, **changes)

        IDLE_EVERY, FULL_EVERY = settings.Settings().gc_idle_every, settings.Settings().gc_full_every

        class Node:
            pass

        def cycle():
            a, b = Node(), Node()
            a.other, b.other = b, a
            return weakref.ref(a)

        gc.disable()  # no automatic collection: only the steps below collect
        c = collector.Collector(lambda seconds: True, config=settings.Settings())
        t = c.last_full
        # Each due step is a millisecond past its mark: (t + 600) - t is not always 600 in floats.
        idle_due, full_due = IDLE_EVERY + 0.001, FULL_EVERY + 0.001
        gone = cycle()
        c.step(idle=False, now=t + 1)  # frozen: beyond every ordinary collection
        gc.collect(1)
        assert gone() is not None and c.full_collections == 0
        tune(gc_idle_growth=1)
        c.step(idle=True, now=t + IDLE_EVERY - 1)  # idle, but the last full one was lately
        assert gone() is not None and c.full_collections == 0
        tune(gc_idle_growth=10 ** 9)
        c.step(idle=True, now=t + idle_due)  # idle, but too little frozen since the last full one
        assert gone() is not None and c.full_collections == 0
        tune(gc_idle_growth=1)
        c.step(idle=True, now=t + idle_due)
        assert gone() is None and c.full_collections == 1 and c.last_full == t + idle_due
        assert c.made == 0
        assert gc.get_freeze_count() > 1000  # what lives is frozen again

        tune(gc_idle_growth=10 ** 9)
        gone = cycle()
        t = c.last_full
        c.step(idle=False, now=t + FULL_EVERY - 1)  # busy, not yet due
        assert gone() is not None and c.full_collections == 1
        c.step(idle=False, now=t + full_due)  # busy for FULL_EVERY: collected anyway
        assert gone() is None and c.full_collections == 2
        print("ok")
    """)
    assert out.strip() == "ok"


def test_a_runtime_is_quiet_only_with_no_call_running_and_none_ended_lately(tmp_path: Path) -> None:
    """What the collector asks before a full collection (cli/serve.py): a worker whose calls all
    wait for a lock uses no CPU, yet it is not idle."""
    from vault_mem import settings
    from vault_mem.runtime.lifecycle import Runtime
    from vault_mem.search.api import VaultIndex

    root = tmp_path / "v"
    root.mkdir()
    (root / "n.md").write_text("# N\n", encoding="utf-8")
    index = VaultIndex(root, config=settings.current())
    try:
        runtime = Runtime(index)
        assert runtime.quiet_for(1.0)  # no call yet
        with runtime.answering():
            assert not runtime.quiet_for(0.0)  # a call in flight
        assert not runtime.quiet_for(3600.0) and runtime.quiet_for(0.0)  # one ended just now
    finally:
        index.close()


def test_a_server_of_several_vaults_is_quiet_only_when_none_of_them_has_a_call(tmp_path: Path) -> None:
    """serve with several vaults: a call in any vault keeps the collector's full collection back,
    not only a call in the default vault (each vault's Runtime sees its own calls)."""
    from vault_mem import settings
    from vault_mem.cli.serve import quiet_everywhere
    from vault_mem.runtime.lifecycle import Runtime
    from vault_mem.search.api import VaultIndex

    indexes = []
    for name in ("work", "home"):
        root = tmp_path / name
        root.mkdir()
        (root / "n.md").write_text("# N\n", encoding="utf-8")
        indexes.append(VaultIndex(root, config=settings.current()))
    try:
        work, home = (Runtime(index) for index in indexes)
        quiet = quiet_everywhere([work, home])
        assert quiet(1.0)  # no call yet in either
        with home.answering():  # a call in the second vault, not the default
            assert not quiet(0.0) and work.quiet_for(0.0)
        assert not quiet(3600.0) and quiet(0.0)  # it ended just now
    finally:
        for index in indexes:
            index.close()


STEADY_GARBAGE = """
    import gc
    from vault_mem.runtime import collector
    from vault_mem.settings import Settings

    class Node:
        made = freed = 0

        def __init__(self) -> None:
            Node.made += 1

        def __del__(self) -> None:
            Node.freed += 1

    gc.disable()  # no automatic collection: only the steps below collect
    gc.collect()
    gc.freeze()
    pattern = {pattern!r}
    c = collector.Collector(lambda seconds: False, config=Settings())
    t, worst, batch, alive_at_full = c.last_full, 0, 3000, 0
    for tick in range(1, 121):  # two minutes of calls: a full collection is never due by time alone
        count = batch if pattern != "burst" else 100 * batch if tick % 50 == 0 else 0
        in_flight, a, b = [], None, None
        for _ in range(count):
            a, b = Node(), Node()
            a.other, b.other = b, a
            in_flight.append(a)
        bound, fulls = c.bound, c.full_collections
        c.step(idle=pattern == "flicker" and tick % 2 == 0, now=t + tick)  # the tick freezes them alive
        if c.full_collections > fulls:
            bound, alive_at_full = c.bound, 2 * count  # what was in flight then waits for the next one
        del in_flight, a, b  # then they are garbage, frozen
        waiting = Node.made - Node.freed
        worst = max(worst, waiting)
        assert waiting <= bound + alive_at_full + 2 * count, (tick, waiting, bound)
    assert c.full_collections >= 1
    print("ok", c.full_collections, worst)
"""


@pytest.mark.parametrize("pattern", ["steady", "flicker", "burst"])
def test_garbage_cycles_frozen_under_calls_that_never_pause_are_collected_within_the_bound(pattern: str) -> None:
    """A busy agent's calls leave cycles that a tick freezes while they are alive: however the
    calls come (never a pause, a pause every other tick, a burst now and then), the cycles waiting
    in the frozen generation never exceed the collector's bound, plus what was in flight at the
    last full collection and at this tick."""
    out = run_child(STEADY_GARBAGE.format(pattern=pattern))
    assert out.split()[0] == "ok"


def test_the_collector_ticking_never_breaks_what_other_threads_build_from_generators() -> None:
    """Worker threads build tuples and lists from generators (as the engine's postings do) and keep
    the last few thousand, while the collector ticks every 50 builds on an injected clock, the
    interpreter switching threads every 10 microseconds: not one build fails. Counting what a tick
    freezes with ``gc.get_objects`` handed out the tuple being built, and CPython raised
    ``SystemError`` in the building thread (40 to 120 times in these 20,000 builds)."""
    out = run_child("""
        import collections, gc, sys, threading
        from vault_mem.runtime import collector
        from vault_mem.settings import Settings

        sys.setswitchinterval(1e-5)
        data = list(range(3000))
        errors, built, ticks, done = [], [0], [0], threading.Event()
        kept = collections.deque(maxlen=2000)  # what the tick freezes: young objects alive
        due = threading.Semaphore(0)

        def build() -> None:
            while not done.is_set():
                try:
                    kept.append(tuple(b"" if v is None else v for v in data[2::3]))
                    kept.append([[v] for v in data[:100]])
                except SystemError as error:
                    errors.append(repr(error))
                built[0] += 1
                if built[0] % 50 == 0:
                    due.release()
                if built[0] >= 20_000:
                    done.set()
                    due.release()

        c = collector.Collector(lambda seconds: False, config=Settings())
        t = c.last_full

        def tick() -> None:
            while not done.is_set():
                due.acquire()
                ticks[0] += 1
                c.step(idle=False, now=t + ticks[0])

        threads = [threading.Thread(target=build) for _ in range(3)] + [threading.Thread(target=tick)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert ticks[0] > 100, ticks
        print("errors", len(errors), errors[:1])
    """)
    assert out.split()[:2] == ["errors", "0"], out


def test_a_tick_counts_the_objects_that_grew_since_the_last() -> None:
    """What a tick adds to ``made`` follows the tracked objects kept since the last tick, through
    young collections, without listing any object."""
    out = run_child("""
        import gc
        from vault_mem.runtime import collector
        from vault_mem.settings import Settings

        gc.collect()
        gc.freeze()
        gc.set_threshold(1000, collector.NEVER, collector.NEVER)
        c = collector.Collector(lambda seconds: False, config=Settings())
        t = c.last_full
        c.step(idle=False, now=t + 1)
        before = c.made
        kept = [[i] for i in range(50_000)]  # 50 young collections on the way
        c.step(idle=False, now=t + 2)
        grew = c.made - before
        assert 49_000 <= grew <= 52_000, grew
        del kept  # freed by reference counts: the next tick counts no growth
        c.step(idle=False, now=t + 3)
        assert c.made - before - grew <= 1_000, c.made
        print("ok")
    """)
    assert out.strip() == "ok"


def test_nothing_in_the_package_calls_the_collectors_debugging_interfaces() -> None:
    """``gc.get_objects``, ``get_referrers`` and ``get_referents`` hand out objects other threads
    may be building (the test above); none is called anywhere in vault_mem."""
    import ast

    package = Path(__file__).resolve().parent.parent.parent / "vault_mem"
    found = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("get_objects", "get_referrers", "get_referents"):
                found.append(f"{path.relative_to(package)}:{node.lineno} {node.attr}")
    assert not found
