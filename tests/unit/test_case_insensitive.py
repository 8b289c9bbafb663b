"""Case-insensitive file systems (macOS and Windows by default): two notes whose names differ only
by case, a rename that changes only the case, a ref or a domain in another case.

No case-folding file system can be mounted here (the kernel has no vfat, no ext4 or tmpfs
casefold, and ciopfs is not packaged), so ``case_folding`` simulates one at the
path-resolution boundary: while it is active, a path under the vault given to ``os.stat``,
``os.lstat``, ``os.access``, ``os.open``, ``open``, ``os.listdir``, ``os.scandir`` or ``os.mkdir`` resolves
each segment to the entry listed under it in any case (NFC-folded, as APFS and NTFS compare),
while listings keep every name as it was created, as those file systems do. The two-notes
case needs no simulation: it is what a case-sensitive disk (or a git checkout made on
one) holds.
"""

from __future__ import annotations

import builtins
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import write_notes
from test_watcher_events import Replay
from watchdog.events import DirModifiedEvent, DirMovedEvent, FileCreatedEvent, FileMovedEvent, generate_sub_moved_events

from vault_mem.vault.paths import existing_spelling, listed_spelling, name_key

pytestmark = pytest.mark.anyio
AGENT = "case-test"


class CaseFoldingDisk:
    """Paths under ``root`` resolve as on a case-insensitive, case-preserving disk."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = str(root)
        self._listdir = os.listdir
        for name in ("stat", "lstat", "open", "listdir", "scandir", "access"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, self._folding(real))
        monkeypatch.setattr(os, "mkdir", self._mkdir(os.mkdir))
        folded_open = self._folding(builtins.open)
        monkeypatch.setattr(builtins, "open", folded_open)
        monkeypatch.setattr(io, "open", folded_open)

    def fold(self, path: Any) -> Any:
        if isinstance(path, int):
            return path
        text = os.fspath(path)
        if isinstance(text, bytes) or not text.startswith(self.root + os.sep):
            return path
        resolved = self.root
        parts = text[len(self.root) + 1:].split(os.sep)
        for i, segment in enumerate(parts):
            try:
                names = self._listdir(resolved)
            except OSError:
                return os.path.join(resolved, *parts[i:])
            if segment not in names:
                same = [n for n in names if name_key(n) == name_key(segment)]
                if same:
                    segment = same[0]
            resolved = os.path.join(resolved, segment)
        return resolved

    def _folding(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            return real(self.fold(path), *args, **kwargs)
        return call

    def _mkdir(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def mkdir(path: Any, *args: Any, **kwargs: Any) -> Any:
            folded = self.fold(path)
            if os.fspath(folded) != os.fspath(path) and os.path.lexists(folded):
                raise FileExistsError(17, "File exists", os.fspath(path))
            return real(folded, *args, **kwargs)
        return mkdir


@pytest.fixture
def case_folding(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], CaseFoldingDisk]:
    return lambda root: CaseFoldingDisk(root, monkeypatch)


@pytest.fixture
def replay(tmp_path: Path) -> Iterator[Replay]:
    r = Replay(tmp_path, through_symlink=False)
    yield r
    r.watcher.stop()
    r.index.close()


def test_the_simulation_folds_lookups_and_keeps_listings(tmp_path: Path, case_folding) -> None:
    write_notes(tmp_path / "v", {"Inbox/Note.md": "# Note\n"})
    case_folding(tmp_path / "v")
    assert (tmp_path / "v" / "INBOX" / "note.MD").is_file()
    assert (tmp_path / "v" / "inbox" / "note.md").read_text(encoding="utf-8") == "# Note\n"
    assert os.listdir(tmp_path / "v" / "inbox") == ["Note.md"]
    with pytest.raises(FileExistsError):
        (tmp_path / "v" / "INBOX").mkdir()


# -- a rename that changes only the case ----------------------------------------------------------


def test_a_case_only_rename_reported_as_two_creations_leaves_one_note(replay: Replay, case_folding) -> None:
    """FSEvents (watchdog PR 734): a case-only rename arrives as a created event for each name."""
    os.rename(replay.disk("inbox/note.md"), replay.disk("inbox/Note.md"))
    case_folding(replay.opened)
    assert replay.disk("inbox/note.md").is_file()  # the old spelling still opens
    replay.replay([FileCreatedEvent(replay.p("inbox/note.md")), FileCreatedEvent(replay.p("inbox/Note.md")),
                   DirModifiedEvent(replay.p("inbox"))])
    paths = set(replay.index.fingerprints())
    assert "inbox/Note.md" in paths and "inbox/note.md" not in paths


def test_a_case_only_rename_reported_as_a_move_leaves_one_note(replay: Replay, case_folding) -> None:
    """ReadDirectoryChangesW: the old and the new name, paired into one move."""
    os.rename(replay.disk("inbox/note.md"), replay.disk("inbox/NOTE.md"))
    case_folding(replay.opened)
    replay.replay([FileMovedEvent(replay.p("inbox/note.md"), replay.p("inbox/NOTE.md"))])
    paths = set(replay.index.fingerprints())
    assert "inbox/NOTE.md" in paths and "inbox/note.md" not in paths


def test_a_case_only_folder_rename_re_domains_every_note_in_it(replay: Replay, case_folding) -> None:
    os.rename(replay.disk("projects/alpha"), replay.disk("projects/Alpha"))
    case_folding(replay.opened)
    src, dst = replay.p("projects/alpha"), replay.p("projects/Alpha")
    replay.replay([DirMovedEvent(src, dst), *generate_sub_moved_events(src, dst)])
    paths = set(replay.index.fingerprints())
    assert {"projects/Alpha/a1.md", "projects/Alpha/a2.md"} <= paths
    assert not any(p.startswith("projects/alpha/") for p in paths)


# -- refs and domains in another case -------------------------------------------------------------


async def test_a_ref_in_another_case_reads_the_note(make_vault, mcp_session, case_folding) -> None:
    vault = make_vault({"Inbox/Meeting Notes.md": "# Meeting Notes\n\nagenda\n"})
    case_folding(vault.root)
    async with mcp_session(vault) as c:
        for ref in ("inbox/meeting notes", "memory://INBOX/MEETING NOTES", "MEETING NOTES.MD"):
            answer = await c.call("memory_read", ref=ref)
            assert answer["status"] == "ok", (ref, answer)
            assert answer["path"] == "Inbox/Meeting Notes.md"


async def test_a_write_into_a_folder_named_in_another_case_keeps_the_folder(make_vault, mcp_session,
                                                                            case_folding) -> None:
    vault = make_vault({"Projects/Alpha/plan.md": "# Plan\n"})
    case_folding(vault.root)
    async with mcp_session(vault) as c:
        made = await c.call("memory_write", agent=AGENT, title="Kickoff", content="x", domain="projects/ALPHA")
        same_name = await c.call("memory_write", agent=AGENT, title="PLAN", content="y", domain="projects/alpha")
    assert made["status"] == "ok" and made["path"] == "Projects/Alpha/Kickoff.md"
    assert same_name["status"] == "ok" and same_name["path"] == "Projects/Alpha/PLAN 1.md"
    assert sorted(os.listdir(vault.root / "Projects" / "Alpha")) == ["Kickoff.md", "PLAN 1.md", "plan.md"]


async def test_on_a_case_sensitive_disk_a_write_also_keeps_the_existing_folder(make_vault, mcp_session) -> None:
    vault = make_vault({"projects/plan.md": "# Plan\n"})
    async with mcp_session(vault) as c:
        made = await c.call("memory_write", agent=AGENT, title="Kickoff", content="x", domain="PROJECTS/new")
    assert made["path"] == "projects/new/Kickoff.md"
    assert sorted(os.listdir(vault.root)) == ["projects"]


# -- two notes whose names differ only by case (a case-sensitive disk, or a git checkout) --------


async def test_two_notes_differing_only_by_case_are_both_kept_and_each_can_be_named(make_vault,
                                                                                     mcp_session) -> None:
    vault = make_vault({"inbox/Note.md": "# Upper\n\nfirst\n", "inbox/note.md": "# Lower\n\nsecond\n"})
    async with mcp_session(vault) as c:
        listed = await c.call("list_by_domain", domain="inbox")
        upper = await c.call("memory_read", ref="memory://inbox/Note")
        lower = await c.call("memory_read", ref="inbox/note.md")
        by_name = await c.call("memory_read", ref="Note")
        other_case = await c.call("memory_read", ref="NOTE")
    assert sorted(row["path"] for row in listed["results"]) == ["inbox/Note.md", "inbox/note.md"]
    assert upper["path"] == "inbox/Note.md" and lower["path"] == "inbox/note.md"
    assert by_name["path"] == "inbox/Note.md"
    assert other_case["status"] == "invalid"
    assert other_case["candidates"] == ["memory://inbox/Note", "memory://inbox/note"]


# -- the spelling helpers ------------------------------------------------------------------------


def test_listed_spelling_prefers_the_exact_name_and_folds_only_when_unambiguous(tmp_path: Path) -> None:
    write_notes(tmp_path, {"A/x.md": "", "b/Y.md": "", "b/y.md": "", "caf\u00e9/n.md": ""})
    assert listed_spelling(tmp_path, "A/x.md") == "A/x.md"
    assert listed_spelling(tmp_path, "a/X.MD") == "A/x.md"
    assert listed_spelling(tmp_path, "b/y.md") == "b/y.md"
    assert listed_spelling(tmp_path, "b/Y.md") == "b/Y.md"
    assert listed_spelling(tmp_path, "B/YY.md") is None
    assert listed_spelling(tmp_path, "b/Y.MD") is None  # two candidates, neither exact
    assert listed_spelling(tmp_path, "cafe\u0301/n.md") == "caf\u00e9/n.md"  # NFD as macOS may report it
    assert existing_spelling(tmp_path, "a/new/deeper") == "A/new/deeper"
    assert existing_spelling(tmp_path, "") == ""


def test_a_vault_given_in_another_case_is_opened_under_its_spelling_on_disk(tmp_path: Path, case_folding) -> None:
    from vault_mem.vault.walk import check_vault

    write_notes(tmp_path / "Obsidian Vault", {"n.md": "# N\n"})
    assert check_vault(tmp_path / "Obsidian Vault") == tmp_path / "Obsidian Vault"
    case_folding(tmp_path)
    # The watchers report the spelling on disk; a root spelled otherwise would match none of their paths.
    assert check_vault(tmp_path / "obsidian vault") == tmp_path / "Obsidian Vault"


def test_a_name_listed_as_written_is_found_without_keying_its_whole_folder(tmp_path: Path, monkeypatch) -> None:
    """The watcher asks ``listed_spelling`` after every save, and a folder may hold thousands of
    notes: a segment listed exactly is found in the listing as it is; only a name not listed so
    makes the folder's names keyed (and then finds the one other spelling)."""
    from vault_mem.vault import paths

    folder = tmp_path / "plugins"
    folder.mkdir()
    for i in range(300):
        (folder / f"Plugin {i}.md").write_text("x", encoding="utf-8")
    keyed: list[str] = []
    real_key = paths.name_key
    monkeypatch.setattr(paths, "name_key", lambda name: keyed.append(name) or real_key(name))
    listings: dict[str, paths.Listing] = {}
    assert listed_spelling(tmp_path, "plugins/Plugin 7.md", listings) == "plugins/Plugin 7.md"
    assert listed_spelling(tmp_path, "plugins/Plugin 8.md", listings) == "plugins/Plugin 8.md"
    assert keyed == []
    assert listed_spelling(tmp_path, "Plugins/plugin 9.MD", listings) == "plugins/Plugin 9.md"
    assert len(keyed) > 300  # both folders keyed once, for the names not listed as asked
    assert listed_spelling(tmp_path, "plugins/Plugin 300.md", listings) is None
