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
from import_samples import (
    GENERATORS,
    Sample,
    chatgpt_conversation,
    chatgpt_parent_links_only,
    chatgpt_without_content_type_or_id,
    chatgpt_without_links,
    claude_with_thinking,
)

from vault_mem import settings
from vault_mem.cli import main
from vault_mem.imports.notes import IMPORT_HASH, IMPORT_ID, IMPORTED_FROM, parsed
from vault_mem.settings import Settings
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
        note = read_note(vault, rel, config=settings.current())
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
    by_id = {read_note(vault, rel, config=settings.current()).fields[IMPORT_ID]: rel for rel in first["created_paths"]}
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
    john = read_note(vault, "mcp-memory/John_Smith.md", config=settings.current())
    assert john.type == "person" and john.body.startswith("- Speaks fluent Spanish\n- Graduated in 2019")
    assert "## Relations\n\n- works_at [[Anthropic HQ|Anthropic: HQ]]" in john.body
    assert read_note(vault, "mcp-memory/Anthropic HQ.md",
        config=settings.current()).type == "decision", "a known type, lower-cased"


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
        note = read_note(vault, rel, config=settings.current())
        assert "DISCARDED" not in note.body and "print('x')" not in note.body
        assert note.body.startswith("**user**: Question 0") and "Answer 0" in note.body
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
    hand = (empty / "hand" / "Written by hand.md").read_text(encoding="utf-8")
    assert parsed(hand, Settings())[0]["custom"] == {"a": 1}


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def bodies(vault: Path, answer: dict[str, Any]) -> list[str]:
    return [read_note(vault, rel, config=settings.current()).body for rel in answer["created_paths"]]


def test_a_claude_answer_comes_from_its_text_blocks_never_its_thinking(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_json(tmp_path / "conversations.json", claude_with_thinking())
    vault = tmp_path / "vault"
    answer = run_import(capsys, "claude", source, vault)
    [body] = bodies(vault, answer)
    assert "**assistant**: Dog saliva does not clean wounds" in body, body
    assert "The user is asking" not in body and "Pasteurella" not in body
    assert body.startswith("**user**: Is dog saliva antiseptic?")
    assert answer["left_out"] == {"thinking blocks": 1, "tool calls": 1, "tool results": 1, "attachments": 1,
                                  "files (images and uploads)": 1}
    main(["import", "claude", str(source), "--vault", str(vault)])
    assert "left out, as docs/import.md says for this format: 1 attachments" in capsys.readouterr().err


def test_chatgpt_files_of_other_exporters_keep_every_message(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    no_links = run_import(capsys, "chatgpt", write_json(tmp_path / "a.json", chatgpt_without_links()), vault)
    assert (no_links["created"], no_links["skipped"]) == (2, 0), no_links
    for body in bodies(vault, no_links):
        assert body.count("**user**:") == 2 and body.count("**assistant**:") == 2, "all 8 messages are kept"
        assert body.index("First question") < body.index("First answer") < body.index("Second question") \
            < body.index("Second answer"), "in time order, not the file's"
    parents = run_import(capsys, "chatgpt", write_json(tmp_path / "b.json", chatgpt_parent_links_only()), vault)
    [body] = bodies(vault, parents)
    assert all(word in body for word in ("PARENT_ONLY_1 acknowledged", "PARENT_ONLY_2?", "PARENT_ONLY_2 answered"))
    untyped = run_import(capsys, "chatgpt", write_json(tmp_path / "c.json", chatgpt_without_content_type_or_id()),
                         vault)
    assert (untyped["created"], untyped["skipped"]) == (2, 0), untyped
    joined = "\n".join(bodies(vault, untyped))
    assert all(word in joined for word in ("NOTYPE_1", "NOTYPE_2", "FLAT_1", "FLAT_2"))
    for name in ("a.json", "b.json", "c.json"):  # ids derived from the file are stable: a rerun matches
        again = run_import(capsys, "chatgpt", tmp_path / name, vault)
        assert again["created"] == 0 and again["unchanged"] >= 1, again


def test_chatgpt_names_the_other_branches_it_leaves_out(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import random

    rng = random.Random(7)
    conversations = [chatgpt_conversation(rng, n) for n in range(30)]
    drafts = sum(1 for c in conversations for node in c["mapping"] if node.startswith("old"))
    answer = run_import(capsys, "chatgpt", write_json(tmp_path / "conversations.json", conversations),
                        tmp_path / "vault")
    assert drafts and answer["left_out"]["messages on other branches (regenerated answers, edited prompts)"] == drafts


def test_a_moved_vault_keeps_its_notes_import_identity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = sample(tmp_path, "chatgpt")
    old = tmp_path / "old"
    first = run_import(capsys, "chatgpt", source.path, old)
    edited = old / first["created_paths"][0]
    edited.write_text(edited.read_text(encoding="utf-8") + "\nMy own line.\n", encoding="utf-8")
    exported = tmp_path / "export.jsonl"
    assert main(["export", "--vault", str(old), "--output", str(exported)]) == 0
    capsys.readouterr()
    new = tmp_path / "new"
    moved = run_import(capsys, "jsonl", exported, new)
    assert moved["created"] == source.good
    note = read_note(new, first["created_paths"][1], config=settings.current())
    assert (note.fields[IMPORTED_FROM], note.agent) == ("chatgpt", "import-chatgpt")
    before = files(new)
    again = run_import(capsys, "chatgpt", source.path, new)
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, source.good), again
    assert files(new) == before
    jsonl_again = run_import(capsys, "jsonl", exported, new)
    assert (jsonl_again["created"], jsonl_again["unchanged"]) == (0, source.good), jsonl_again
    edited_id = read_note(old, first["created_paths"][0], config=settings.current()).fields[IMPORT_ID]
    conversations = json.loads(source.path.read_text(encoding="utf-8"))
    for item in conversations:
        if isinstance(item, dict) and item.get("id") in (edited_id, note.fields[IMPORT_ID]):
            item["title"] += " (renamed)"
    write_json(source.path, conversations)
    changed = run_import(capsys, "chatgpt", source.path, new)
    assert (changed["updated"], changed["conflicts"]) == (1, 1), changed
    assert [c["path"] for c in changed["conflict_paths"]] == [first["created_paths"][0]], \
        "an edit made before the move is still an edit"
    assert "My own line." in (new / first["created_paths"][0]).read_text(encoding="utf-8")


def md_files(root: Path) -> dict[str, str]:
    return {rel: sha for rel, sha in files(root).items() if not rel.startswith(".trash/")}


def test_an_import_is_journaled_and_undone_as_one_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    (vault / "mine").mkdir(parents=True)
    (vault / "mine" / "Kept.md").write_text("---\ntitle: Kept\n---\nmine\n", encoding="utf-8")
    before = md_files(vault)
    source = sample(tmp_path, "jsonl")
    first = run_import(capsys, "jsonl", source.path, vault)
    lines = source.path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["text"] += "\n\nMore now."
    source.path.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n", encoding="utf-8")
    second = run_import(capsys, "jsonl", source.path, vault)
    assert second["updated"] == 1 and second["agent"] == "import-jsonl"
    touched = vault / first["created_paths"][-1]
    touched.write_text(touched.read_text(encoding="utf-8") + "\nA person's line.\n", encoding="utf-8")

    assert main(["log", "--vault", str(vault), "--agent", "import-jsonl", "--json"]) == 0
    logged = json.loads(capsys.readouterr().out)
    assert logged["count"] == source.good + 1
    assert {row["kind"] for row in logged["changes"]} == {"import"}

    assert main(["undo", "--vault", str(vault), "--agent", "import-jsonl", "--since", "1h", "--apply",
                 "--json"]) == 0
    undone = json.loads(capsys.readouterr().out)
    assert len(undone["restored"]) == source.good - 1
    assert [s["path"] for s in undone["left"]] == [first["created_paths"][-1]], "a later edit is left alone"
    after = md_files(vault)
    assert after.pop(first["created_paths"][-1]) and after == before, "the rest is back byte for byte"


def test_nothing_imported_exits_3_and_leaves_no_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_json(tmp_path / "memories.json", {"results": [{"memory": "no id"}, "text"]})
    vault = tmp_path / "new-vault"
    assert main(["import", "mem0", str(bad), "--vault", str(vault)]) == 3
    err = capsys.readouterr().err
    assert "0 created" in err and "2 skipped" in err and "nothing was imported: every record was skipped" in err
    assert not vault.exists(), "a run that imported nothing leaves no folder"
    good = sample(tmp_path, "mem0")
    assert main(["import", "mem0", str(good.path), "--vault", str(vault), "--dry-run"]) == 0
    assert "would import" in capsys.readouterr().err and not vault.exists(), "--dry-run writes nothing"
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    assert main(["import", "mem0", str(broken), "--vault", str(vault)]) == 1
    assert not vault.exists(), "a failed import leaves no folder"
    assert main(["import", "mem0", str(good.path), "--vault", str(vault), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["created"] == good.good and vault.is_dir()


def test_a_jsonl_path_is_cleaned_and_confined_and_a_bad_line_never_aborts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long_name = "n" * 300
    lines = [{"text": "console", "path": "dev/CON.md"}, {"text": "pipes", "path": "dev/a:b|c?*<>.md"},
             {"text": "long", "path": f"dev/{long_name}.md"}, {"text": "deep", "path": f"{long_name}/x.md"},
             {"text": "out", "path": "../escape.md"}, {"text": "hidden", "path": ".obsidian/x.md"},
             {"text": "plain", "path": "dev/Plain.md"}]
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    vault = tmp_path / "vault"
    answer = run_import(capsys, "jsonl", source, vault)
    created = answer["created_paths"]
    assert created[:2] == ["dev/CON_.md", "dev/abc.md"] and created[-1] == "dev/Plain.md", created
    stem = created[2].removeprefix("dev/").removesuffix(".md")
    assert len(created) == 4 and set(stem) == {"n"} and len(stem.encode()) <= 200
    assert [s["where"] for s in answer["skipped_records"]] == ["line 4", "line 5", "line 6"]
    assert "300 bytes" in answer["skipped_records"][0]["why"]
    assert not (tmp_path / "escape.md").exists()


def test_mem0_graph_relations_become_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_json(tmp_path / "memories.json", {
        "results": [{"id": "m1", "memory": "Joseph lives in Seattle", "created_at": "2024-05-01T10:00:00Z"}],
        "relations": [{"source": "joseph", "source_type": "person", "relationship": "lives_in",
                       "target": "seattle", "target_type": "city", "score": 0.9},
                      {"source": "joseph", "relationship": "works_as", "destination": "software_engineer"},
                      {"source": "joseph", "relationship": "knows"}]})
    vault = tmp_path / "vault"
    answer = run_import(capsys, "mem0", source, vault)
    assert answer["created"] == 2 and [s["where"] for s in answer["skipped_records"]] == ["relation 3"]
    entity = read_note(vault, "mem0/joseph.md", config=settings.current())
    assert entity.type == "person"
    assert "## Relations\n\n- lives_in [[seattle]]\n- works_as [[software_engineer]]" in entity.body


def test_a_jsonl_ts_or_timestamp_dates_the_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "events.jsonl"
    source.write_text(json.dumps({"id": "a", "text": "seconds", "ts": 1_600_000_000}) + "\n"
                      + json.dumps({"id": "b", "text": "iso", "timestamp": "2021-02-03T04:05:06Z"}) + "\n",
                      encoding="utf-8")
    answer = run_import(capsys, "jsonl", source, tmp_path / "vault")
    dates = [read_note(tmp_path / "vault", rel, config=settings.current()).created for rel in answer["created_paths"]]
    assert [d[:10] for d in dates] == ["2020-09-13", "2021-02-03"], dates
