"""The portable primitives (vault/portable.py) and the Whoosh patches for files still in use.

Windows refuses to replace or delete a file another process holds open. Linux never does,
but it refuses both on an immutable file (``chattr +i``, as root): the same PermissionError
from the same system calls, so these tests make a real refusal and lift it, and are skipped
where ``chattr`` cannot be used.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import commit_note
from whoosh.filedb.filestore import FileStorage

from vault_mem import settings
from vault_mem.search.build import sync
from vault_mem.search.store import VaultIndex
from vault_mem.vault.portable import fsync_folder, lacks_hard_links, replace_file, set_mode, user_cache_root
from vault_mem.vault.reader import read_whole
from vault_mem.vault.writer import atomic_write, create_exclusive


def _chattr(flag: str, path: Path) -> bool:
    chattr = shutil.which("chattr")
    if chattr is None:
        return False
    return subprocess.run([chattr, flag, str(path)], capture_output=True).returncode == 0


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """``path`` cannot be replaced or deleted (PermissionError) until the block ends."""
    if not _chattr("+i", path):
        pytest.skip("chattr +i is not available here (needs root on ext2/3/4, xfs or btrfs)")
    try:
        yield
    finally:
        _chattr("-i", path)


def test_replace_waits_for_a_target_in_use_and_then_replaces_it(tmp_path: Path) -> None:
    target, new = tmp_path / "note.md", tmp_path / ".note.tmp"
    target.write_bytes(b"old")
    new.write_bytes(b"new")
    with held(target):
        with pytest.raises(PermissionError):
            os.replace(new, target)  # the refusal is real
        released = threading.Timer(0.05, _chattr, ("-i", target))
        released.start()
        replace_file(new, target, wait=60,
            config=settings.current())  # a generous hang timeout; returns once the target is free
        released.join()
    assert target.read_bytes() == b"new" and not new.exists()


def test_replace_gives_up_after_its_wait_and_changes_nothing(tmp_path: Path) -> None:
    target, new = tmp_path / "note.md", tmp_path / ".note.tmp"
    target.write_bytes(b"old")
    new.write_bytes(b"new")
    with held(target), pytest.raises(PermissionError):
        replace_file(new, target, wait=0.05, config=settings.current())
    assert target.read_bytes() == b"old" and new.read_bytes() == b"new"


def test_bytes_round_trip_exactly_whatever_the_platform_does_to_newlines(tmp_path: Path) -> None:
    # Without O_BINARY, Windows would turn \r\n into \n on read, \n into \r\n on write, and stop at ^Z.
    data = b"---\r\ntitle: x\r\n---\r\nline\nother\r\n\x1a after ctrl-z\r\n"
    path = tmp_path / "crlf.md"
    atomic_write(path, data, config=settings.current())
    assert read_whole(path, config=settings.current()) == data
    made = create_exclusive(tmp_path, "crlf.md", data, config=settings.current())
    assert made.name == "crlf 1.md" and read_whole(made, config=settings.current()) == data


def test_a_replaced_file_keeps_its_permission_bits(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    path.write_bytes(b"x")
    path.chmod(0o640)
    atomic_write(path, b"y", config=settings.current())
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    set_mode(path, 0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_folder_fsync_is_best_effort(tmp_path: Path) -> None:
    fsync_folder(tmp_path)
    fsync_folder(tmp_path / "missing")
    (tmp_path / "file").write_bytes(b"")
    fsync_folder(tmp_path / "file")  # a file, not a folder: nothing raised


def test_a_file_system_without_hard_links_is_told_apart_from_a_taken_name() -> None:
    assert lacks_hard_links(OSError(errno.EXDEV, "cross-device"))
    assert lacks_hard_links(OSError(errno.EOPNOTSUPP, "not supported"))
    assert not lacks_hard_links(FileExistsError(errno.EEXIST, "exists"))
    assert not lacks_hard_links(OSError(errno.EIO, "i/o"))
    fat = OSError(errno.EINVAL, "incorrect function")
    fat.winerror = 1  # type: ignore[attr-defined]  # what CreateHardLinkW says on FAT
    assert lacks_hard_links(fat)


def test_the_cache_folder_follows_xdg_when_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_root() == tmp_path / "xdg"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache_root().is_absolute()


# -- Whoosh: deleting index files still open elsewhere ------------------------------------------


def _index(tmp_path: Path, count: int) -> VaultIndex:
    root = tmp_path / "vault"
    root.mkdir()
    for n in range(count):
        (root / f"n{n}.md").write_text(f"# Note {n}\n\nbody {n}\n", encoding="utf-8")
    index = VaultIndex(root, tmp_path / "index", config=settings.current())
    sync(index, procs=1)
    return index


def _add_note(index: VaultIndex, name: str) -> None:
    commit_note(index, name, f"# {name}\n\nmore\n")


def test_a_deletion_refused_by_the_os_is_skipped_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "MAIN_x.seg"
    path.write_bytes(b"segment")
    with held(path):
        FileStorage(str(tmp_path)).delete_file(path.name)
        assert path.exists()
    FileStorage(str(tmp_path)).delete_file(path.name)
    assert not path.exists()
    FileStorage(str(tmp_path)).delete_file(path.name)  # already gone: nothing raised


def test_a_merge_over_a_segment_in_use_commits_and_deletes_it_at_a_later_commit(tmp_path: Path) -> None:
    index = _index(tmp_path, 3)
    for n in range(3):
        _add_note(index, f"extra{n}.md")  # one small segment each
    old = sorted(p for p in index.dir.glob("MAIN_*.seg"))
    assert len(old) >= 2
    with held(old[0]):
        writer = index.acquire_writer()
        writer.add_document(**_document(index, "merged.md"))
        writer.commit(optimize=True)  # merges every segment into one; the held one cannot be deleted
        assert old[0].exists()
        assert len(index.fingerprints()) == 7
    _add_note(index, "later.md")  # the next commit retries the deletion
    assert not old[0].exists()
    assert len(index.fingerprints()) == 8


def _document(index: VaultIndex, name: str) -> dict[str, object]:
    from vault_mem.search.schema import document_of
    from vault_mem.vault.reader import read_note

    (index.root / name).write_text(f"# {name}\n", encoding="utf-8")
    return document_of(read_note(index.root, name, config=index.config), name, index.config.record_head_chars)


def test_a_commit_whose_temp_folder_cannot_be_emptied_still_commits_and_releases_the_lock(tmp_path: Path) -> None:
    index = _index(tmp_path, 1)
    writer = index.acquire_writer()
    writer.add_document(**_document(index, "two.md"))
    stuck = Path(writer._tempstorage.folder) / "held.run"
    stuck.write_bytes(b"run file")
    with held(stuck):
        writer.commit(merge=False)
        assert stuck.exists()
        second = index.acquire_writer(timeout=5)  # the lock was released
        second.cancel()
    assert len(index.fingerprints()) == 2
    _add_note(index, "three.md")  # the next writer's temp folder takes the leftover with it
    assert not stuck.exists()


def test_loose_files_left_beside_a_packed_segment_are_swept_at_the_next_commit(tmp_path: Path) -> None:
    index = _index(tmp_path, 2)
    packed = next(index.dir.glob("MAIN_*.seg"))
    leftover = packed.with_suffix(".trm")  # what a refused deletion while packing leaves behind
    leftover.write_bytes(b"terms")
    _add_note(index, "next.md")
    assert not leftover.exists() and packed.exists()
    assert len(index.fingerprints()) == 3


# -- paths as the watchers report them ----------------------------------------------------------


@pytest.mark.parametrize(("path", "roots", "expected"), [
    (r"C:\Users\me\Vault\inbox\note.md", [r"C:\Users\me\Vault"], "inbox/note.md"),
    (r"c:\users\ME\vault\Inbox\Note.md", [r"C:\Users\me\Vault"], "Inbox/Note.md"),  # NTFS ignores case
    (r"C:\Users\me\Vault", [r"C:\Users\me\Vault"], None),
    (r"C:\Users\me\Other\x.md", [r"C:\Users\me\Vault"], None),
    (r"D:\Vault\x.md", [r"C:\Vault"], None),  # another drive
    (r"\\nas\share\Vault\a\b.md", [r"\\nas\share\Vault"], "a/b.md"),
    ("C:/Users/me/Vault/inbox/note.md", [r"C:\Users\me\Vault"], "inbox/note.md"),  # --vault with '/'
])
def test_windows_event_paths_become_vault_relative_with_slashes(path: str, roots: list[str],
                                                                expected: str | None) -> None:
    import ntpath

    from vault_mem.vault.paths import relative_to_root

    assert relative_to_root(path, roots, ntpath) == expected


def test_macos_event_paths_under_the_real_path_or_in_nfd_are_inside_the_vault() -> None:
    import posixpath
    import unicodedata

    from vault_mem.vault.paths import relative_to_root

    roots = ["/var/folders/x/Vault", "/private/var/folders/x/Vault"]
    assert relative_to_root("/private/var/folders/x/Vault/a/n.md", roots, posixpath) == "a/n.md"
    assert relative_to_root("/private/var/folders/x/Other/n.md", roots, posixpath) is None
    nfc_root = unicodedata.normalize("NFC", "/Users/zoë/Vault")
    nfd_event = unicodedata.normalize("NFD", "/Users/zoë/Vault/n.md")
    assert relative_to_root(nfd_event, [nfc_root], posixpath) == "n.md"
