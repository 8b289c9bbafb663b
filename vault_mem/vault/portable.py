"""File operations whose behaviour differs between Linux, macOS and Windows, in one place.

    O_BINARY                   the ``os.open`` flag for bytes as they are (Windows otherwise translates
                               newlines and stops reading at Ctrl-Z); 0 where there is no such mode
    replace_file(src, dst)     ``os.replace``, retried briefly while the target is in use
    unlink_file(path)          ``os.unlink``, retried the same way
    fsync_folder(folder)       make a rename durable, where a folder can be fsynced (not on Windows)
    set_mode(path, mode)       permission bits by path (``os.fchmod`` does not exist on Windows)
    lacks_hard_links(exc)      True when ``os.link`` failed because the file system has no hard links
    user_cache_root()          the per-user cache folder of the platform
    read_regular(path, limit, chunk=...)  a regular file's bytes, opened without blocking (a FIFO
                               cannot hang the reader; there is none on Windows), at most ``limit`` of them

Windows refuses to replace or delete a file that another process holds open without
FILE_SHARE_DELETE (an editor, a virus scanner, the search indexer, a sync client): the
error is PermissionError (winerror 5 or 32) and usually clears within milliseconds. The
same error elsewhere (an immutable or locked file) gets the same short wait. What each
platform does differently is in docs/platforms.md.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

from vault_mem.settings import Settings

O_BINARY: int = getattr(os, "O_BINARY", 0)
# CreateHardLinkW on FAT/exFAT: ERROR_INVALID_FUNCTION (1), ERROR_NOT_SUPPORTED (50).
_WINDOWS_NO_LINKS = {1, 50}
_POSIX_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK, errno.EXDEV}
# chmod on a file system without permission bits (FAT, exFAT, some network mounts).
_NO_MODE_BITS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}



def _while_in_use(operation: Callable[[], None], wait: float, config: Settings) -> None:
    """Run ``operation``; while it raises PermissionError, retry with backoff (``in_use_first_retry``
    doubling up to ``in_use_max_retry``) for ``wait`` seconds."""
    deadline = time.monotonic() + wait
    delay = config.in_use_first_retry
    while True:
        try:
            operation()
            return
        except PermissionError:
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, config.in_use_max_retry)


def replace_file(src: os.PathLike[str] | str, dst: os.PathLike[str] | str, wait: float | None = None, *,
                 config: Settings) -> None:
    """``os.replace(src, dst)``, waiting up to ``wait`` seconds (``config``'s ``in_use_wait`` when
    None) while ``dst`` is held open elsewhere.

    Raises the last OSError when the target stays in use (or on any other error at once).
    """
    config = config
    _while_in_use(lambda: os.replace(src, dst), config.in_use_wait if wait is None else wait, config)


def unlink_file(path: os.PathLike[str] | str, wait: float | None = None, *, config: Settings) -> None:
    """``os.unlink(path)``, waiting the same way as ``replace_file``. Raises OSError."""
    _while_in_use(lambda: os.unlink(path), config.in_use_wait if wait is None else wait, config)


def fsync_folder(folder: os.PathLike[str] | str) -> None:
    """Flush a folder's entries (a rename or a new name in it) to disk, where the platform can.

    Windows cannot open a folder with ``os.open`` and journals renames itself (NTFS); some
    file systems refuse fsync on a folder. Best effort: never raises.
    """
    if os.name == "nt":
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def set_mode(path: os.PathLike[str] | str, mode: int) -> None:
    """Give ``path`` the permission bits ``mode`` (on Windows only the read-only flag exists).

    A file system without permission bits is not an error: there is nothing to keep.
    Raises any other OSError.
    """
    try:
        os.chmod(path, mode)
    except OSError as exc:
        if exc.errno not in _NO_MODE_BITS:
            raise


def lacks_hard_links(exc: OSError) -> bool:
    """True when ``os.link`` failed because this file system (FAT, exFAT, some network mounts)
    has no hard links, rather than because the name is taken or the disk failed."""
    if getattr(exc, "winerror", None) in _WINDOWS_NO_LINKS:
        return True
    return exc.errno in _POSIX_NO_LINKS


def user_cache_root() -> Path:
    """``$XDG_CACHE_HOME`` when set; else ``%LOCALAPPDATA%`` on Windows, ``~/Library/Caches`` on
    macOS, ``~/.cache`` elsewhere."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg)
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        if local:
            return Path(local)
        return Path.home() / "AppData" / "Local"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    return Path.home() / ".cache"


def read_regular(path: os.PathLike[str] | str, limit: int, *, chunk: int) -> bytes:
    """The bytes of the regular file at ``path``, read ``chunk`` bytes at a time (``read_chunk``) and
    opened without blocking so that a FIFO, socket or device given that name cannot hang the
    caller. Raises FileNotFoundError when it is not there, OSError (EINVAL) when it is not a regular
    file, OSError (EFBIG) when it holds more than ``limit`` bytes; any other OSError as the system
    gives it."""
    fd = os.open(path, os.O_RDONLY | O_BINARY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)", str(path))
        chunks: list[bytes] = []
        size = 0
        while part := os.read(fd, min(chunk, limit + 1 - size)):
            chunks.append(part)
            size += len(part)
            if size > limit:
                raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)
