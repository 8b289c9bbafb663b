"""Import benchmark: ``vault-mem import jsonl`` of generated records into an empty vault.

    python bench/import_bench.py                  # 10,000 records
    python bench/import_bench.py --records 2000

Runs the command itself (``vault_mem.cli.main``) three times on the same file: the first
import (every note created), a second run (every note unchanged: the vault is scanned and
each record's digest compared) and an index build of the result (``vault-mem index``), and
prints the seconds of each (wall and CPU) with the load average. Target: the first import of 10,000
records under a minute on a 2-core machine. Everything lives in a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from import_samples import jsonl_lines

from vault_mem.cli import main


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()
    except OSError:
        return "n/a"


def cpu() -> float:
    """CPU seconds of this process so far (user + system): what the wall time would be on an idle
    machine, give or take the disk, when other work shares the cores."""
    times = os.times()
    return times.user + times.system


def timed(argv: list[str]) -> float:
    start, start_cpu = time.perf_counter(), cpu()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(argv)
    assert code == 0, (argv, err.getvalue())
    print(f"  ({cpu() - start_cpu:.1f} s of CPU)")
    return time.perf_counter() - start


def run(records: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "records.jsonl"
        source.write_text("\n".join(jsonl_lines(records)) + "\n", encoding="utf-8")
        vault = Path(tmp) / "vault"
        args = ["import", "jsonl", str(source), "--vault", str(vault), "--json"]
        print(f"load average before: {load()}")
        first = timed(args)
        print(f"import {records:,} records: {first:.1f} s ({records / first:,.0f}/s), load {load()}")
        second = timed(args)
        print(f"second run, all unchanged: {second:.1f} s, load {load()}")
        index = timed(["index", "--vault", str(vault), "--json"])
        print(f"index the imported vault: {index:.1f} s, load {load()}")
        notes = sum(1 for _ in vault.rglob("*.md"))
        print(f"{notes:,} notes in the vault")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    run(parser.parse_args().records)
