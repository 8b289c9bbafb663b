"""Properties of the vault reader that must hold for any input (Hypothesis).

Function-scoped fixtures are not reset between Hypothesis examples, so each example
makes its own ``tempfile.TemporaryDirectory``.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

from conftest import note_dict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_mem import settings as vm_settings
from vault_mem.vault.note import TASK_STATES, Note
from vault_mem.vault.reader import normalize_tags, read_note
from vault_mem.vault.walk import walk_vault

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Fragments that steer random bytes towards the parser's corners.
_FRAGMENTS = [
    b"---\n", b"---\r\n", b"\xef\xbb\xbf", b"\x00", b"\r", b"\n", b"\xff\xfe", b"\xe9",
    b"title: x\n", b"tags: [a, #b]\n", b"tags:\n  -\n  - 'C'\n", b": v\n", b"- @x\n",
    b"created: 2024-13-45\n", b"created: 9999-12-31T23:59:59-05:00\n", b"importance: 1e999\n",
    b"supersedes: [[A]]\n", b"&a [*a, *a]\n", b"!!binary AAAA\n", b"? [a]\n: b\n", b"{{{{\n",
    b"# Heading #tag\n", b"- [x] done\n", b"> - [-] gone\n", b"```\n", b"    ~~~\n", b"`#code`",
    b"[[Link#h|a]]", b"![[e]]", b"[t](<a b.md#c>)", b"<<<<<<< HEAD\n", b"=======\n", b"\t",
]
_FM_LINES = [
    b"created: 9999-12-31T23:59:59-05:00\n", b"updated: 0001-01-01T00:30:00+01:00\n",
    b"importance: " + b"9" * 400 + b"\n", b"importance: .nan\n", b"tags: '# #x'\n", b"type: [a, b]\n",
    b"state: {a: 1}\n", b"id: [[x]]\n", b"aliases: {a: b}\n", b"status: ~\n", b"date: 2024-02-30\n",
]
# A well-formed frontmatter block holding hostile values, then a random body.
frontmatter_notes = st.tuples(
    st.lists(st.sampled_from(_FM_LINES + _FRAGMENTS[8:14]), max_size=6).map(b"".join),
    st.lists(st.sampled_from(_FRAGMENTS), max_size=10).map(b"".join),
).map(lambda t: b"---\n" + t[0] + b"---\n" + t[1])
note_bytes = st.one_of(
    st.binary(max_size=400),
    st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.binary(max_size=8)), max_size=30).map(b"".join),
    frontmatter_notes,
)


def _check_note(note: Note) -> None:
    assert isinstance(note, Note)
    assert all(isinstance(p, str) for p in note.problems)
    assert all(t and t == t.lower() and not t.startswith("#") for t in note.tags)
    assert len(note.tags) == len(set(note.tags))
    assert note.status in ("active", "archived")
    assert note.state in TASK_STATES
    assert 0.0 <= note.importance <= 1.0
    assert 0 <= note.progress.done <= note.progress.total
    for moment in (note.created, note.updated):
        assert dt.datetime.fromisoformat(moment).utcoffset() == dt.timedelta(0)
    assert "\x00" not in note.body and "\r" not in note.body
    assert note.title


@FAST
@given(data=note_bytes, name=st.sampled_from(["note.md", "drawing.excalidraw.md", "Ünïcode ✓.md"]))
def test_read_note_never_raises(data: bytes, name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / name).write_bytes(data)
        note = read_note(root, name, config=vm_settings.current())
    _check_note(note)
    assert note_dict(note)["permalink"] == note.permalink


yaml_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
    st.sampled_from(["#a", "A/B", "#", "  ", "x, y", "#x #y", "Ünï", "##deep", "# spaced", "#  #x", "a,,b"]),
)
tags_value = st.one_of(
    yaml_scalar,
    st.lists(yaml_scalar, max_size=8),
    st.lists(st.one_of(yaml_scalar, st.lists(yaml_scalar, max_size=2),
                       st.dictionaries(st.text(max_size=3), yaml_scalar, max_size=2)), max_size=5),
    st.dictionaries(st.text(max_size=5), yaml_scalar, max_size=3),
)


@FAST
@given(value=tags_value)
def test_normalize_tags_gives_clean_unique_lower_case_tags(value: Any) -> None:
    problems: list[str] = []
    tags = normalize_tags(value, problems)
    assert isinstance(tags, list)
    for tag in tags:
        assert isinstance(tag, str) and tag
        assert tag == tag.lower()
        assert not tag.startswith("#")
        assert tag == tag.strip()
    assert len(tags) == len(set(tags))
    assert normalize_tags(tags) == tags  # normalising is idempotent


_segment = st.text(alphabet="abcxyzé0 _-", min_size=1, max_size=6).filter(lambda s: s.strip() == s)
_folder = st.one_of(_segment, _segment.map(lambda s: "." + s))
_file = st.tuples(
    st.one_of(_segment, _segment.map(lambda s: "." + s)),
    st.sampled_from([".md", ".MD", ".excalidraw.md", ".txt", ".md.bak", ""]),
).map("".join)
vault_paths = st.lists(
    st.tuples(st.lists(_folder, max_size=3), _file).map(lambda t: "/".join([*t[0], t[1]])),
    min_size=1, max_size=25, unique_by=str.lower,
)


@settings(max_examples=40, deadline=None)
@given(paths=vault_paths)
def test_walk_finds_every_markdown_file_not_under_a_hidden_folder(paths: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        written = set()
        for rel in paths:
            target = root / rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("# note\n", encoding="utf-8")
            except (FileExistsError, IsADirectoryError, NotADirectoryError):
                continue  # a file and a folder with the same name: keep the first
            written.add(rel)
        found = set(walk_vault(root).files)
    expected = {
        rel for rel in written
        if rel.lower().endswith(".md") and not any(part.startswith(".") for part in rel.split("/"))
    }
    assert found == expected
