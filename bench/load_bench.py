"""Load benchmark: many concurrent MCP sessions over streamable HTTP, reads and writes mixed.

    python bench/load_bench.py                       # 2,000 notes, 32 sessions, 60 s
    python bench/load_bench.py --seconds 10 --sessions 8 --notes 500
    python bench/load_bench.py --seconds 30 --workers 2          # serve --http --workers 2
    python bench/load_bench.py --seconds 30 --workers 2 --mode 2026-07-28   # stateless clients
    python bench/load_bench.py --seconds 30 --workers 2 --vault DIR    # a copy of an existing vault

Starts `vault-mem serve --http` on a free loopback port over a generated vault, waits for
the index, then runs ``--sessions`` client sessions (each its own MCP session) for
``--seconds``: 80% reads spread over every read tool, 20% writes (``--writes``) (memory_write of a new note
with a unique title word, or memory_edit appending a unique paragraph to a note that
session created). Every call's latency and status is recorded. Afterwards every
acknowledged write is checked on disk (the file exists and holds what was written) and
through memory_search (its unique title word finds it).

``--trace FILE`` writes every call (when it started, kind, tool, latency, status) to a CSV file,
to see when the slow calls happen (a background merge every few seconds, say).

``--workers N`` is passed to ``serve`` (default 1: one process, as before the option existed);
``--mode`` is the client's protocol (legacy sessions, or the stateless 2026-07-28 requests).
The CPU line sums the server's whole process tree, and with workers the bench says which
worker answered how many requests (the ``Vault-Mem-Worker`` header) and how many legacy
requests had to be passed to their session's worker.

Prints throughput, p50/p99 latency per kind (read/write) and per tool, the error count
(status "error" or an exception; "invalid" counts too, since the bench sends only valid
calls) and the lost writes. Targets: zero errors, zero lost writes, p99 under 250 ms.
Exit status 1 when a target is missed.

The sessions never pause, so the mean latency is about sessions / (calls per second): a slower
machine stretches every latency alike. The shape line divides each p99 by the mean, which shows
how uneven the answers are whatever the machine's speed, and says what throughput that shape
would need to meet the target. Every session lives in this one process, so the bench also says
how late its own event loop woke (a reply waits for it too). ``bench/load_ab.py`` compares two
versions or settings in alternating runs.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_vault import WORDS, generate

AGENT = "load-bench"
CLIENT_GC_YOUNG = 20_000  # the bench's own young collections, as the server sets its own (cli/serve.py)
P99_TARGET_MS = 250.0
WARM_UP = 5.0  # seconds of the run reported apart as well
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass
class Call:
    session: int
    kind: str  # read | write
    tool: str
    ms: float
    status: str  # the answer's status, or "exception"
    detail: str = ""
    at: float = 0.0  # when the call started (time.monotonic)


@dataclass
class Written:
    """An acknowledged write: what must be on disk and findable afterwards."""

    path: str
    word: str  # the unique word in the title
    texts: list[str] = field(default_factory=list)  # every paragraph written or appended


@dataclass
class Shared:
    refs: list[str]
    domains: list[str]
    calls: list[Call] = field(default_factory=list)
    written: dict[str, Written] = field(default_factory=dict)  # by uid
    by_worker: dict[str, int] = field(default_factory=dict)  # answers per Vault-Mem-Worker header


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def unique_word(rng: random.Random, session: int, n: int) -> str:
    """A word made of letters only (one token), unique per session and call."""
    def letters(value: int) -> str:
        out = ""
        while True:
            value, digit = divmod(value, 26)
            out = LETTERS[digit] + out
            if value == 0:
                return out
    return "zq" + letters(session) + "x" + letters(n) + "".join(rng.choice(LETTERS) for _ in range(4))


def read_call(rng: random.Random, shared: Shared) -> tuple[str, dict[str, Any]]:
    choice = rng.randrange(9)
    if choice == 0:
        return "memory_search", {"agent": AGENT, "query": " ".join(rng.sample(WORDS, 2))}
    if choice == 1:
        return "memory_search", {"agent": AGENT}
    if choice == 2:
        return "list_by_domain", {"domain": rng.choice(shared.domains)}
    if choice == 3:
        year = rng.choice([2024, 2025, 2026])
        return "mem_recall", {"since": f"{year}-{rng.randint(1, 12):02d}", "until": f"{year}-12"}
    if choice == 4:
        return "memory_list", {"query": rng.choice(WORDS), "limit": 10}
    if choice == 5:
        return "memory_list", {"tags_any": [rng.choice(WORDS)], "sort_by_importance": True}
    if choice == 6:
        return "memory_read", {"ref": rng.choice(shared.refs)}
    if choice == 7:
        return "list_domains", {}
    return "memory_search", {"agent": AGENT, "query": rng.choice(WORDS), "limit": 5}


async def timed(client: Client, shared: Shared, session: int, kind: str, tool: str,
                args: dict[str, Any]) -> dict[str, Any] | None:
    start, began = time.perf_counter(), time.monotonic()
    try:
        result = await client.call_tool(tool, args)
    except Exception as exc:  # a broken session is an error to count, not a reason to stop
        shared.calls.append(Call(session, kind, tool, (time.perf_counter() - start) * 1000, "exception",
                                 f"{type(exc).__name__}: {exc}", began))
        return None
    ms = (time.perf_counter() - start) * 1000
    answer = result.structured_content or {}
    status = str(answer.get("status", "missing"))
    shared.calls.append(Call(session, kind, tool, ms, status, str(answer.get("message", ""))[:200], began))
    return answer


def counting_client(shared: Shared) -> httpx2.AsyncClient:
    async def count(response: httpx2.Response) -> None:
        worker = response.headers.get("vault-mem-worker", "-")
        shared.by_worker[worker] = shared.by_worker.get(worker, 0) + 1
        if "vault-mem-passed-by" in response.headers:
            shared.by_worker["passed"] = shared.by_worker.get("passed", 0) + 1

    return httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0), event_hooks={"response": [count]})


async def run_session(url: str, session: int, deadline: float, shared: Shared, seed: int, mode: str,
                      write_share: float = 0.2) -> None:
    rng = random.Random(seed * 1000 + session)
    mine: list[str] = []  # uids this session created
    n = 0
    http = counting_client(shared)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        while time.monotonic() < deadline:
            n += 1
            if rng.random() >= write_share:
                tool, args = read_call(rng, shared)
                await timed(client, shared, session, "read", tool, args)
                continue
            word = unique_word(rng, session, n)
            if mine and rng.random() < 0.5:
                uid = rng.choice(mine)
                paragraph = f"Appended {word} by session {session}."
                answer = await timed(client, shared, session, "write", "memory_edit",
                                     {"agent": AGENT, "ref": uid, "append": paragraph})
                if answer and answer.get("status") == "ok":
                    shared.written[uid].texts.append(paragraph)
                continue
            title = f"Load {word} {rng.choice(WORDS)}"
            content = f"Written by session {session}: {word} {' '.join(rng.sample(WORDS, 6))}."
            domain = rng.choice(shared.domains)
            answer = await timed(client, shared, session, "write", "memory_write",
                                 {"agent": AGENT, "title": title, "content": content, "domain": domain,
                                  "tags": ["load"]})
            if answer and answer.get("status") == "ok":
                uid = str(answer["uid"])
                shared.written[uid] = Written(str(answer["path"]), word, [content])
                mine.append(uid)


async def wait_ready(url: str, proc: subprocess.Popen[bytes], notes: int, timeout: float = 600) -> tuple[
        list[str], list[str]]:
    """Wait for the port, then for the index; return sample refs and domains."""
    deadline = time.monotonic() + timeout
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited with status {proc.returncode}") from None
            if time.monotonic() > deadline:
                raise SystemExit("the HTTP server did not start") from None
            await anyio.sleep(0.1)
    async with Client(streamable_http_client(url), mode="legacy") as client:
        while True:
            result = await client.call_tool("memory_list", {"limit": -1, "fields": ["id"]})
            answer = result.structured_content or {}
            done = answer.get("status") == "ok" and "indexing" not in answer
            if done and (answer.get("count", 0) >= notes or "next_offset" in answer):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"the index was not ready in time: {answer}")
            await anyio.sleep(0.2)
        refs = [m["id"] for m in answer["memories"]]
        listing = (await client.call_tool("list_domains", {})).structured_content or {}
        domains = [d["domain"] for d in listing.get("domains", []) if d["domain"]]
    return refs, domains


async def verify(url: str, root: Path, shared: Shared) -> list[str]:
    """Every acknowledged write on disk with its content, and found by its unique word."""
    lost: list[str] = []
    async with Client(streamable_http_client(url), mode="legacy") as client:
        for uid, w in sorted(shared.written.items()):
            path = root / w.path
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                lost.append(f"{uid} {w.path}: not on disk ({exc.strerror})")
                continue
            missing = [t for t in w.texts if t not in text]
            if missing:
                lost.append(f"{uid} {w.path}: {len(missing)} acknowledged text(s) missing on disk")
            result = await client.call_tool("memory_search", {"agent": AGENT, "query": w.word})
            answer = result.structured_content or {}
            permalinks = [n["permalink"] for n in answer.get("notes", [])]
            if "memory://" + w.path[:-3] not in permalinks:
                read = (await client.call_tool("memory_read", {"ref": uid})).structured_content or {}
                where = "indexed (memory_read finds it)" if read.get("status") == "ok" else "not in the index"
                lost.append(f"{uid} {w.path}: memory_search {w.word!r} does not find it "
                            f"({answer.get('status')}); {where}")
    return lost


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of ``pid`` and every process below it (the workers, their merge
    and build children, running or ended) from /proc, or of this process; NaN when unknown."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        # its own time, and that of its children it waited for (merge processes that ended)
        own = sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")
    return own + sum(cpu_seconds(child) for child in children(pid))


def machine_ticks() -> tuple[int, int] | None:
    """(busy, total) clock ticks of every core so far, from /proc/stat (Linux); None elsewhere.
    Busy counts what the server's CPU line misses: its merge processes that ended, the clients."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields) - idle, sum(fields)


def children(pid: int) -> list[int]:
    try:
        return [int(p) for t in Path(f"/proc/{pid}/task").iterdir()
                for p in (t / "children").read_text().split()]
    except (OSError, ValueError):
        return []


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report(shared: Shared, seconds: float, lost: list[str], sessions: int) -> bool:
    calls = shared.calls
    errors = [c for c in calls if c.status in ("error", "exception", "invalid", "missing")]
    print(f"\n{len(calls)} calls in {seconds:.1f} s: {len(calls) / seconds:.1f} calls/s")
    print(f"{'kind/tool':28s} {'calls':>7s} {'p50 ms':>8s} {'p99 ms':>8s} {'max ms':>8s}")
    groups: dict[str, list[Call]] = {}
    for c in calls:
        groups.setdefault(c.kind, []).append(c)
    for c in calls:
        groups.setdefault(f"  {c.kind}:{c.tool}", []).append(c)
    for name in sorted(groups, key=lambda g: (g.strip().split(":")[0], g.startswith(" "), g)):
        ms = [c.ms for c in groups[name]]
        print(f"{name:28s} {len(ms):7d} {pct(ms, 50):8.1f} {pct(ms, 99):8.1f} {max(ms):8.1f}")
    statuses: dict[str, int] = {}
    for c in calls:
        statuses[c.status] = statuses.get(c.status, 0) + 1
    print("statuses:", ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    print(f"errors: {len(errors)}")
    for c in errors[:10]:
        print(f"  {c.tool} (session {c.session}): {c.status} {c.detail}")
    print(f"acknowledged writes: {len(shared.written)} notes, "
          f"{sum(len(w.texts) - 1 for w in shared.written.values())} appends; lost: {len(lost)}")
    for line in lost[:10]:
        print("  " + line)
    p99s = {kind: pct([c.ms for c in calls if c.kind == kind], 99) for kind in ("read", "write")}
    if calls:  # the first seconds hold the 32 handshakes and every thread's first searcher
        settled = min(c.at for c in calls) + WARM_UP
        later = {kind: pct([c.ms for c in calls if c.kind == kind and c.at >= settled], 99) for kind in p99s}
        print(f"after the first {WARM_UP:.0f} s: " + ", ".join(f"{k} p99 {v:.0f} ms" for k, v in later.items()))
    if calls:
        print(shape(calls, seconds, sessions, p99s))
    ok = not errors and not lost and all(v < P99_TARGET_MS for v in p99s.values())
    targets = ", ".join(f"{kind} p99 {v:.0f} ms" for kind, v in p99s.items())
    print(f"targets (0 errors, 0 lost, p99 < {P99_TARGET_MS:.0f} ms): {'met' if ok else 'MISSED'} ({targets})")
    return ok


def shape(calls: list[Call], seconds: float, sessions: int, p99s: dict[str, float]) -> str:
    """The p99s as multiples of the mean latency, and the throughput they would need to meet the
    target. The sessions call again as soon as an answer comes (no pause), so the mean latency is
    about sessions / (calls per second) (Little's law): a machine half as fast doubles every
    latency, while p99 / mean (how uneven the answers are) stays. Two runs on a shared machine
    compare better by these ratios than by their p99s."""
    mean = statistics.fmean(c.ms for c in calls)
    rate = len(calls) / seconds
    parts = []
    for kind, p99 in p99s.items():
        if p99 == p99:  # not NaN: the kind ran
            ratio = p99 / mean
            parts.append(f"{kind} {ratio:.2f} (needs {sessions * ratio * 1000 / P99_TARGET_MS:.0f} calls/s)")
    return (f"p99 / mean latency ({mean:.0f} ms; {sessions} sessions / {rate:.1f} calls/s = "
            f"{sessions * 1000 / rate:.0f} ms): " + ", ".join(parts))


class LoopLag:
    """How late the bench's own event loop runs: every session lives in it, so each call's latency
    here includes the time a reply waited for the loop (its other sessions' work, the machine's
    other processes). A task sleeps ``STEP`` seconds over and over and keeps how much later than
    asked it woke."""

    STEP = 0.005

    def __init__(self) -> None:
        self.late_ms: list[float] = []

    async def run(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            began = time.perf_counter()
            await anyio.sleep(self.STEP)
            self.late_ms.append(max(0.0, (time.perf_counter() - began - self.STEP) * 1000))

    def line(self) -> str:
        if not self.late_ms:
            return "the bench's own event loop: not measured (the run was too short)"
        return (f"the bench's own event loop (all sessions share it) woke late by p50 {pct(self.late_ms, 50):.1f} ms, "
                f"p99 {pct(self.late_ms, 99):.1f} ms over {len(self.late_ms)} sleeps of {self.STEP * 1000:.0f} ms: "
                "every call's latency here holds such waits")


class GcPauses:
    """The bench's own full collections while the sessions run. Every session lives in this one
    process, so a collection here holds back the replies of all of them and counts in their
    latency as if the server were slow: measured before the bench froze its start-up objects,
    50-150 ms each, growing with the records it keeps (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] < 2:
            return
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.pauses.append(1000 * (time.perf_counter() - self._began))

    def __enter__(self) -> GcPauses:
        # What the server does too: what exists now (the vault's refs, the SDK's modules) is never
        # walked again, and young collections come less often.
        gc.collect()
        gc.freeze()
        gc.set_threshold(CLIENT_GC_YOUNG, *gc.get_threshold()[1:])
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)

    def line(self) -> str:
        if not self.pauses:
            return "the bench's own full collections during the run: none"
        return (f"the bench's own full collections during the run: {len(self.pauses)}, longest "
                f"{max(self.pauses):.0f} ms (every session waits for them)")


@contextlib.contextmanager
def http_server(root: Path, work: Path, workers: int) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``vault-mem serve --http --workers N`` on ``root`` (index and ``server.log`` in ``work``), on a
    free port, without a shared token: the process and its URL; stopped on the way out."""
    port = free_port()
    log = open(work / "server.log", "wb")  # noqa: SIM115 (closed in finally)
    command = [sys.executable, "-m", "vault_mem", "serve", "--vault", str(root), "--index-dir",
               str(work / "index"), "--http", "--port", str(port), "--workers", str(workers)]
    env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_TOKEN"}
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    try:
        yield proc, f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


async def run(args: argparse.Namespace, work: Path) -> bool:
    root = work / "vault"
    root.mkdir()
    t0 = time.perf_counter()
    if args.vault is not None:  # a copy: the run writes notes into it
        shutil.copytree(args.vault, root, symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".vault-mem", ".git"))
        notes = 0  # whatever the server indexes of it
        print(f"copied {args.vault} to {root} in {time.perf_counter() - t0:.1f} s")
    else:
        generate(root, args.notes, args.seed)
        notes = args.notes
        print(f"generated {args.notes} notes in {time.perf_counter() - t0:.1f} s at {root}")
    with http_server(root, work, args.workers) as (proc, url):
        t0 = time.perf_counter()
        refs, domains = await wait_ready(url, proc, notes)
        print(f"server ready at {url} in {time.perf_counter() - t0:.1f} s "
              f"({len(refs)} refs, {len(domains)} domains)")
        shared = Shared(refs, domains)
        print(f"running {args.sessions} {args.mode} sessions for {args.seconds} s against {args.workers} "
              f"worker(s); load average before: {Path('/proc/loadavg').read_text().split()[:3]}")
        start = time.monotonic()
        cpu_server, cpu_client, ticks = cpu_seconds(proc.pid), cpu_seconds(), machine_ticks()
        per_worker = {child: cpu_seconds(child) for child in children(proc.pid)}
        deadline = start + args.seconds
        lag = LoopLag()
        with GcPauses() as pauses:
            async with anyio.create_task_group() as tg:
                tg.start_soon(lag.run, deadline)
                for session in range(args.sessions):
                    tg.start_soon(run_session, url, session, deadline, shared, args.seed, args.mode, args.writes)
        elapsed = time.monotonic() - start
        load = Path("/proc/loadavg").read_text().split()[:3]
        cpu_server, cpu_client = cpu_seconds(proc.pid) - cpu_server, cpu_seconds() - cpu_client
        ticks_after = machine_ticks()
        per_worker = {child: cpu_seconds(child) - cpu for child, cpu in per_worker.items()}
        lost = await verify(url, root, shared)
        if args.trace is not None:
            with args.trace.open("w", encoding="utf-8") as out:
                out.write("at,kind,tool,ms,status\n")
                for c in sorted(shared.calls, key=lambda c: c.at):
                    out.write(f"{c.at - start:.3f},{c.kind},{c.tool},{c.ms:.1f},{c.status}\n")
            print(f"every call written to {args.trace}")
        ok = report(shared, elapsed, lost, args.sessions)
        print(f"CPU during the run ({os.cpu_count()} cores): server {cpu_server:.1f} s "
              f"({cpu_server / elapsed:.0%} of one core), clients {cpu_client:.1f} s ({cpu_client / elapsed:.0%})")
        print(pauses.line())
        print(lag.line())
        if len(per_worker) > 1:  # the parent starts the workers in order: worker 1 first
            print("  by worker (each with its merge processes): " + ", ".join(
                f"worker {n}: {cpu:.1f} s ({cpu / elapsed:.0%})"
                for n, (_, cpu) in enumerate(sorted(per_worker.items()), 1)))
        if ticks is not None and ticks_after is not None and ticks_after[1] > ticks[1] and shared.calls:
            busy = (ticks_after[0] - ticks[0]) / (ticks_after[1] - ticks[1])
            per_call = busy * (os.cpu_count() or 1) * elapsed * 1000 / len(shared.calls)
            print(f"the machine was {busy:.0%} busy: {per_call:.1f} ms of CPU per call, everything counted "
                  "(server, its merges, clients, anything else running)")
        print(f"load average after the run: {' '.join(load)} (a shared machine: other work counts in it)")
        if args.workers > 1:
            print("answers by worker during the run: "
                  + ", ".join((f"worker {int(k) + 1}: {v}" if k.isdigit() else f"{k} to their session's worker: {v}")
                              for k, v in sorted(shared.by_worker.items())))
        if proc.poll() is not None:
            print(f"the server died during the run (status {proc.returncode}); see {work / 'server.log'}")
            ok = False
        return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--vault", type=Path, default=None,
                        help="run on a copy of this vault instead of --notes generated ones (it is not touched)")
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="serve --workers N (default 1)")
    parser.add_argument("--mode", choices=["legacy", "2026-07-28"], default="legacy",
                        help="the clients' protocol: legacy sessions (default) or stateless 2026-07-28 requests")
    parser.add_argument("--writes", type=float, default=0.2,
                        help="the share of calls that write (default 0.2; 0 for reads only, 1 for writes only)")
    parser.add_argument("--keep", action="store_true", help="keep the generated vault and the server log")
    parser.add_argument("--trace", type=Path, default=None,
                        help="write every call (seconds since the start, kind, tool, ms, status) to this CSV file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vault-mem-load-"))
    try:
        ok = anyio.run(run, args, work)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
