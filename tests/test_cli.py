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

README = Path(__file__).resolve().parent.parent / "README.md"


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
    assert code == 0 and "Broken frontmatter.md" in out and "malformed YAML" in out

    code, out, _ = run(capsys, "stats", "--vault", str(vault), "--json")
    stats = json.loads(out)
    assert code == 0 and stats["notes"] >= 40 and "task" in stats["types"]

    code, out, _ = run(capsys, "search", "--vault", str(vault), "--json", "queue")
    assert code == 0 and json.loads(out)["status"] == "ok"
    code, out, _ = run(capsys, "search", "--vault", str(vault), "queue", "decision")
    assert code == 0 and "memory://" in out

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


def test_every_command_is_documented_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [name for name in COMMANDS if f"vault-mem {name}" not in text]
    assert not missing, f"commands missing from the README: {missing}"
