"""Writing note files safely: atomic replace, exclusive create, Obsidian file names, trash.

    atomic_write(path, data)            replace a file: hidden temp, fsync, rename, fsync folder
    create_exclusive(folder, name, data) a NEW file under ``name`` or ``name 1``... never clobbering
    note_filename(title)                the file name Obsidian would give a note titled ``title``
    move_to_trash(root, rel)            into the flat ``<root>/.trash/``, ``name 1.md`` on a collision

The text of notes (new frontmatter, surgical key edits, body edits) is in
``vault.fmedit`` and ``vault.yamlstyle``, re-exported here. Callers confine paths first (``vault.paths``);
nothing here knows about the index or MCP. Every OSError becomes WriteFailed with a
message that says what happened and that the file was left as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from vault_mem.errors import InvalidInput, NotFound, WriteFailed
from vault_mem.settings import Settings
from vault_mem.vault.fmedit import append_paragraph, render_note, replace_body, set_keys
from vault_mem.vault.paths import NotANote, link_target, name_key
from vault_mem.vault.portable import O_BINARY, fsync_folder, lacks_hard_links, replace_file, set_mode, unlink_file
from vault_mem.vault.reader import VersionKey, version_key
from vault_mem.vault.yamlstyle import render_frontmatter

__all__ = [
    "TRASH_DIRNAME", "append_paragraph", "atomic_write", "create_at", "create_exclusive",
    "decode_for_edit", "move_back", "move_to_trash", "note_filename", "render_frontmatter",
    "render_note", "replace_body", "set_keys",
]

TRASH_DIRNAME = ".trash"
# Illegal in file names on some OS (* " \ / < > : | ?), or breaking [[wikilinks]] (# ^ [ ]).
_ILLEGAL = re.compile(r'[*"\\/<>:|?#^\[\]]')
# Bidi overrides, embeddings, isolates and marks: in a file name they reorder how listings show it.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Device names Windows reserves whatever the extension.
_WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL", *(f"COM{n}" for n in range(1, 10)), *(f"LPT{n}" for n in range(1, 10))}
_REASONS = {
    errno.ENOSPC: "disk full (ENOSPC)",
    errno.EDQUOT: "disk quota exceeded (EDQUOT)",
    errno.EROFS: "read-only file system (EROFS)",
    errno.EACCES: "permission denied (EACCES)",
    errno.EPERM: "operation not permitted (EPERM)",
    errno.ENAMETOOLONG: "file name too long (ENAMETOOLONG)",
    errno.EIO: "I/O error (EIO)",
}


def _reason(exc: OSError) -> str:
    if exc.errno in _REASONS:
        return _REASONS[exc.errno]
    code = errno.errorcode.get(exc.errno or 0, "")
    return f"{exc.strerror or exc}" + (f" ({code})" if code else "")


def _temp_name(name: str) -> str:
    stem = name.encode("utf-8", "surrogateescape")[:100].decode("utf-8", "ignore")
    return f".{stem}.{secrets.token_hex(4)}.tmp"


def _write_temp(folder: Path, name: str, data: bytes, mode: int | None) -> Path:
    """A hidden temp file in ``folder`` holding ``data``, fsynced. Raises OSError (temp removed)."""
    temp = folder / _temp_name(name)
    # Owner-only until set_mode: a file that is 0600 (a token in it) is never readable by others meanwhile.
    created = 0o666 if mode is None else 0o600
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY | getattr(os, "O_CLOEXEC", 0), created)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if mode is not None:
                set_mode(temp, mode)  # by path: os.fchmod does not exist on Windows
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(temp)
        raise
    return temp


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _vault_place(within: Path | None, path: Path, what: str, note: bool) -> str | None:
    """For a file of the vault ``within`` (None: not a vault's file): the real folder that ``path``
    (a note, or ``note=False`` a folder) leads to once it is checked to lead to a note's place
    (``link_target``), to check again after the temp file is made. WriteFailed when it does not."""
    if within is None:
        return None
    try:
        link_target(within, os.path.relpath(path, within), note=note)
    except (NotANote, ValueError) as exc:
        raise WriteFailed(f"{path} {exc}; {what}") from None
    return os.path.dirname(os.path.realpath(path)) if note else os.path.realpath(path)


def _still_there(temp: Path, folder: str | None, path: Path, what: str) -> None:
    """WriteFailed (the temp file removed) when the folder ``temp`` was made in is no longer the
    real folder checked before (a symlink on its way swapped meanwhile)."""
    if folder is not None and os.path.realpath(temp.parent) != folder:
        _unlink_quietly(temp)
        raise WriteFailed(f"a symlink on the way to {path} changed while it was written; {what}")



def atomic_write(path: Path, data: bytes, mode: int | None = None, within: Path | None = None, *,
                 config: Settings) -> None:
    """Replace (or create) ``path`` with ``data`` so that readers see the old or the new file, whole.

    Writes a hidden temp file in the same folder, fsyncs it, renames it over ``path`` and
    fsyncs the folder. The permission bits of the file it replaces are kept unless
    ``mode`` is given. A symlink is written through (the link stays). ``within``: the vault
    ``path`` belongs to: a path that leads through a symlink outside it, into a hidden folder or
    to a file that is not a note is refused (``link_target``), checked before the temp file is
    made and again after it (a link swapped meanwhile). Raises WriteFailed, with ``path``
    untouched, on any OS error or when ``path`` is not writable.
    """
    checked = _vault_place(within, path, "the file is unchanged", note=True)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise WriteFailed(f"{_reason(exc)} while reading {path}; the file is unchanged") from exc
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise WriteFailed(f"{path} is not a regular file; it is left as it is")
        if not os.access(target, os.W_OK):
            raise WriteFailed(f"{path} is read-only (its permissions forbid writing); the file is unchanged")
        if mode is None:
            mode = stat.S_IMODE(st.st_mode)
    what = "the file is unchanged" if st is not None else "nothing was written"
    try:
        temp = _write_temp(target.parent, target.name, data, mode)
    except OSError as exc:
        raise WriteFailed(f"{_reason(exc)} while writing {path}; {what}") from exc
    _still_there(temp, checked, path, what)
    try:
        # waits briefly while another program holds the note open (Windows)
        replace_file(temp, target, config=config)
    except OSError as exc:
        _unlink_quietly(temp)
        if isinstance(exc, PermissionError) and os.name == "nt":
            raise WriteFailed(f"{path} is held open by another program (Windows refused to replace it); "
                              f"{what}; retry when it is closed") from exc
        raise WriteFailed(f"{_reason(exc)} while writing {path}; {what}") from exc
    fsync_folder(target.parent)


def _split_md(filename: str) -> tuple[str, str]:
    if filename.lower().endswith(".md"):
        return filename[:-3], filename[-3:]
    return filename, ""


def _candidates(filename: str, tries: int) -> Iterator[str]:
    """``filename``, then ``stem 1.md``, ``stem 2.md``, ... (made as they are tried), ``tries`` in all
    (``max_name_suffix``)."""
    stem, ext = _split_md(filename)
    yield filename
    for n in range(1, tries):
        yield f"{stem} {n}{ext}"


def _taken(folder: Path) -> set[str]:
    try:
        return {name_key(name) for name in os.listdir(folder)}
    except FileNotFoundError:
        return set()


# A folder's names as this process last listed or changed it, with the folder's ``version_key``
# then. Listing a big folder is slow in a busy server: ``os.listdir`` lets go of the interpreter
# lock for every entry, and each time another thread may keep it for the switch interval
# (docs/perf/folder-names.md).
_names: OrderedDict[str, tuple[VersionKey, frozenset[str], float]] = OrderedDict()
_names_lock = threading.Lock()


def _names_in(folder: Path, config: Settings) -> tuple[frozenset[str], float]:
    """The ``name_key`` of every name in ``folder``, and when it was listed: listed again when the
    folder changed since this process last listed it or created a file in it (its mtime moved),
    and at least every ``names_fresh`` seconds (another program's file made while this process
    created one is missed until then). The stat is taken before the listing, so a change made
    while it lists makes the next create list again."""
    key = os.fspath(folder)
    signature = version_key(folder)
    now = time.monotonic()
    with _names_lock:
        kept = _names.get(key)
        fresh = now - kept[2] < config.names_fresh if kept is not None else False
        if kept is not None and signature is not None and kept[0] == signature and fresh:
            _names.move_to_end(key)
            return kept[1], kept[2]
    names = frozenset(_taken(folder))
    if signature is not None:
        _keep_names(key, signature, names, now, config.names_kept)
    return names, now


def _keep_names(key: str, signature: VersionKey, names: frozenset[str], listed: float, kept: int) -> None:
    """Remember ``names`` of ``key``, forgetting the least recently used past ``kept`` folders (``names_kept``)."""
    with _names_lock:
        _names[key] = (signature, names, listed)
        _names.move_to_end(key)
        while len(_names) > kept:
            _names.popitem(last=False)


def create_exclusive(folder: Path, filename: str, data: bytes, mode: int | None = None,
                     taken: set[str] | None = None, within: Path | None = None, *,
                     config: Settings) -> Path:
    """Create a NEW file ``filename`` (or ``stem 1.md``, ...) in ``folder`` holding ``data``.

    Never overwrites: the finished temp file is hard-linked to the final name, which
    fails if anyone (another process too) holds that name, and the next suffix is tried.
    Names are compared case-insensitively. ``folder`` is created if missing. Returns the
    path written. Raises WriteFailed on any OS error, leaving no file behind. ``taken``, the
    ``name_key`` of every name in ``folder``, saves listing it for each of many creates (an
    import); the name claimed is added to it. Without it, the folder is listed only when it
    changed since this process last listed it or created a file in it, or ``names_fresh`` seconds
    after (``_names_in``): a case variant another program makes meanwhile may be missed for that
    long, as one it makes a moment later always is (both files stay; nothing is overwritten).
    ``within``: the vault ``folder`` belongs to, as for ``atomic_write``: a folder that leads
    through a symlink outside it or into a hidden folder gets nothing.
    """
    config = config
    try:
        checked = _vault_place(within, folder, "nothing was written", note=False)
        folder.mkdir(parents=True, exist_ok=True)
        listed, listed_at = _names_in(folder, config) if taken is None else (frozenset(), 0.0)  # before the temp file
        temp = _write_temp(folder, filename, data, mode)
    except OSError as exc:
        raise WriteFailed(f"{_reason(exc)} while creating {folder / filename}; nothing was written") from exc
    _still_there(temp, checked, folder / filename, "nothing was written")
    try:
        seen = set() if taken is None else taken  # names found taken on the way (and the one claimed)
        for candidate in _candidates(filename, config.max_name_suffix):
            if name_key(candidate) in listed or name_key(candidate) in seen:
                continue
            final = folder / candidate
            if _claim(temp, final, config):
                fsync_folder(folder)
                seen.add(name_key(candidate))
                if taken is None:  # this create's own changes, so that the next one need not list
                    _unlink_quietly(temp)
                    signature = version_key(folder)
                    if signature is not None:
                        _keep_names(os.fspath(folder), signature, listed | seen, listed_at, config.names_kept)
                return final
            seen.add(name_key(candidate))
        raise WriteFailed(f"no free name for {filename} in {folder} after {config.max_name_suffix} tries")
    except OSError as exc:
        raise WriteFailed(f"{_reason(exc)} while creating {folder / filename}; nothing was written") from exc
    finally:
        _unlink_quietly(temp)


def _claim(temp: Path, final: Path, config: Settings) -> bool:
    """Give ``temp``'s content the name ``final`` unless it exists. False when taken."""
    try:
        os.link(temp, final, follow_symlinks=False)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if not lacks_hard_links(exc):
            raise
    return _reserve_then_move(temp, final, config)


def _reserve_then_move(source: Path, dest: Path, config: Settings) -> bool:
    """Where there are no hard links: reserve ``dest`` with O_EXCL, then move ``source`` onto it.
    False when ``dest`` is taken (by another thread or process too)."""
    try:
        os.close(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY, 0o600))
    except FileExistsError:
        return False
    try:
        replace_file(source, dest, config=config)
    except OSError:
        _unlink_quietly(dest)
        raise
    return True


def note_filename(title: str, config: Settings) -> str:
    """The file name (with ``.md``) Obsidian would give a note titled ``title``.

    Removes characters illegal in file names and those that break wikilinks
    (``* " \\ / < > : | ? # ^ [ ]``), control characters and bidi controls (U+202E shows the
    rest of a name reversed in listings: an extension in disguise); collapses whitespace; strips
    leading dots and trailing dots and spaces; caps the stem at ``max_name_bytes`` of UTF-8
    (cut between characters); adds ``_`` to a name Windows reserves (``CON``, ``NUL``,
    ``COM1``...); "Untitled" when nothing is left. Emoji and right-to-left
    scripts are kept.
    """
    config = config
    text = unicodedata.normalize("NFC", title)
    text = " ".join(text.split())  # tabs and newlines become single spaces
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cs") and ch not in _BIDI_CONTROLS)
    text = _ILLEGAL.sub("", text)
    text = " ".join(text.split())
    text = _trim(text)
    if len(text.encode("utf-8")) > config.max_name_bytes:
        text = _trim(text.encode("utf-8")[:config.max_name_bytes].decode("utf-8", "ignore"))
    if text.lower().endswith(".excalidraw"):
        # The reader treats *.excalidraw.md as a drawing and ignores its body.
        text = text[: -len(".excalidraw")] + " excalidraw"
    base = text.split(".")[0]
    if base.rstrip(" ").upper() in _WINDOWS_DEVICES:  # "CON.md" opens the console on Windows
        text = base.rstrip(" ") + "_" + text[len(base):]
    return (text or "Untitled") + ".md"


def _trim(text: str) -> str:
    return text.lstrip(". ").rstrip(". ")


def move_to_trash(root: Path, rel: str, config: Settings) -> str:
    """Move ``root/rel`` into the flat ``root/.trash/``; returns the new vault-relative path.

    A name already in the trash gets ``name 1.md``, ``name 2.md``... (ignoring case), as
    Obsidian does; nothing in the trash is ever overwritten. Raises NotFound when the
    file is gone, WriteFailed on any OS error (the file then stays where it was).
    """
    config = config
    source = root / rel
    trash = root / TRASH_DIRNAME
    if not os.path.lexists(source):
        raise NotFound(f"{rel} does not exist (deleted or moved already?)")
    if source.is_dir() and not source.is_symlink():
        raise InvalidInput("ref", f"{rel} is a folder; only notes can be moved to the trash")
    if trash.is_symlink():
        raise WriteFailed(f"{TRASH_DIRNAME} is a symlink; refusing to move {rel} through it")
    try:
        trash.mkdir(exist_ok=True)
        taken = _taken(trash)
        for candidate in _candidates(source.name, config.max_name_suffix):
            if name_key(candidate) in taken:
                continue
            if _move_no_clobber(source, trash / candidate, config):
                fsync_folder(trash)
                fsync_folder(source.parent)
                return f"{TRASH_DIRNAME}/{candidate}"
    except FileNotFoundError as exc:
        raise NotFound(f"{rel} does not exist (deleted or moved already?)") from exc
    except OSError as exc:
        raise WriteFailed(f"{_reason(exc)} while moving {rel} to {TRASH_DIRNAME}; "
                          "the file is where it was") from exc
    raise WriteFailed(f"no free name for {source.name} in {TRASH_DIRNAME} after {config.max_name_suffix} tries")


def create_at(path: Path, data: bytes, within: Path | None = None, *, config: Settings) -> bool:
    """Create ``path`` holding ``data``, whole or not at all; False (nothing written) when the name
    is taken. ``within``: the vault it belongs to, as for ``atomic_write``. Raises WriteFailed on
    any OS error."""
    try:
        checked = _vault_place(within, path.parent, "nothing was written", note=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = _write_temp(path.parent, path.name, data, None)
        try:
            _still_there(temp, checked, path, "nothing was written")
            if not _claim(temp, path, config):
                return False
        finally:
            _unlink_quietly(temp)
        fsync_folder(path.parent)
        return True
    except OSError as exc:
        raise WriteFailed(f"{_reason(exc)} while creating {path}; nothing was written") from exc


def move_back(root: Path, trash_rel: str, rel: str, config: Settings) -> bool:
    """Move ``root/trash_rel`` (a note in the trash) to ``root/rel``; False when ``rel`` is taken.
    Raises WriteFailed on any OS error (the file then stays in the trash)."""
    dest = root / rel
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not _move_no_clobber(root / trash_rel, dest, config):
            return False
        fsync_folder(dest.parent)
        return True
    except OSError as exc:
        raise WriteFailed(f"{_reason(exc)} while moving {trash_rel} back to {rel}; it stays in the trash") from exc


def _move_no_clobber(source: Path, dest: Path, config: Settings) -> bool:
    try:
        os.link(source, dest, follow_symlinks=False)
    except FileExistsError:
        return False
    except OSError as exc:
        if not lacks_hard_links(exc):
            raise
        return _reserve_then_move(source, dest, config)
    try:
        unlink_file(source, config=config)  # waits briefly while another program holds the note open (Windows)
    except OSError:
        _unlink_quietly(dest)  # the note stays where it was, not in two places
        raise
    return True


def decode_for_edit(data: bytes, name: str) -> str:
    """A note's bytes as text for the edit functions, BOM and CR kept so they can be written back.

    Raises InvalidInput("ref") for bytes that are not UTF-8: re-encoding them would
    change the file where the edit did not.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("ref", f"{name} is not valid UTF-8 (first bad byte at offset {exc.start}); "
                           "it cannot be edited without changing other bytes; fix it by hand first") from exc
