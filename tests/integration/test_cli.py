"""The command line people use: every command on a copy of the sample vault, and its errors."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE_VAULT

from vault_mem.cli import COMMANDS, main

README = Path(__file__).resolve().parent.parent.parent / "README.md"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "vault"
    shutil.copytree(SAMPLE_VAULT, root, ignore=shutil.ignore_patterns(".vault-mem"))
    return root


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".vault-mem" not in p.parts}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_command_reads_without_modifying_a_file(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = digest(vault)
    code, _, err = run(capsys, "index", "--vault", str(vault))
    assert code == 0 and "notes" in err
    assert (vault / ".vault-mem" / ".gitignore").read_text() == "*\n"

    code, out, _ = run(capsys, "doctor", "--vault", str(vault))
    assert code == 3 and "Broken frontmatter.md" in out and "malformed YAML" in out, "problems found: exit 3"
    code, out, _ = run(capsys, "doctor", "--vault", str(vault), "--json")
    report = json.loads(out)
    assert code == 3 and report["status"] == "problems"
    assert any(p["path"] == "Broken frontmatter.md" for p in report["problems"])

    code, out, _ = run(capsys, "stats", "--vault", str(vault), "--json")
    stats = json.loads(out)
    assert code == 0 and stats["notes"] >= 40 and "task" in stats["types"]

    code, out, _ = run(capsys, "search", "--vault", str(vault), "--json", "queue")
    assert code == 0 and json.loads(out)["status"] == "ok"
    code, out, _ = run(capsys, "search", "--vault", str(vault), "queue", "decision")
    assert code == 0 and "Queue decision v1" in out

    code, out, err = run(capsys, "list", "--vault", str(vault), "p200")
    assert code == 0 and "acme/x100/p200" in err and "acme/x200/p200" in err

    code, out, _ = run(capsys, "recall", "--vault", str(vault), "--since", "2024")
    assert code == 0 and out.strip()

    code, out, _ = run(capsys, "domains", "--vault", str(vault), "--json")
    assert code == 0 and any(d["domain"] == "acme/x100/p200" for d in json.loads(out)["domains"])

    listed = json.loads(run(capsys, "list", "--vault", str(vault), "--json", "acme")[1])
    uid = listed["results"][0]["uid"]
    code, out, _ = run(capsys, "read", "--vault", str(vault), uid)
    assert code == 0 and listed["results"][0]["title"] in out
    assert digest(vault) == before, "reading must never modify a user's file"


def test_bad_arguments_give_one_line_naming_the_parameter(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "list", "--vault", str(vault), "acme", "--limit", "ten")
    assert code == 1 and out == ""
    assert "limit" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "read", "--vault", str(vault), "../etc/passwd")
    assert code == 1 and "'.' and '..'" in err


@pytest.mark.parametrize("vault_arg, expected", [
    ("/nonexistent/vault", "does not exist"),
    (__file__, "is a file"),
])
def test_missing_or_file_vault_is_one_clear_line(vault_arg: str, expected: str) -> None:
    done = subprocess.run([sys.executable, "-m", "vault_mem", "index", "--vault", vault_arg],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and expected in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_no_vault_given_says_how_to_give_one(tmp_path: Path) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if k != "VAULT_MEM_VAULT"}
    done = subprocess.run([sys.executable, "-m", "vault_mem", "stats"], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 1 and "--vault" in done.stderr and "VAULT_MEM_VAULT" in done.stderr


def test_serve_tells_a_person_what_is_happening(vault: Path) -> None:
    # stdin at EOF: the stdio server starts, finds no client and ends.
    done = subprocess.run([sys.executable, "-m", "vault_mem", "serve", "--vault", str(vault)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.stdout == "", "on stdio only protocol messages go to stdout"
    assert str(vault) in done.stderr and "Ctrl-C" in done.stderr and "stdio" in done.stderr


def test_every_command_is_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [name for name in COMMANDS if f"vault-mem {name}" not in text]
    assert not missing, f"commands missing from the README: {missing}"


# -- output for people --------------------------------------------------------------------


@pytest.fixture
def columns80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")


def fits(text: str, room: int = 80) -> bool:
    return all(len(line) <= room for line in text.splitlines())


def test_search_rows_fit_80_columns_without_repeating_the_title(
        vault: Path, capsys: pytest.CaptureFixture[str], columns80: None) -> None:
    code, out, err = run(capsys, "search", "--vault", str(vault), "queue")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["score", "updated", "note", "folder"]
    assert fits(out)
    hit = next(line for line in lines if "Queue decision v3" in line)
    assert hit.count("Queue decision v3") == 1 and "acme/x100/p200" in hit and "memory://" not in hit
    assert "notes" in err.splitlines()[0]
    code, _, err = run(capsys, "search", "--vault", str(vault), "--limit", "1", "queue")
    assert err.startswith("1 note;"), "singular for one"


def test_domains_has_headers_and_root_is_one_thing_everywhere(
        vault: Path, capsys: pytest.CaptureFixture[str], columns80: None) -> None:
    code, out, _ = run(capsys, "domains", "--vault", str(vault))
    header, root_row = out.splitlines()[:2]
    assert code == 0 and header.split() == ["active", "archived", "updated", "domain"] and fits(out)
    active, archived = (int(n) for n in root_row.split()[:2])
    assert root_row.endswith("(root)")
    stats = json.loads(run(capsys, "stats", "--vault", str(vault), "--json")[1])
    assert stats["domains"]["(root)"] == stats["notes"] == active + archived, "(root) is the whole vault"
    paths: list[str] = []
    offset = 0
    while offset is not None:
        listed = json.loads(run(capsys, "list", "--vault", str(vault), "(root)", "--status", "all", "--json",
                                "--limit", "200", "--offset", str(offset))[1])
        assert listed["status"] == "ok" and listed["domains"] == [""], "(root) is accepted as the whole vault"
        paths += [row["path"] for row in listed["results"]]
        offset = listed.get("next_offset")
    assert len(set(paths)) == active + archived


def test_read_shows_fields_links_backlinks_and_problems(
        vault: Path, capsys: pytest.CaptureFixture[str], columns80: None) -> None:
    code, out, _ = run(capsys, "read", "--vault", str(vault), "Queue decision v2")
    assert code == 0 and fits(out.split("─" * 80)[0]) and out.startswith("Queue decision v2")
    for field in ("permalink", "type", "status", "created", "updated", "tags", "supersedes", "superseded by"):
        assert f"  {field} " in out, field
    assert "links (3)" in out and "→ memory://research/databases/Postgres as a queue" in out
    assert "backlinks (3)" in out and "problems: none" in out
    code, out, _ = run(capsys, "read", "--vault", str(vault), "Broken frontmatter")
    assert code == 0 and "problems (" in out and "malformed YAML" in out


def test_an_unknown_domain_or_ref_fails_with_the_helpful_message(
        vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "list", "--vault", str(vault), "nosuchdomain")
    assert code == 1 and out == "" and "nosuchdomain" in err and "vault-mem domains" in err
    assert "list_domains" not in err, "a person gets CLI words, not tool names"
    code, out, err = run(capsys, "read", "--vault", str(vault), "no such note at all", "--json")
    answer = json.loads(out)
    assert code == 1 and answer["status"] == "not_found" and "no such note at all" in answer["message"]
    assert len(err.strip().splitlines()) == 1


def test_recall_speaks_of_cli_commands(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "recall", "--vault", str(vault), "--since", "2024")
    assert code == 0 and "memory_read" not in out + err and "chunks" in err


def test_daily_notes_are_recalled_by_the_date_in_their_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    daily = tmp_path / "vault" / "Daily"
    daily.mkdir(parents=True)
    for day in ("2022-01-02", "2022-02-03"):
        (daily / f"{day}.md").write_text(f"# {day}\n\nstandup notes\n", encoding="utf-8")
    code, out, _ = run(capsys, "recall", "--vault", str(tmp_path / "vault"), "--since", "2022-01",
                       "--until", "2022-01", "--json")
    sources = [r["source"] for r in json.loads(out)["results"]]
    assert code == 0 and sources == ["Daily/2022-01-02.md"]


def test_status_tells_the_state_of_the_index(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "index", "--vault", str(vault))  # a build, unless a test before this one made it
    run(capsys, "index", "--vault", str(vault))  # a check against the files: what status tells of
    code, out, _ = run(capsys, "status", "--vault", str(vault), "--json")
    status = json.loads(out)
    assert code == 0 and status["vault"] == str(vault) and status["notes"] >= 40
    assert status["build"] == "complete" and status["problem_files"] >= 1 and status["index_bytes"] > 0
    assert status["servers"] == [] and f"{status['notes']} notes" in status["last_reconcile"]["summary"]
    code, out, _ = run(capsys, "status", "--vault", str(vault))
    assert code == 0 and "no server is running" in out and "complete" in out


def test_status_builds_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / "a.md").write_text("# a\n", encoding="utf-8")
    code, out, _ = run(capsys, "status", "--vault", str(root), "--json")
    assert code == 0 and json.loads(out)["build"] == "none" and json.loads(out)["notes"] == 0


ARGUMENTS = {"list": ["acme"], "read": ["Inbox"], "search": ["queue"], "connect": ["cursor", "--print"],
             "inbox": ["reviewer"], "undo": ["--agent", "coder", "--since", "1d"], "history": ["Inbox"]}
# serve, ui and export own stdout (ui: tests/integration/test_ui.py); disconnect takes no vault; import creates a
# vault that does not exist yet (its JSON answers: tests/unit/test_import.py); meaning takes no vault and
# downloads (against a local server in tests/integration/test_meaning.py).
NOT_HERE = ("serve", "ui", "export", "disconnect", "import", "meaning", "vaults")


@pytest.mark.parametrize("name", [name for name in COMMANDS if name not in NOT_HERE])
def test_every_command_but_serve_answers_one_json_object(
        name: str, vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, name, "--vault", str(vault), "--json", *ARGUMENTS.get(name, []))
    if name == "sync":  # this vault is no git work tree: sync says so and fails (docs/git.md)
        assert code == 1 and "not a git repository" in json.loads(out)["message"]
    else:
        assert code in (0, 3) and json.loads(out)["status"] in ("ok", "problems")
    code, out, _ = run(capsys, name, "--vault", str(vault / "missing"), "--json", *ARGUMENTS.get(name, []))
    if name == "connect":  # --print shows the entry of a folder not made yet (docs/clients.md)
        assert code == 0 and json.loads(out)["status"] == "ok"
        code, out, _ = run(capsys, name, "--vault", str(vault / "missing"), "--json", "cursor")
    assert code == 1 and "does not exist" in json.loads(out)["message"], "errors are JSON on stdout too"


def test_vault_mem_alone_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys)
    assert code == 0 and all(f"  {name} " in out for name in COMMANDS)


def test_misspelt_command_or_option_gets_a_suggestion(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "serach", "queue")
    assert code == 2 and "did you mean search?" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "search", "--vault", str(vault), "--limt", "3", "queue")
    assert code == 2 and err.startswith("vault-mem search: error:") and "did you mean --limit?" in err
