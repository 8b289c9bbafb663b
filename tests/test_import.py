"""vault-mem import and export (docs/import.md): each format's sample becomes notes every tool
finds, a second run changes nothing, a person's edit is a conflict left alone, and export then
import jsonl gives back equal notes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import open_vault
from import_samples import GENERATORS, Sample, chatgpt_conversation

from vault_mem.cli import main
from vault_mem.imports.notes import IMPORT_HASH, IMPORT_ID, IMPORTED_FROM, parsed
from vault_mem.vault.reader import read_note

pytestmark = pytest.mark.anyio
AGENT = "test-agent"


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.md")) if ".vault-mem" not in p.parts}


def run_import(capsys: pytest.CaptureFixture[str], fmt: str, source: Path, vault: Path,
               *extra: str) -> dict[str, Any]:
    code = main(["import", fmt, str(source), "--vault", str(vault), "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    answer: dict[str, Any] = json.loads(out)
    return answer


def sample(tmp_path: Path, fmt: str) -> Sample:
    folder = tmp_path / f"source-{fmt}"
    folder.mkdir()
    return GENERATORS[fmt](folder)


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
async def test_each_format_imports_into_notes_every_tool_finds(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               mcp_session: Any, fmt: str) -> None:
    source = sample(tmp_path, fmt)
    vault = tmp_path / "vault"
    answer = run_import(capsys, fmt, source.path, vault)
    assert (answer["created"], answer["skipped"], answer["conflicts"]) == (source.good, source.bad, 0), answer
    assert all(s["where"] and s["why"] for s in answer["skipped_records"])
    for rel in answer["created_paths"]:
        note = read_note(vault, rel)
        assert note.problems == [], (rel, note.problems)
        assert note.agent == (note.agent if fmt == "jsonl" else f"import-{fmt}")
        assert note.fields[IMPORTED_FROM] == fmt and note.fields[IMPORT_ID] and note.fields[IMPORT_HASH]
    served = open_vault(vault)
    async with mcp_session(served) as c:
        listed = await c.call("memory_list")
        assert listed["status"] == "ok" and listed["count"] >= 1 and "next_offset" in listed
        for rel in answer["created_paths"][:: max(1, source.good // 40)]:
            read = await c.call("memory_read", ref=rel)
            assert read["status"] == "ok" and read["path"] == rel
            word = max(read["title"].split(), key=len).strip("?:;,.()")
            found = await c.call("memory_search", agent=AGENT, query=word, limit=50)
            assert found["status"] == "ok", found
        recalled = await c.call("mem_recall", output_format="structured", limit=500)
        assert recalled["status"] == "ok"
        domains = await c.call("list_domains")
        assert domains["domains"][0]["active"] == source.good


async def test_a_second_run_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    for fmt in sorted(GENERATORS):
        source = sample(tmp_path, fmt)
        run_import(capsys, fmt, source.path, vault)
        before = files(vault)
        again = run_import(capsys, fmt, source.path, vault)
        assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, source.good), again
        assert files(vault) == before


async def test_an_edit_is_a_conflict_left_alone_and_a_changed_source_updates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], mcp_session: Any) -> None:
    source = sample(tmp_path, "jsonl")
    vault = tmp_path / "vault"
    first = run_import(capsys, "jsonl", source.path, vault)
    by_id = {read_note(vault, rel).fields[IMPORT_ID]: rel for rel in first["created_paths"]}
    edited = vault / by_id["rec-1"]
    edited.write_text(edited.read_text(encoding="utf-8") + "\nA line a person added.\n", encoding="utf-8")
    edited_bytes = edited.read_bytes()
    lines = source.path.read_text(encoding="utf-8").splitlines()
    changed = []
    for n, line in enumerate(lines):
        if line.startswith("{") and line.endswith("}"):
            record = json.loads(line)
            if record.get("id") in ("rec-1", "rec-2"):
                record["text"] += "\n\nThe source says more now."
                lines[n] = json.dumps(record)
                changed.append(record["id"])
    assert sorted(changed) == ["rec-1", "rec-2"]
    source.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = files(vault)

    dry = run_import(capsys, "jsonl", source.path, vault, "--dry-run")
    assert (dry["updated"], dry["conflicts"], dry["dry_run"]) == (1, 1, True) and files(vault) == before

    second = run_import(capsys, "jsonl", source.path, vault)
    assert (second["created"], second["updated"], second["conflicts"]) == (0, 1, 1), second
    assert second["conflict_paths"][0]["path"] == by_id["rec-1"]
    assert "edited since the last import" in second["conflict_paths"][0]["why"]
    assert edited.read_bytes() == edited_bytes, "a person's edit is never overwritten"
    assert second["updated_paths"] == [by_id["rec-2"]]
    assert "The source says more now." in (vault / by_id["rec-2"]).read_text(encoding="utf-8")
    async with mcp_session(open_vault(vault)) as c:
        found = await c.call("memory_search", agent=AGENT, query="source says more", limit=5)
        assert [hit["permalink"] for hit in found["notes"]][:1] == ["memory://" + by_id["rec-2"][:-3]]


async def test_a_note_moved_to_the_trash_is_not_imported_again(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    source = sample(tmp_path, "mem0")
    vault = tmp_path / "vault"
    first = run_import(capsys, "mem0", source.path, vault)
    gone = vault / first["created_paths"][0]
    (vault / ".trash").mkdir()
    gone.rename(vault / ".trash" / gone.name)
    again = run_import(capsys, "mem0", source.path, vault)
    assert (again["created"], again["unchanged"]) == (0, source.good - 1)
    assert any("deleted since the last import" in s["why"] for s in again["skipped_records"])


def test_the_memory_graph_keeps_types_observations_and_relations_as_links(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "memory.jsonl"
    graph.write_text("\n".join([
        json.dumps({"type": "entity", "name": "John_Smith", "entityType": "person",
                    "observations": ["Speaks fluent Spanish", "Graduated in 2019"]}),
        json.dumps({"type": "entity", "name": "Anthropic: HQ", "entityType": "Decision", "observations": []}),
        json.dumps({"type": "relation", "from": "John_Smith", "to": "Anthropic: HQ", "relationType": "works_at"}),
        '{"type": "entity", "name": "Broken", "entityTy',
    ]) + "\n", encoding="utf-8")
    vault = tmp_path / "vault"
    answer = run_import(capsys, "mcp-memory", graph, vault)
    assert answer["created"] == 2 and answer["skipped_records"][0]["where"] == "line 4"
    john = read_note(vault, "mcp-memory/John_Smith.md")
    assert john.type == "person" and john.body.startswith("- Speaks fluent Spanish\n- Graduated in 2019")
    assert "## Relations\n\n- works_at [[Anthropic HQ|Anthropic: HQ]]" in john.body
    assert read_note(vault, "mcp-memory/Anthropic HQ.md").type == "decision", "a known type, lower-cased"


def test_chatgpt_follows_the_current_branch_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import random

    rng = random.Random(7)
    conversations = [chatgpt_conversation(rng, n) for n in range(30)]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(conversations), encoding="utf-8")
    vault = tmp_path / "vault"
    answer = run_import(capsys, "chatgpt", path, vault)
    assert answer["created"] == 30
    for rel in answer["created_paths"]:
        note = read_note(vault, rel)
        assert "DISCARDED" not in note.body and "print('x')" not in note.body
        assert note.body.startswith("**user**: Question 0") and "**assistant**: Answer 0" in note.body
        assert rel.startswith("chatgpt/" + note.created[:7] + "/"), "in the folder of its month"


def test_a_source_that_does_not_parse_says_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "conversations.json"
    bad.write_text('[{"uuid": "a",\n  "name": }]', encoding="utf-8")
    code = main(["import", "claude", str(bad), "--vault", str(tmp_path / "vault")])
    _, err = capsys.readouterr()
    assert code == 1 and "line 2, column 11" in err and "Traceback" not in err
    code = main(["import", "mem0", str(tmp_path / "missing.json"), "--vault", str(tmp_path / "vault")])
    assert code == 1 and "does not exist" in capsys.readouterr().err


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in record.items() if k != "etag"}
    out["metadata"] = {k: v for k, v in record["metadata"].items()
                       if k not in (IMPORTED_FROM, IMPORT_ID, IMPORT_HASH)}
    if out["agent"] == "import-jsonl":
        out["agent"] = None  # a note without an agent gets the import's
    return out


def test_export_then_import_jsonl_gives_back_equal_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    for fmt in ("mcp-memory", "chatgpt", "jsonl"):
        run_import(capsys, fmt, sample(tmp_path, fmt).path, vault)
    (vault / "hand").mkdir()
    (vault / "hand" / "Written by hand.md").write_text(
        "---\ntags: [x, y]\ntype: task\nstate: done\nimportance: 0.9\ncustom: {a: 1}\naliases: [HB]\n---\n"
        "# Written by hand\n\n- [x] one\n- [ ] two #inline\n", encoding="utf-8")
    (vault / "No frontmatter.md").write_text("Just text with a [[Link]].\n", encoding="utf-8")
    exported = tmp_path / "export.jsonl"
    assert main(["export", "--vault", str(vault), "--output", str(exported)]) == 0
    assert "exported" in capsys.readouterr().err
    empty = tmp_path / "empty"
    again = run_import(capsys, "jsonl", exported, empty)
    assert again["skipped"] == 0 and again["created"] == len(exported.read_text(encoding="utf-8").splitlines())
    assert main(["export", "--vault", str(empty)]) == 0
    back = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    first = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert [r["path"] for r in back] == [r["path"] for r in first]
    for old, new in zip(first, back, strict=True):
        assert comparable(new) == comparable(old), old["path"]
    assert parsed((empty / "hand" / "Written by hand.md").read_text(encoding="utf-8"))[0]["custom"] == {"a": 1}
