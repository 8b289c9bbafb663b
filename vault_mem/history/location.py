"""Where the history lives: beside the index, not in it (docs/index-and-sync.md, "The history").

The journal behind ``vault-mem undo`` (history/journal.py) and what each agent has seen
(history/agentstate.py) cannot be rebuilt from the files, so they live apart from the index
folder, which anyone may delete: in ``<index folder>-history/`` beside it
(``<vault>/.vault-mem-history/`` by default). That folder holds a ``.gitignore`` of ``*`` and a
README saying what it is. Versions before 0.4.22 kept both inside the index folder;
``adopt_old`` moves them out the first time a newer version opens the index, losing nothing.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from pathlib import Path

from vault_mem.settings import Settings

log = logging.getLogger("vault_mem.history")
SUFFIX = "-history"
README = "README.txt"
README_TEXT = """\
vault-mem's history of this vault: the journal behind 'vault-mem log' and 'vault-mem undo',
and what each agent has read. It cannot be rebuilt from the notes.

To throw the index away, run 'vault-mem index --vault VAULT --rebuild' (or delete the index
folder beside this one); neither touches this folder.
"""
_LOCKS = frozenset({"lock", ".lock"})
_ready: set[str] = set()


def history_dir(index_dir: Path) -> Path:
    """The history folder of the index in ``index_dir``: beside it, named ``<its name>-history``."""
    return index_dir.with_name(index_dir.name + SUFFIX)


def is_history_dir(folder: Path) -> bool:
    """Whether ``folder`` is a history folder (its README says so, and it holds no index)."""
    return (folder / README).is_file() and not (folder / "state.json").exists()


def prepare(history: Path) -> None:
    """Make the history folder with its ``.gitignore`` and README (once per process), when the
    first thing is written into it: reading makes nothing. Raises OSError."""
    if str(history) in _ready:
        return
    history.mkdir(parents=True, exist_ok=True)
    for name, text in ((".gitignore", "*\n"), (README, README_TEXT)):
        if not (history / name).exists():
            (history / name).write_text(text, encoding="utf-8")
    _ready.add(str(history))


def adopt_old(index_dir: Path, history: Path, config: Settings) -> bool:
    """Move a journal and agents' states left inside ``index_dir`` by an older version into
    ``history``, merged with what is there already; True when something was moved. Never
    raises: what cannot be moved now stays where it was (the index keeps it through a
    rebuild) and the next start tries again."""
    from vault_mem.history import agentstate, journal  # they make their folders through prepare

    old_journal, old_agents = journal.journal_dir(index_dir), index_dir / agentstate.AGENTS_DIR
    if not old_journal.is_dir() and not old_agents.is_dir():
        return False
    try:
        prepare(history)
        moved = journal.adopt(index_dir, history, config)
        moved = agentstate.adopt(index_dir, history, config) or moved
    except OSError as exc:
        log.warning("cannot move the undo journal and the agents' states from %s to %s yet: %s",
                    index_dir, history, exc)
        return False
    for folder in (old_journal, old_agents):  # gone once only its lock files are left
        with contextlib.suppress(OSError):
            if folder.is_dir() and all(c.name in _LOCKS for c in folder.rglob("*") if c.is_file()):
                shutil.rmtree(folder, ignore_errors=True)
    return moved
