"""The garbage collector's pauses in a loaded server, with vault-mem's collector on and off.

    python bench/gc_pauses.py --vault DIR                      # 32 sessions, 2 workers, ABBA, 30 s runs
    python bench/gc_pauses.py --vault DIR --rounds 2 --seconds 60 -- --sessions 16

Runs ``bench/load_ab.py`` with side A as configured (the collector on) and side B with
``VAULT_MEM_GC_TUNING=off``, in ABBA order, and times every collection of every server process:
a ``sitecustomize`` module put first on the servers' ``PYTHONPATH`` (for this bench only; the
product has no such hook) registers a ``gc.callbacks`` function that notes each collection's
generation, its wall time (``perf_counter``) and the collecting thread's CPU time
(``thread_time``: on a shared machine the wall time also holds the time the thread waited for a
core, the CPU time does not), and writes them to a file per process every two seconds.

Prints, per side and per server process that answered calls (its command line tells which: the
parent binds the port, the workers serve), the collections per minute of each generation, their
CPU and wall times (median, p99, max), and the share of the process's time spent collecting.
A collection holds the interpreter lock: every call in that process waits for its length.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

HOOK = '''
import gc, json, os, sys, threading, time
_out = os.environ.get("GC_PAUSES_DIR")
if _out:
    _events = []
    _start = {}
    _born = time.monotonic()
    def _cb(phase, info):
        if phase == "start":
            _start[threading.get_ident()] = (time.perf_counter(), time.thread_time())
        else:
            began = _start.pop(threading.get_ident(), None)
            if began is not None:
                _events.append((info["generation"], time.perf_counter() - began[0],
                                time.thread_time() - began[1], info.get("collected", 0),
                                time.monotonic() - _born))
    gc.callbacks.append(_cb)
    def _dump():
        while True:
            time.sleep(2)
            path = os.path.join(_out, f"{os.getpid()}.json")
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"argv": sys.argv, "seconds": time.monotonic() - _born,
                           "cpu": time.process_time(), "events": list(_events)}, f)
            os.replace(tmp, path)
    threading.Thread(target=_dump, daemon=True, name="gc-pauses-dump").start()
'''


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarize(side: str, folder: Path, window: float) -> None:
    """The collections of each serving process in its last ``window`` seconds (the load)."""
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        argv = " ".join(data["argv"])
        if " serve " not in f" {argv} ":
            continue  # the load clients, the bench itself, the index builds
        events = [e for e in data["events"] if e[4] >= data["seconds"] - window]
        minutes = min(window, data["seconds"]) / 60
        if minutes <= 0:
            continue
        busy = sum(e[1] for e in events)
        print(f"  side {side}, pid {path.stem}: {data['seconds']:.0f} s alive, {data['cpu']:.1f} s CPU in all; "
              f"in the last {minutes * 60:.0f} s collecting {busy:.2f} s wall = {100 * busy / (minutes * 60):.2f}%")
        for generation in (0, 1, 2):
            mine = [e for e in events if e[0] == generation]
            if not mine:
                continue
            cpu = [1000 * e[2] for e in mine]
            wall = [1000 * e[1] for e in mine]
            print(f"    gen {generation}: {len(mine) / minutes:7.1f}/min   cpu ms p50 {statistics.median(cpu):6.2f} "
                  f"p99 {quantile(cpu, 0.99):7.2f} max {max(cpu):7.2f}   wall ms p50 {statistics.median(wall):6.2f} "
                  f"p99 {quantile(wall, 0.99):7.2f} max {max(wall):7.2f}   freed/collection "
                  f"{statistics.median(e[3] for e in mine):.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, default=None,
                        help="the vault to serve (default: load_bench's generated one)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=2)
    args, extra = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="gc-pauses-") as tmp:
        work = Path(tmp)
        (work / "hook").mkdir()
        (work / "hook" / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
        (work / "A").mkdir()
        (work / "B").mkdir()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(work / "hook"), *filter(None, [env.get("PYTHONPATH")])])
        command = [sys.executable, str(HERE / "bench" / "load_ab.py"),
                   *(["--vault", str(args.vault)] if args.vault is not None else []),
                   "--rounds", str(args.rounds), "--seconds", str(args.seconds), "--workers", str(args.workers),
                   "--env-a", f"GC_PAUSES_DIR={work / 'A'}",
                   "--env-b", f"GC_PAUSES_DIR={work / 'B'} VAULT_MEM_GC_TUNING=off", *extra]
        print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        done = subprocess.run(command, env=env)
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if done.returncode != 0:
            raise SystemExit(done.returncode)
        print("collections of the server processes (A: collector on, B: VAULT_MEM_GC_TUNING=off):")
        for side in ("A", "B"):
            summarize(side, work / side, args.seconds)


if __name__ == "__main__":
    main()
