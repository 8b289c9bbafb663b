"""Byte-identical answers before and after a change: record a fixed list of tool calls, compare later.

    python bench/same_answers.py record  --work DIR answers.jsonl
    python bench/same_answers.py compare --work DIR answers.jsonl

Four vaults: ``sample_vault``, ``tests/relevance/chat_vault``, the conformance corpus
(``tests/corpus``) and a generated vault (``gen_vault.py``, 400 notes, seed 1). Each is
copied into ``--work`` once (the first run; later runs reuse the copies, so that mtimes, and
so every fallback date, stay the same) and indexed afresh into a temporary folder on every
run, so a change of what the index stores shows too. The calls are fixed per vault: every
note through ``memory_read``; ``memory_list`` with every filter kind (each core key the
field table names, a metadata key, tags with and without ``#`` and a trailing ``/``, dates,
lineage modes, fields, full content); ``memory_search`` (no query, words, tag, kind, path);
the relevance set's questions (``tests/relevance/questions.yaml``) of sample_vault and
chat_vault; ``mem_recall``; ``list_by_domain`` of every folder; ``list_domains``. Each goes through the
server's call path (``mcp_server.app.call``, then ``to_result``) and is kept as the wire
JSON of its result, one line per call. ``compare`` prints every call whose answer differs
and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import yaml
from gen_vault import generate

from vault_mem.index.build import build
from vault_mem.index.store import VaultIndex
from vault_mem.mcp_server.answers import to_result
from vault_mem.mcp_server.app import call
from vault_mem.mcp_server.tools import tools_for
from vault_mem.served.context import Vault

SOURCES = {"sample": REPO / "sample_vault", "chat": REPO / "tests/relevance/chat_vault",
           "corpus": REPO / "tests/corpus"}
AGENT = {"agent": "check"}
# memory_list metadata_filters keys, each tried with a value seen in the vault, with null and with a miss
FILTER_KEYS = ("id", "uid", "title", "alias", "aliases", "type", "kind", "tags", "status", "state",
               "importance", "namespace", "scope", "project", "paths", "agent", "path", "created", "updated",
               "supersedes", "superseded_by", "priority", "source", "author")


def vaults(work: Path) -> dict[str, Path]:
    out = {}
    for name, source in SOURCES.items():
        target = work / name
        if not target.exists():
            shutil.copytree(source, target, copy_function=shutil.copy2)
        out[name] = target
    generated = work / "generated"
    if not generated.exists():
        generate(generated, 400, seed=1)
    out["generated"] = generated
    return out


def questions(vault: str) -> list[str]:
    """The relevance set's questions asked of ``vault`` (tests/relevance/questions.yaml)."""
    entries = yaml.safe_load((REPO / "tests/relevance/questions.yaml").read_text(encoding="utf-8"))
    names = {"sample": "sample_vault", "chat": "chat_vault"}
    return [e["question"] for e in entries if e["vault"] == names.get(vault)]


def plan(records: list[dict[str, Any]], vault: str = "") -> list[tuple[str, dict[str, Any]]]:
    records = sorted(records, key=lambda r: str(r["path"]))
    paths = [str(r["path"]) for r in records]
    tags = sorted({t for r in records for t in r.get("tags") or []})
    kinds = sorted({str(r.get("type", "note")) for r in records})
    folders = sorted({p.rpartition("/")[0] for p in paths})
    words = sorted({w.lower() for r in records for w in str(r.get("title", "")).split() if w.isalpha()})[:12]
    calls: list[tuple[str, dict[str, Any]]] = [("memory_read", {"ref": p}) for p in paths]
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
        values = [v for r in records for v in _values(r, key)]
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
    calls += [("memory_search", {**AGENT, "query": q, "limit": 10}) for q in questions(vault)]
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


def answers(root: Path, index_dir: Path) -> list[str]:
    index = VaultIndex(root, index_dir)
    build(index)
    try:
        vault = Vault(root, index)
        specs = {spec.name: spec for spec in tools_for(compat=False)}
        out = []
        for tool, args in plan(list(index.records().values()), root.name):
            result = to_result(tool, call(vault, specs[tool], dict(args)))
            out.append(json.dumps({"vault": root.name, "tool": tool, "args": args,
                                   "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)},
                                  ensure_ascii=False, separators=(",", ":")))
        return out
    finally:
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("mode", choices=("record", "compare"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--work", type=Path, required=True, help="where the vault copies are kept")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    got: list[str] = []
    for root in vaults(args.work.resolve()).values():
        with tempfile.TemporaryDirectory() as tmp:
            got += answers(root, Path(tmp))
    if args.mode == "record":
        args.file.write_text("\n".join(got) + "\n", encoding="utf-8")
        print(f"recorded {len(got)} answers in {args.file}")
        return
    want = args.file.read_text(encoding="utf-8").splitlines()
    if len(want) != len(got):
        print(f"{len(want)} answers recorded, {len(got)} now")
    differ = [i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b]
    for i in differ:
        print(f"differs: {want[i][:400]}\n    now: {got[i][:400]}")
    print(f"{len(got) - len(differ)} of {len(got)} answers identical")
    sys.exit(1 if differ or len(want) != len(got) else 0)


if __name__ == "__main__":
    main()
