"""Imports of files other people published, and of a vault-mem export: nothing lost, every count
true (docs/import.md, "Every record accounted for" and "Moving a vault"). The fixtures are in
tests/import_fixtures/ (README.md there names each file's repository, commit, path and licence)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE_VAULT
from import_samples import GENERATORS

from vault_mem import settings
from vault_mem.cli import main
from vault_mem.vault.dates import iso
from vault_mem.vault.reader import read_note

FIXTURES = Path(__file__).resolve().parent.parent / "import_fixtures"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def imported(capsys: pytest.CaptureFixture[str], fmt: str, source: Path, vault: Path) -> dict[str, Any]:
    code, answer, err = run(capsys, "import", fmt, str(source), "--vault", str(vault))
    assert code == 0, err
    return answer


def adds_up(answer: dict[str, Any]) -> bool:
    outcomes = ("created", "updated", "unchanged", "conflicts", "merged", "skipped")
    return answer["unaccounted"] == 0 and sum(answer[k] for k in outcomes) == answer["records"]


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def by_title(vault: Path, answer: dict[str, Any]) -> dict[str, Any]:
    return {(note := read_note(vault, rel, config=settings.current())).title: note for rel in answer["created_paths"]}


# -- the reference memory server's file, as other servers write it ------------------------

def test_observations_written_as_objects_become_the_notes_bodies(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """jasonpaulso/mcp-think-tank @66c1d4e1 : memory.jsonl writes each observation as
    ``{"text", "timestamp", "version"}`` and the kind as ``_type``: every entity's note had an
    empty body, and the summary said 0 skipped."""
    source = FIXTURES / "mcp-think-tank-memory.jsonl"
    entities = lines_of(source)
    answer = imported(capsys, "mcp-memory", source, tmp_path / "vault")
    notes = by_title(tmp_path / "vault", answer)
    for entity in entities:
        note = notes[entity["name"]]
        for observation in entity["observations"]:
            for line in observation["text"].splitlines():
                assert line.strip() in note.body, (entity["name"], line)
    assert (answer["records"], answer["created"], answer["skipped"]) == (len(entities), len(entities), 0), answer
    held = sum(len(e["observations"]) for e in entities)
    assert answer["parts"]["observations"] == {"in_source": held, "in_notes": held}
    for entity in entities:
        note = notes[entity["name"]]
        times = sorted(o["timestamp"] for o in entity["observations"])
        assert note.created[:19] == times[0][:19], "dated by its first observation"
        assert note.updated[:19] == max(times[-1], entity["_savedAt"])[:19]
    assert answer["left_out"]["observation details beyond its text and time (version, ...)"] == sum(
        1 for e in entities for o in e["observations"] if "version" in o)


def test_an_entity_on_several_lines_is_merged_into_one_note(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """oshliaer/server-memory-editor @3687a0ad : memory.jsonl holds ``D3.js`` on 4 lines and
    ``mcp-server-memory`` on 5 (the reference server appends so): 11 of its 47 observations were
    dropped, counted nowhere."""
    source = FIXTURES / "server-memory-editor-memory.jsonl"
    lines = lines_of(source)
    answer = imported(capsys, "mcp-memory", source, tmp_path / "vault")
    notes = by_title(tmp_path / "vault", answer)
    for line in lines:
        for observation in line.get("observations", []):
            assert f"- {observation}" in notes[line["name"]].body, (line["name"], observation)
    assert adds_up(answer) and answer["records"] == len(lines)
    entities = {line["name"] for line in lines if line["type"] == "entity"}
    assert answer["created"] == len(entities) == 3
    held = sum(len(line.get("observations", [])) for line in lines)
    assert answer["parts"]["observations"] == {"in_source": held, "in_notes": held}
    assert sorted(notes["D3.js"].tags) == ["library"] and notes["D3.js"].type == "technology"
    merged = answer["merged_records"]
    assert sum(1 for m in merged if m["what"].startswith("the same entity again")) == 7
    assert sum(1 for m in merged if m["what"].startswith("a relation")) == 2
    assert [s["why"] for s in answer["skipped_records"]] == [
        "a relation from 'mcp-memory-visualizer', an entity the file does not hold"]
    assert "[[D3.js]]" in notes["server-memory-editor"].body
    code = main(["import", "mcp-memory", str(source), "--vault", str(tmp_path / "vault")])
    err = capsys.readouterr().err
    assert code == 0 and f"{len(lines)} lines = 0 created + 0 updated + 3 unchanged + 0 conflicts + 9 merged + " \
        "1 skipped" in err, err
    assert "warning: 1 of the 13 lines were skipped" in err


def test_an_entitys_own_dates_date_its_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """maithanhduyan/memory-graph @8a1829f4 : memory.jsonl gives entities ``createdAt`` and
    ``updatedAt`` (POSIX seconds) and leaves out ``type``: the notes took the file's time."""
    source = tmp_path / "memory.jsonl"
    shutil.copyfile(FIXTURES / "memory-graph-memory.jsonl", source)
    os.utime(source, (1_700_000_000, 1_700_000_000))
    answer = imported(capsys, "mcp-memory", source, tmp_path / "vault")
    assert answer["created"] == 4
    notes = by_title(tmp_path / "vault", answer)
    for line in lines_of(source):
        if "entityType" not in line:
            continue
        note = notes[line["name"]]
        if "createdAt" in line:
            assert note.created == iso(dt.datetime.fromtimestamp(line["createdAt"], dt.UTC))
            assert note.updated == iso(dt.datetime.fromtimestamp(line["updatedAt"], dt.UTC))
            assert note.fields["mcp_createdBy"] == line["createdBy"] if "createdBy" in line else True
        else:
            assert note.created == iso(dt.datetime.fromtimestamp(1_700_000_000, dt.UTC)), "no dates: the file's"
    assert "- part_of [[File ui js app.js|File: ui/js/app.js]]" not in notes["Module: ui"].body
    assert "- part_of [[Module ui|Module: ui]]" in notes["File: ui/js/app.js"].body
    assert answer["left_out"][
        "relation details beyond its two ends and type (createdAt, createdBy, ...)"] == 2
    assert adds_up(answer)


def test_relations_written_with_from_entity_and_to_entity_are_links(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """stevejones45/memory @714912c3 : memory.jsonl writes relations as ``from_entity`` /
    ``to_entity`` and gives entities a ``weight``: the relations were skipped. (Our own lines
    in that shape: the repository names no licence.)"""
    answer = imported(capsys, "mcp-memory", FIXTURES / "weighted-memory.jsonl", tmp_path / "vault")
    notes = by_title(tmp_path / "vault", answer)
    assert "## Relations\n\n- mentioned_with [[Weekly planning]]\n- presents_at [[Quarterly review]]" \
        in notes["Dana Ruiz"].body
    assert adds_up(answer) and (answer["created"], answer["merged"], answer["skipped"]) == (3, 3, 0)
    assert notes["Dana Ruiz"].fields["mcp_weight"] == 3


def test_every_entry_of_every_sample_has_one_outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rule of docs/import.md: every entry in, one outcome out, and the summary proves it."""
    for fmt, generate in sorted(GENERATORS.items()):
        folder = tmp_path / fmt
        folder.mkdir()
        sample = generate(folder)
        text = sample.path.read_text(encoding="utf-8")
        if sample.path.suffix == ".jsonl":
            held = sum(1 for line in text.split("\n") if line.strip())
        else:
            data = json.loads(text)
            items = data if isinstance(data, list) else data.get("results") or data.get("memories") or []
            held = len(items) + len(data.get("relations", []) if isinstance(data, dict) else [])
        answer = imported(capsys, fmt, sample.path, tmp_path / f"vault-{fmt}")
        assert answer["records"] == held and adds_up(answer), (fmt, answer)
        assert answer["skipped"] == sample.bad, fmt


# -- chat exports -------------------------------------------------------------------------

def test_a_chatgpt_file_of_one_conversation_keeps_its_generated_images_as_placeholders(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pionxzh/chatgpt-exporter @82ff6c8e : tests/fixtures/image-generation.json, one
    conversation object (the exporter writes one file per chat): refused as not a list; its
    generated images (visible tool messages) were counted as "system and tool messages"."""
    source = FIXTURES / "chatgpt-exporter-image-generation.json"
    answer = imported(capsys, "chatgpt", source, tmp_path / "vault")
    assert (answer["records"], answer["created"]) == (1, 1) and adds_up(answer)
    [note] = by_title(tmp_path / "vault", answer).values()
    placeholders = [line for line in note.body.splitlines() if line.startswith(("[image", "**assistant**: [image",
                                                                                "**user**: [image"))]
    assert [p.split("sediment://")[1][:6] for p in placeholders] == [f"file_{n}" for n in range(1, 6)], note.body
    assert all("an image was here" in p for p in placeholders)
    assert note.body.count("**assistant**: [image") == 4, "the generated images are the assistant's answers"
    assert all(f"question {n}" in note.body for n in range(1, 5))
    left = answer["left_out"]
    assert left["images (a placeholder line in the note marks each)"] == 5
    assert left["system and tool messages"] == 6, "only the hidden tool messages are the tool's"


def test_each_chat_importer_names_the_other_for_its_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``import claude`` given a ChatGPT file said "a conversation without a uuid"."""
    chatgpt_file = FIXTURES / "chatgpt-exporter-image-generation.json"
    listed = tmp_path / "chatgpt-list.json"
    listed.write_text(json.dumps([json.loads(chatgpt_file.read_text(encoding="utf-8"))]), encoding="utf-8")
    (tmp_path / "claude").mkdir()
    claude_file = GENERATORS["claude"](tmp_path / "claude").path
    for fmt, source, other in (("claude", chatgpt_file, "chatgpt"), ("claude", listed, "chatgpt"),
                               ("chatgpt", claude_file, "claude")):
        code = main(["import", fmt, str(source), "--vault", str(tmp_path / "vault")])
        err = capsys.readouterr().err
        assert code == 1, err
        assert f"'vault-mem import {other} {source}'" in err, err
        assert ("looks like a ChatGPT export" if other == "chatgpt" else "looks like a Claude.ai export") in err
        assert not (tmp_path / "vault").exists()


# -- a vault-mem export is a backup ---------------------------------------------------------

def tree(root: Path, rels: list[str]) -> dict[str, tuple[bytes, int]]:
    return {rel: ((root / rel).read_bytes(), (root / rel).stat().st_mtime_ns) for rel in rels}


def export_and_restore(capsys: pytest.CaptureFixture[str], vault: Path, tmp_path: Path) -> tuple[list[str], str]:
    exported = tmp_path / "export.jsonl"
    assert main(["export", "--vault", str(vault), "--output", str(exported)]) == 0
    said = capsys.readouterr().err
    rels = [line["path"] for line in lines_of(exported)]
    empty = tmp_path / "restored"
    answer = imported(capsys, "jsonl", exported, empty)
    assert (answer["created"], answer["records"], answer["skipped"]) == (len(rels), len(rels), 0), answer
    assert tree(empty, rels) == tree(vault, rels), "the same files, byte for byte, with their times"
    again = imported(capsys, "jsonl", exported, empty)
    assert (again["created"], again["unchanged"]) == (0, len(rels)) and tree(empty, rels) == tree(vault, rels)
    return rels, said


def test_the_sample_vault_exported_and_imported_is_the_same_files(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """On sample_vault every one of 51 notes came back different: keys reordered, a title added,
    flow lists made block lists, a created offset lost to UTC, a date made a datetime, and a
    note without dates dated at the import."""
    vault = tmp_path / "sample_vault"
    shutil.copytree(SAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vault-mem"))
    rels, said = export_and_restore(capsys, vault, tmp_path)
    assert len(rels) >= 50
    visible = {p.relative_to(vault).as_posix() for p in vault.rglob("*.md")
               if not any(part.startswith(".") for part in p.relative_to(vault).parts)}
    ignored = sorted(visible - set(rels))
    assert "private/Salary negotiation.md" in ignored, ignored
    assert f"not exported: {len(ignored)} files the vault's ignore rules leave out" in said, said
    assert all(rel in said for rel in ignored), "a backup names every note file it leaves out"


def test_an_obsidian_vault_exported_and_imported_is_the_same_files(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The shapes of AglaiaNorza/obsidian-vault @002e4b03 (our own words; it names no licence):
    123 bodies gained a final newline, 8 notes had their inline #tags written into new
    frontmatter, CSS colours became tags, and 3 empty files named ``.md`` were left out unsaid."""
    vault = tmp_path / "obsidian"
    (vault / "architettura").mkdir(parents=True)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    files = {
        "architettura/fattoriale.md": b"# fattoriale\n\n```\n\tjal factorial #recursive call\n```\n#mips #asm",
        "architettura/colori.md": b'<span style="color:#fff; background:#0f172a">nota</span> #css',
        "esami-automi.md": b"### 1. Linguaggi Regolari\n* **Pumping Lemma** $|w| \\ge P$",
        "windows.md": b"---\r\ntags: [a, b]\r\ncreated: 2025-06-30T10:00:00+02:00\r\n---\r\nCRLF body\r\n",
        "bom.md": b"\xef\xbb\xbf---\nupdated: 2026-01-15\n---\nwith a BOM\n",
        "separators.md": "line\u2028same paragraph\u0085next\u2029end".encode(),
        "latin1.md": b"caf\xe9 au lait\n",
        "architettura/.md": b"",
    }
    for rel, data in files.items():
        (vault / rel).write_bytes(data)
    rels, said = export_and_restore(capsys, vault, tmp_path)
    assert sorted(rels) == sorted(rel for rel in files if not rel.endswith("/.md"))
    assert "not exported: 1 files named only '.md'" in said and "architettura/.md" in said, said


# -- undo an import -------------------------------------------------------------------------

def md_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if not any(part.startswith(".") for part in p.relative_to(root).parts)}


def graph(path: Path, alice: list[str], more: bool) -> Path:
    lines = [{"type": "entity", "name": "Alice", "entityType": "person", "observations": alice}]
    if more:
        lines.append({"type": "entity", "name": "Bob", "entityType": "person", "observations": ["new"]})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def undo(capsys: pytest.CaptureFixture[str], vault: Path, since: str) -> dict[str, Any]:
    code, answer, err = run(capsys, "undo", "--vault", str(vault), "--agent", "import-mcp-memory", "--since", since,
                            "--apply")
    assert code == 0, err
    return answer


def test_undo_of_the_second_import_then_of_the_hour_puts_everything_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Undo the second of two imports, then the whole hour: ``Alice.md`` stayed behind ("changed
    after the agent by vault-mem (undo ...); left alone"), and so did the folder the first
    import made."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Mine.md").write_text("---\ntitle: Mine\n---\nmine\n", encoding="utf-8")
    before = md_tree(vault)
    source = graph(tmp_path / "memory.jsonl", ["likes tea"], more=False)
    imported(capsys, "mcp-memory", source, vault)
    after_first = md_tree(vault)
    between = dt.datetime.now(dt.UTC).isoformat()
    graph(source, ["likes tea", "moved to Lisbon"], more=True)
    second = imported(capsys, "mcp-memory", source, vault)
    assert (second["updated"], second["created"]) == (1, 1)

    first_undo = undo(capsys, vault, between)
    assert sorted(s["action"] for s in first_undo["restored"]) == ["restore", "trash"]
    assert md_tree(vault) == after_first, "the second import is taken back, the first stays"
    assert first_undo.get("folders_removed", []) == [], "the folder holds the first import's note still"

    whole = undo(capsys, vault, "1h")
    assert [s["path"] for s in whole["restored"]] == ["mcp-memory/Alice.md"], whole
    assert not any("changed after the agent" in s["reason"] for s in whole["left"]), whole["left"]
    assert md_tree(vault) == before
    assert whole["folders_removed"] == ["mcp-memory"] and not (vault / "mcp-memory").exists()


def test_undo_leaves_a_folder_the_import_did_not_make_or_that_holds_more(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The folder goes only when that import made it and it is empty: not a folder that was there
    before, nor one a person put a note into since."""
    source = graph(tmp_path / "memory.jsonl", ["likes tea"], more=True)
    there = tmp_path / "there"
    (there / "mcp-memory").mkdir(parents=True)
    imported(capsys, "mcp-memory", source, there)
    assert undo(capsys, there, "1h")["folders_removed"] == [] and (there / "mcp-memory").is_dir()
    shared = tmp_path / "shared"
    imported(capsys, "mcp-memory", source, shared / "notes")
    (shared / "notes" / "mcp-memory" / "Mine.md").write_text("mine\n", encoding="utf-8")
    answer = undo(capsys, shared / "notes", "1h")
    assert len(answer["restored"]) == 2 and answer["folders_removed"] == []
    assert md_tree(shared / "notes") == {"mcp-memory/Mine.md": b"mine\n"}
    deep = tmp_path / "deep"
    code, _, err = run(capsys, "import", "mcp-memory", str(source), "--vault", str(deep), "--domain", "a/b/c")
    assert code == 0, err
    assert undo(capsys, deep, "1h")["folders_removed"] == ["a/b/c", "a/b", "a"] and md_tree(deep) == {}


def test_a_journal_line_cannot_make_undo_remove_another_folder(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The journal is a file: a ``made`` naming a folder that is not above the note (an empty folder
    of the person's, a hidden one, one outside the vault) is not followed."""
    source = graph(tmp_path / "memory.jsonl", ["likes tea"], more=False)
    (tmp_path / "outside").mkdir()
    for n, made in enumerate(("keep", ".obsidian/plugins", "../outside", str(tmp_path / "outside"), "mcp-memory/..")):
        vault = tmp_path / f"vault{n}"
        imported(capsys, "mcp-memory", source, vault)
        for name in ("keep", ".obsidian/plugins"):
            (vault / name).mkdir(parents=True)
        [entries] = list(vault.rglob("entries.jsonl"))
        line = json.loads(entries.read_text(encoding="utf-8"))
        assert line["made"] == "mcp-memory"
        entries.write_text(json.dumps({**line, "made": made}) + "\n", encoding="utf-8")
        answer = undo(capsys, vault, "1h")
        assert [s["action"] for s in answer["restored"]] == ["trash"] and answer["folders_removed"] == [], made
        assert (vault / "keep").is_dir() and (vault / ".obsidian" / "plugins").is_dir(), made
        assert (vault / "mcp-memory").is_dir(), "not named by the journal: left"
    assert (tmp_path / "outside").is_dir()
