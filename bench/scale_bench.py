"""Scale benchmark: a vault that only grows, served over stdio as a new user would.

    python bench/scale_bench.py                          # 107,320 notes: the corpus copied 8 times
    python bench/scale_bench.py --notes 13415            # one copy
    python bench/scale_bench.py --vault DIR              # an existing vault (its index is rebuilt)
    python bench/scale_bench.py --corpus DIR --work DIR  # where the corpus is, where the replica goes

The replica holds N notes of the corpus (``--corpus``, default /work/corpus13k) copied
into folders ``copy1`` ... ``copyK`` (the last copy partial). Then, with the index folder
removed:

1. ``vault-mem serve --yes`` (a replica has no ``.obsidian`` folder) is spawned over
   stdio: *first answer with no index* is the time from the spawn to the first
   ``memory_search`` answer; *cold build* the time until
   answers stop carrying ``indexing`` (the server's background build, a
   ``vault-mem index`` child).
2. Right after the build: 20 saves (an editor's atomic save of a random note with a new
   unique word), each timed from the rename until ``memory_search`` finds the word
   (polled), then each read tool called 40 times with random arguments (6+-letter words
   from random notes, random domains, months, refs), then 40 more saves spaced 0.25 s
   apart (steady state, background merges included).
3. The server's peak resident memory (VmHWM, on Linux), the index size, and a
   *warm start*: a second server on the built index, spawn to first answer.

Prints one table with the load average beside it. The machine is shared: repeat runs
and compare medians.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import secrets
import shutil
import string
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

DEFAULT_CORPUS = Path("/work/corpus13k")
AGENT = "scale-bench"
FIRST_SAVES = 20
STEADY_SAVES = 40
CALLS = 40
SAVE_TIMEOUT = 120.0
WORD = re.compile(r"\b[A-Za-z]{6,}\b")


def replicate(corpus: Path, dest: Path, notes: int) -> int:
    """``notes`` Markdown files of ``corpus`` copied into dest/copy1..copyK (kept when already there)."""
    marker = dest / ".scale-bench-notes"
    if marker.exists() and marker.read_text().strip() == str(notes):
        return notes
    shutil.rmtree(dest, ignore_errors=True)
    files = sorted(p.relative_to(corpus) for p in corpus.rglob("*.md")
                   if not any(part.startswith(".") for part in p.relative_to(corpus).parts))
    if not files:
        raise SystemExit(f"no Markdown files under {corpus}")
    done = 0
    copy = 0
    while done < notes:
        copy += 1
        for rel in files[: notes - done]:
            target = dest / f"copy{copy}" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(corpus / rel, target)
        done += min(len(files), notes - done)
    marker.write_text(str(notes))
    return done


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def server_pid(index_dir: Path) -> int | None:
    """The pid of the running ``vault-mem serve`` on ``index_dir`` (from its presence file)."""
    from vault_mem.search.presence import live

    servers = live(index_dir, "serve")
    return int(servers[0]["pid"]) if servers else None


def peak_rss_mb(pid: int | None) -> float:
    """The process's peak resident memory (VmHWM, Linux), or nan where that is not readable."""
    if pid is None:
        return float("nan")
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def index_mb(index_dir: Path) -> float:
    return sum(f.stat().st_size for f in index_dir.rglob("*") if f.is_file()) / 1e6


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Session:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        answer = result.structured_content
        return answer if isinstance(answer, dict) else {}


async def open_server(stack: AsyncExitStack, vault: Path, index_dir: Path, errlog: Path) -> Session:
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ), args=[
        "-m", "vault_mem", "serve", "--yes", "--vault", str(vault), "--index-dir", str(index_dir)])
    sink = stack.enter_context(errlog.open("a"))
    client = await stack.enter_async_context(Client(stdio_client(params, errlog=sink), mode="legacy"))
    return Session(client)


async def first_answer(session: Session) -> dict[str, Any]:
    return await session.call("memory_search", agent=AGENT, query="memory")


async def wait_built(session: Session, timeout: float = 3600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = await session.call("list_by_domain", domain="", limit=1)
        if "indexing" not in answer and answer.get("status") == "ok":
            return
        await anyio.sleep(0.5)
    raise SystemExit("the build did not finish in time")


async def save_and_wait(session: Session, vault: Path, files: list[str], rng: random.Random) -> float:
    """An atomic save of a random note with a new word; seconds until memory_search finds it.

    Drawings (``*.excalidraw.md``: indexed by title and frontmatter only) and files near the
    2 MiB indexing limit are never picked: a word added to them is not searchable by design.
    """
    rel = rng.choice(files)
    while rel.lower().endswith(".excalidraw.md") or (vault / rel).stat().st_size > 1_000_000:
        rel = rng.choice(files)
    path = vault / rel
    # A word no earlier run can have left in the replica (the files keep what each run saved,
    # and the seeded generator repeats its choices): drawn from the OS, and checked unknown.
    word = "scalesave" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(12))
    if (await session.call("memory_search", agent=AGENT, query=word)).get("notes"):
        raise SystemExit(f"the fresh word {word!r} is already in the index: the measure would be void")
    text = path.read_text(encoding="utf-8", errors="replace")
    temp = path.parent / f".{path.name}.bench-tmp"
    temp.write_text(text + f"\n\nSaved by the scale bench: {word}\n", encoding="utf-8")
    start = time.perf_counter()
    os.replace(temp, path)
    while True:
        answer = await session.call("memory_search", agent=AGENT, query=word)
        if answer.get("notes"):
            return time.perf_counter() - start
        if time.perf_counter() - start > SAVE_TIMEOUT:
            return float("inf")
        await anyio.sleep(0.01)


def sample_words(vault: Path, files: list[str], rng: random.Random, n: int) -> list[str]:
    words: list[str] = []
    while len(words) < n:
        text = (vault / rng.choice(files)).read_text(encoding="utf-8", errors="replace")
        found = WORD.findall(text)
        if found:
            words.append(rng.choice(found).lower())
    return words


async def read_tools(session: Session, vault: Path, files: list[str], rng: random.Random,
                     failed: dict[str, int]) -> dict[str, list[float]]:
    words = sample_words(vault, files, rng, CALLS)
    domains = sorted({rel.rpartition("/")[0] for rel in files if "/" in rel})
    refs = [rel[:-3] for rel in rng.sample(files, CALLS)]
    months = [f"20{rng.randrange(18, 26):02d}-{rng.randrange(1, 13):02d}" for _ in range(CALLS)]
    plans: dict[str, list[dict[str, Any]]] = {
        "memory_search": [{"agent": AGENT, "query": w} for w in words],
        "memory_list": [{"query": w} for w in words],
        "list_by_domain": [{"domain": rng.choice(domains)} for _ in range(CALLS)],
        "mem_recall": [{"since": m, "until": m} for m in months],
        "memory_read": [{"ref": r} for r in refs],
        "list_domains": [{} for _ in range(CALLS)],
    }
    times: dict[str, list[float]] = {}
    for tool, calls in plans.items():
        for args in calls:
            start = time.perf_counter()
            answer = await session.call(tool, **args)
            times.setdefault(tool, []).append(time.perf_counter() - start)
            if answer.get("status") not in ("ok", "none"):
                failed[tool] = failed.get(tool, 0) + 1
                print(f"  {tool}({args}) -> {answer.get('status')}: {answer.get('message')}", file=sys.stderr)
    return times


def row(figure: str, value: str, note: str = "") -> str:
    return f"| {figure:<44} | {value:>26} | {note}"


def ms(values: list[float]) -> str:
    return f"{pct(values, 0.5) * 1000:.0f} / {pct(values, 0.95) * 1000:.0f} / {max(values) * 1000:.0f}"


async def run(vault: Path, index_dir: Path, seed: int) -> None:
    rng = random.Random(seed)
    errlog = index_dir.parent / f"{index_dir.name}-server.log"
    errlog.write_text("")
    shutil.rmtree(index_dir, ignore_errors=True)
    files = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md")
                   if not any(part.startswith(".") for part in p.relative_to(vault).parts))
    lines = [f"scale bench: {len(files)} notes in {vault}; load average before: {load()}"]
    print(lines[0], file=sys.stderr)
    async with AsyncExitStack() as stack:
        spawn = time.perf_counter()
        session = await open_server(stack, vault, index_dir, errlog)
        await first_answer(session)
        first = time.perf_counter() - spawn
        print(f"  first answer with no index: {first:.2f} s", file=sys.stderr)
        await wait_built(session)
        cold = time.perf_counter() - spawn
        print(f"  cold build: {cold:.1f} s (load {load()})", file=sys.stderr)
        pid = server_pid(index_dir)
        first_saves = [await save_and_wait(session, vault, files, rng) for _ in range(FIRST_SAVES)]
        print(f"  first saves: {ms(first_saves)} ms", file=sys.stderr)
        failed: dict[str, int] = {}
        tools = await read_tools(session, vault, files, rng, failed)
        steady: list[float] = []
        for _ in range(STEADY_SAVES):
            steady.append(await save_and_wait(session, vault, files, rng))
            await anyio.sleep(0.25)
        print(f"  steady saves: {ms(steady)} ms", file=sys.stderr)
        rss = peak_rss_mb(pid)
        size = index_mb(index_dir)
    async with AsyncExitStack() as stack:
        spawn = time.perf_counter()
        session = await open_server(stack, vault, index_dir, errlog)
        await first_answer(session)
        warm = time.perf_counter() - spawn
    lines += [
        row("figure", "value", "(load average after: " + load() + ")"),
        row("-" * 44, "-" * 26),
        row("cold build (server's background build)", f"{cold:.1f} s"),
        row("first answer with no index", f"{first:.2f} s"),
        row("warm start (spawn to first answer)", f"{warm:.2f} s"),
        row(f"save to visible, first {FIRST_SAVES} after build", f"{ms(first_saves)} ms", "p50 / p95 / max"),
        row(f"save to visible, steady ({STEADY_SAVES})", f"{ms(steady)} ms", "p50 / p95 / max"),
        *[row(f"{tool} over stdio ({len(t)} calls)",
              f"{pct(t, 0.5) * 1000:.1f} / {pct(t, 0.95) * 1000:.1f} ms",
              "p50 / p95" + (f"; {failed[tool]} FAILED" if tool in failed else ""))
          for tool, t in tools.items()],
        row("server peak RSS", f"{rss:.0f} MB"),
        row("index size", f"{size:.0f} MB"),
        row("index segments after the run", str(sum(1 for f in index_dir.glob("*.seg")))),
    ]
    print("\n".join(lines))
    log = errlog.read_text(errors="replace")
    for bad in ("indexing failed", "LockError", "Traceback"):
        if bad in log:
            print(f"the server log ({errlog}) holds {bad!r}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=107_320)
    parser.add_argument("--vault", type=Path, help="an existing vault instead of a replica")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--work", type=Path, default=Path("/tmp/vault-mem-scale"),
                        help="where the replica and its index go")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.vault:
        vault = args.vault.resolve()
        index_dir = args.work / f"index-{vault.name}"
    else:
        vault = args.work / f"replica-{args.notes}"
        start = time.perf_counter()
        made = replicate(args.corpus, vault, args.notes)
        print(f"replica of {made} notes at {vault} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
        index_dir = args.work / f"index-{args.notes}"
    args.work.mkdir(parents=True, exist_ok=True)
    anyio.run(run, vault, index_dir, args.seed)


if __name__ == "__main__":
    main()
