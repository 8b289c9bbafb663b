"""Saves made while a server starts: how long until ``memory_search`` finds each one.

    python bench/start_bench.py --vault /work/data/r107k    # an indexed vault (vault-mem index first)
    python bench/start_bench.py --vault DIR --saves 10 --spacing 0.2
    python bench/start_bench.py --vault DIR --from connected   # saves once the session is up
    python bench/start_bench.py --vault DIR --appends 10       # issue 54: appends after the first answer

A fresh ``vault-mem serve`` is spawned over stdio on a vault whose index is complete. As soon as
the server says it is checking the index against the files (its start-up reconcile), a thread
writes ``--saves`` new notes, ``--spacing`` seconds apart, each an editor's atomic save (temp
file renamed onto the note) holding a word of its own, spread over the vault's top-level
folders. Each is timed from its rename until ``memory_search`` finds its word (polled over the
session). The table says, for each save, whether it was made before the start-up check ended
(the server's ``index ready`` line), when the bench's own reader of the index saw it committed,
and how long it took to become visible; then the server's CPU seconds until the last one was
found (on Linux), which the shared machine's load does not inflate as it does the clock. The notes are
removed at the end (the running server drops them), so the vault is left as it was.

With ``--appends N`` it measures the other shape (issue 54): once the server has given its first
answer, a marker line is appended to one existing note at a time (a plain append, as a script or
an editor's "append" does, in the top-level folders in turn), and ``memory_search`` asks for it
every ``--poll`` seconds (20 ms) until it is found, the next append following at once; then the
client goes on asking until answers no longer carry ``checking``. The table gives each append's
time to visible, the ``checking`` field of the answer that found it and the calls made
meanwhile, then how far the start-up check got, second by second, and when it ended. Drawings
(``*.excalidraw.md``) are never picked: their bodies are not indexed (docs/vault-format.md), so
a marker appended to one is never found. The notes get their old bytes back at the end.

Prints the load average beside the numbers: the machine is shared, repeat runs and compare.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import string
import subprocess
import sys
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

AGENT = "start-bench"
TIMEOUT = 120.0
CHECKING = "checking it against the files"
READY = "index ready"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def server_cpu() -> float | None:
    """CPU seconds (user + system) the spawned server has used so far; None off Linux."""
    try:
        me = os.getpid()
        children = Path(f"/proc/{me}/task/{me}/children").read_text().split()
        total = 0.0
        for pid in children:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total if children else None
    except (OSError, ValueError, IndexError):
        return None


def wait_for_line(log: Path, text: str, timeout: float) -> float | None:
    """perf_counter() when ``text`` first shows in ``log`` (polled), None after ``timeout``."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if text in log.read_text(errors="replace"):
            return time.perf_counter()
        time.sleep(0.005)
    return None


def save_notes(vault: Path, folders: list[Path], words: list[str], spacing: float,
               saved: dict[str, tuple[Path, float]]) -> None:
    for i, word in enumerate(words):
        folder = folders[i % len(folders)]
        path = folder / f"startbench {word}.md"
        temp = folder / f".{path.name}.tmp"
        temp.write_text(f"# Start bench {i}\n\nSaved while the server starts: {word}\n", encoding="utf-8")
        os.replace(temp, path)
        saved[word] = (path, time.perf_counter())
        time.sleep(spacing)


def watch_commits(vault: Path, saved: dict[str, tuple[Path, float]], committed: dict[str, float],
                  saves: int) -> None:
    """This process's own reader of the index: when each saved note is first committed (the server's
    apply, without the latency of its calls)."""
    from vault_mem import settings
    from vault_mem.search.api import VaultIndex, install_whoosh_patches

    install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)
    index = VaultIndex(vault, config=settings.current())
    deadline = time.perf_counter() + TIMEOUT + 60
    while len(committed) < saves and time.perf_counter() < deadline:
        try:
            with index.searching() as searcher:
                for word, (path, _) in list(saved.items()):
                    shown = path.relative_to(vault).as_posix()
                    if word not in committed and searcher.document_number(path=shown) is not None:
                        committed[word] = time.perf_counter()
        except Exception:  # a table of contents being replaced: look again
            pass
        time.sleep(0.01)
    index.close()


async def run(vault: Path, saves: int, spacing: float, begin: str) -> None:
    errlog = Path(f"/tmp/start-bench-{os.getpid()}.log")
    errlog.write_text("")
    folders = sorted(p for p in vault.iterdir() if p.is_dir() and not p.name.startswith(".")) or [vault]
    words = ["startsave" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(10)) for _ in range(saves)]
    saved: dict[str, tuple[Path, float]] = {}
    found: dict[str, float] = {}
    committed: dict[str, float] = {}  # when the bench's own reader of the index first saw the note
    first_asked: dict[str, float] = {}  # when memory_search was first asked for the word
    at_once: dict[str, bool] = {}  # found by the first memory_search that asked for it
    print(f"start bench: {vault}; load average before: {load()}", file=sys.stderr)
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                   args=["-m", "vault_mem", "serve", "--yes", "--vault", str(vault)])
    async with AsyncExitStack() as stack:
        sink = stack.enter_context(errlog.open("a"))
        checking_box: list[float | None] = []
        ready_box: list[float | None] = []

        session_up = threading.Event()

        def save_when_checking() -> None:
            """From the server's 'checking' line on (while the session is still connecting), or
            from the moment the session is up (``--from connected``)."""
            checking_box.append(wait_for_line(errlog, CHECKING, 60.0))
            if checking_box[0] is not None and (begin == "checking" or session_up.wait(60.0)):
                save_notes(vault, folders, words, spacing, saved)

        def watch_ready() -> None:
            ready_box.append(wait_for_line(errlog, READY, TIMEOUT))

        spawn = time.perf_counter()
        saver = threading.Thread(target=save_when_checking, daemon=True)
        saver.start()
        threading.Thread(target=watch_ready, daemon=True).start()
        # From the spawn on, not once the session is up: a save made before it is committed before it too.
        threading.Thread(target=watch_commits, args=(vault, saved, committed, saves), daemon=True).start()
        client = await stack.enter_async_context(Client(stdio_client(params, errlog=sink), mode="legacy"))
        connected = time.perf_counter()
        session_up.set()
        while not checking_box:
            await anyio.sleep(0.01)
        checking = checking_box[0]
        if checking is None:
            raise SystemExit(f"the server never said {CHECKING!r} (is the index complete?); see {errlog}")

        while len(found) < saves:  # one call at a time: parallel polls would crowd the server's threads
            for word in [w for w in words if w in saved and w not in found]:
                asked = time.perf_counter()
                result = await client.call_tool("memory_search", {"agent": AGENT, "query": word})
                answer: Any = result.structured_content or {}
                first_asked.setdefault(word, asked)
                if answer.get("notes"):
                    found[word] = time.perf_counter()
                    at_once[word] = first_asked[word] == asked
            if saved and time.perf_counter() - min(t for _, t in saved.values()) > TIMEOUT + saves * spacing:
                break
            await anyio.sleep(0.005)
        cpu_at_last = server_cpu()  # the server's CPU from its spawn until every save was found
        saver.join()
        while not ready_box:  # the table says which saves the check was still running for
            await anyio.sleep(0.05)
        for path, _ in saved.values():
            path.unlink(missing_ok=True)
        deadline = time.perf_counter() + 30
        while time.perf_counter() < deadline:  # the server drops them before it is stopped
            result = await client.call_tool("memory_search", {"agent": AGENT, "query": words[-1]})
            if not (result.structured_content or {}).get("notes"):
                break
            await anyio.sleep(0.05)
    ready = ready_box[0] if ready_box else None
    print(f"spawn to 'checking': {checking - spawn:.2f} s; session connected at {connected - spawn:.2f} s; "
          "check ended at "
          + (f"{ready - spawn:.2f} s" if ready else "(not seen)") + " after the spawn")
    print(f"{'save':>4} | {'at (s after spawn)':>18} | {'during check':>12} | {'committed (ms)':>14} | "
          f"{'to visible (ms)':>15} | found by the first query for it")
    worst = worst_commit = 0.0
    for i, word in enumerate(words):
        _, at = saved[word]
        took = found.get(word, float("inf")) - at
        worst = max(worst, took)
        during = "yes" if ready is None or at < ready else "no"
        first = "yes" if at_once.get(word) else "no"
        landed = (committed.get(word, float("inf")) - at) * 1000
        worst_commit = max(worst_commit, landed)
        print(f"{i + 1:>4} | {at - spawn:>18.2f} | {during:>12} | {landed:>14.0f} | {took * 1000:>15.0f} | {first} "
              f"(asked {(first_asked.get(word, at) - at) * 1000:.0f} ms after the save)")
    print(f"worst: {worst * 1000:.0f} ms to visible, {worst_commit:.0f} ms to committed; load average after: {load()}")
    if cpu_at_last is not None:
        print(f"server CPU from its spawn until the last save was found: {cpu_at_last:.2f} s "
              f"(wall {max(found.values(), default=spawn) - spawn:.2f} s)")
    log = errlog.read_text(errors="replace")
    for line in log.splitlines():
        if "periodic check" in line or "Traceback" in line:
            print(f"server: {line}")


async def run_appends(vault: Path, appends: int, poll: float, workers: int) -> None:
    """Issue 54's shape: a client that keeps asking, and one append at a time after its first answer."""
    errlog = Path(f"/tmp/start-bench-{os.getpid()}.log")
    errlog.write_text("")
    folders = sorted(p for p in vault.iterdir() if p.is_dir() and not p.name.startswith(".")) or [vault]
    rng = secrets.SystemRandom()
    picked: list[Path] = []
    for i in range(appends):
        notes = sorted(p for p in folders[i % len(folders)].rglob("*.md")
                       if not p.name.lower().endswith(".excalidraw.md") and not any(
                           part.startswith(".") for part in p.relative_to(vault).parts))
        picked.append(rng.choice(notes))
    old = {path: path.read_bytes() for path in picked}
    words = ["appendmark" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(10)) for _ in picked]
    print(f"start bench (appends): {vault}; load average before: {load()}", file=sys.stderr)
    command = ["-m", "vault_mem", "serve", "--yes", "--vault", str(vault)]
    rows: list[tuple[float, float, Any, int]] = []  # (at, to visible, checking when found, calls)
    progress: list[tuple[float, Any]] = []  # (seconds after the first answer, its checking field)
    try:
        async with AsyncExitStack() as stack:
            sink = stack.enter_context(errlog.open("a"))
            spawn = time.perf_counter()
            if workers:  # serve --http --workers N: the first answer from whichever worker takes it
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", 0))
                    port = probe.getsockname()[1]
                env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_TOKEN"}
                server = subprocess.Popen([sys.executable, *command, "--http", "--port", str(port),
                                           "--workers", str(workers)],
                                          stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=env)
                stack.callback(server.wait, 30)
                stack.callback(server.terminate)
                url = f"http://127.0.0.1:{port}/mcp"
                while True:
                    try:
                        client = await stack.enter_async_context(Client(streamable_http_client(url), mode="legacy"))
                        break
                    except Exception:  # not listening yet
                        if server.poll() is not None or time.perf_counter() - spawn > TIMEOUT:
                            raise SystemExit(f"the server did not start; see {errlog}") from None
                        await anyio.sleep(0.05)
            else:
                params = StdioServerParameters(command=sys.executable, env=dict(os.environ), args=command)
                client = await stack.enter_async_context(Client(stdio_client(params, errlog=sink), mode="legacy"))
            first = await client.call_tool("memory_search", {"agent": AGENT, "query": "appendmarkfirst"})
            first_at = time.perf_counter()
            first_checking = (first.structured_content or {}).get("checking")
            for path, word in zip(picked, words, strict=True):
                with path.open("a", encoding="utf-8") as out:
                    out.write(f"\n\nAppended after the first answer: {word}\n")
                at = time.perf_counter()
                calls, seen, checking = 0, float("inf"), None
                while time.perf_counter() - at < TIMEOUT:
                    result = await client.call_tool("memory_search", {"agent": AGENT, "query": word})
                    calls += 1
                    answer: Any = result.structured_content or {}
                    checking = answer.get("checking")
                    if answer.get("notes"):
                        seen = time.perf_counter() - at
                        break
                    await anyio.sleep(poll)
                rows.append((at - first_at, seen, checking, calls))
                progress.append((time.perf_counter() - first_at, checking))
                if seen == float("inf"):
                    print(f"not found: {path.relative_to(vault)} ({word})", file=sys.stderr)
            while progress[-1][1] is not None and time.perf_counter() - first_at < TIMEOUT:  # the same client, on
                result = await client.call_tool("memory_search", {"agent": AGENT, "query": words[0]})
                progress.append((time.perf_counter() - first_at, (result.structured_content or {}).get("checking")))
                await anyio.sleep(poll)
    finally:
        for path, data in old.items():
            path.write_bytes(data)
    print(f"first answer {first_at - spawn:.2f} s after the spawn (checking: {first_checking})")
    print(f"{'append':>6} | {'at (s after 1st answer)':>23} | {'to visible (ms)':>15} | {'calls':>5} | "
          "checking when found")
    for i, (at, seen, checking, calls) in enumerate(rows):
        print(f"{i + 1:>6} | {at:>23.2f} | {seen * 1000:>15.0f} | {calls:>5} | {checking}")
    ended = next((at for at, checking in progress if checking is None), None)
    shown, step = [], 0.0
    for at, checking in progress:
        if at >= step and checking is not None:
            shown.append(f"{at:.1f} s: {checking['done']}")
            step = at + 1.0
    print("the start-up check (done, by seconds after the first answer, one client asking without pause): "
          + ", ".join(shown))
    print("the check ended " + (f"{ended:.2f} s after the first answer" if ended is not None else
                                f"not within {TIMEOUT:.0f} s of it"))
    times = sorted(seen for _, seen, _, _ in rows)
    print(f"worst: {times[-1] * 1000:.0f} ms; median {times[len(times) // 2] * 1000:.0f} ms; "
          f"over 2 s: {sum(t > 2 for t in times)} of {len(times)}; load average after: {load()}")
    for line in errlog.read_text(errors="replace").splitlines():
        if any(text in line for text in ("periodic check", "Traceback", "index ready", "failed", "Error")):
            print(f"server: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True, help="a vault whose index is complete")
    parser.add_argument("--saves", type=int, default=10)
    parser.add_argument("--spacing", type=float, default=0.2, help="seconds between two saves")
    parser.add_argument("--from", dest="begin", choices=("checking", "connected"), default="checking",
                        help="save from the server's 'checking' line (default), or once the session is up")
    parser.add_argument("--appends", type=int, default=0,
                        help="instead: append to N existing notes one at a time after the first answer")
    parser.add_argument("--poll", type=float, default=0.02, help="with --appends: seconds between two searches")
    parser.add_argument("--http-workers", type=int, default=0,
                        help="with --appends: serve --http --workers N instead of stdio")
    args = parser.parse_args()
    if args.appends:
        anyio.run(run_appends, args.vault.resolve(), args.appends, args.poll, args.http_workers)
    else:
        anyio.run(run, args.vault.resolve(), args.saves, args.spacing, args.begin)


if __name__ == "__main__":
    main()
