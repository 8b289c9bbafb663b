"""Choosing the index folder and making sure it can be written, before any work starts.

Every reason it cannot be used becomes one ``VaultUnavailable`` line that says what to do,
instead of a ``PermissionError`` or ``FileExistsError`` half way through a build.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from vault_mem.errors import VaultUnavailable
from vault_mem.history.location import is_history_dir
from vault_mem.search.presence import PRESENCE_DIR
from vault_mem.search.store import MERGE_LOCK, STATE_FILE, cache_index_dir, default_index_dir
from vault_mem.vault.paths import INDEX_DIRNAME

# What a vault-mem index folder holds, even while another server (a worker) is making it; "waiting"
# is where versions up to 0.4.21 left a marker while they waited for the write lock.
_MARKERS = (STATE_FILE, ".gitignore", "build.lock", PRESENCE_DIR, "waiting", "MAIN_WRITELOCK", MERGE_LOCK)


def usable_index_dir(root: Path, given: Path | None) -> Path:
    """The index folder for the vault ``root`` (``given`` or the default), created and probed."""
    if given is None:
        chosen = default_index_dir(root)
        fallback = chosen != root / INDEX_DIRNAME
    else:
        chosen, fallback = given.expanduser().absolute(), False
    what = (f"the vault {root} is read-only, and the cache folder {chosen} for its index"
            if fallback else f"the index folder {chosen}")
    if chosen.exists() and not chosen.is_dir():
        raise VaultUnavailable(f"{what} is a file, not a folder", advice="pass --index-dir a folder")
    if chosen.is_dir() and is_history_dir(chosen):
        raise VaultUnavailable(f"{chosen} is vault-mem's history (the undo journal), not an index folder",
                               advice="pass --index-dir the index folder beside it, or a new folder")
    if given is not None and chosen.is_dir() and not _holds_an_index_or_nothing(chosen):
        # A build empties its folder: never point it at a folder of other files.
        raise VaultUnavailable(f"{what} holds other files and is not a vault-mem index",
                               advice="pass --index-dir a new or empty folder")
    try:
        chosen.mkdir(parents=True, exist_ok=True)
        probe = chosen / f".probe.{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except FileExistsError:
        raise VaultUnavailable(f"{what} cannot be made: a file is in the way",
                               advice="pass --index-dir a folder") from None
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
        raise VaultUnavailable(f"{what} cannot be written ({reason})",
                               advice="pass --index-dir a writable folder") from None
    return chosen


def has_index(root: Path, given: Path | None) -> bool:
    """True when an index of ``root`` already exists where it would be looked for (nothing made)."""
    if given is not None:
        return (given.expanduser().absolute() / STATE_FILE).exists()
    return (root / INDEX_DIRNAME / STATE_FILE).exists() or (cache_index_dir(root) / STATE_FILE).exists()


def _holds_an_index_or_nothing(folder: Path) -> bool:
    with contextlib.suppress(OSError):
        names = {child.name for child in folder.iterdir() if not child.name.startswith(".probe.")}
        return not names or any(marker in names for marker in _MARKERS)
    return True  # cannot be listed: the probe below says why
