"""Answers on the repository's own vaults: record the answers of a fixed list of read-tool
calls, or compare them with an earlier recording, to show that a change leaves every answer
byte-identical. Beside ``answers_check.py`` (seeded calls on a vault you name, e.g. the 13k
corpus), this one needs no vault: it covers the relevance set's questions and the conformance
corpus, and can compare two checkouts (record in one, ``check`` in the other).

    python bench/answers_vaults.py record before.json          # on the code before the change
    python bench/answers_vaults.py record after.json           # on the code after it
    python bench/answers_vaults.py compare before.json after.json
    python bench/answers_vaults.py check before.json           # record to memory and compare

The vaults: ``sample_vault``, ``tests/relevance/chat_vault``, the conformance corpus
(``tests/corpus``, every note read) and a generated vault (``bench/gen_vault.py``, 2,000 notes,
seed 1; ``--notes`` changes it). Each is copied to a
temporary folder with every file's mtime set from its sorted position, so that dates taken
from mtimes (and the answers) do not depend on when the checkout was made. The calls are
derived from each vault's own tags, types, folders and refs in a fixed order, plus every
question of ``tests/relevance/questions.yaml``; each goes through the server's call path
(``mcp_server.app.call``) and is recorded as its JSON text.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from gen_vault import generate

from vault_mem.index.build import build
from vault_mem.index.store import VaultIndex
from vault_mem.mcp_server.app import call
from vault_mem.mcp_server.tools import TOOLS_BY_NAME
from vault_mem.served.context import Vault

Call = tuple[str, dict[str, Any]]
BASE_MTIME = 1_735_689_600  # 2025-01-01T00:00:00Z; file i gets BASE + i * 3 h 7 min


def pin_mtimes(root: Path) -> None:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for i, path in enumerate(files):
        stamp = BASE_MTIME + i * 11_220
        os.utime(path, (stamp, stamp))


def prepare(tmp: Path, notes: int) -> dict[str, Path]:
    vaults = {"sample_vault": REPO / "sample_vault", "chat_vault": REPO / "tests" / "relevance" / "chat_vault",
              "corpus": REPO / "tests" / "corpus"}
    out: dict[str, Path] = {}
    for name, src in vaults.items():
        shutil.copytree(src, tmp / name)
        out[name] = tmp / name
    generate(tmp / "generated", notes)
    out["generated"] = tmp / "generated"
    for root in out.values():
        pin_mtimes(root)
    return out


def spread(items: list[Any], n: int) -> list[Any]:
    """``n`` items spread evenly over ``items`` (all of them when there are fewer)."""
    if len(items) <= n:
        return items
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def questions(vault: str) -> list[str]:
    entries = yaml.safe_load((REPO / "tests" / "relevance" / "questions.yaml").read_text(encoding="utf-8"))
    return [e["question"] for e in entries if e["vault"] == vault]


def plan(name: str, records: dict[str, dict[str, Any]]) -> list[Call]:
    """The fixed calls for one vault, derived from its records in a deterministic order."""
    recs = [records[p] for p in sorted(records)]
    tags = [t for t, _ in sorted(Counter(t for r in recs for t in r["tags"]).items(), key=lambda kv: (-kv[1], kv[0]))]
    types = sorted({r["type"] for r in recs})
    folders = sorted({r["path"].rpartition("/")[0] for r in recs})
    words = [w for r in spread(recs, 6) for w in r["title"].split()[:2]]
    refs = [r["uid"] for r in spread(recs, 80)] + [r["path"] for r in spread(recs, 10)]
    years = sorted({r["created"][:4] for r in recs if r.get("created")})
    months = sorted({r["created"][:7] for r in recs if r.get("created")})
    some_tags = tags[:4]
    calls: list[Call] = []
    # memory_search
    calls.append(("memory_search", {}))
    calls.append(("memory_search", {"limit": 50}))
    calls += [("memory_search", {"query": q}) for q in questions(name)]
    calls += [("memory_search", {"query": w}) for w in words]
    calls += [("memory_search", {"query": " ".join(words[:3])}), ("memory_search", {"query": "zzqx-nothing"})]
    calls += [("memory_search", {"tag": t}) for t in some_tags]
    calls += [("memory_search", {"kind": k}) for k in types[:4]]
    calls += [("memory_search", {"query": w, "tag": t, "limit": 5}) for w, t in zip(words[:3], some_tags, strict=False)]
    calls += [("memory_search", {"since": f"{y}-03-01T00:00:00Z"}) for y in years[:2]]
    first = words[0] if words else "x"
    calls += [("memory_search", {"path": "src/"}), ("memory_search", {"query": first, "kind": "note"})]
    calls += [("memory_search", {"limit": 60}), ("memory_search", {"query": "!!! ??"}),
              ("memory_search", {"kind": "no-such-kind"}), ("memory_search", {"query": first, "limit": 0}),
              ("memory_search", {"query": f"the {first} of it", "since": "2025-01-01"})]
    # memory_list
    calls.append(("memory_list", {}))
    calls += [("memory_list", {"limit": 0}), ("memory_list", {"query": "!!"}), ("memory_list", {"query": "a-b"}),
              ("memory_list", {"metadata_filters": {"agent": None}, "limit": 5}),
              ("memory_list", {"metadata_filters": {"importance": 0.5}, "sort_by_importance": True, "limit": 5}),
              ("memory_list", {"follow": "latest", "tags_any": some_tags[:1]}),
              ("memory_list", {"offset": 100000})]
    calls.append(("memory_list", {"limit": -1, "fields": ["id", "path", "updated"]}))
    calls += [("memory_list", {"limit": 5, "offset": o}) for o in (0, 5, 17)]
    calls += [("memory_list", {"query": w}) for w in words[:6]]
    calls += [("memory_list", {"query": w.lower()[1:4]}) for w in words[:4]]
    calls += [("memory_list", {"tags_any": some_tags[:2]}), ("memory_list", {"tags_all": some_tags[:2]}),
              ("memory_list", {"tags_none": some_tags[:1], "limit": 10})]
    calls += [("memory_list", {"metadata_filters": {"type": t}}) for t in types[:4]]
    calls += [("memory_list", {"metadata_filters": {"status": s}}) for s in ("active", "archived")]
    calls += [("memory_list", {"sort_by_importance": True}), ("memory_list", {"content_mode": "full", "limit": 3}),
              ("memory_list", {"preview_chars": 40, "limit": 8})]
    calls += [("memory_list", {"follow": f}) for f in ("active", "latest", "full_history", "all")]
    calls += [("memory_list", {"date_from": m, "date_to": m}) for m in spread(months, 4)]
    calls += [("memory_list", {"query": words[0] if words else "x", "tags_any": some_tags[:3], "limit": 10})]
    # mem_recall
    calls += [("mem_recall", {"since": y}) for y in years[:3]]
    calls += [("mem_recall", {"since": m, "until": m}) for m in spread(months, 4)]
    year = years[0] if years else "2025"
    calls += [("mem_recall", {"since": year, "output_format": "structured", "limit": 50})]
    calls += [("mem_recall", {"since": year, "tag_filter": ",".join(some_tags[:2])})]
    calls += [("mem_recall", {"since": year, "source_filter": f}) for f in spread(folders, 3) if f]
    # list_by_domain
    calls.append(("list_by_domain", {"domain": ""}))
    calls += [("list_by_domain", {"domain": f}) for f in spread(folders, 8)]
    calls += [("list_by_domain", {"domain": f.rpartition("/")[2]}) for f in spread(folders, 4) if f]
    calls += [("list_by_domain", {"domain": f, "subtree": False, "status": "all"}) for f in spread(folders, 3)]
    calls += [("list_by_domain", {"domain": "", "type": t, "limit": 5}) for t in types[:3]]
    # memory_read, list_domains
    calls += [("memory_read", {"ref": r}) for r in refs]
    calls += [("memory_read", {"ref": refs[0], "max_chars": 100, "offset": 50})] if refs else []
    calls.append(("list_domains", {}))
    return [(tool, {"agent": "check", **args} if tool == "memory_search" else args) for tool, args in calls]


def record(notes: int) -> dict[str, str]:
    """``{"vault #n tool args": answer JSON}`` for every planned call."""
    answers: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="vault-mem-answers-") as tmp:
        for name, root in prepare(Path(tmp), notes).items():
            index = VaultIndex(root, Path(tmp) / f"{name}-index")
            build(index, procs=1)
            vault = Vault(root, index)
            for n, (tool, args) in enumerate(plan(name, index.records())):
                answer = call(vault, TOOLS_BY_NAME[tool], dict(args))
                key = f"{name} #{n} {tool} {json.dumps(args, ensure_ascii=False, sort_keys=True)}"
                answers[key] = json.dumps(answer, ensure_ascii=False, default=str)
    return answers


def compare(before: dict[str, str], after: dict[str, str]) -> int:
    """Print each call whose answer differs (or is missing); return how many differ."""
    differ = 0
    for key in before.keys() | after.keys():
        if before.get(key) != after.get(key):
            differ += 1
            if differ <= 20:
                print(f"DIFFERS: {key}\n  before: {str(before.get(key))[:400]}\n  after:  {str(after.get(key))[:400]}")
    statuses = Counter(json.loads(a)["status"] for a in after.values())
    print(f"{len(after)} calls ({dict(statuses)}), {differ} differ")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description="record or compare the answers of fixed tool calls")
    parser.add_argument("action", choices=("record", "compare", "check"))
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--notes", type=int, default=2_000, help="notes in the generated vault")
    args = parser.parse_args()
    if args.action == "record":
        answers = record(args.notes)
        args.files[0].write_text(json.dumps(answers, ensure_ascii=False, indent=0), encoding="utf-8")
        print(f"{len(answers)} answers recorded in {args.files[0]}")
        return
    before = json.loads(args.files[0].read_text(encoding="utf-8"))
    after = record(args.notes) if args.action == "check" else json.loads(args.files[1].read_text(encoding="utf-8"))
    sys.exit(1 if compare(before, after) else 0)


if __name__ == "__main__":
    main()
