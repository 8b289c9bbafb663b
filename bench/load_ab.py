"""Compare two versions (or two settings) under load: ``bench/load_bench.py`` runs in ABBA order.

    python bench/load_ab.py --a ../base --vault DIR                   # another checkout against this one
    python bench/load_ab.py --env-b "VAULT_MEM_X=1" --vault DIR       # one checkout, two environments
    python bench/load_ab.py --a ../base --rounds 3 -- --sessions 16   # after --: more load_bench options

On a shared machine two runs of the same code can differ by a third in calls per second (the
host's other work), so single runs compare nothing. Each round runs both sides back to back,
in the order A B, then B A, so that a drift of the machine during a round falls on both.
Both sides run this checkout's ``load_bench.py``, so that they are measured alike; side A with
the ``--a`` tree first on ``PYTHONPATH`` (its server is that tree's ``vault_mem``), side B the same
with ``--b`` (default: this checkout); each side may add environment settings (``--env-a``,
``--env-b``, ``NAME=value`` separated by spaces).

Per run and as medians per side: calls/s, the server's CPU per call (less noisy than latency,
but it also moves with the machine), the read and write p99, and each p99 divided by the mean
latency (``load_bench``'s shape line: with no pause between calls the mean follows the machine's
speed, the ratio shows how uneven the answers are).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


@dataclass
class Side:
    name: str
    tree: Path
    env: dict[str, str]


@dataclass
class Run:
    side: str
    calls_per_s: float
    server_ms_per_call: float
    read_p99: float
    write_p99: float
    read_ratio: float
    write_ratio: float
    errors: int
    lost: int


def settings(text: str) -> dict[str, str]:
    env = {}
    for item in text.split():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"load_ab: {item!r} is not NAME=value (environment settings are NAME=value, "
                             "separated by spaces)")
        env[name] = value
    return env


def number(pattern: str, text: str, default: float = float("nan")) -> float:
    found = re.search(pattern, text)
    return float(found.group(1)) if found else default


def parse(side: str, out: str) -> Run:
    calls = number(r"(?m)^(\d+) calls in", out)
    server = number(r"server ([0-9.]+) s \(", out)
    return Run(
        side=side,
        calls_per_s=number(r"([0-9.]+) calls/s", out),
        server_ms_per_call=server * 1000 / calls if calls == calls and calls else float("nan"),
        read_p99=number(r"targets .*read p99 ([0-9.]+) ms", out),
        write_p99=number(r"targets .*write p99 ([0-9.]+) ms", out),
        read_ratio=number(r"p99 / mean latency .*?read ([0-9.]+)", out),
        write_ratio=number(r"p99 / mean latency .*?write ([0-9.]+)", out),
        errors=int(number(r"(?m)^errors: (\d+)", out, -1)),
        lost=int(number(r"lost: (\d+)", out, -1)),
    )


def run_side(side: Side, extra: list[str]) -> Run:
    env = dict(os.environ)
    env.update(side.env)
    env["PYTHONPATH"] = os.pathsep.join([str(side.tree), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run([sys.executable, str(HERE / "bench" / "load_bench.py"), *extra], cwd=side.tree,
                          env=env, capture_output=True, text=True)
    run = parse(side.name, done.stdout)
    if run.calls_per_s != run.calls_per_s:  # no calls line: the bench failed
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise SystemExit(f"load_ab: the run of side {side.name} ({side.tree}) failed:\n{tail}")
    return run


def row(run: Run) -> str:
    return (f"{run.side:<6}{run.calls_per_s:>9.1f}{run.server_ms_per_call:>16.2f}{run.read_p99:>10.0f}"
            f"{run.write_p99:>11.0f}{run.read_ratio:>15.2f}{run.write_ratio:>16.2f}{run.errors:>8d}{run.lost:>6d}")


def medians(side: str, runs: list[Run]) -> Run:
    def median(field: str) -> float:
        return float(statistics.median(getattr(r, field) for r in runs))

    return Run(side, median("calls_per_s"), median("server_ms_per_call"), median("read_p99"), median("write_p99"),
               median("read_ratio"), median("write_ratio"), sum(r.errors for r in runs), sum(r.lost for r in runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", type=Path, default=HERE, help="side A's checkout (default: this one)")
    parser.add_argument("--b", type=Path, default=HERE, help="side B's checkout (default: this one)")
    parser.add_argument("--env-a", default="", help="side A's environment settings: NAME=value ...")
    parser.add_argument("--env-b", default="", help="side B's environment settings: NAME=value ...")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of one run per side (default 2)")
    parser.add_argument("--vault", type=Path, help="load_bench --vault (default: its generated vault)")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=2)
    args, extra = parser.parse_known_args()
    extra = [x for x in extra if x != "--"]
    if args.rounds < 1:
        raise SystemExit("load_ab: --rounds takes a whole number of at least 1")
    sides = {"A": Side("A", args.a.resolve(), settings(args.env_a)),
             "B": Side("B", args.b.resolve(), settings(args.env_b))}
    if sides["A"].tree == sides["B"].tree and sides["A"].env == sides["B"].env:
        raise SystemExit("load_ab: both sides are the same checkout with the same settings; give --a, --b, "
                         "--env-a or --env-b")
    for side in sides.values():
        if not (side.tree / "vault_mem" / "__init__.py").is_file():
            raise SystemExit(f"load_ab: {side.tree} has no vault_mem package (is it a vault-mem checkout?)")
        print(f"side {side.name}: {side.tree} {' '.join(f'{k}={v}' for k, v in side.env.items())}".rstrip())
    bench_args = ["--seconds", str(args.seconds), "--workers", str(args.workers), *extra]
    if args.vault is not None:
        bench_args += ["--vault", str(args.vault.resolve())]
    print(f"{'side':<6}{'calls/s':>9}{'server ms/call':>16}{'read p99':>10}{'write p99':>11}{'read p99/mean':>15}"
          f"{'write p99/mean':>16}{'errors':>8}{'lost':>6}")
    runs: list[Run] = []
    for n in range(args.rounds):
        for name in ("A", "B") if n % 2 == 0 else ("B", "A"):
            runs.append(run_side(sides[name], bench_args))
            print(row(runs[-1]), flush=True)
    print("medians:")
    for name in sides:
        print(row(medians(name, [r for r in runs if r.side == name])))


if __name__ == "__main__":
    main()
