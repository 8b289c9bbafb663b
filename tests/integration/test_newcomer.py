"""What a newcomer meets first (docs/getting-started.md): serve's start-up lines say each thing
once and say what happened; output piped to another program is never cut."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import write_notes
from serving import serve_args

LONG = "A decision about the queue " + "with many words " * 12 + "end"


def env_without_columns() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def test_serve_on_a_fresh_index_says_building_once_and_how_many_notes_it_built(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "vault", {f"n{i}.md": f"note {i}\n" for i in range(3)})
    proc = subprocess.Popen([sys.executable, *serve_args(root)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    said: list[str] = []
    try:
        while not any("index ready" in line for line in said):
            line = lines.get(timeout=120)  # only catches a hang
            assert line is not None, "".join(said)
            said.append(line)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the end of stdin ends a stdio server
        proc.wait(timeout=60)
        reader.join(timeout=60)
        assert proc.stderr is not None
        proc.stderr.close()
    text = "".join(said)
    assert text.count("in the background") == 1, text
    ready = next(line for line in said if "index ready" in line)
    assert "built the index of 3 notes" in ready and "0 added" not in ready, ready


def test_piped_output_keeps_whole_lines(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "vault", {"deep/folder/with/a/long/name/queue.md":
                                            f"---\ntitle: {LONG}\n---\nthe queue body\n"})
    for command in (["search", "queue"], ["list", "(root)"], ["read", "queue"]):
        done = subprocess.run([sys.executable, "-m", "vault_mem", *command, "--vault", str(root)],
                              capture_output=True, text=True, env=env_without_columns(), timeout=120)
        assert done.returncode == 0, done.stderr
        assert LONG in done.stdout and "…" not in done.stdout, done.stdout
        assert "deep/folder/with/a/long/name" in done.stdout
    narrow = env_without_columns() | {"COLUMNS": "80"}  # $COLUMNS still sizes the rows when asked
    done = subprocess.run([sys.executable, "-m", "vault_mem", "search", "queue", "--vault", str(root)],
                          capture_output=True, text=True, env=narrow, timeout=120)
    assert all(len(line) <= 80 for line in done.stdout.splitlines()) and "…" in done.stdout


DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
SAMPLE = Path(__file__).resolve().parent.parent.parent / "sample_vault"


def sh_blocks(text: str) -> list[list[str]]:
    """The lines of each ```sh block, in order."""
    return [block.split("```", 1)[0].strip().splitlines() for block in text.split("```sh\n")[1:]]


ACTIVATE = Path(sys.prefix) / "bin" / "activate"


@pytest.mark.skipif(os.name == "nt" or not ACTIVATE.is_file() or not shutil.which("bash"),
                    reason="runs the POSIX steps in bash, with the test's own virtualenv as the one installed")
def test_getting_started_runs_as_written_in_a_fresh_shell(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".vault-mem-venv").symlink_to(Path(sys.prefix))  # what step 1's venv and pip made
    repo = tmp_path / "vault-mem"
    shutil.copytree(SAMPLE, repo / "sample_vault")
    install, index, look, *_ = sh_blocks((DOCS / "getting-started.md").read_text(encoding="utf-8"))
    lines = [line for line in install if not line.startswith(("python3 -m venv", "~/.vault-mem-venv/bin/pip"))]
    lines += [line.replace("/path/to/vault-mem", str(repo)) for line in index] + look
    script = "\n".join(f'{line}\necho "exit $? of: {line[:30]}"' for line in lines)
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, text=True,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, cwd=tmp_path, timeout=300)
    said = [line for line in done.stdout.splitlines() if line.startswith("exit ")]
    assert len(said) == len(lines), done.stdout + done.stderr
    for line in said:
        # doctor exits 3 when it finds problems: sample_vault has a broken note on purpose
        assert line.startswith("exit 0 ") or line.startswith("exit 3 of: vault-mem doctor"), done.stderr
    assert "command not found" not in done.stderr
