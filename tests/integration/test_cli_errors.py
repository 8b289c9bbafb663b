"""Every mistake a person can make at the command line ends in one line on stderr and a
non-zero exit, never a traceback; serve says nothing about serving before its options pass.

The table drives the real CLI (``python -m vault_mem``) in a fresh process per case.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from serving import http_args

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class Place:
    """The folders a case may use, made fresh for each case."""

    tmp: Path
    vault: Path
    env: dict[str, str]

    def unwritable(self) -> Path:
        """A folder nobody here can create anything in (root ignores modes: use /sys then)."""
        if IS_ROOT:
            if not Path("/sys/kernel").is_dir():
                pytest.skip("running as root without /sys: no unwritable folder to test with")
            return Path("/sys/kernel")
        folder = self.tmp / "locked"
        folder.mkdir(exist_ok=True)
        folder.chmod(0o500)
        return folder

    def unlistable(self) -> Path:
        if IS_ROOT:
            pytest.skip("root can list any folder")
        folder = self.tmp / "closed"
        folder.mkdir(exist_ok=True)
        folder.chmod(0o000)
        return folder

    def read_only_vault(self) -> Path:
        if IS_ROOT:
            return Path("/sys/kernel/mm")  # a folder root cannot write into, holding no notes
        folder = self.tmp / "ro-vault"
        folder.mkdir(exist_ok=True)
        (folder / "a.md").write_text("# a\n", encoding="utf-8")
        folder.chmod(0o555)
        return folder


Case = Callable[[Place], list[str]]


def taken_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def with_home(place: Place, home: Path) -> list[str]:
    place.env["HOME"] = str(home)
    place.env["USERPROFILE"] = str(home)
    return ["index", "--vault", str(home)]


def index_dir_file(place: Place) -> list[str]:
    (place.tmp / "a-file").write_text("x", encoding="utf-8")
    return ["index", "--vault", str(place.vault), "--index-dir", str(place.tmp / "a-file")]


def index_dir_of_other_files(place: Place) -> list[str]:
    (place.tmp / "documents").mkdir()
    (place.tmp / "documents" / "thesis.docx").write_text("precious", encoding="utf-8")
    return ["index", "--vault", str(place.vault), "--index-dir", str(place.tmp / "documents")]


def read_only_vault_and_cache(place: Place) -> list[str]:
    place.env["XDG_CACHE_HOME"] = str(place.unwritable() / "cache")
    return ["index", "--vault", str(place.read_only_vault())]


# (name, argv builder, what the one line must say)
CASES: list[tuple[str, Case, str]] = [
    ("vault missing", lambda p: ["index", "--vault", str(p.tmp / "nope")], "does not exist"),
    ("vault is a file", lambda p: ["search", "--vault", __file__, "x"], "is a file"),
    ("vault is the file-system root", lambda p: ["index", "--vault", Path(p.tmp.anchor).as_posix()], "--yes"),
    ("vault is the home folder", lambda p: with_home(p, p.vault), "home folder"),
    ("serve on an unlikely vault", lambda p: ["serve", "--vault", Path(p.tmp.anchor).as_posix()], "serve it anyway"),
    ("index folder unwritable",
     lambda p: ["index", "--vault", str(p.vault), "--index-dir", str(p.unwritable() / "ix")], "cannot be written"),
    ("index folder is a file", index_dir_file, "is a file"),
    ("index folder holds other files", index_dir_of_other_files, "not a vault-mem index"),
    ("read-only vault and unwritable cache", read_only_vault_and_cache, "read-only"),
    ("port out of range", lambda p: ["serve", "--vault", str(p.vault), "--http", "--port", "99999"], "1..65535"),
    ("port not a number", lambda p: ["serve", "--vault", str(p.vault), "--port", "http"], "not a port number"),
    ("port taken", lambda p: ["serve", "--vault", str(p.vault), "--http", "--port", str(p.env["TAKEN_PORT"])],
     "already in use"),
    ("non-loopback bind without a token",
     lambda p: ["serve", "--vault", str(p.vault), *http_args(), "--host", "0.0.0.0"], "--token"),
    ("non-loopback bind without allowed hosts",
     lambda p: ["serve", "--vault", str(p.vault), *http_args(), "--host", "0.0.0.0", "--token", "s3cret"],
     "--allowed-host"),
    ("every origin", lambda p: ["serve", "--vault", str(p.vault), "--http", "--allow-origin", "*"],
     "name each origin"),
    ("every origin, with a token",
     lambda p: ["serve", "--vault", str(p.vault), "--http", "--token", "s3cret", "--allow-origin", " * "],
     "with or without a token"),
    ("the origin of every sandboxed frame",
     lambda p: ["serve", "--vault", str(p.vault), "--http", "--allow-origin", "null"], "--allow-origin"),
    ("an origin with a path",
     lambda p: ["serve", "--vault", str(p.vault), "--http", "--allow-origin", "http://127.0.0.1:8080/app"],
     "is not an origin"),
    ("an origin on stdio", lambda p: ["serve", "--vault", str(p.vault), "--allow-origin", "http://127.0.0.1:8080"],
     "applies to --http only"),
    ("host that does not resolve",
     lambda p: ["serve", "--vault", str(p.vault), *http_args(), "--host", "no-such-host.invalid"], "--host"),
    ("misspelt command", lambda p: ["serach", "queue"], "did you mean search?"),
    ("misspelt option", lambda p: ["search", "--vault", str(p.vault), "--limt", "3"], "did you mean --limit?"),
    ("missing argument", lambda p: ["list", "--vault", str(p.vault)], "DOMAIN"),
    ("stray argument", lambda p: ["read", "--vault", str(p.vault), "Queue", "decision"], "quote"),
    ("limit not a number", lambda p: ["list", "--vault", str(p.vault), "acme", "--limit", "ten"], "--limit"),
    ("limit out of range", lambda p: ["recall", "--vault", str(p.vault), "--limit", "501"], "--limit"),
    ("bad date", lambda p: ["recall", "--vault", str(p.vault), "--since", "last tuesday"], "--since"),
    ("unknown kind", lambda p: ["search", "--vault", str(p.vault), "--kind", "nosuchkind"], "kind"),
    ("path outside the vault", lambda p: ["read", "--vault", str(p.vault), "../etc/passwd"], ".."),
    ("unknown note", lambda p: ["read", "--vault", str(p.vault), "no such note"], "no such note"),
    ("unknown domain", lambda p: ["list", "--vault", str(p.vault), "nosuchdomain"], "vault-mem domains"),
    ("no vault at all", lambda p: ["stats"], "VAULT_MEM_VAULT"),
    ("vault cannot be listed", lambda p: ["doctor", "--vault", str(p.unlistable())], "cannot be read"),
    ("status of a missing vault", lambda p: ["status", "--vault", str(p.tmp / "nope")], "does not exist"),
    ("offset not a number", lambda p: ["read", "--vault", str(p.vault), "Queue decision", "--offset", "x"],
     "--offset"),
    ("unknown status", lambda p: ["list", "--vault", str(p.vault), "acme", "--status", "gone"], "--status"),
    ("since after until", lambda p: ["recall", "--vault", str(p.vault), "--since", "2025", "--until", "2024"],
     "--since"),
    ("search limit zero", lambda p: ["search", "--vault", str(p.vault), "--limit", "0", "queue"], "--limit"),
    ("unknown vault name", lambda p: ["stats", "--vault", "nosuchname"], "no vault is named"),
    ("damaged list of named vaults", lambda p: damaged_names(p, ["stats", "--vault", "work"]),
     "the list of named vaults"),
    ("vault name that is a path", lambda p: ["vaults", "add", "a/b", str(p.vault)], "is not a vault name"),
    ("two vaults to a one-vault command", lambda p: ["stats", "--vault", str(p.vault), "--vault", str(p.vault)],
     "works on one vault"),
]


def damaged_names(place: Place, argv: list[str]) -> list[str]:
    """``argv``, once vaults.json in the case's configuration folder is not JSON."""
    names = Path(place.env["XDG_CONFIG_HOME"]) / "vault-mem" / "vaults.json"
    names.parent.mkdir(parents=True, exist_ok=True)
    names.write_text('{"version": 1, "vaults": {"work": ', encoding="utf-8")
    return argv


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    vault = tmp_path / "vault"
    (vault / "acme").mkdir(parents=True)
    (vault / "acme" / "Queue decision.md").write_text("# Queue decision\n\nPostgres.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_MEM_")}
    ports = taken_port()
    env["TAKEN_PORT"] = str(next(ports))
    yield Place(tmp_path, vault, env)
    ports.close()
    for folder in tmp_path.rglob("*"):  # let pytest clean up what a case locked
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o700)


@pytest.mark.parametrize("argv, expected", [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_a_mistake_is_one_line_and_a_failing_exit(place: Place, argv: Case, expected: str) -> None:
    args = argv(place)
    done = subprocess.run([sys.executable, "-m", "vault_mem", *args], capture_output=True, text=True,
                          timeout=120, env=place.env, cwd=place.tmp, stdin=subprocess.DEVNULL)
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode not in (0, None), done.stderr
    assert len(lines) == 1, done.stderr
    assert expected in lines[0], lines[0]
    assert "serving" not in done.stderr and "streamable HTTP" not in done.stderr, "nothing announced"
    assert done.stdout == ""


def test_an_unlikely_vault_is_indexed_with_yes(place: Place) -> None:
    home = place.vault
    place.env["HOME"] = place.env["USERPROFILE"] = str(home)
    done = subprocess.run([sys.executable, "-m", "vault_mem", "index", "--vault", str(home), "--yes"],
                          capture_output=True, text=True, timeout=120, env=place.env)
    assert done.returncode == 0 and "built the index of 1 note in" in done.stderr, done.stderr
    again = subprocess.run([sys.executable, "-m", "vault_mem", "search", "--vault", str(home), "queue"],
                           capture_output=True, text=True, timeout=120, env=place.env)
    assert again.returncode == 0 and "Queue decision" in again.stdout, "once indexed, no more questions"


def test_a_folder_of_many_markdown_files_counts_as_unlikely(tmp_path: Path) -> None:
    from vault_mem.vault.guard import count_markdown

    for i in range(12):
        (tmp_path / f"n{i}.md").write_text("x", encoding="utf-8")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "skip.md").write_text("x", encoding="utf-8")
    assert count_markdown(tmp_path, 100) == 12
    assert count_markdown(tmp_path, 5) == 6, "counting stops just past the limit"


def test_nothing_is_deleted_from_a_folder_of_other_files(place: Place) -> None:
    args = index_dir_of_other_files(place)
    subprocess.run([sys.executable, "-m", "vault_mem", *args], capture_output=True, timeout=120, env=place.env)
    assert (place.tmp / "documents" / "thesis.docx").read_text(encoding="utf-8") == "precious"


