"""Vault-relative paths: display forms, and confinement of domains and refs (docs/safety.md)."""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vault_mem.errors import InvalidInput, PathRefused

INDEX_DIRNAME = ".vault-mem"
_LOOKALIKES = "\u2044\u2215\uff0f\uff3c\u2024\u2025\uff0e"
_PERCENT = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)
# A drive letter is "X:" then a separator (docs/safety.md); "C: notes" is an ordinary title.
_DRIVE = re.compile(r"^[A-Za-z]:[/\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def display_path(rel: str) -> str:
    """A vault-relative OS path as a clean '/'-separated string (undecodable bytes become U+FFFD).

    Not NFC-normalised: the path names the file as it is on disk; refs compare folded forms.
    """
    rel = rel.replace(os.sep, "/")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        rel = os.fsencode(rel).decode("utf-8", errors="replace")
    return rel


MAX_SEGMENT_BYTES = 255  # a folder or file name's bytes: what file systems take at most


def check_folder_names(domain: str, param: str) -> None:
    """Raise InvalidInput naming ``param`` when a folder name of ``domain`` is longer than a file
    system takes."""
    for segment in domain.split("/"):
        size = len(segment.encode("utf-8", "surrogatepass"))
        if size > MAX_SEGMENT_BYTES:
            raise InvalidInput(param, f"the folder name {segment[:40]!r}... is {size} bytes; file systems "
                               f"take at most {MAX_SEGMENT_BYTES}")


def check_relative(value: str, param: str) -> str:
    """Refuse a domain or ref that could leave the vault or reach a hidden folder.

    Returns the value with surrounding slashes trimmed. Raises PathRefused naming ``param``.
    """
    if _CONTROL.search(value):
        raise PathRefused(param, "control characters and NUL are not allowed in a path")
    if "\\" in value:
        raise PathRefused(param, "backslashes are not allowed; use '/' between folders")
    if _PERCENT.search(value):
        raise PathRefused(param, "percent-encoded dots, slashes or NUL are not allowed")
    for ch in _LOOKALIKES:
        if ch in value:
            raise PathRefused(
                param, f"the look-alike character U+{ord(ch):04X} is not allowed; use plain '/' and '.'"
            )
    if value.startswith(("/", "~")):
        raise PathRefused(param, "must be relative to the vault (no leading '/' or '~')")
    if _DRIVE.match(value):
        raise PathRefused(param, "drive letters are not allowed; paths are relative to the vault")
    trimmed = value.strip("/")
    for segment in trimmed.split("/"):
        if segment in (".", ".."):
            raise PathRefused(param, "'.' and '..' segments are not allowed")
        if segment.startswith("."):
            raise PathRefused(param, f"hidden folders or files ('{segment}') are not allowed")
    return trimmed


def confine(root: Path, rel: str, param: str, note: bool = False) -> Path:
    """The absolute path of ``rel`` under ``root``, refusing anything that leads outside it or, through
    a symlink, into a hidden folder (``note``: to a file that is not a note; ``link_target``)."""
    rel = check_relative(rel, param)
    target = root / rel if rel else root
    try:
        link_target(root, rel, note=note)
    except NotANote as exc:
        raise PathRefused(param, f"{display_path(rel) or 'the vault top'} {exc}") from None
    return target


class NotANote(Exception):
    """Where a symlink makes a path lead is not a note of the vault; the message says why, as the
    end of a sentence that starts with the path."""


def is_link(path: str) -> bool:
    """A symlink, or a Windows junction (which ``islink`` does not count)."""
    if os.path.islink(path):
        return True
    junction = getattr(os.path, "isjunction", None)  # Python 3.12 and later
    return bool(junction is not None and junction(path))


def link_target(root: Path, rel: str, note: bool = True) -> str | None:
    """The one judge of where a vault path leads through symlinks (docs/vault-format.md, "Which
    files are memories"; docs/safety.md). ``rel`` is a path under ``root`` (OS or '/' separators).

    None when no segment of ``rel`` is a symlink (or junction) and none is ``.`` or ``..``: the path
    is the file it names (one lstat a segment). Else the vault-relative '/'-separated path of the
    file (``note=False``: of the folder, '' for the vault's top) it leads to, every symlink
    followed, spelled as its folders list it (a case-insensitive disk follows ``../Private/x.md``
    to ``private/x.md``): a caller limited to some folders sees or changes such a note only if it
    may the file it leads to as well (docs/sharing.md). Raises NotANote when that file is not a
    note: it lies outside the vault, inside a hidden folder (``.obsidian``, ``.git``, ``.trash``,
    the index...), its name does not end in ``.md`` (``note``), or the links loop.
    """
    parts = [p for p in rel.replace(os.sep, "/").split("/") if p != ""]
    odd = any(p in (".", "..") for p in parts) or os.path.isabs(rel)
    if not odd and not any(is_link(os.path.join(root, *parts[:n])) for n in range(1, len(parts) + 1)):
        return None
    resolved = os.path.realpath(os.path.join(root, rel))
    if is_link(resolved):  # what realpath leaves of a loop
        raise NotANote("is a symlink loop; not followed")
    try:
        real = os.path.relpath(resolved, os.path.realpath(root))
    except ValueError:  # another drive (Windows)
        raise NotANote("leads through a symlink outside the vault; not followed") from None
    if real == os.pardir or real.startswith(os.pardir + os.sep) or os.path.isabs(real):
        raise NotANote("leads through a symlink outside the vault; not followed")
    real = "" if real == os.curdir else real.replace(os.sep, "/")
    hidden = next((seg for seg in real.split("/") if seg.startswith(".")), None)
    if hidden is not None:
        raise NotANote(f"leads through a symlink into the hidden folder {hidden}/; not followed")
    if note and not real.lower().endswith(".md"):
        raise NotANote(f"leads through a symlink to {display_path(real) or 'the vault top'}, which is not a "
                       "note (.md file); not followed")
    if _case_blind(os.path.realpath(root)):
        real = existing_spelling(root, real)  # listings: only where a stat would open any case
    return None if real == "/".join(parts) else display_path(real)


_CASE_BLIND: dict[str, bool] = {}


def _case_blind(real_root: str) -> bool:
    """Whether the disk under ``real_root`` opens a name in any case, so that a link's target may
    be spelled otherwise than its folders list it (macOS by default). Not on Windows, where
    ``realpath`` already gives each name as it is listed; looked at once per vault and process."""
    if os.name == "nt":
        return False
    blind = _CASE_BLIND.get(real_root)
    if blind is None:
        swapped = real_root.swapcase()
        try:
            blind = swapped != real_root and os.path.samestat(os.lstat(real_root), os.lstat(swapped))
        except OSError:
            blind = False
        _CASE_BLIND[real_root] = blind
    return blind


def resolves_inside(root: Path, target: Path) -> bool:
    """True when ``target``, with every symlink followed, is ``root`` or lies under it."""
    try:
        real_root = root.resolve()
        resolved = target.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return False
    return resolved == real_root or real_root in resolved.parents


class InsideCheck:
    """``resolves_inside(root, target)`` for many targets in a row (one call's search rows), and
    outside every hidden folder (a body read through a link into ``.obsidian`` is none):
    the root and each folder are resolved once, a target itself only when it is a symlink, and
    the rest is string work (pathlib's joins and ``parents`` were most of a row's check).
    Folders can change between calls, so a check lives no longer than one call."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._real_root: str | None = None
        self._under_root = ""  # what every path under the real root starts with
        self._folders: dict[str, str | None] = {}  # None: the folder does not resolve (a loop)
        self._real_spelled: str | None = None  # the real root, as resolve spells it

    def __call__(self, target: Path) -> bool:
        try:
            if self._real_root is None:
                self._real_spelled = str(self.root.resolve())
                self._real_root = os.path.normcase(self._real_spelled)
                self._under_root = self._real_root if self._real_root.endswith(os.sep) else self._real_root + os.sep
            spelled = os.fspath(target)
            parent, name = os.path.split(spelled)
            if parent not in self._folders:
                self._folders[parent] = self._folder(parent)
            folder = self._folders[parent]
            if folder is None:
                return False
            try:
                link = stat.S_ISLNK(os.lstat(spelled).st_mode)
            except OSError:
                link = False  # gone: resolved as it is spelled, as Path.resolve does
            resolved = _compared(target.resolve()) if link else os.path.join(folder, os.path.normcase(name))
        except (OSError, RuntimeError):  # a symlink loop
            return False
        if resolved == self._real_root:
            return True
        # Inside, and (as link_target judges a note) never in a hidden folder reached through a link.
        return resolved.startswith(self._under_root) and not _hidden_below(resolved[len(self._under_root):])

    def _folder(self, parent: str) -> str | None:
        """The folder ``parent`` resolved (None: a symlink loop). A folder under the root whose
        every step is a plain folder is the real root plus those steps: one lstat a step instead
        of one per step of the whole path, the root's included."""
        spelled_root = os.fspath(self.root)
        if parent.startswith(spelled_root + os.sep) and self._real_spelled is not None:
            real = self._real_spelled
            for step in parent[len(spelled_root) + 1:].split(os.sep):
                if step in ("", ".", ".."):
                    break
                real = os.path.join(real, step)
                try:
                    st = os.lstat(real)
                except OSError:
                    break
                reparse = getattr(st, "st_file_attributes", 0) & stat.FILE_ATTRIBUTE_REPARSE_POINT
                if reparse or not stat.S_ISDIR(st.st_mode):
                    break  # a link (or a Windows junction): resolved whole, below
            else:
                return os.path.normcase(real)
        try:
            return _compared(Path(parent).resolve())
        except RuntimeError:  # a symlink loop
            return None


def _hidden_below(rest: str) -> bool:
    return rest.startswith(".") or (os.sep + ".") in rest


def _compared(path: Path) -> str:
    """A resolved path as InsideCheck compares it (in any case on Windows, as pathlib does)."""
    return os.path.normcase(str(path))


def note_file(root: Path, fsrel: str, param: str = "ref") -> Path:
    """The file of an indexed note, refusing one that now leads outside the vault, into a hidden
    folder or to a file that is not a note (``link_target``)."""
    target = root / fsrel
    try:
        link_target(root, fsrel)
    except NotANote as exc:
        raise PathRefused(param, f"{display_path(fsrel)} {exc}") from None
    return target


def relative_to_root(path: str, roots: Sequence[str], flavour: Any = os.path) -> str | None:
    """``path`` (absolute, as a file watcher reports it) relative to the first of ``roots`` that holds
    it, '/'-separated; None for a root itself or a path outside every root (another drive too).

    Several roots because macOS's FSEvents reports real paths (``/private/var/...``) for a
    vault opened through a symlink (``/var/...``), and may report a name in another Unicode
    normalisation than the one it was opened with; ``flavour`` is ``ntpath`` or ``posixpath``
    (the running system's by default), so Windows paths can be checked anywhere.
    """
    for candidate in (path, unicodedata.normalize("NFC", path)):
        for root in roots:
            for base in (root, unicodedata.normalize("NFC", root)):
                try:
                    rel = flavour.relpath(candidate, base)
                except ValueError:  # another drive (Windows)
                    continue
                if rel == flavour.pardir or rel.startswith(flavour.pardir + flavour.sep):
                    continue
                return None if rel == flavour.curdir else rel.replace(flavour.sep, "/")
    return None


def name_key(name: str) -> str:
    """How a case-insensitive file system compares names (macOS also ignores NFC/NFD differences)."""
    return unicodedata.normalize("NFC", name).casefold()


class Listing:
    """One folder's names as listed, and (made when first needed) the same under ``name_key``."""

    def __init__(self, folder: Path) -> None:
        try:
            self.names = set(os.listdir(folder))
        except OSError:
            self.names = set()
        self._keyed: dict[str, list[str]] | None = None

    def same(self, segment: str) -> list[str]:
        """The listed names equal to ``segment`` under ``name_key`` (itself among them when listed)."""
        if self._keyed is None:
            self._keyed = {}
            for name in self.names:
                self._keyed.setdefault(name_key(name), []).append(name)
        return self._keyed.get(name_key(segment), [])


def listed_spelling(root: Path, rel: str, listings: dict[str, Listing] | None = None) -> str | None:
    """The spelling under which the folder listings hold the '/'-separated ``rel``, or None when some
    segment is not there at all.

    On a case-sensitive file system that is ``rel`` itself or None. On a case-insensitive one
    (macOS and Windows by default) ``note.md`` still opens after ``note.md`` was renamed
    ``Note.md``: only the listing tells which name the file has now, so a watcher decides by
    the listing, not by a stat. A segment listed exactly wins (found without keying the folder's
    names: a watcher asks after every save, and a folder may hold thousands); else the one listed
    entry equal to it under ``name_key`` (when several are, as on a case-sensitive disk, none).
    ``listings`` caches each folder's listing for one batch of lookups.
    """
    cache = {} if listings is None else listings
    spelled: list[str] = []
    for segment in rel.split("/"):
        folder = "/".join(spelled)
        listing = cache.get(folder)
        if listing is None:
            listing = cache[folder] = Listing(root / folder if folder else root)
        if segment in listing.names:
            spelled.append(segment)
            continue
        same = listing.same(segment)
        if len(same) == 1:
            spelled.append(same[0])
        else:
            return None
    return "/".join(spelled)


def existing_spelling(root: Path, rel: str) -> str:
    """``rel`` with its leading segments that name existing entries spelled as they are listed
    (case and Unicode form), the rest as given: ``Projects/new`` becomes ``projects/new`` when
    ``projects/`` exists, which is where a case-insensitive disk would put it anyway."""
    if not rel:
        return rel
    parts = rel.split("/")
    listings: dict[str, Listing] = {}
    spelled: list[str] = []
    for i, segment in enumerate(parts):
        found = listed_spelling(root, "/".join([*spelled, segment]), listings)
        if found is None:
            return "/".join([*spelled, *parts[i:]])
        spelled = found.split("/")
    return "/".join(spelled)


def on_disk_spelling(path: Path) -> Path:
    """An absolute ``path`` with every segment spelled as its folder lists it, where that can be
    told (a folder that cannot be listed keeps the segment as given).

    ``--vault ~/documents/vault`` opens ``~/Documents/Vault`` on macOS and Windows, but their
    watchers report the spelling on disk; starting from that spelling keeps the two in step.
    The same path on a case-sensitive disk.
    """
    spelled = Path(path.anchor)
    for segment in path.parts[1:]:
        found = listed_spelling(spelled, segment)
        spelled = spelled / (found if found is not None else segment)
    return spelled
