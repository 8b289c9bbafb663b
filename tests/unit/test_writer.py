"""The file layer of the write tools: real files in tmp_path, byte-level diffs, round trips.

Function-scoped fixtures are not reset between Hypothesis examples, so the property
tests make their own ``tempfile.TemporaryDirectory``.
"""

from __future__ import annotations

import dataclasses
import difflib
import errno
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_mem import settings as vm_settings
from vault_mem.errors import InvalidInput, NotFound, WriteFailed
from vault_mem.settings import Settings
from vault_mem.vault.frontmatter import load_yaml, split_frontmatter
from vault_mem.vault.reader import normalize_tags, read_note
from vault_mem.vault.writer import (
    append_paragraph,
    atomic_write,
    create_exclusive,
    decode_for_edit,
    move_to_trash,
    note_filename,
    render_frontmatter,
    render_note,
    replace_body,
    set_keys,
)
from vault_mem.vault.yamlstyle import same_value

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

HAND_WRITTEN = """\
---
# written by hand
title:   "Meeting notes"   # keep this comment
type: note
tags: [work, 'q3']
aliases:
    - Sync
    - Weekly
created: 2024-01-05
related: '[[Other]]'
description: >
  folded text
  over two lines
---
# Meeting

Body text.
"""


def changed_lines(old: str, new: str) -> list[str]:
    """The -/+ lines of a diff, without the headers."""
    diff = difflib.unified_diff(old.splitlines(True), new.splitlines(True), n=0)
    return [line for line in diff if line[:1] in "+-" and line[:3] not in ("---", "+++")]


def fields_of(text: str) -> dict[str, Any]:
    split = split_frontmatter(text.removeprefix("\ufeff").replace("\r\n", "\n"))
    loaded = load_yaml(split.yaml_text or "", Settings())
    assert loaded.parsed, loaded.problems
    return loaded.data


# --- set_keys: one key, one line ----------------------------------------------------------

def test_setting_a_scalar_changes_exactly_its_line_and_keeps_the_comment() -> None:
    new = set_keys(HAND_WRITTEN, {"type": "decision"}, config=vm_settings.current())
    assert changed_lines(HAND_WRITTEN, new) == ["-type: note\n", "+type: decision\n"]


def test_quoted_value_keeps_its_quotes_spacing_and_trailing_comment() -> None:
    new = set_keys(HAND_WRITTEN, {"title": "Planning notes"}, config=vm_settings.current())
    assert changed_lines(HAND_WRITTEN, new) == [
        '-title:   "Meeting notes"   # keep this comment\n',
        '+title:   "Planning notes"   # keep this comment\n',
    ]


def test_flow_list_stays_a_flow_list() -> None:
    new = set_keys(HAND_WRITTEN, {"tags": ["work", "q4", "a, b"]}, config=vm_settings.current())
    assert changed_lines(HAND_WRITTEN, new) == [
        "-tags: [work, 'q3']\n", "+tags: [work, q4, 'a, b']\n",
    ]
    assert fields_of(new)["tags"] == ["work", "q4", "a, b"]


def test_block_list_is_replaced_cleanly_with_its_own_indentation() -> None:
    new = set_keys(HAND_WRITTEN, {"aliases": ["Standup"]}, config=vm_settings.current())
    assert changed_lines(HAND_WRITTEN, new) == ["-    - Sync\n", "-    - Weekly\n", "+    - Standup\n"]
    assert fields_of(new)["aliases"] == ["Standup"]


def test_multi_line_value_replaces_exactly_its_own_lines() -> None:
    new = set_keys(HAND_WRITTEN, {"description": "short"}, config=vm_settings.current())
    assert changed_lines(HAND_WRITTEN, new) == [
        "-description: >\n", "-  folded text\n", "-  over two lines\n", "+description: short\n",
    ]


def test_new_keys_are_appended_in_block_style_at_the_end_of_the_block() -> None:
    new = set_keys(HAND_WRITTEN, {"paths": ["src/a.py", "src/b.py"], "importance": 0.8}, config=vm_settings.current())
    assert changed_lines(HAND_WRITTEN, new) == [
        "+paths:\n", "+  - src/a.py\n", "+  - src/b.py\n", "+importance: 0.8\n",
    ]
    assert new.endswith("importance: 0.8\n---\n# Meeting\n\nBody text.\n")


def test_scalar_becoming_a_list_is_written_as_a_block_list() -> None:
    new = set_keys(HAND_WRITTEN, {"type": ["a", "b"]}, config=vm_settings.current())
    assert changed_lines(HAND_WRITTEN, new) == ["-type: note\n", "+type:\n", "+  - a\n", "+  - b\n"]


def test_empty_value_gets_a_value_on_its_own_line() -> None:
    text = "---\nstate:\nnext: 1\n---\n"
    assert set_keys(text, {"state": "completed"},
        config=vm_settings.current()) == "---\nstate: completed\nnext: 1\n---\n"
    assert set_keys(text, {"state": ["x"]}, config=vm_settings.current()) == "---\nstate:\n  - x\nnext: 1\n---\n"


def test_a_trailing_comment_never_ends_up_inside_a_multi_line_value() -> None:
    assert set_keys("---\ntitle: x  # c\n---\n", {"title": "a\nb"},
        config=vm_settings.current()) == "---\ntitle: |-  # c\n  a\n  b\n---\n"
    assert set_keys("---\ne: # c\n---\n", {"e": "a\nb"},
        config=vm_settings.current()) == "---\ne: |- # c\n  a\n  b\n---\n"
    assert set_keys("---\nt: a b  # c\n---\n", {"t": ["a"]},
        config=vm_settings.current()) == "---\nt:  # c\n  - a\n---\n"


def test_an_indentless_list_becoming_a_mapping_is_indented() -> None:
    new = set_keys("---\ntags:\n- a\nnext: 1\n---\n", {"tags": {"k": "v"}}, config=vm_settings.current())
    assert new == "---\ntags:\n  k: v\nnext: 1\n---\n"


def test_setting_a_key_to_its_current_value_changes_nothing() -> None:
    assert set_keys(HAND_WRITTEN, {"type": "note", "tags": ["work", "q3"]},
        config=vm_settings.current()) == HAND_WRITTEN


def test_every_untouched_line_is_kept_byte_for_byte_over_several_edits() -> None:
    new = set_keys(HAND_WRITTEN, {"type": "fact", "created": "2024-02-01", "state": "open"},
        config=vm_settings.current())
    assert changed_lines(HAND_WRITTEN, new) == [
        "-type: note\n", "+type: fact\n",
        "-created: 2024-01-05\n", "+created: 2024-02-01\n",
        "+state: open\n",
    ]


def test_duplicate_key_edits_the_occurrence_that_wins() -> None:
    text = "---\ntype: a\ntype: b\n---\n"
    new = set_keys(text, {"type": "c"}, config=vm_settings.current())
    assert new == "---\ntype: a\ntype: c\n---\n"
    assert fields_of(new)["type"] == "c"


def test_indented_root_mapping_gets_new_keys_at_its_indentation() -> None:
    text = "---\n  title: x\n---\n"
    new = set_keys(text, {"type": "fact"}, config=vm_settings.current())
    assert new == "---\n  title: x\n  type: fact\n---\n"


# --- line endings, BOM, no frontmatter, refusals ------------------------------------------

def test_crlf_and_bom_are_kept() -> None:
    text = "\ufeff---\r\ntitle: x\r\ntags:\r\n  - a\r\n---\r\nbody\r\n"
    new = set_keys(text, {"tags": ["b", "c"], "type": "fact"}, config=vm_settings.current())
    assert new == "\ufeff---\r\ntitle: x\r\ntags:\r\n  - b\r\n  - c\r\ntype: fact\r\n---\r\nbody\r\n"
    body = replace_body(new, "one\ntwo")
    assert body.endswith("---\r\none\r\ntwo\r\n") and body.startswith("\ufeff---\r\n")
    appended = append_paragraph(body, "three")
    assert appended.endswith("---\r\none\r\ntwo\r\n\r\nthree\r\n")
    assert "\n" not in appended.replace("\r\n", "")


def test_multi_line_string_in_a_crlf_file_reads_back_without_cr() -> None:
    text = "---\r\ntitle: x\r\n---\r\n"
    new = set_keys(text, {"summary": "line one\nline two"}, config=vm_settings.current())
    assert "\nsummary: |-\r\n  line one\r\n  line two\r\n---" in new
    assert fields_of(new)["summary"] == "line one\nline two"


def test_file_without_frontmatter_gets_a_block_on_top() -> None:
    assert set_keys("# Heading\n\ntext\n", {"title": "T", "id": "u1"}, config=vm_settings.current()) == (
        "---\nid: u1\ntitle: T\n---\n# Heading\n\ntext\n"
    )
    assert set_keys("", {"id": "u1"}, config=vm_settings.current()) == "---\nid: u1\n---\n"
    assert set_keys("\ufefftext\r\n", {"id": "u1"},
        config=vm_settings.current()) == "\ufeff---\r\nid: u1\r\n---\r\ntext\r\n"


def test_blank_line_before_dashes_is_not_frontmatter_so_a_new_block_goes_on_top() -> None:
    text = "\n---\ntitle: x\n---\n"
    new = set_keys(text, {"id": "u1"}, config=vm_settings.current())
    assert new == "---\nid: u1\n---\n" + text


def test_empty_frontmatter_block_gets_the_key() -> None:
    assert set_keys("---\n---\nbody\n", {"id": "u1"}, config=vm_settings.current()) == "---\nid: u1\n---\nbody\n"
    assert set_keys("---\n# only a comment\n---\n", {"id": "u1"},
        config=vm_settings.current()) == "---\n# only a comment\nid: u1\n---\n"


@pytest.mark.parametrize("text", [
    "---\ntitle: [unclosed\n---\nbody\n",
    "---\n- a list\n- not a mapping\n---\n",
    "---\ntags:\n  - @name\n---\n",
    "---\ntitle: x\nno closing fence\n",
    "---\njust a scalar\n---\n",
    "---\rtitle: x\r---\rbody\r",
])
def test_unparseable_frontmatter_is_never_rewritten(text: str) -> None:
    with pytest.raises(InvalidInput) as info:
        set_keys(text, {"type": "fact"}, name="acme/Broken.md", config=vm_settings.current())
    assert info.value.param == "ref"
    assert "acme/Broken.md" in info.value.message and "by hand first" in info.value.message


def test_body_edits_keep_an_unparseable_frontmatter_byte_for_byte() -> None:
    text = "---\ntitle: [unclosed\n---\nold\n"
    assert replace_body(text, "new") == "---\ntitle: [unclosed\n---\nnew\n"
    with pytest.raises(InvalidInput):
        replace_body("---\ntitle: x\nnever closed\n", "new")


def test_alias_values_are_refused_rather_than_broken() -> None:
    text = "---\nbase: &b [a]\nother: *b\n---\n"
    with pytest.raises(InvalidInput):
        set_keys(text, {"other": ["c"]}, config=vm_settings.current())
    with pytest.raises(InvalidInput):
        set_keys(text, {"base": ["c"]}, config=vm_settings.current())  # would change 'other' too


def test_bad_key_names_are_invalid_set() -> None:
    with pytest.raises(InvalidInput) as info:
        set_keys("---\na: 1\n---\n", {" padded": 1}, config=vm_settings.current())
    assert info.value.param == "set"


# --- body edits ---------------------------------------------------------------------------

def test_append_paragraph_puts_one_blank_line_between_and_keeps_a_final_newline() -> None:
    text = "---\nid: x\n---\nfirst line\n\n\n  \n"
    assert append_paragraph(text, "\nsecond\n\n") == "---\nid: x\n---\nfirst line\n\nsecond\n"
    assert append_paragraph("no newline", "more") == "no newline\n\nmore\n"
    assert append_paragraph("---\nid: x\n---", "p") == "---\nid: x\n---\np\n"
    assert append_paragraph("---\nid: x\n---\n", "p") == "---\nid: x\n---\np\n"
    with pytest.raises(InvalidInput):
        append_paragraph("x\n", " \n ")


def test_replace_body_keeps_the_frontmatter_bytes() -> None:
    new = replace_body(HAND_WRITTEN, "New body")
    head = HAND_WRITTEN[: HAND_WRITTEN.index("# Meeting")]
    assert new == head + "New body\n"
    assert replace_body(HAND_WRITTEN, "") == head


# --- rendering new notes ------------------------------------------------------------------

def test_new_frontmatter_is_block_style_in_a_stable_order() -> None:
    text = render_frontmatter({
        "agent": "claude-code", "tags": ["a", "b"], "updated": "2024-05-01T10:00:00Z",
        "title": "Fix: the 'x' bug", "id": "m-1", "created": "2024-05-01T10:00:00Z", "type": "fact",
    }, config=Settings())
    assert text == (
        "---\n"
        "id: m-1\n"
        "title: \"Fix: the 'x' bug\"\n"
        "type: fact\n"
        "tags:\n  - a\n  - b\n"
        "created: 2024-05-01T10:00:00Z\n"
        "updated: 2024-05-01T10:00:00Z\n"
        "agent: claude-code\n"
        "---\n"
    )


@pytest.mark.parametrize("title", [
    "Fix: the 'x' bug", "yes", "No", "on", "123", "1e5", "0o17", "1.5", ".inf", "null", "~", "- foo",
    "#tag", "[[Link]]", "{a: b}", "a #b", "trailing ", " leading", "@name", "`tick`", "*star", "&amp",
    "!bang", "%pct", "|pipe", ">gt", "'quoted'", '"dq"', "a: b", "key:", "? q", "2024-01-05",
    "2024-13-45", "tab\there", "back\\slash", "\x85nel", "ctrl\x01", "line\u2028sep", "",
    "\ufeffbom",
])
def test_awkward_strings_round_trip_through_the_reader(title: str) -> None:
    text = render_note({"title": title, "tags": [title] if title.strip() else []}, "", config=vm_settings.current())
    data = fields_of(text)
    assert data["title"] == title
    assert data["tags"] == ([title] if title.strip() else [])


def test_values_of_every_type_round_trip() -> None:
    fields = {
        "n": None, "t": True, "f": False, "i": -7, "x": 0.25, "tiny": 1e-5, "big": 1e300,
        "empty_list": [], "empty_map": {}, "nested": {"a": [1, {"b": "c"}], "d": "multi\nline\n"},
        "lines": ["one\ntwo", "three"],
    }
    data = fields_of(render_note(fields, "body", config=vm_settings.current()))
    for key, value in fields.items():
        assert same_value(data[key], value), key


def test_render_note_body_gets_lf_and_a_final_newline() -> None:
    text = render_note({"id": "x"}, "a\r\nb\rc", config=vm_settings.current())
    assert text == "---\nid: x\n---\na\nb\nc\n"


def test_lone_surrogates_are_refused() -> None:
    with pytest.raises(InvalidInput) as info:
        render_note({"id": "x"}, "bad \ud800", config=vm_settings.current())
    assert info.value.param == "content"
    with pytest.raises(InvalidInput) as info:
        append_paragraph("x\n", "bad \udfff")
    assert info.value.param == "append"
    with pytest.raises(InvalidInput, match="surrogate"):
        render_note({"title": "odd \ud800"}, "", config=vm_settings.current())


# --- file names ---------------------------------------------------------------------------

@pytest.mark.parametrize(("title", "name"), [
    ("Plain title", "Plain title.md"),
    ('a*b"c\\d/e<f>g:h|i?j', "abcdefghij.md"),
    ("Heading #1 ^block [[link]]", "Heading 1 block link.md"),
    ("Fix: the 'x' bug", "Fix the 'x' bug.md"),
    ("tabs\tand\nnew  lines", "tabs and new lines.md"),
    ("ctrl\x00\x07\x7fchars", "ctrlchars.md"),
    ("🚀 launch 👩‍💻", "🚀 launch 👩‍💻.md"),
    ("مرحبا بالعالم", "مرحبا بالعالم.md"),
    ("שלום", "שלום.md"),
    ("...hidden", "hidden.md"),
    ("trailing dots... ", "trailing dots.md"),
    ("Wait...what", "Wait...what.md"),
    ("", "Untitled.md"),
    ("   ", "Untitled.md"),
    ("???", "Untitled.md"),
    ("..", "Untitled.md"),
    ("Sketch.excalidraw", "Sketch excalidraw.md"),
    ("e\u0301", "\u00e9.md"),
])
def test_note_filename_cleans_like_obsidian(title: str, name: str) -> None:
    assert note_filename(title, config=vm_settings.current()) == name


def test_long_names_are_cut_on_a_character_boundary() -> None:
    name = note_filename("é" * 300, config=vm_settings.current())
    stem = name.removesuffix(".md")
    assert len(stem.encode("utf-8")) <= 200 and stem == "é" * 100
    odd = note_filename("a" + "é" * 300, config=vm_settings.current())
    assert len(odd.removesuffix(".md").encode("utf-8")) == 199
    assert note_filename("x" * 199 + " y", config=vm_settings.current()).removesuffix(".md") == "x" * 199


def test_create_exclusive_skips_names_taken_in_another_case(tmp_path: Path) -> None:
    (tmp_path / "note.md").write_text("x")
    (tmp_path / "NOTE 1.md").write_text("x")
    assert create_exclusive(tmp_path, "Note.md", b"new", config=vm_settings.current()).name == "Note 2.md"
    assert create_exclusive(tmp_path / "missing", "Note.md", b"new", config=vm_settings.current()).name == "Note.md"


# --- atomic_write -------------------------------------------------------------------------

def test_atomic_write_replaces_and_keeps_permissions(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"old")
    path.chmod(0o640)
    atomic_write(path, b"new", config=vm_settings.current())
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    atomic_write(path, b"newer", mode=0o600, config=vm_settings.current())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["a.md"]


def test_atomic_write_creates_a_new_file_with_default_permissions(tmp_path: Path) -> None:
    path = tmp_path / "new.md"
    atomic_write(path, b"x", config=vm_settings.current())
    umask = os.umask(0)
    os.umask(umask)
    assert path.read_bytes() == b"x"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_atomic_write_writes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_bytes(b"old")
    link = tmp_path / "link.md"
    link.symlink_to("real.md")
    atomic_write(link, b"new", config=vm_settings.current())
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_atomic_write_temp_file_is_hidden_and_not_markdown(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real_replace = os.replace

    def spy(src: Any, dst: Any) -> None:
        seen.append(Path(src).name)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    atomic_write(tmp_path / "Some note.md", b"x", config=vm_settings.current())
    assert len(seen) == 1 and seen[0].startswith(".") and not seen[0].endswith(".md")


def test_disk_full_leaves_the_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"original")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteFailed) as info:
        atomic_write(path, b"new content", config=vm_settings.current())
    assert "disk full (ENOSPC)" in info.value.message and "unchanged" in info.value.message
    assert path.read_bytes() == b"original"
    assert os.listdir(tmp_path) == ["a.md"]
    with pytest.raises(WriteFailed):
        create_exclusive(tmp_path, "b.md", b"x", config=vm_settings.current())
    assert os.listdir(tmp_path) == ["a.md"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permission bits")
def test_read_only_folder_and_file_fail_cleanly(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "a.md"
    path.write_bytes(b"original")
    folder.chmod(0o555)
    try:
        with pytest.raises(WriteFailed):
            atomic_write(path, b"new", config=vm_settings.current())
        assert path.read_bytes() == b"original" and os.listdir(folder) == ["a.md"]
    finally:
        folder.chmod(0o755)
    path.chmod(0o444)
    with pytest.raises(WriteFailed, match="read-only"):
        atomic_write(path, b"new", config=vm_settings.current())


def test_atomic_write_refuses_a_folder(tmp_path: Path) -> None:
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(WriteFailed):
        atomic_write(tmp_path / "dir.md", b"x", config=vm_settings.current())


# --- create_exclusive ---------------------------------------------------------------------

def test_create_exclusive_never_overwrites(tmp_path: Path) -> None:
    first = create_exclusive(tmp_path / "acme" / "x100", "Note.md", b"one", config=vm_settings.current())
    second = create_exclusive(tmp_path / "acme" / "x100", "Note.md", b"two", config=vm_settings.current())
    third = create_exclusive(tmp_path / "acme" / "x100", "NOTE.md", b"three", config=vm_settings.current())
    assert [p.name for p in (first, second, third)] == ["Note.md", "Note 1.md", "NOTE 2.md"]
    assert [p.read_bytes() for p in (first, second, third)] == [b"one", b"two", b"three"]
    assert sorted(os.listdir(first.parent)) == ["NOTE 2.md", "Note 1.md", "Note.md"]


def test_create_exclusive_lists_a_folder_again_only_once_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vault_mem.vault import writer

    listed: list[Path] = []
    real = writer._taken
    monkeypatch.setattr(writer, "_taken", lambda folder: listed.append(folder) or real(folder))
    assert create_exclusive(tmp_path, "a.md", b"1", config=vm_settings.current()).name == "a.md"
    assert create_exclusive(tmp_path, "A.md", b"2",
        config=vm_settings.current()).name == "A 1.md"  # its own names, kept: no listing
    assert len(listed) == 1
    (tmp_path / "B.md").write_text("x")  # another program's file: the folder's mtime moves
    mtime = os.stat(tmp_path).st_mtime_ns
    os.utime(tmp_path, ns=(mtime, mtime + 10**9))  # (by a whole second, whatever the disk's clock tick)
    assert create_exclusive(tmp_path, "b.md", b"3", config=vm_settings.current()).name == "b 1.md"
    assert len(listed) == 2
    assert sorted(os.listdir(tmp_path)) == ["A 1.md", "B.md", "a.md", "b 1.md"]
    # a listing serves for a while only, changed or not
    create_exclusive(tmp_path, "c.md", b"4", config=dataclasses.replace(Settings(), names_fresh=0.0))
    assert len(listed) == 3


def test_create_exclusive_skips_a_folder_with_the_name(tmp_path: Path) -> None:
    (tmp_path / "Note.md").mkdir()
    assert create_exclusive(tmp_path, "Note.md", b"x", config=vm_settings.current()).name == "Note 1.md"


def test_racing_creators_each_get_their_own_file(tmp_path: Path) -> None:
    results: list[Path] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        path = create_exclusive(tmp_path, "Same.md", str(n).encode(), config=vm_settings.current())
        with lock:
            results.append(path)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({p.name for p in results}) == 8
    assert sorted(p.read_bytes() for p in results) == sorted(str(n).encode() for n in range(8))
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]


# --- trash --------------------------------------------------------------------------------

def test_move_to_trash_adds_suffixes(tmp_path: Path) -> None:
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "Note.md").write_text(folder)
    assert move_to_trash(tmp_path, "a/Note.md", config=vm_settings.current()) == ".trash/Note.md"
    assert move_to_trash(tmp_path, "b/Note.md", config=vm_settings.current()) == ".trash/Note 1.md"
    (tmp_path / ".trash" / "note 2.md").write_text("other")
    assert move_to_trash(tmp_path, "c/Note.md", config=vm_settings.current()) == ".trash/Note 3.md"
    assert (tmp_path / ".trash" / "Note 1.md").read_text() == "b"
    assert not (tmp_path / "c" / "Note.md").exists()


@pytest.mark.parametrize("hard_links", [True, False], ids=["hard links", "no hard links (FAT)"])
def test_racing_trashers_of_one_name_each_keep_their_note(tmp_path: Path, monkeypatch, hard_links: bool) -> None:
    """Write tools of different notes run side by side (writes/tools.py): eight notes of one name
    moved to the trash at once each land under a name of their own, on a disk without hard
    links too (there the name is reserved with O_EXCL before the move)."""
    if not hard_links:
        def no_link(*args: object, **kwargs: object) -> None:
            raise OSError(errno.EXDEV, "no hard links here")

        monkeypatch.setattr(os, "link", no_link)
    for n in range(8):
        (tmp_path / f"f{n}").mkdir()
        (tmp_path / f"f{n}" / "Note.md").write_text(f"note {n}")
    start = threading.Barrier(8)
    moved: list[str] = []

    def trash(n: int) -> None:
        start.wait(30)
        moved.append(move_to_trash(tmp_path, f"f{n}/Note.md", config=vm_settings.current()))

    threads = [threading.Thread(target=trash, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(set(moved)) == 8
    assert sorted((tmp_path / m).read_text() for m in moved) == [f"note {n}" for n in range(8)]
    assert not any((tmp_path / f"f{n}" / "Note.md").exists() for n in range(8))


def test_move_to_trash_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        move_to_trash(tmp_path, "gone.md", config=vm_settings.current())
    (tmp_path / "dir").mkdir()
    with pytest.raises(InvalidInput):
        move_to_trash(tmp_path, "dir", config=vm_settings.current())


def test_decode_for_edit_keeps_bom_and_refuses_bad_utf8() -> None:
    assert decode_for_edit(b"\xef\xbb\xbfa\r\n", "n.md") == "\ufeffa\r\n"
    with pytest.raises(InvalidInput, match="not valid UTF-8"):
        decode_for_edit(b"caf\xe9", "n.md")


# --- end to end with the reader -----------------------------------------------------------

def test_edit_a_file_on_disk_keeps_bytes_and_permissions(tmp_path: Path) -> None:
    path = tmp_path / "n.md"
    original = b"\xef\xbb\xbf---\r\ntitle: x # c\r\ntags: [a]\r\n---\r\nbody\r\n"
    path.write_bytes(original)
    path.chmod(0o604)
    text = decode_for_edit(path.read_bytes(), "n.md")
    edited = set_keys(text, {"tags": ["a", "b"]}, config=vm_settings.current())
    atomic_write(path, edited.encode("utf-8"), config=vm_settings.current())
    assert path.read_bytes() == original.replace(b"[a]", b"[a, b]")
    assert stat.S_IMODE(path.stat().st_mode) == 0o604
    assert read_note(tmp_path, "n.md", config=vm_settings.current()).tags == ["a", "b"]


# --- properties ---------------------------------------------------------------------------

titles = st.text(min_size=1, max_size=60).filter(lambda t: t.strip() != "")
tag_text = st.text(st.characters(categories=("L", "N"), include_characters="/-_"), min_size=1, max_size=12)
bodies = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="#\x00"), max_size=200)


@FAST
@given(title=titles, tags=st.lists(tag_text, max_size=5), body=bodies)
def test_any_new_note_reads_back_equal(title: str, tags: list[str], body: str) -> None:
    text = render_note({"id": "m-1", "title": title, "tags": tags}, body, config=vm_settings.current())
    with tempfile.TemporaryDirectory() as tmp:
        name = note_filename(title, config=vm_settings.current())
        path = create_exclusive(Path(tmp), name, text.encode("utf-8"), config=vm_settings.current())
        assert not path.name.startswith(".") and path.name.endswith(".md")
        note = read_note(Path(tmp), path.name, config=vm_settings.current())
    assert note.problems == []
    assert note.title == title.strip()
    assert note.tags == normalize_tags(tags)
    expected = body.replace("\r\n", "\n").replace("\r", "\n")
    assert note.body == (expected + "\n" if expected and not expected.endswith("\n") else expected)


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["yes", "no", "~", "null", "1e5", "0x1F", "- x", "#x", "a: b", "[x]", "2024-01-05"]),
)


@FAST
@given(value=scalars, key=st.sampled_from(["title", "tags", "state", "new_key", "note"]),
       crlf=st.booleans())
def test_any_scalar_set_reads_back_equal(value: Any, key: str, crlf: bool) -> None:
    text = HAND_WRITTEN.replace("\n", "\r\n") if crlf else HAND_WRITTEN
    new = set_keys(text, {key: value}, config=vm_settings.current())
    data = fields_of(new)
    assert same_value(data[key], value)
    before = fields_of(text)
    assert {k: v for k, v in data.items() if k != key} == {k: v for k, v in before.items() if k != key}
    if crlf:
        assert "\n" not in new.replace("\r\n", "")
    if not (isinstance(value, str) and "\n" in value):
        assert len([ln for ln in changed_lines(text, new) if ln.startswith("+")]) <= 1
    assert set_keys(new, {key: value}, config=vm_settings.current()) == new  # idempotent: nothing left to change


@FAST
@given(items=st.lists(st.text(max_size=20), max_size=5))
def test_any_list_set_reads_back_equal_and_keeps_the_flow_form(items: list[str]) -> None:
    new = set_keys(HAND_WRITTEN, {"tags": items}, config=vm_settings.current())
    assert fields_of(new)["tags"] == items
    assert all(not ln.startswith("+tags:\n") for ln in changed_lines(HAND_WRITTEN, new)) or items == []


_HAND_FORMS = [
    "title: x  # c", "title: 'q'", 'title: "dq"', "tags: [a, b]", "tags:\n  - a\n  - b", "tags:\n- a\n- b",
    "tags:\n    - a\n    # mid\n    - b", "empty:", "empty: # only a comment", "lit: |\n  a\n  b\n",
    "fold: >-\n  a\n  b", "map:\n  a: 1\n  b: [x]", "flow: {a: 1, b: 2}", "# comment", "",
    "plain: multi\n  line plain", "q: 'multi\n  line'", "n: 5", "b: yes", "d: 2024-01-05", "wl: [[Note]]",
    "nul: ~", "lst:\n  -\n  - x", "deep:\n  - a: 1\n    b: 2",
]
_NEW_VALUES = [
    None, True, 3, 0.5, "plain", "a: b", "yes", "multi\nline", "multi\nline\n", "", "#x", ["a", "b"], [],
    ["x y", "a, b"], {"k": "v"}, {}, [1, [2]], "  lead", "it's", '"q"', "\u2028", [None], {"a": ["b"]},
]
_KEYS = ["title", "tags", "empty", "lit", "fold", "map", "flow", "plain", "q", "n", "b", "d", "wl", "nul",
         "lst", "deep", "new1"]


@FAST
@given(lines=st.lists(st.sampled_from(_HAND_FORMS), max_size=6),
       updates=st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_NEW_VALUES), min_size=1, max_size=3),
       crlf=st.booleans())
def test_set_keys_on_hand_written_shapes_sets_only_what_it_was_asked(
        lines: list[str], updates: dict[str, Any], crlf: bool) -> None:
    nl = "\r\n" if crlf else "\n"
    text = ("---\n" + "\n".join(lines) + "\n---\nbody\n").replace("\n", nl)
    before = fields_of(text)
    new = set_keys(text, updates, config=vm_settings.current())
    after = fields_of(new)
    assert all(same_value(after[k], v) for k, v in updates.items())
    assert {k: v for k, v in after.items() if k not in updates} == \
        {k: v for k, v in before.items() if k not in updates}
    assert new.endswith(nl + "---" + nl + "body" + nl)
    assert "\n" not in new.replace(nl, "") if crlf else "\r" not in new


@pytest.mark.parametrize(("title", "name"), [
    ("CON", "CON_.md"), ("nul", "nul_.md"), ("Com1", "Com1_.md"), ("LPT9 notes", "LPT9 notes.md"),
    ("aux.log", "aux_.log.md"), ("Console", "Console.md"),
])
def test_names_windows_reserves_for_devices_get_an_underscore(title: str, name: str) -> None:
    assert note_filename(title, config=vm_settings.current()) == name
