"""Byte-identical answers before and after a change: record a fixed list of calls, compare later.

    python bench/answers_check.py record  --vault DIR --index-dir IX answers.jsonl
    python bench/answers_check.py compare --vault DIR --index-dir IX answers.jsonl

The calls are drawn (seeded) from the vault itself: memory_search of random words of
random notes, of the vault's most widespread words and of word pairs, with limits, tag
and kind filters; memory_read of random notes (their backlinks included);
list_by_domain, memory_list, mem_recall and list_domains. Each goes through the server's
own call path (``server.app.call`` then ``server.answers.to_result``) and is kept as the
wire JSON of its tool result, one line per call. ``compare`` runs the same calls and
prints every call whose answer differs; exit status 1 if any does. Both run the calls
``--passes`` times (default 2) in one process and fail if a later pass, on warm caches,
answers differently (a shared cached value that some call modified). The index must be
the same (same files, same build) on both sides: build it once and reuse ``--index-dir``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rpc_bench import ISSUE_WORDS, common_words, ready_index, sample_words

from vault_mem.mcp_server.answers import to_result
from vault_mem.mcp_server.app import call
from vault_mem.mcp_server.tools import TOOLS_BY_NAME
from vault_mem.served.context import Vault


def plan(root: Path, records: list[dict[str, Any]], seed: int, count: int) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(seed)
    paths = sorted(str(r["path"]) for r in records)
    words = sample_words(root, paths, rng, count)
    common = list(dict.fromkeys(ISSUE_WORDS + common_words(root, paths)))
    tags = sorted({t for r in records for t in r.get("tags") or []})
    kinds = sorted({str(r.get("type", "note")) for r in records})
    folders = sorted({p.rpartition("/")[0] for p in paths if "/" in p})
    agent = {"agent": "check"}
    calls: list[tuple[str, dict[str, Any]]] = []
    calls += [("memory_search", {**agent, "query": w}) for w in words]
    calls += [("memory_search", {**agent, "query": w}) for w in common]
    calls += [("memory_search", {**agent, "query": w, "limit": 50}) for w in common[:4]]
    calls += [("memory_search", {**agent, "query": f"{a} {b}"}) for a, b in zip(words[::2], words[1::2], strict=False)]
    calls += [("memory_search", {**agent, "query": rng.choice(words), "tag": rng.choice(tags)})
              for _ in range(10) if tags]
    calls += [("memory_search", {**agent, "query": rng.choice(common), "kind": rng.choice(kinds)})
              for _ in range(5)]
    calls += [("memory_search", {**agent}), ("memory_search", {**agent, "limit": 50})]
    calls += [("memory_read", {"ref": rng.choice(paths)[:-3]}) for _ in range(count)]
    calls += [("list_by_domain", {"domain": rng.choice(folders)}) for _ in range(5) if folders]
    calls += [("memory_list", {"query": w}) for w in words[:5]]
    calls += [("mem_recall", {"since": "2020", "limit": 20}), ("list_domains", {})]
    return calls


def answers(vault: Vault, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    out = []
    for tool, args in calls:
        result = to_result(tool, call(vault, TOOLS_BY_NAME[tool], dict(args)))
        out.append(json.dumps({"tool": tool, "args": args,
                               "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)},
                              ensure_ascii=False, sort_keys=False, separators=(",", ":")))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("record", "compare"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=60, help="random searches and reads each")
    parser.add_argument("--passes", type=int, default=2, help="run the calls this many times; all must agree")
    args = parser.parse_args()
    root = args.vault.resolve()
    index = ready_index(root, args.index_dir.resolve())
    records = list(index.records().values())
    vault = Vault(root, index)
    calls = plan(root, records, args.seed, args.count)
    got = answers(vault, calls)
    for _ in range(args.passes - 1):  # warm caches must give the same answers (nothing mutated them)
        again = answers(vault, calls)
        if again != got:
            print(f"{sum(a != b for a, b in zip(got, again, strict=True))} answers changed on a later pass")
            sys.exit(1)
    index.close()
    if args.mode == "record":
        args.file.write_text("\n".join(got) + "\n", encoding="utf-8")
        print(f"recorded {len(got)} answers in {args.file}")
        return
    want = args.file.read_text(encoding="utf-8").splitlines()
    differ = [i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b]
    if len(want) != len(got):
        print(f"{len(want)} answers recorded, {len(got)} now")
    for i in differ[:10]:
        print(f"differs: {want[i][:300]}\n   now: {got[i][:300]}")
    print(f"{len(got) - len(differ)} of {len(got)} answers identical")
    sys.exit(1 if differ or len(want) != len(got) else 0)


if __name__ == "__main__":
    main()
