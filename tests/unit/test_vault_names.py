"""Vaults named once (docs/cli.md, "vault-mem vaults"): ``vaults add|list|remove`` and the
``vaults.json`` they keep beside agents.json, ``--vault NAME`` on the commands, the rule for a value
that is both a name and a folder, and every way around the names: a name with ``/`` or ``..``, an
entry pointing to a file, a removed name, a damaged file (never rewritten). Real files and real
CLI runs (``main``, and a process for the rest)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import write_notes

from vault_mem.cli import main
from vault_mem.cli.common import named_vaults
from vault_mem.errors import InvalidInput, VaultUnavailable


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def registry(config: Path) -> Path:
    return config / "vault-mem" / "vaults.json"


@pytest.fixture
def two(tmp_path: Path) -> dict[str, Path]:
    """Two vaults with a note each, whose words tell them apart."""
    return {"work": write_notes(tmp_path / "work-notes", {"w.md": "# Work\nthe quarterly zebra plan\n"}),
            "home": write_notes(tmp_path / "home-notes", {"h.md": "# Home\nthe garden walrus\n"})}


def test_add_list_remove_keep_the_names_in_order_in_vaults_json(
        tmp_path: Path, own_config_folder: Path, two: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "vaults", "list")
    assert code == 0 and "no vault is named yet" in err and "vaults add" in err
    for name in ("work", "home"):
        assert run(capsys, "vaults", "add", name, str(two[name]))[0] == 0
    code, out, _ = run(capsys, "vaults", "add", "work", str(two["work"]), "--json")
    assert code == 0 and json.loads(out)["action"] == "unchanged"
    stored = json.loads(registry(own_config_folder).read_text(encoding="utf-8"))
    assert stored["version"] == 1 and list(stored["vaults"]) == ["work", "home"], "kept in the order added"
    assert stored["vaults"]["home"]["path"] == str(two["home"])
    code, out, _ = run(capsys, "vaults", "list", "--json")
    listed = json.loads(out)
    assert code == 0 and [(v["name"], v["path"], v["exists"]) for v in listed["vaults"]] == [
        ("work", str(two["work"]), True), ("home", str(two["home"]), True)]
    assert listed["file"] == str(registry(own_config_folder))
    code, out, _ = run(capsys, "vaults")
    assert code == 0 and out.startswith("name  folder") and "\nwork  " in out and "\nhome  " in out

    code, out, _ = run(capsys, "vaults", "remove", "home", "--json")
    assert code == 0 and json.loads(out) == {"status": "ok", "removed": "home", "path": str(two["home"])}
    assert (two["home"] / "h.md").is_file(), "removing a name leaves the folder as it is"
    assert list(json.loads(registry(own_config_folder).read_text(encoding="utf-8"))["vaults"]) == ["work"]


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_vaults_json_is_owner_only_like_agents_json(own_config_folder: Path, two: dict[str, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "vaults", "add", "work", str(two["work"]))[0] == 0
    assert registry(own_config_folder).stat().st_mode & 0o777 == 0o600
    assert registry(own_config_folder).parent.stat().st_mode & 0o777 == 0o700
    assert not list(registry(own_config_folder).parent.glob("*.tmp")), "no temporary file left behind"


@pytest.mark.parametrize("name", ["a/b", "..", ".", "../work", ".hidden", "a b", "*", "x" * 65, "work\\x", "C:"])
def test_a_name_that_could_read_as_a_path_is_refused(name: str, own_config_folder: Path, two: dict[str, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "vaults", "add", name, str(two["work"]))
    assert code == 1 and "is not a vault name" in err and "Traceback" not in err
    assert not registry(own_config_folder).exists(), "nothing was written"
    code, _, err = run(capsys, "vaults", "remove", name)
    assert code == 1 and "is not a vault name" in err


def test_add_refuses_a_file_a_missing_folder_a_taken_name_and_a_folder_named_twice(
        tmp_path: Path, own_config_folder: Path, two: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "notes.md"
    a_file.write_text("# not a folder\n", encoding="utf-8")
    code, _, err = run(capsys, "vaults", "add", "f", str(a_file))
    assert code == 1 and "is a file" in err
    code, _, err = run(capsys, "vaults", "add", "gone", str(tmp_path / "missing"))
    assert code == 1 and "does not exist" in err
    assert run(capsys, "vaults", "add", "work", str(two["work"]))[0] == 0
    before = registry(own_config_folder).read_bytes()
    code, _, err = run(capsys, "vaults", "add", "work", str(two["home"]))
    assert code == 1 and f"'work' is already the name of {two['work']}" in err and "vaults remove work" in err
    code, _, err = run(capsys, "vaults", "add", "again", str(two["work"]))
    assert code == 1 and "registered already, as 'work'" in err
    assert registry(own_config_folder).read_bytes() == before
    code, _, err = run(capsys, "vaults", "remove", "nope")
    assert code == 1 and "no vault is named 'nope'" in err and "registered: work" in err
    code, _, err = run(capsys, "vaults", "list", str(two["work"]))
    assert code == 1 and "takes no name" in err


def test_vault_name_on_a_command_is_that_folder(two: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    for name in two:
        assert run(capsys, "vaults", "add", name, str(two[name]))[0] == 0
    code, out, _ = run(capsys, "search", "zebra", "--vault", "work", "--json")
    assert code == 0 and [row["title"] for row in json.loads(out)["notes"]] == ["Work"]
    code, out, _ = run(capsys, "search", "zebra", "--vault", "home", "--json")
    assert code == 0 and json.loads(out)["notes"] == [], "one vault's notes never show in another"
    code, out, _ = run(capsys, "--vault", "home", "search", "walrus", "--json")
    assert code == 0 and [row["title"] for row in json.loads(out)["notes"]] == ["Home"]
    code, out, _ = run(capsys, "status", "--vault", "whatever=" + str(two["home"]), "--json")
    assert code == 0 and json.loads(out)["vault"] == str(two["home"]), "NAME=DIR on a one-vault command is DIR"


def test_an_unknown_or_removed_name_is_an_error_listing_the_names_never_a_fallback(
        tmp_path: Path, two: dict[str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in two:
        assert run(capsys, "vaults", "add", name, str(two[name]))[0] == 0
    assert run(capsys, "vaults", "remove", "home")[0] == 0
    for argv in (["stats", "--vault", "home"], ["search", "walrus", "--vault", "home"],
                 ["agents", "list", "--vault", "home"], ["connect", "cursor", "--vault", "home"],
                 ["connect", "cursor", "--vault", "work", "--vault", "home", "--print"]):
        code, out, err = run(capsys, *argv, "--json")
        message = json.loads(out)["message"]
        assert code == 1 and "no vault is named 'home'" in message and "registered: work" in message, argv
        assert "Traceback" not in err and "walrus" not in out
    monkeypatch.setenv("VAULT_MEM_VAULT", "home")
    code, _, err = run(capsys, "stats")
    assert code == 1 and "no vault is named 'home'" in err, "$VAULT_MEM_VAULT takes a name the same way"
    monkeypatch.setenv("VAULT_MEM_VAULT", "work")
    code, out, _ = run(capsys, "stats", "--json")
    assert code == 0 and json.loads(out)["notes"] == 1


def test_a_folder_in_the_working_directory_comes_first_and_stderr_says_so(
        tmp_path: Path, two: dict[str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule for a value that is both: the folder, as before names existed (a script's
    ``--vault notes`` keeps its meaning), and stderr names the vault it did not use."""
    here = tmp_path / "here"
    write_notes(here / "work", {"local.md": "# Local\nthe local zebra\n"})
    monkeypatch.chdir(here)
    assert run(capsys, "vaults", "add", "work", str(two["work"]))[0] == 0
    code, out, err = run(capsys, "search", "zebra", "--vault", "work", "--json")
    assert code == 0 and [row["title"] for row in json.loads(out)["notes"]] == ["Local"]
    assert f"the folder {here / 'work'} is used, not the vault named 'work' ({two['work']})" in err
    assert run(capsys, "vaults", "add", "here-work", str(here / "work"))[0] == 0
    code, out, err = run(capsys, "search", "zebra", "--vault", "here-work", "--json")
    assert code == 0 and [row["title"] for row in json.loads(out)["notes"]] == ["Local"] and err == ""
    code, out, err = run(capsys, "search", "zebra", "--vault", str(two["work"]), "--json")
    assert code == 0 and [row["title"] for row in json.loads(out)["notes"]] == ["Work"] and err == ""


def test_a_command_on_one_vault_refuses_two(two: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "stats", "--vault", str(two["work"]), "--vault", str(two["home"]))
    assert code == 1 and "works on one vault, and 2 were given" in err


def test_a_symlink_to_a_named_folder_is_that_folder(tmp_path: Path, own_config_folder: Path, two: dict[str, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "vaults", "add", "work", str(two["work"]))[0] == 0
    try:
        os.symlink(two["work"], tmp_path / "link", target_is_directory=True)
    except (OSError, NotImplementedError) as exc:  # Windows without the right to make symlinks
        pytest.skip(f"symlinks cannot be made here: {exc}")
    before = registry(own_config_folder).read_bytes()
    code, _, err = run(capsys, "vaults", "add", "alias", str(tmp_path / "link"))
    assert code == 1 and "registered already, as 'work'" in err
    assert registry(own_config_folder).read_bytes() == before


def write_registry(config: Path, text: str) -> Path:
    path = registry(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def entry(path: Path | str) -> dict[str, Any]:
    return {"path": str(path), "added": "2026-12-01T00:00:00Z"}


@pytest.mark.parametrize(("text", "said"), [
    ("{not json", "is not valid JSON"),
    ('{"version": 1, "vaults": {"work": {"path": "/a"}, "work": {"path": "/b"}}}', 'has the key "work" twice'),
    ('{"version": 2, "vaults": {}}', "has version 2, not 1"),
    ('{"version": 1}', 'has no "vaults" object'),
    ('[1, 2]', "is not a JSON object"),
    ('{"version": 1, "vaults": {"a/b": {"path": "/tmp"}}}', 'names a vault "a/b", which is not a vault name'),
    ('{"version": 1, "vaults": {"..": {"path": "/tmp"}}}', 'names a vault "..", which is not a vault name'),
    ('{"version": 1, "vaults": {"work": {"path": "relative/folder"}}}', "gives vault 'work' no absolute folder"),
    ('{"version": 1, "vaults": {"work": "/tmp"}}', "gives vault 'work' no absolute folder"),
])
def test_a_damaged_vaults_json_is_refused_everywhere_and_never_rewritten(
        text: str, said: str, own_config_folder: Path, two: dict[str, Path],
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = write_registry(own_config_folder, text)
    monkeypatch.chdir(tmp_path)
    for argv in (["vaults", "list"], ["vaults", "add", "home", str(two["home"])], ["vaults", "remove", "work"],
                 ["stats", "--vault", "work"], ["agents", "list"], ["connect", "cursor", "--print"]):
        code, _, err = run(capsys, *argv)
        assert code == 1 and said in err and str(path) in err and "Traceback" not in err, argv
        assert "fix it, or move it away" in err
    assert path.read_text(encoding="utf-8") == text, "a file vault-mem cannot read is never rewritten"
    code, out, _ = run(capsys, "stats", "--vault", str(two["work"]), "--json")
    assert code == 0 and json.loads(out)["notes"] == 1, "a folder given as a path does not read the names at all"
    with pytest.raises(InvalidInput, match="fix it, or move it away"):
        named_vaults([], None)


def test_a_vaults_json_that_is_a_folder_or_names_one_folder_twice_is_damaged(
        own_config_folder: Path, two: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    write_registry(own_config_folder, json.dumps({"version": 1, "vaults": {"a": entry(two["work"]),
                                                                           "b": entry(two["work"])}}))
    code, _, err = run(capsys, "vaults", "list")
    assert code == 1 and f"names the folder {two['work']} twice ('a' and 'b')" in err
    registry(own_config_folder).unlink()
    registry(own_config_folder).mkdir()
    code, _, err = run(capsys, "vaults", "add", "work", str(two["work"]))
    assert code == 1 and "is not a regular file" in err and registry(own_config_folder).is_dir()


def test_a_name_whose_entry_points_to_a_file_or_nowhere_is_refused_naming_it(
        tmp_path: Path, own_config_folder: Path, two: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "secret.txt"
    a_file.write_text("not a vault\n", encoding="utf-8")
    write_registry(own_config_folder, json.dumps({"version": 1, "vaults": {
        "work": entry(two["work"]), "file": entry(a_file), "gone": entry(tmp_path / "gone")}}))
    code, _, err = run(capsys, "stats", "--vault", "file")
    assert code == 1 and "is a file (the folder of the vault named 'file')" in err and "vaults remove file" in err
    code, _, err = run(capsys, "stats", "--vault", "gone")
    assert code == 1 and "does not exist (the folder of the vault named 'gone')" in err
    code, out, _ = run(capsys, "vaults", "list", "--json")
    assert [(v["name"], v["exists"]) for v in json.loads(out)["vaults"]] == [
        ("work", True), ("file", False), ("gone", False)]
    with pytest.raises(VaultUnavailable, match="the vault named 'file'"):
        named_vaults([], None)  # serve with no --vault: every named vault, or none (never the others quietly)


def test_named_vaults_takes_names_and_else_every_named_vault_in_order(
        tmp_path: Path, two: dict[str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match="no vault given"):
        named_vaults([], None)
    for name in ("home", "work"):
        assert run(capsys, "vaults", "add", name, str(two[name]))[0] == 0
    assert named_vaults([], None) == {"home": two["home"], "work": two["work"]}
    assert named_vaults([], "work") == {"work": two["work"]}, "$VAULT_MEM_VAULT comes before the names"
    assert named_vaults(["work", f"h2={two['home']}"], None) == {"work": two["work"], "h2": two["home"]}
    assert named_vaults([str(two["work"])], None) == {"work-notes": two["work"]}, "a folder: named after it"
    with pytest.raises(InvalidInput, match="is given twice"):
        named_vaults(["work", str(two["work"])], None)
    with pytest.raises(VaultUnavailable, match="no vault is named 'nope'"):
        named_vaults(["work", "nope"], None)
    assert run(capsys, "vaults", "remove", "home")[0] == 0
    assert named_vaults([], None) == {"work": two["work"]}, "a removed name is no longer served"


def test_import_into_a_new_folder_by_a_name_like_path_still_makes_it(
        tmp_path: Path, two: dict[str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A value that is neither a folder nor a name stays the path it always was: import makes it."""
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "vaults", "add", "work", str(two["work"]))[0] == 0
    records = tmp_path / "mem.jsonl"
    records.write_text(json.dumps({"text": "the imported otter", "title": "Otter"}) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "import", "jsonl", str(records), "--vault", "fresh")
    assert code == 0, err
    assert any((tmp_path / "fresh").rglob("*.md"))
    code, _, err = run(capsys, "import", "jsonl", str(records), "--vault", "work")
    assert code == 0, err
    assert len(list(two["work"].rglob("*.md"))) == 2, "a name imports into its folder"


def test_a_name_works_in_a_fresh_process_with_the_environments_config_folder(
        tmp_path: Path, two: dict[str, Path]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "VAULT_MEM_VAULT"}
    add = subprocess.run([sys.executable, "-m", "vault_mem", "vaults", "add", "work", str(two["work"])],
                         capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert add.returncode == 0, add.stderr
    done = subprocess.run([sys.executable, "-m", "vault_mem", "search", "zebra", "--vault", "work", "--json"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["notes"][0]["title"] == "Work", done.stderr
    nothing = subprocess.run([sys.executable, "-m", "vault_mem", "stats"], capture_output=True, text=True,
                             timeout=120, env=env, cwd=tmp_path)
    assert nothing.returncode == 1 and "--vault NAME" in nothing.stderr and "VAULT_MEM_VAULT" in nothing.stderr


def test_vaults_added_at_the_same_time_are_all_kept(tmp_path: Path) -> None:
    """One change of vaults.json at a time (the lock agents.json has): none of eight is lost."""
    import threading

    from vault_mem.served.registry import add_vault, registered
    from vault_mem.settings import Settings

    folders = {f"v{i}": write_notes(tmp_path / f"v{i}", {"a.md": "# a\n"}) for i in range(8)}
    config = Settings()
    threads = [threading.Thread(target=lambda n=n: add_vault(n, folders[n], config=config)) for n in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert {name: entry.path for name, entry in registered().items()} == folders
