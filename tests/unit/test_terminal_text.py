"""Vault text printed by the CLI cannot command the terminal or reorder what it shows
(docs/cli.md, Output): control characters and escape sequences (ESC [2J, OSC 0 titles,
OSC 52 clipboard writes, a lone C1 CSI) and bidi controls (U+202E) in titles, bodies, tags,
fields and file names come out visible (\\x1b, \\u202e); --json stays the exact JSON value.
A title with U+202E never becomes a file name that spoofs its extension."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import open_vault, write_notes

from vault_mem.cli import main
from vault_mem.cli.output import json_text, visible

# What a terminal would act on (C0 but tab and newline, DEL, C1) or reorder the line by.
HARMFUL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
CLEAR, TITLE, CLIP, CSI = "\x1b[2J", "\x1b]0;owned\x07", "\x1b]52;c;ZXZpbA==\x1b\\", "\x9b31m"
RLO = "\u202e"
HOSTILE_TITLE = f"Plan {CLEAR}{TITLE}{RLO}gpj.exe"

NOTE = f"""---
title: "Plan \\e[2J\\e]0;owned\\a\\u202egpj.exe"
type: "dec\\x9b31mision"
tags: ["a\\e]52;c;ZXZpbA==\\e\\\\b"]
to: reviewer
from: "x\\e[2Jy"
"odd\\e[2Jkey": "v\\u2066al"
---
Body {CLEAR} then {TITLE} then {CLIP} then {CSI} and {RLO}reversed\r\n[[Lin{CLEAR}k]] tail
שלום\u200f עולם keeps its marks
"""


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    root = write_notes(tmp_path / "vault", {"proj/hostile.md": NOTE, f"proj/spoof{RLO}dm.exe.md": "x\n"})
    vault = open_vault(root)
    return root, vault.index.dir


def harmless(text: str) -> None:
    found = HARMFUL.findall(text)
    assert not found, f"printed raw: {found!r} in {text!r}"


def test_every_command_shows_vault_text_visibly(hostile: tuple[Path, Path],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    root, index_dir = hostile
    where = ["--vault", str(root), "--index-dir", str(index_dir)]
    runs = [["search", "Plan", *where], ["search", *where], ["read", "hostile", *where],
            ["list", "proj", *where], ["domains", *where], ["recall", *where], ["doctor", *where],
            ["stats", *where], ["inbox", "reviewer", *where], ["read", "no\x1b[2Jsuch", *where],
            ["search", "zz\x1b]0;x\x07", "--kind", "k\x9b", *where]]
    printed = ""
    for argv in runs:
        code, out, err = cli(capsys, *argv)
        assert code in (0, 1, 3), (argv, err)
        harmless(out)
        harmless(err)
        printed += out + err
    assert "\\x1b[2J" in printed and "\\x1b]52;c;ZXZpbA==" in printed and "\\x9b31m" in printed
    assert "\\u202egpj.exe" in printed and "spoof\\u202edm.exe" in printed
    assert "\u200f עולם" in printed, "a right-to-left mark in prose stays"


def test_json_stays_the_exact_value_and_escapes_what_a_terminal_acts_on(
        hostile: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root, index_dir = hostile
    code, out, _ = cli(capsys, "read", "hostile", "--vault", str(root), "--index-dir", str(index_dir), "--json")
    assert code == 0
    harmless(out)
    answer: dict[str, Any] = json.loads(out)
    assert answer["title"] == HOSTILE_TITLE
    assert CLIP in answer["body"] and CSI in answer["body"] and answer["type"] == "dec\x9b31mision"
    # the escaping itself, on every character it covers: one JSON value before and after
    every = "".join(map(chr, range(0x20))) + "\x7f" + "".join(map(chr, range(0x80, 0xa0))) + \
        "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029 ok é"
    text = json_text(json.dumps({every: [every]}, ensure_ascii=False))
    harmless(text)
    assert json.loads(text) == {every: [every]}


def test_visible_cannot_be_got_around() -> None:
    # every code point a terminal acts on, alone, doubled, or after a visible backslash
    for code in [*range(0x20), 0x7f, *range(0x80, 0xa0), 0x202a, 0x202e, 0x2066, 0x2069, 0x200e, 0x200f, 0x61c]:
        ch = chr(code)
        for sample in (ch, ch * 2, f"\\{ch}", f"a{ch}b"):
            harmless(visible(sample))
            assert not re.search(r"[\u200e\u200f\u061c]|[\x00-\x1f]", visible(sample))
            if ch not in "\t\n\r\u200e\u200f\u061c":
                harmless(visible(sample, lines=True))
    assert visible("a\r\nb\rc", lines=True) == "a\nb\\x0dc", "a lone carriage return cannot overwrite a line"


@pytest.mark.anyio
async def test_a_title_with_a_bidi_override_never_names_a_file_that_spoofs_its_extension(
        make_vault: Any, mcp_session: Any, capsys: pytest.CaptureFixture[str]) -> None:
    vault = make_vault({"plain.md": "x\n"})
    titles = [f"invoice{RLO}gpj.exe", "a\u2066b\u2069c\u200fd\u202ae\u202cf", f"x{CLEAR}y"]
    async with mcp_session(vault) as c:
        paths = [(await c.call("memory_write", agent="coder", title=t, content="x", domain="in"))["path"]
                 for t in titles]
        read = await c.call("memory_read", ref=paths[0])
    assert paths == ["in/invoicegpj.exe.md", "in/abcdef.md", "in/x2Jy.md"]
    assert read["title"] == titles[0], "the title itself is kept as written"
    where = ["--vault", str(vault.root), "--index-dir", str(vault.index.dir)]
    code, out, err = cli(capsys, "log", *where)
    assert code == 0 and "in/invoicegpj.exe.md" in out
    harmless(out + err)
    code, out, err = cli(capsys, "undo", "--agent", "coder", "--since", "1d", *where)
    assert code == 0 and "in/invoicegpj.exe.md" in out
    harmless(out + err)
