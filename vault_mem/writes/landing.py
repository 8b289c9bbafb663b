"""What happens after a write tool changed a file: the journal for ``vault-mem log`` and
``undo`` (history/journal.py), the agent's own notes for ``lost``, and, when something did not
fully land (not indexed, not committed), a ``persist_error`` for its next call
(history/agentstate.py, served/mailbox.py). None of it ever fails the write: the file change
stands, and what could not be kept is a warning or a log line."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from vault_mem.history import agentstate, journal
from vault_mem.served.context import View
from vault_mem.vault.dates import iso

log = logging.getLogger("vault_mem.writes")


def change(path: str, fsrel: str, title: str, uid: str, before: bytes | None, after: bytes | None,
           trash: str | None = None, real: str | None = None) -> dict[str, Any]:
    """One file change, as ``journal_and_track`` takes it; ``real``: the file a symlink made the
    note's path (``Note.real``)."""
    return {"path": path, "fsrel": fsrel, "title": title, "uid": uid, "before": before, "after": after,
            "trash": trash, "real": real}


def journal_and_track(view: View, tool: str, agent: str, changes: list[dict[str, Any]]) -> list[str]:
    """Journal ``changes`` and track the agent's notes; returns warnings for the answer."""
    history_dir = view.vault.index.history_dir
    warnings = []
    warning = journal.record(history_dir, agent, tool, changes, config=view.config)
    if warning:
        warnings.append(warning)

    def track(state: agentstate.Changes) -> None:
        for item in changes:
            if item["after"] is None:
                state.drop("wrote", item["fsrel"])  # its own delete is not lost
            else:
                state.put("wrote", item["fsrel"], [item["uid"], item["path"], item["title"]])

    try:
        agentstate.change(history_dir, agent, track, config=view.config)
    except OSError as exc:
        log.warning("cannot keep the notes of agent %s: %s", agent, exc)
    return warnings


def keep_persist_error(view: View, agent: str, tool: str, path: str, message: str) -> None:
    """Keep ``message`` (a write of ``path`` that did not fully land) for the agent's next call."""
    now = dt.datetime.now(dt.UTC)
    error = {"tool": tool, "permalink": view.permalink(path), "message": message, "time": iso(now),
             "t": now.timestamp()}  # t: which call may report it (served/mailbox.py)
    try:
        agentstate.change(view.vault.index.history_dir, agent, lambda state: state.add_error(error),
                          config=view.config)
    except OSError as exc:
        log.warning("cannot keep a persist error of agent %s: %s", agent, exc)
