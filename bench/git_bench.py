"""Git vault benchmark (docs/git.md): memory_read with and without history, the dates-from-history
pass, and `vault-mem sync` for 1, 100 and 1,000 changed notes.

    python bench/git_bench.py --vault /path/to/vault [--commits 3000] [--keep DIR]

The vault is copied to a temp folder (never touched in place) and given a synthetic git
history with ``git fast-import``: its notes are added over ~300 commits spread over five
years, then ``--commits`` more commits edit 1-3 notes each (some rename one), so that history
has the shape of a vault kept in git for years. (The issue asks for obsidian-hub's own
history; without it, this is the stand-in: say so when quoting the numbers.)

Prints medians in milliseconds (seconds for the bigger steps) and the load average.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vault_mem import settings
from vault_mem.git.history import History, history_for, register, unregister
from vault_mem.git.repo import Repo
from vault_mem.git.sync import sync_vault
from vault_mem.reads.read import memory_read
from vault_mem.search.api import Snapshot, install_whoosh_patches
from vault_mem.search.build import sync
from vault_mem.search.store import VaultIndex
from vault_mem.served.context import Vault, View

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)

IDENTITY = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
            "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}
START = 1_560_000_000  # 2019-06-08
SPAN = 5 * 365 * 86400


def load() -> str:
    return open("/proc/loadavg").read().strip() if os.path.exists("/proc/loadavg") else "n/a"


def git(cwd: Path, *args: str, data: bytes | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, check=True,
                          env={**os.environ, **IDENTITY})
    return done.stdout.decode("utf-8", "replace")


def quote(path: str) -> bytes:
    escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return b'"' + escaped.encode("utf-8", "surrogateescape") + b'"'


def make_history(root: Path, edits: int, seed: int = 7) -> tuple[int, int]:
    """Give ``root`` a git history; returns (commits, notes)."""
    rng = random.Random(seed)
    git(root, "init", "-q", "-b", "main")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md") if ".git" not in p.parts)
    rng.shuffle(files)
    stream: list[bytes] = []
    mark = 0
    when = START
    adds = 300
    per = -(-len(files) // adds)
    commits = 0

    def commit(message: str, lines: list[bytes], stamp: int) -> None:
        nonlocal mark, commits
        mark += 1
        commits += 1
        msg = message.encode()
        stream.append(b"commit refs/heads/main\nmark :%d\n" % mark)
        stream.append(b"author Bench <bench@example.org> %d +0000\n" % stamp)
        stream.append(b"committer Bench <bench@example.org> %d +0000\n" % stamp)
        stream.append(b"data %d\n%s\n" % (len(msg), msg))
        if mark > 1:
            stream.append(b"from :%d\n" % (mark - 1))
        stream.extend(lines)
        stream.append(b"\n")

    step = SPAN // (adds + edits)
    for i in range(0, len(files), per):
        lines = []
        for rel in files[i:i + per]:
            data = (root / rel).read_bytes()
            lines.append(b"M 100644 inline " + quote(rel) + b"\ndata %d\n" % len(data) + data + b"\n")
        when += step
        commit(f"add notes {i}-{i + per}", lines, when)
    live = list(files)
    for n in range(edits):
        when += step
        lines = []
        if n % 20 == 19:  # a rename now and then
            old = live.pop(rng.randrange(len(live)))
            new = old[:-3] + " (renamed).md"
            os.replace(root / old, root / new)
            live.append(new)
            lines.append(b"R " + quote(old) + b" " + quote(new) + b"\n")
            commit(f"rename {old}", lines, when)
            continue
        for rel in rng.sample(live, rng.randint(1, 3)):
            with open(root / rel, "ab") as handle:
                handle.write(f"\nedit {n}\n".encode())
            data = (root / rel).read_bytes()
            lines.append(b"M 100644 inline " + quote(rel) + b"\ndata %d\n" % len(data) + data + b"\n")
        commit(f"edit {n}", lines, when)
    git(root, "fast-import", "--quiet", data=b"".join(stream))
    git(root, "reset", "-q")  # the index to HEAD; the work tree already holds the final files
    return commits, len(live)


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def bench_reads(vault: Vault, sample: list[str], history: History) -> None:
    def run(args: dict[str, object]) -> float:
        times = []
        with vault.index.searching() as searcher:
            for ref in sample:
                t0 = time.perf_counter()
                answer = memory_read(View(vault, Snapshot(searcher, config=vault.index.config)), {"ref": ref, **args})
                times.append(time.perf_counter() - t0)
                assert answer["status"] == "ok", answer
        return median_ms(times)

    rounds: dict[str, list[float]] = {"no git (history absent)": [], "history=0": [], "history=5 (default)": [],
                                      "history=50": []}
    for _ in range(5):
        unregister(vault.root)
        rounds["no git (history absent)"].append(run({}))
        register(vault.root, history)
        rounds["history=0"].append(run({"history": 0}))
        rounds["history=5 (default)"].append(run({}))
        rounds["history=50"].append(run({"history": 50}))
    base = statistics.median(rounds["no git (history absent)"])
    print(f"memory_read median over {len(sample)} notes, median of 5 rounds (load {load()}):")
    for label, values in rounds.items():
        value = statistics.median(values)
        extra = "" if label.startswith("no git") else f"  ({value - base:+.2f} ms)"
        print(f"  {label:<26} {value:7.2f} ms{extra}")


def bench_sync(root: Path, work: Path) -> None:
    remote = work / "remote.git"
    git(work, "clone", "-q", "--bare", str(root), str(remote))
    git(root, "remote", "add", "origin", str(remote))
    git(root, "fetch", "-q", "origin")
    git(root, "branch", "-q", "--set-upstream-to", "origin/main")
    other = work / "other"
    t0 = time.perf_counter()
    git(work, "clone", "-q", str(remote), str(other))
    print(f"clone of the remote: {time.perf_counter() - t0:.2f} s")
    notes = sorted(p for p in root.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(root).parts))
    print(f"sync (load {load()}):")
    for count in (1, 100, 1000):
        for i, path in enumerate(notes[:count]):
            with open(path, "ab") as handle:
                handle.write(f"\nsync bench {count} {i}\n".encode())
        t0 = time.perf_counter()
        pushed = sync_vault(root, host="bench", config=settings.current())
        push_s = time.perf_counter() - t0
        assert pushed.complete and pushed.committed == count, pushed.lines
        t0 = time.perf_counter()
        pulled = sync_vault(other, host="bench", config=settings.current())
        pull_s = time.perf_counter() - t0
        assert pulled.complete, pulled.lines
        print(f"  {count:5d} changed notes: commit+fetch+push {push_s:6.2f} s; the other clone's fetch+"
              f"fast-forward {pull_s:6.2f} s")
    # Both sides changed: 100 different notes each, and 10 notes changed on both (conflicted copies).
    for i, path in enumerate(notes[2000:2100] + notes[3000:3010]):
        with open(path, "ab") as handle:
            handle.write(f"\nfrom here {i}\n".encode())
    for i, path in enumerate(notes[2100:2200] + notes[3000:3010]):
        with open(other / path.relative_to(root), "ab") as handle:
            handle.write(f"\nfrom there {i}\n".encode())
    assert sync_vault(other, host="there", config=settings.current()).complete
    t0 = time.perf_counter()
    merged = sync_vault(root, host="here", config=settings.current())
    merge_s = time.perf_counter() - t0
    assert merged.complete and len(merged.conflicts) == 10, merged.lines
    print(f"  diverged (110 notes here, 110 there, 10 of them on both sides): commit+fetch+merge+push "
          f"{merge_s:.2f} s, {len(merged.conflicts)} conflicted copies")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vault", type=Path, required=True, help="a vault to copy (never modified)")
    parser.add_argument("--commits", type=int, default=3000, help="edit commits after the adds")
    parser.add_argument("--sample", type=int, default=300, help="notes read per round")
    parser.add_argument("--keep", type=Path, default=None, help="work here and keep it (default: a temp folder)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="vault-mem-git-bench-"))
    root = work / "vault"
    try:
        print(f"load at start: {load()}")
        t0 = time.perf_counter()
        shutil.copytree(args.vault, root, ignore=shutil.ignore_patterns(".git", ".vault-mem"))
        commits, notes = make_history(root, args.commits)
        print(f"synthetic history: {commits} commits over {notes} notes, made in {time.perf_counter() - t0:.1f} s")

        repo = Repo.find(root, config=settings.current())
        assert repo is not None
        passes = []
        for _ in range(3):
            history = History(repo)
            t0 = time.perf_counter()
            history.load()
            passes.append(time.perf_counter() - t0)
        print(f"dates-from-history pass (git log + ls-tree + parse, no cache): median {statistics.median(passes):.2f} s"
              f" of {', '.join(f'{p:.2f}' for p in passes)} (load {load()})")
        cached = History(repo, work / "history-cache.json")
        cached.load()
        t0 = time.perf_counter()
        History(repo, work / "history-cache.json").load()
        print(f"start-up with the saved map (same HEAD): {(time.perf_counter() - t0) * 1000:.0f} ms")
        (root / "bench-new.md").write_text("# New\n\nfresh\n", encoding="utf-8")
        git(root, "add", "bench-new.md")
        git(root, "commit", "-q", "-m", "one more")
        t0 = time.perf_counter()
        changed = cached.refresh()
        print(f"incremental catch-up after one commit: {(time.perf_counter() - t0) * 1000:.0f} ms "
              f"({len(changed)} notes changed)")

        index = VaultIndex(root, work / "index", config=settings.current())
        t0 = time.perf_counter()
        sync(index, procs=2)
        print(f"index build with dates from history: {time.perf_counter() - t0:.1f} s (load {load()})")
        history_map = history_for(root)
        assert history_map is not None
        vault = Vault(root, index)
        rng = random.Random(3)
        files = sorted(history_map._state.lives)
        sample = [f[:-3] for f in rng.sample(files, min(args.sample, len(files)))]
        bench_reads(vault, sample, history_map)
        bench_sync(root, work)
        print(f"load at end: {load()}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
