"""Byte-identical answers before and after a change: record a fixed list of tool calls, compare later.

    python bench/answers_check.py record  answers.jsonl             # the repository's four vaults
    python bench/answers_check.py compare answers.jsonl             # same calls now; exit 1 if any differs
    python bench/answers_check.py record  --vault DIR [--index-dir IX] answers.jsonl   # a vault you name
    python bench/answers_check.py record  --digests tests/answers.sha256.jsonl   # what CI compares (.ci/run)

Without ``--vault`` it needs no vault of yours: ``sample_vault``, ``tests/relevance/chat_vault``,
the conformance corpus (``tests/corpus``) and a generated vault (``gen_vault.py``, ``--notes``
notes, seed 1) are copied to a temporary folder, every file's mtime set from its sorted position
(so that dates taken from mtimes, and so the answers, do not depend on when or where the
checkout was made: record in one checkout, compare in another), and indexed afresh, so a change
of what the index stores shows too. Their calls are fixed and derived from each vault's records
in a deterministic order: every note through ``memory_read`` (and by uid); ``memory_list`` with
every filter kind (each core key of the field table and metadata keys, with a value seen, null
and a miss; tags with and without ``#`` and a trailing ``/``; dates, lineage modes, fields,
content modes, paging and odd queries); ``memory_search`` (no query, words, tag, kind, path,
since, limits, and the relevance set's questions of ``tests/relevance/questions.yaml``);
``mem_recall``; ``list_by_domain`` of every folder; ``list_domains``.

With ``--vault`` (e.g. the 13k corpus) the calls are drawn from that vault, seeded
(``--seed``, ``--count``): memory_search of random words of random notes, of the vault's most
widespread words and of word pairs, with limits, tag and kind filters; memory_read of random
notes; list_by_domain, memory_list, mem_recall and list_domains. Its mtimes are the vault's own:
compare on the same files and the same index (build it once, reuse ``--index-dir``).

Each call goes through the server's own call path (``mcp_server.app.call``, then
``to_result``) and is kept as the wire JSON of its tool result, one line per call. Both modes
run the calls ``--passes`` times (default 2) in one process and fail if a later pass, on warm
caches, answers differently (a shared cached value that some call modified). ``compare`` prints
every call whose answer differs (the first 20) and exits 1 if any does.

``--digests`` records each call with the SHA-256 of its answer line instead of the answer (the
four vaults' 4,000 answers take 30 MB; their digests, under 1 MB): ``compare`` on such a
recording names each call whose answer changed, without the difference; record the whole answers
on the checkout before the change to see it. CI compares ``tests/answers.sha256.jsonl``; a change
meant to alter answers records it again with the change.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from gen_vault import generate
from rpc_bench import ISSUE_WORDS, common_words, ready_index, sample_words

from vault_mem import settings
from vault_mem.mcp_server.answers import to_result
from vault_mem.mcp_server.app import call
from vault_mem.mcp_server.tools import TOOLS_BY_NAME
from vault_mem.search.api import install_whoosh_patches
from vault_mem.search.build import build
from vault_mem.search.store import VaultIndex
from vault_mem.served.context import Vault

install_whoosh_patches(settings.current())  # the speed patches, as the command line's (VAULT_MEM_WHOOSH_PATCHES)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
Call = tuple[str, dict[str, Any]]
SOURCES = {"sample_vault": REPO / "sample_vault", "chat_vault": REPO / "tests" / "relevance" / "chat_vault",
           "corpus": REPO / "tests" / "corpus"}
BASE_MTIME = 1_735_689_600  # 2025-01-01T00:00:00Z; file i gets BASE + i * 3 h 7 min
AGENT = {"agent": "check"}
# memory_list metadata_filters keys, each tried with a value seen in the vault, with null and with a miss
FILTER_KEYS = ("id", "uid", "title", "alias", "aliases", "type", "kind", "tags", "status", "state",
               "importance", "namespace", "scope", "project", "paths", "agent", "path", "created", "updated",
               "supersedes", "superseded_by", "priority", "source", "author")


# --- the repository's vaults -------------------------------------------------------------------

def pin_mtimes(root: Path) -> None:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for i, path in enumerate(files):
        stamp = BASE_MTIME + i * 11_220
        os.utime(path, (stamp, stamp))


def builtin_vaults(tmp: Path, notes: int) -> dict[str, Path]:
    """The four vaults copied (or generated) under ``tmp``, their mtimes pinned."""
    out: dict[str, Path] = {}
    for name, src in SOURCES.items():
        shutil.copytree(src, tmp / name)
        out[name] = tmp / name
    generate(tmp / "generated", notes, seed=1)
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
    """The relevance set's questions asked of ``vault`` (tests/relevance/questions.yaml)."""
    entries = yaml.safe_load((REPO / "tests" / "relevance" / "questions.yaml").read_text(encoding="utf-8"))
    return [e["question"] for e in entries if e["vault"] == vault]


def builtin_plan(name: str, records: dict[str, dict[str, Any]]) -> list[Call]:
    """Every fixed call for one of the four vaults, each once, in a deterministic order."""
    unique: dict[str, Call] = {}
    for tool, args in coverage_calls(name, records) + filter_calls(name, records):
        unique.setdefault(f"{tool} {json.dumps(args, sort_keys=True)}", (tool, args))
    return list(unique.values())


def coverage_calls(name: str, records: dict[str, dict[str, Any]]) -> list[Call]:
    """Each tool's parameters one at a time and in pairs, edge values included."""
    recs = [records[p] for p in sorted(records)]
    tags = [t for t, _ in sorted(Counter(t for r in recs for t in r["tags"]).items(), key=lambda kv: (-kv[1], kv[0]))]
    types = sorted({r["type"] for r in recs})
    folders = sorted({r["path"].rpartition("/")[0] for r in recs})
    words = [w for r in spread(recs, 6) for w in r["title"].split()[:2]]
    refs = [r["uid"] for r in spread(recs, 80)] + [r["path"] for r in spread(recs, 10)]
    years = sorted({r["created"][:4] for r in recs if r.get("created")})
    months = sorted({r["created"][:7] for r in recs if r.get("created")})
    some_tags = tags[:4]
    first = words[0] if words else "x"
    year = years[0] if years else "2025"
    calls: list[Call] = [("memory_search", {}), ("memory_search", {"limit": 50})]
    calls += [("memory_search", {"query": q}) for q in questions(name)]
    calls += [("memory_search", {"query": w}) for w in words]
    calls += [("memory_search", {"query": " ".join(words[:3])}), ("memory_search", {"query": "zzqx-nothing"})]
    calls += [("memory_search", {"tag": t}) for t in some_tags]
    calls += [("memory_search", {"kind": k}) for k in types[:4]]
    calls += [("memory_search", {"query": w, "tag": t, "limit": 5}) for w, t in zip(words[:3], some_tags, strict=False)]
    calls += [("memory_search", {"since": f"{y}-03-01T00:00:00Z"}) for y in years[:2]]
    calls += [("memory_search", {"path": "src/"}), ("memory_search", {"query": first, "kind": "note"})]
    calls += [("memory_search", {"limit": 60}), ("memory_search", {"query": "!!! ??"}),
              ("memory_search", {"kind": "no-such-kind"}), ("memory_search", {"query": first, "limit": 0}),
              ("memory_search", {"query": f"the {first} of it", "since": "2025-01-01"})]
    calls += [("memory_list", {}), ("memory_list", {"limit": 0}), ("memory_list", {"query": "!!"}),
              ("memory_list", {"query": "a-b"}), ("memory_list", {"metadata_filters": {"agent": None}, "limit": 5}),
              ("memory_list", {"metadata_filters": {"importance": 0.5}, "sort_by_importance": True, "limit": 5}),
              ("memory_list", {"follow": "latest", "tags_any": some_tags[:1]}), ("memory_list", {"offset": 100000}),
              ("memory_list", {"limit": -1, "fields": ["id", "path", "updated"]})]
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
    calls += [("memory_list", {"query": first, "tags_any": some_tags[:3], "limit": 10})]
    calls += [("mem_recall", {"since": y}) for y in years[:3]]
    calls += [("mem_recall", {"since": m, "until": m}) for m in spread(months, 4)]
    calls += [("mem_recall", {"since": year, "output_format": "structured", "limit": 50}),
              ("mem_recall", {"since": year, "tag_filter": ",".join(some_tags[:2])})]
    calls += [("mem_recall", {"since": year, "source_filter": f}) for f in spread(folders, 3) if f]
    calls.append(("list_by_domain", {"domain": ""}))
    calls += [("list_by_domain", {"domain": f}) for f in spread(folders, 8)]
    calls += [("list_by_domain", {"domain": f.rpartition("/")[2]}) for f in spread(folders, 4) if f]
    calls += [("list_by_domain", {"domain": f, "subtree": False, "status": "all"}) for f in spread(folders, 3)]
    calls += [("list_by_domain", {"domain": "", "type": t, "limit": 5}) for t in types[:3]]
    calls += [("memory_read", {"ref": r}) for r in refs]
    calls += [("memory_read", {"ref": refs[0], "max_chars": 100, "offset": 50})] if refs else []
    calls.append(("list_domains", {}))
    return [(tool, {**AGENT, **args} if tool == "memory_search" else args) for tool, args in calls]


def filter_calls(name: str, records: dict[str, dict[str, Any]]) -> list[Call]:
    """Every note read; memory_list with every filter key of the field table; every folder listed."""
    recs = [records[p] for p in sorted(records)]
    paths = [str(r["path"]) for r in recs]
    tags = sorted({t for r in recs for t in r.get("tags") or []})
    kinds = sorted({str(r.get("type", "note")) for r in recs})
    folders = sorted({p.rpartition("/")[0] for p in paths})
    words = sorted({w.lower() for r in recs for w in str(r.get("title", "")).split() if w.isalpha()})[:12]
    calls: list[Call] = [("memory_read", {"ref": p}) for p in paths]
    calls += [("memory_read", {"ref": p, "max_chars": 50, "offset": 10}) for p in paths[:5]]
    listing: list[dict[str, Any]] = [
        {}, {"limit": -1}, {"limit": -1, "follow": "all"}, {"limit": -1, "follow": "latest"},
        {"limit": -1, "follow": "full_history"}, {"sort_by_importance": True, "limit": 50},
        {"content_mode": "full", "limit": 10}, {"preview_chars": 7, "limit": 10},
        {"fields": ["title", "tags", "supersedes", "superseded_by", "metadata"], "limit": -1},
        {"date_from": "2020-01-01", "date_to": "2024-12-31", "limit": -1}, {"offset": 5, "limit": 5},
        *({"query": w} for w in words),
        *({"tags_any": [t]} for t in tags[:15]), *({"tags_any": [f"#{t}/"]} for t in tags[:5]),
        *({"tags_all": [t]} for t in tags[:5]), *({"tags_none": [t]} for t in tags[:5]),
        {"tags_any": ["no-such-tag"]},
    ]
    for key in FILTER_KEYS:
        values = [v for r in recs for v in _values(r, key)]
        for value in list(dict.fromkeys(json.dumps(v) for v in values))[:3]:
            listing.append({"metadata_filters": {key: json.loads(value)}, "limit": -1})
        listing += [{"metadata_filters": {key: None}, "limit": -1},
                    {"metadata_filters": {key: "no-such-value"}, "limit": -1}]
    calls += [("memory_list", args) for args in listing]
    searches: list[dict[str, Any]] = [{}, {"limit": 50}, *({"query": w} for w in words),
                                      *({"query": words[0], "tag": t} for t in tags[:5] if words),
                                      *({"tag": t} for t in tags[:10]), *({"tag": f"{t}/"} for t in tags[:3]),
                                      *({"kind": k} for k in kinds), *({"path": f} for f in folders[:5] if f)]
    calls += [("memory_search", {**AGENT, **args}) for args in searches]
    calls += [("memory_search", {**AGENT, "query": q, "limit": 10}) for q in questions(name)]
    recalls: list[dict[str, Any]] = [{"since": "2000"}, {"since": "2000", "limit": 200},
                                     *({"since": "2000", "tag_filter": t} for t in tags[:5]),
                                     {"since": "2000", "output_format": "structured", "limit": 30}]
    calls += [("mem_recall", args) for args in recalls]
    calls += [("list_by_domain", {"domain": f, "limit": 100}) for f in folders]
    calls += [("list_by_domain", {"domain": "", "status": "all", "limit": 100}), ("list_domains", {})]
    return calls


def _values(record: dict[str, Any], key: str) -> list[Any]:
    field = {"id": "uid", "alias": "aliases", "kind": "type"}.get(key, key)
    value = record.get(field, (record.get("metadata") or {}).get(key))
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


# --- a vault you name --------------------------------------------------------------------------

def seeded_plan(root: Path, records: list[dict[str, Any]], seed: int, count: int) -> list[Call]:
    rng = random.Random(seed)
    paths = sorted(str(r["path"]) for r in records)
    words = sample_words(root, paths, rng, count)
    common = list(dict.fromkeys(ISSUE_WORDS + common_words(root, paths)))
    tags = sorted({t for r in records for t in r.get("tags") or []})
    kinds = sorted({str(r.get("type", "note")) for r in records})
    folders = sorted({p.rpartition("/")[0] for p in paths if "/" in p})
    calls: list[Call] = []
    calls += [("memory_search", {**AGENT, "query": w}) for w in words]
    calls += [("memory_search", {**AGENT, "query": w}) for w in common]
    calls += [("memory_search", {**AGENT, "query": w, "limit": 50}) for w in common[:4]]
    calls += [("memory_search", {**AGENT, "query": f"{a} {b}"}) for a, b in zip(words[::2], words[1::2], strict=False)]
    calls += [("memory_search", {**AGENT, "query": rng.choice(words), "tag": rng.choice(tags)})
              for _ in range(10) if tags]
    calls += [("memory_search", {**AGENT, "query": rng.choice(common), "kind": rng.choice(kinds)})
              for _ in range(5)]
    calls += [("memory_search", {**AGENT}), ("memory_search", {**AGENT, "limit": 50})]
    calls += [("memory_read", {"ref": rng.choice(paths)[:-3]}) for _ in range(count)]
    calls += [("list_by_domain", {"domain": rng.choice(folders)}) for _ in range(5) if folders]
    calls += [("memory_list", {"query": w}) for w in words[:5]]
    calls += [("mem_recall", {"since": "2020", "limit": 20}), ("list_domains", {})]
    return calls


# --- running and comparing ---------------------------------------------------------------------

def answers(vault: Vault, name: str, calls: list[Call]) -> list[str]:
    out = []
    for tool, args in calls:
        result = to_result(tool, call(vault, TOOLS_BY_NAME[tool], dict(args)), vault.index.config.max_answer_chars)
        out.append(json.dumps({"vault": name, "tool": tool, "args": args,
                               "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)},
                              ensure_ascii=False, separators=(",", ":")))
    return out


def checked(vault: Vault, name: str, calls: list[Call], passes: int) -> list[str]:
    """The answers of ``calls``; exit 1 if a later pass (warm caches) answers differently."""
    got = answers(vault, name, calls)
    for _ in range(passes - 1):
        again = answers(vault, name, calls)
        if again != got:
            print(f"{name}: {sum(a != b for a, b in zip(got, again, strict=True))} answers changed on a later pass")
            sys.exit(1)
    return got


@contextmanager
def scratch(index_dir: Path | None) -> Iterator[Path]:
    """``index_dir`` when given, else a temporary folder removed afterwards."""
    if index_dir is not None:
        yield index_dir.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="vault-mem-answers-") as tmp:
        yield Path(tmp)


def record(args: argparse.Namespace) -> list[str]:
    if args.vault is not None:
        root = args.vault.resolve()
        with scratch(args.index_dir) as index_dir:
            index = ready_index(root, index_dir)
            try:
                calls = seeded_plan(root, list(index.records().values()), args.seed, args.count)
                return checked(Vault(root, index), root.name, calls, args.passes)
            finally:
                index.close()
    got: list[str] = []
    with tempfile.TemporaryDirectory(prefix="vault-mem-answers-") as tmp:
        for name, root in builtin_vaults(Path(tmp), args.notes).items():
            index = VaultIndex(root, Path(tmp) / f"{name}-index", config=settings.current())
            try:
                build(index, procs=1)
                got += checked(Vault(root, index), name, builtin_plan(name, index.records()), args.passes)
            finally:
                index.close()
    return got


def digest(line: str) -> str:
    """A recorded answer line as a digest line: the call, and the SHA-256 of the whole line."""
    answer = json.loads(line)
    return json.dumps({"vault": answer["vault"], "tool": answer["tool"], "args": answer["args"],
                       "sha256": hashlib.sha256(line.encode("utf-8")).hexdigest()},
                      ensure_ascii=False, separators=(",", ":"))


def is_digests(lines: list[str]) -> bool:
    return bool(lines) and "sha256" in json.loads(lines[0])


def compare(want: list[str], got: list[str]) -> int:
    """Print each call whose answer differs (the first 20); return how many differ or are missing."""
    if len(want) != len(got):
        print(f"{len(want)} answers recorded, {len(got)} now")
    differ = [i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b]
    for i in differ[:20]:
        at = next((k for k, (a, b) in enumerate(zip(want[i], got[i], strict=False)) if a != b),
                  min(len(want[i]), len(got[i])))
        cut = slice(max(0, at - 150), at + 150)
        print(f"differs: {want[i][:160]}\n  at {at}: {want[i][cut]}\n     now: {got[i][cut]}")
    print(f"{len(got) - len(differ)} of {len(got)} answers identical")
    return len(differ) + abs(len(want) - len(got))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("mode", choices=("record", "compare"))
    parser.add_argument("file", type=Path, help="the recording (JSON lines)")
    parser.add_argument("--vault", type=Path, help="a vault of yours, with seeded calls (default: the four built-in)")
    parser.add_argument("--index-dir", type=Path, help="with --vault: its index, built when missing, kept")
    parser.add_argument("--seed", type=int, default=1, help="with --vault: the calls' seed")
    parser.add_argument("--count", type=int, default=60, help="with --vault: random searches and reads each")
    parser.add_argument("--notes", type=int, default=2_000, help="notes in the generated built-in vault")
    parser.add_argument("--passes", type=int, default=2, help="run the calls this many times; all must agree")
    parser.add_argument("--digests", action="store_true", help="record: each answer's SHA-256, not the answer")
    args = parser.parse_args()
    if args.index_dir is not None and args.vault is None:
        parser.error("--index-dir goes with --vault (the built-in vaults are indexed afresh every run)")
    if args.passes < 1:
        parser.error(f"--passes must be 1 or more, not {args.passes}")
    got = record(args)
    if args.mode == "record":
        kept = [digest(line) for line in got] if args.digests else got
        args.file.write_text("\n".join(kept) + "\n", encoding="utf-8")
        print(f"recorded {len(got)} answers in {args.file}{' as digests' if args.digests else ''}")
        return
    want = args.file.read_text(encoding="utf-8").splitlines()
    if is_digests(want):
        got = [digest(line) for line in got]
    sys.exit(1 if compare(want, got) else 0)


if __name__ == "__main__":
    main()
