"""The doors to other memories (docs/import.md): OpenMemory's export zip comes in with its
categories, apps, dates and states, every memory accounted for; an OKF bundle goes out and comes
back byte for byte, and a bundle other tools wrote comes in as its files. Fixtures in
tests/import_fixtures/ (README.md there says what each is)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE_VAULT

from vault_mem import settings
from vault_mem.cli import main
from vault_mem.imports.notes import IMPORTED_FROM, parsed
from vault_mem.settings import Settings
from vault_mem.vault.frontmatter import load_yaml, split_frontmatter
from vault_mem.vault.reader import read_note

FIXTURES = Path(__file__).resolve().parent.parent / "import_fixtures"
OM_ZIP = FIXTURES / "openmemory-memories_export_alice.zip"
OM_JSON = FIXTURES / "openmemory-memories.json"
OM_LINES = FIXTURES / "openmemory-memories.jsonl"
BUNDLE = FIXTURES / "okf-bundle"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def imported(capsys: pytest.CaptureFixture[str], fmt: str, source: Path, vault: Path, *extra: str) -> dict[str, Any]:
    code, answer, err = run(capsys, "import", fmt, str(source), "--vault", str(vault), *extra)
    assert code == 0, err
    outcomes = ("created", "updated", "unchanged", "conflicts", "merged", "skipped")
    assert answer["unaccounted"] == 0 and sum(answer[k] for k in outcomes) == answer["records"], answer
    return answer


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err + out, (code, err)
    return err


def notes(vault: Path, answer: dict[str, Any]) -> dict[str, Any]:
    return {(note := read_note(vault, rel, config=settings.current())).title: note for rel in answer["created_paths"]}


def md_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if not any(part.startswith(".") for part in p.relative_to(root).parts)}


# -- OpenMemory -------------------------------------------------------------------------------

def test_the_openmemory_zip_keeps_categories_apps_dates_and_states(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    answer = imported(capsys, "openmemory", OM_ZIP, vault)
    assert (answer["records"], answer["created"], answer["skipped"]) == (15, 10, 5), answer
    why = {s["where"]: s["why"] for s in answer["skipped_records"]}
    assert "deleted in OpenMemory (2025-05-20T08:00:00+00:00)" in why["memory 9"]
    assert why["memory 10"] == "a memory without an id"
    assert "has no content" in why["memory 11"] and "not a memory object" in why["memory 15"]
    assert "came already at memory 1" in why["memory 6"]
    assert answer["left_out"] == {"state changes (status_history)": 2, "app access rules (access_controls)": 1}
    found = notes(vault, answer)
    coffee = found["Prefers dark roast coffee, no sugar"]
    assert (coffee.type, coffee.tags, coffee.agent) == ("fact", ["personal", "preferences"], "claude")
    assert coffee.metadata["openmemory_user"] == "alice"
    assert coffee.metadata["openmemory_metadata"] == {"source_app": "openmemory", "mcp_client": "claude"}
    assert found["Works at Acme Corp on the billing service"].agent == "cursor"
    lisbon = found["Was planning a trip to Lisbon in May"]
    assert (lisbon.status, lisbon.metadata["openmemory_state"]) == ("archived", "archived")
    assert lisbon.metadata["openmemory_archived_at"] == "2025-06-01T12:00:00+00:00"
    paused = found["Allergic to penicillin"]
    assert (paused.status, paused.metadata["openmemory_state"]) == ("archived", "paused")
    assert found["Category given only by memory_categories"].tags == ["work"]
    assert found["Memory of an app no longer listed"].agent == "import-openmemory"
    unicode = next(n for t, n in found.items() if t.startswith("日本語"))
    assert unicode.tags == ["ai ml & technology", "travel"] and "🍣" in unicode.body
    assert unicode.metadata["openmemory_categories"] == ["ai, ml & technology", "travel"]
    long = next(n for t, n in found.items() if t.startswith("Long memory."))
    assert len(long.body) > 30_000 and len(long.title) < 120
    con = found["CON: the name Windows keeps for the console"]
    assert "[[Wiki link]]" in con.body and "title: not frontmatter" in con.body and con.agent == "openmemory"
    for note in found.values():
        if note.title != "Uses vim keybindings everywhere":  # the one memory without dates
            assert note.created.startswith("2025-03-")


def test_openmemory_again_in_any_of_its_forms_makes_nothing_twice(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    first = imported(capsys, "openmemory", OM_ZIP, vault)
    before = md_tree(vault)
    assert imported(capsys, "openmemory", OM_ZIP, vault)["unchanged"] == first["created"]
    assert imported(capsys, "openmemory", OM_JSON, vault)["unchanged"] == first["created"]
    assert md_tree(vault) == before
    with zipfile.ZipFile(OM_ZIP) as zf:  # the zip holds the two fixture files, the lines gzipped
        assert zf.read("memories.json") == OM_JSON.read_bytes()
        packed = zf.read("memories.jsonl.gz")
    assert gzip.decompress(packed) == OM_LINES.read_bytes()
    alone = tmp_path / "memories.jsonl.gz"
    alone.write_bytes(packed)
    for source in (alone, OM_LINES):
        answer = imported(capsys, "openmemory", source, vault)
        assert (answer["records"], answer["created"], answer["skipped"]) == (13, 0, 3), answer
    assert sorted(md_tree(vault)) == sorted(before)


def test_notes_a_mem0_import_made_of_openmemory_are_updated_not_doubled(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """vault-mem 0.6 read OpenMemory's memories.json as the mem0 format (content, state only)."""
    payload = json.loads(OM_JSON.read_text(encoding="utf-8"))
    plain = tmp_path / "memories.json"
    plain.write_text(json.dumps({"memories": payload["memories"]}), encoding="utf-8")
    vault = tmp_path / "vault"
    earlier = imported(capsys, "mem0", plain, vault)
    assert earlier["created"] == 10
    answer = imported(capsys, "openmemory", OM_ZIP, vault)
    assert (answer["created"], answer["updated"]) == (0, 10), answer
    imported_from = {parsed((vault / rel).read_text(encoding="utf-8"), Settings())[0][IMPORTED_FROM]
                     for rel in md_tree(vault)}
    assert imported_from == {"openmemory"} and len(md_tree(vault)) == 10
    err = refused(capsys, ["import", "mem0", str(OM_ZIP), "--vault", str(vault)])
    assert "looks like OpenMemory's export" in err and "vault-mem import openmemory" in err
    err = refused(capsys, ["import", "mem0", str(OM_JSON), "--vault", str(vault)])
    assert "vault-mem import openmemory openmemory-memories.json" in err


def test_a_broken_openmemory_export_is_named_and_nothing_is_written(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    cut = tmp_path / "cut.zip"
    cut.write_bytes(OM_ZIP.read_bytes()[:3000])
    assert "is not a complete zip" in refused(capsys, ["import", "openmemory", str(cut), "--vault", str(vault)])
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("conversations.json", "[]")
    err = refused(capsys, ["import", "openmemory", str(other), "--vault", str(vault)])
    assert "without memories.json or memories.jsonl.gz (it holds conversations.json)" in err
    half = tmp_path / "memories.jsonl.gz"
    half.write_bytes(gzip.compress(OM_LINES.read_bytes())[:400])
    assert "not a complete gzip file" in refused(capsys, ["import", "openmemory", str(half), "--vault", str(vault)])
    text = tmp_path / "notes.txt"
    text.write_text("just some words\n", encoding="utf-8")
    assert "is not valid JSON" in refused(capsys, ["import", "openmemory", str(text), "--vault", str(vault)])
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"results": []}', encoding="utf-8")
    assert "without a 'memories' list" in refused(capsys, ["import", "openmemory", str(wrong), "--vault", str(vault)])
    assert not vault.exists()


# -- OKF: out and back --------------------------------------------------------------------------

def concept_problems(bundle: Path) -> list[str]:
    """The bundle's departures from OKF 0.2 §11: a concept without parseable frontmatter and a
    non-empty type, or an index.md with frontmatter other than the root's okf_version."""
    problems = []
    for path in sorted(bundle.rglob("*.md")):
        rel = path.relative_to(bundle).as_posix()
        split = split_frontmatter(path.read_bytes().decode("utf-8", "replace").removeprefix("\ufeff"))
        loaded = load_yaml(split.yaml_text, Settings()) if split.yaml_text is not None else None
        if path.name == "index.md":
            if loaded is not None and (rel != "index.md" or set(loaded.data) != {"okf_version"}):
                problems.append(rel)
        elif path.name != "log.md" and not (loaded and loaded.parsed and str(loaded.data.get("type") or "").strip()):
            problems.append(rel)
    return problems


@pytest.mark.parametrize("output", ["bundle", "bundle.zip"])
def test_the_sample_vault_through_an_okf_bundle_is_the_same_files(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  output: str) -> None:
    vault = tmp_path / "sample_vault"
    shutil.copytree(SAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vault-mem"))
    (vault / "acme" / "index.md").write_text("---\ntitle: Acme index\n---\nA note OKF's names clash with.\n",
                                             encoding="utf-8")
    (vault / "Log.md").write_text("No frontmatter, and a name OKF keeps for itself.\r\n", encoding="utf-8")
    bundle = tmp_path / output
    code = main(["export", "--vault", str(vault), "--format", "okf", "--output", str(bundle)])
    said = capsys.readouterr().err
    assert code == 0 and "as an OKF 0.2 bundle" in said, said
    assert "acme/index.md -> acme/index (note).md" in said and "Log.md -> Log (note).md" in said
    unpacked = bundle
    if output.endswith(".zip"):
        unpacked = tmp_path / "unpacked"
        with zipfile.ZipFile(bundle) as zf:
            zf.extractall(unpacked)
    assert concept_problems(unpacked) == ["Broken frontmatter.md"]  # its YAML does not parse: named, kept
    assert "not OKF-conformant" in said and "Broken frontmatter.md" in said
    empty = tmp_path / "empty"
    answer = imported(capsys, "okf", bundle, empty)
    rels = sorted(answer["created_paths"])
    assert len(rels) >= 52 and answer["skipped"] == 0
    assert {rel: (vault / rel).read_bytes() for rel in rels} == md_tree(empty)
    assert all((vault / rel).stat().st_mtime_ns == (empty / rel).stat().st_mtime_ns for rel in rels)
    again = imported(capsys, "okf", bundle, empty)
    assert (again["created"], again["unchanged"]) == (0, len(rels))


def test_an_okf_export_never_writes_over_anything_and_needs_a_place(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    (vault / "a").mkdir(parents=True)
    (vault / "a" / "Note.md").write_text("---\ntype: fact\n---\nx\n", encoding="utf-8")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("keep", encoding="utf-8")
    err = refused(capsys, ["export", "--vault", str(vault), "--format", "okf", "--output", str(taken)])
    assert "already exists and is not an empty folder" in err
    assert [p.name for p in taken.iterdir()] == ["mine.txt"]
    assert "--output FOLDER" in refused(capsys, ["export", "--vault", str(vault), "--format", "okf"])
    err = refused(capsys, ["export", "--vault", str(vault), "--format", "okf", "--output",
                           str(tmp_path / "no" / "such" / "place")])
    assert "does not exist" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken", "vault"]  # no half-written bundle


# -- OKF: bundles other tools wrote --------------------------------------------------------------

CONCEPTS = ["computations/revenue-ytd.md", "metrics/revenue.md", "notes/café ☕ résumé.md",
            "notes/no-frontmatter.md", "playbooks/freshness-alert.md", "tables/orders.md"]


def at(moment: str) -> int:
    return int(dt.datetime.fromisoformat(moment).timestamp()) * 1_000_000_000


def test_an_okf_bundle_comes_in_as_its_files_dated_by_generated_at(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "shop"
    shutil.copytree(BUNDLE, source)
    vault = tmp_path / "vault"
    answer = imported(capsys, "okf", source, vault)
    assert sorted(answer["created_paths"]) == CONCEPTS and answer["unit"] == "concepts"
    assert answer["left_out"] == {"index.md and log.md files (OKF's navigation and history, no concepts)": 3,
                                  "files that are not Markdown (attesters/sql_equality.py)": 1}
    assert md_tree(vault) == {rel: (BUNDLE / rel).read_bytes() for rel in CONCEPTS}
    orders = read_note(vault, "tables/orders.md", config=settings.current())
    assert (orders.title, orders.type, orders.tags) == ("Orders", "BigQuery Table", ["sales", "orders"])
    assert orders.metadata["resource"].startswith("https://console.cloud.google.com/")
    assert orders.metadata["sources"][0]["usage_count"] == 310
    assert (vault / "tables/orders.md").stat().st_mtime_ns == at("2026-06-20T14:00:00+00:00")
    assert (vault / "playbooks/freshness-alert.md").stat().st_mtime_ns == at("2026-05-28T22:53:05+00:00")
    assert (vault / "notes/café ☕ résumé.md").stat().st_mtime_ns == at("2026-07-03T08:00:00+02:00")
    assert read_note(vault, "notes/no-frontmatter.md", config=settings.current()).type == "note"
    again = imported(capsys, "okf", source, vault)
    assert (again["created"], again["unchanged"]) == (0, len(CONCEPTS))
    below = imported(capsys, "okf", source, vault, "--domain", "okf/shop")
    assert sorted(below["created_paths"]) == [f"okf/shop/{rel}" for rel in CONCEPTS]


def test_zipped_bundles_as_markdown_vault_mcp_and_zip_r_write_them(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """markdown-vault-mcp's okf_bundle.py: paths at the zip's root, every entry dated 1980-01-01
    (so a concept without generated.at takes the zip's own time); ``zip -r``: one top folder."""
    flat, nested = tmp_path / "vault-okf.zip", tmp_path / "shop.zip"
    with zipfile.ZipFile(flat, "w", zipfile.ZIP_DEFLATED) as zf, zipfile.ZipFile(nested, "w") as zr:
        for path in sorted(BUNDLE.rglob("*")):
            if path.is_file():
                rel = path.relative_to(BUNDLE).as_posix()
                zf.writestr(zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0)), path.read_bytes())
                zr.writestr(zipfile.ZipInfo(f"shop/{rel}", date_time=(2026, 7, 4, 12, 0, 0)), path.read_bytes())
    for source, vault in ((flat, tmp_path / "v1"), (nested, tmp_path / "v2")):
        answer = imported(capsys, "okf", source, vault)
        assert sorted(answer["created_paths"]) == CONCEPTS, answer
        assert md_tree(vault) == {rel: (BUNDLE / rel).read_bytes() for rel in CONCEPTS}
    plain = (tmp_path / "v1" / "notes/no-frontmatter.md").stat().st_mtime_ns
    assert plain == int(flat.stat().st_mtime) * 1_000_000_000  # not 1980


def test_a_broken_okf_bundle_is_named_and_nothing_is_written(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in CONCEPTS:
            zf.writestr(rel, (BUNDLE / rel).read_bytes() * 20)
    cut = tmp_path / "cut.zip"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    assert "is not a complete zip" in refused(capsys, ["import", "okf", str(cut), "--vault", str(vault)])
    text = tmp_path / "bundle.md"
    text.write_text("---\ntype: Note\n---\n", encoding="utf-8")
    assert "neither a folder nor a zip" in refused(capsys, ["import", "okf", str(text), "--vault", str(vault)])
    hollow = tmp_path / "hollow"
    (hollow / "tables").mkdir(parents=True)
    (hollow / "index.md").write_text("# Nothing\n", encoding="utf-8")
    (hollow / "tables" / "data.csv").write_text("a,b\n", encoding="utf-8")
    assert "holds no Markdown concept" in refused(capsys, ["import", "okf", str(hollow), "--vault", str(vault)])
    shop = tmp_path / "shop"
    shutil.copytree(BUNDLE, shop)
    (shop / "vault-mem.json").write_text('{"format": "vault-mem okf bundle", "notes": [', encoding="utf-8")
    err = refused(capsys, ["import", "okf", str(shop), "--vault", str(vault)])
    assert "vault-mem.json" in err and "is not valid JSON" in err
    assert "does not exist" in refused(capsys, ["import", "okf", str(tmp_path / "nowhere"), "--vault", str(vault)])
    assert not vault.exists()


def test_a_bundle_entry_cannot_leave_the_vault_and_nothing_is_dropped_unsaid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    note = b"---\ntype: Note\n---\nbody\n"
    slip = tmp_path / "slip.zip"
    with zipfile.ZipFile(slip, "w") as zf:
        for name in ("../escape.md", "a/../../b.md", "/etc/rooted.md", "ok.md", ".obsidian/app.md",
                     "__MACOSX/._ok.md", "bad:name?.md"):
            zf.writestr(name, note)
    vault = tmp_path / "box" / "vault"
    answer = imported(capsys, "okf", slip, vault)
    why = {s["where"]: s["why"] for s in answer["skipped_records"]}
    assert set(why) == {"../escape.md", "a/../../b.md"} and all("'..'" in w for w in why.values())
    assert sorted(answer["created_paths"]) == ["badname.md", "etc/rooted.md", "ok.md"]
    assert answer["left_out"] == {"hidden files and folders (a name starting with '.', __MACOSX)": 2}
    assert sorted(p.name for p in (tmp_path / "box").iterdir()) == ["vault"]
    folder = tmp_path / "folder"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD.md").write_bytes(note)
    (folder / "real.md").write_bytes(note)
    outside = tmp_path / "secret.md"
    outside.write_bytes(b"---\ntype: Secret\n---\nnot to be read through a link\n")
    try:
        (folder / "link.md").symlink_to(outside)
    except OSError:
        pytest.skip("this system makes no symbolic links")
    answer = imported(capsys, "okf", folder, tmp_path / "v2")
    assert answer["created_paths"] == ["real.md"]
    assert answer["left_out"] == {"hidden files and folders (a name starting with '.', __MACOSX)": 1,
                                  "symbolic links (a bundle folder's links are not followed)": 1}


def test_an_archive_entry_is_never_unpacked_past_its_bound(tmp_path: Path) -> None:
    """The bound a zip bomb meets (1 GiB in the import; a small one here, given as the argument)."""
    from vault_mem.errors import InvalidInput
    from vault_mem.imports.archives import gunzip, member

    zeros = bytes(1 << 20)
    bomb = gzip.compress(zeros)
    assert len(bomb) < 2000
    with pytest.raises(InvalidInput, match=r"bomb.gz unpacks to more than 1,000 bytes; refused"):
        gunzip(bomb, "bomb.gz", limit=1000)
    assert gunzip(bomb, "bomb.gz", limit=len(zeros)) == zeros
    packed = tmp_path / "bomb.zip"
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("memories.json", zeros)
    with zipfile.ZipFile(packed) as zf:
        info = zf.getinfo("memories.json")
        with pytest.raises(InvalidInput, match="unpacks to more than 1,000 bytes"):
            member(zf, info, packed, limit=1000)
        info.file_size = 10  # a header that lies about the size: read no further, and refused
        with pytest.raises(InvalidInput, match=r"cannot be unpacked .*Bad CRC-32.*the zip is damaged"):
            member(zf, info, packed, limit=1000)


def test_a_vault_mem_bundle_changed_by_another_tool_comes_in_with_the_changes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    files = {"Plain.md": "Just text, no frontmatter.\n", "Typed.md": "---\ntype: decision\n---\nChosen.\n",
             "Untyped.md": "---\ntags: [a]\n---\nNo type here.\n", "Gone.md": "---\ntype: fact\n---\nx\n"}
    for name, text in files.items():
        (vault / name).write_text(text, encoding="utf-8")
    bundle = tmp_path / "bundle"
    assert main(["export", "--vault", str(vault), "--format", "okf", "--output", str(bundle)]) == 0
    capsys.readouterr()
    assert (bundle / "Plain.md").read_text(encoding="utf-8").startswith('---\ntype: "note"  # vault-mem:')
    (bundle / "Gone.md").unlink()
    edited = (bundle / "Untyped.md").read_text(encoding="utf-8") + "Added in another tool.\n"
    (bundle / "Untyped.md").write_text(edited, encoding="utf-8")
    (bundle / "New.md").write_text("---\ntype: Note\ntitle: New\n---\nWritten elsewhere.\n", encoding="utf-8")
    empty = tmp_path / "empty"
    answer = imported(capsys, "okf", bundle, empty)
    assert sorted(answer["created_paths"]) == ["New.md", "Plain.md", "Typed.md", "Untyped.md"]
    assert [(s["where"], s["why"]) for s in answer["skipped_records"]] == [
        ("Gone.md", "listed in vault-mem.json but not in the bundle")]
    assert (empty / "Plain.md").read_text(encoding="utf-8") == files["Plain.md"]
    assert (empty / "Untyped.md").read_text(encoding="utf-8") == files["Untyped.md"] + "Added in another tool.\n"


def test_a_wikilink_becomes_a_markdown_link_only_when_it_names_one_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    for folder in ("a", "b"):
        (vault / folder).mkdir(parents=True)
        (vault / folder / "Twin.md").write_text("---\ntype: fact\n---\ntwin\n", encoding="utf-8")
    (vault / "a" / "Plan (v2) 100%.md").write_text("---\ntype: decision\naliases: [The plan]\n---\np\n",
                                                      encoding="utf-8")
    source = ("---\ntype: note\nsupersedes: \"[[Twin]]\"\n---\n"
              "See [[The plan|our *plan*]] and [[Plan (v2) 100%#Why now]], not [[Twin]] (two notes have "
              "that name) nor [[Nowhere]] nor ![[Plan (v2) 100%]] nor [[The plan#^block1]].\n"
              "```\n[[The plan]] in code\n```\n`[[The plan]]` inline\n")
    (vault / "Links.md").write_text(source, encoding="utf-8")
    bundle = tmp_path / "bundle"
    assert main(["export", "--vault", str(vault), "--format", "okf", "--output", str(bundle)]) == 0
    assert "2 wikilinks written as Markdown links" in capsys.readouterr().err
    body = (bundle / "Links.md").read_text(encoding="utf-8")
    assert r"See [our \*plan\*](</a/Plan %28v2%29 100%25.md>) and " in body
    assert "[Plan (v2) 100%](</a/Plan %28v2%29 100%25.md#Why now>)" in body
    for kept in ("[[Twin]] (two", "[[Nowhere]]", "![[Plan (v2) 100%]]", "[[The plan#^block1]]",
                 "[[The plan]] in code", "`[[The plan]]` inline", 'supersedes: "[[Twin]]"'):
        assert kept in body, kept
    restored = tmp_path / "restored"
    imported(capsys, "okf", bundle, restored)
    assert (restored / "Links.md").read_text(encoding="utf-8") == source
    read = read_note(restored, "Links.md", config=settings.current())
    assert read.body == read_note(vault, "Links.md", config=settings.current()).body


def test_a_hostile_manifest_changes_nothing_it_should_not(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    text = "---\ntype: Note\n---\nkeep [me](</b.md>)\n"
    (bundle / "a.md").write_text(text, encoding="utf-8")
    edits = [{"at": "x", "was": "", "now": "keep"}, {"at": -3, "was": "", "now": "k"}, {"at": True, "was": "",
             "now": "-"}, {"at": 10**9, "was": "", "now": "a"}, {"at": 20, "was": "[[b]]", "now": "[nope](</b.md>)"}]
    box = tmp_path / "box"
    for path, why in (("../../outside.md", "'..'"), (".obsidian/hidden.md", "hidden")):
        manifest = {"format": "vault-mem okf bundle", "version": 1, "notes": [
            {"concept": "a.md", "path": path, "mtime_ns": "soon", "edits": edits}, {"concept": 3}, "text"]}
        (bundle / "vault-mem.json").write_text(json.dumps(manifest), encoding="utf-8")
        code, answer, err = run(capsys, "import", "okf", str(bundle), "--vault", str(box / "vault"))
        assert code == 3 and answer["skipped"] == 1 and why in answer["skipped_records"][0]["why"], (answer, err)
        assert not box.exists()
    manifest["notes"][0]["path"] = "ok/a.md"
    (bundle / "vault-mem.json").write_text(json.dumps(manifest), encoding="utf-8")
    answer = imported(capsys, "okf", bundle, box / "vault")
    assert answer["created_paths"] == ["ok/a.md"]
    assert (box / "vault" / "ok" / "a.md").read_text(encoding="utf-8") == text
