"""What an answer tells the agent that calls (docs/tools.md, "Answers to an agent"):

- ``inbox`` (every memory_search answer): the notes addressed to it (``to: NAME`` or a list)
  that it has not read with memory_read and that are neither archived nor closed, as
  digests, newest first, at most ``INBOX_SHOWN``; ``inbox_more`` counts the rest;
- ``persist_error`` (any answer, once): its writes that did not fully land since its last call;
- ``lost`` (any answer, once): notes it wrote that someone else has since deleted or moved.

Who calls: the caller identity of the call (an agent key, ``serve --agent``), else the call's
own ``agent`` argument; a call naming no agent gets none of these. What an agent has seen
is kept beside the index (``history/agentstate.py``), never in the note.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
from typing import Any

from vault_mem.history import agentstate
from vault_mem.served.agents import AGENT_NAME, Agent
from vault_mem.served.context import View
from vault_mem.vault.dates import iso
from vault_mem.vault.fields import fold
from vault_mem.vault.paths import resolves_inside

log = logging.getLogger("vault_mem.mailbox")
CLOSED = ("completed", "cancelled")
READ_TOOLS = ("memory_read", "get_memory", "memory_get")


def caller_name(caller: Agent | None, raw: dict[str, Any]) -> str | None:
    """The agent making a call: its identity, else a well-formed ``agent`` argument, else None."""
    if caller is not None:
        return caller.name
    given = raw.get("agent")
    return given if isinstance(given, str) and AGENT_NAME.fullmatch(given) else None


def inbox(view: View, agent: str, read: dict[str, Any] | None = None, just_read: str | None = None) -> list[int]:
    """The documents in ``agent``'s inbox, newest first (``read``: its state's read uids;
    ``just_read``: one more, read by this very call)."""
    if read is None:
        read = agentstate.load(view.vault.index.history_dir, agent)["read"]
    found = []
    for doc in view.snapshot.sort_newest(view.snapshot.term_docs("to", [fold(agent)])):
        record = view.snapshot.record(doc)
        uid = record["uid"]
        if record.get("status") == "archived" or record.get("state") in CLOSED or uid in read or uid == just_read:
            continue
        found.append(doc)
    return found


def digest(view: View, doc: int) -> dict[str, Any]:
    record = view.snapshot.record(doc)
    row = {"permalink": view.permalink(record["path"]), "title": record["title"], "kind": record["type"],
           "updated": record["updated"], "from": record.get("agent"),
           "excerpt": " ".join(str(record.get("head", "")).split())[:view.config.inbox_excerpt]}
    return {k: v for k, v in row.items() if v is not None}


def annotate(view: View, tool: str, agent: str | None, answer: dict[str, Any], started: float) -> None:
    """Add the caller's inbox, persist errors and lost notes to ``answer``, and mark the note a
    memory_read answered as read. A persist error from this very call (``started``: when it
    began, POSIX seconds) waits for the next one. Never raises: a state that cannot be kept
    is logged."""
    if agent is None:
        return
    try:
        _annotate(view, tool, agent, answer, started)
    except (OSError, ValueError, TypeError, KeyError) as exc:  # a state file that cannot be kept or read
        log.warning("cannot keep what agent %s has seen: %s", agent, exc)


def _annotate(view: View, tool: str, agent: str, answer: dict[str, Any], started: float) -> None:
    config = view.config
    history_dir = view.vault.index.history_dir
    state, version = agentstate.load_version(history_dir, agent)
    to_mark = _read_now(view, tool, agent, answer)
    # The same for every call between one commit or change of the agent's notes and the next.
    lost = (view.snapshot.cached(("lost", agent, version), lambda: _lost(view, agent, state["wrote"]))
            if state["wrote"] else {})
    if _before(state["errors"], started) or lost or (to_mark and to_mark not in state["read"]):
        def update(current: agentstate.Changes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            # What another call (another server) reported meanwhile is gone from ``current``: not twice.
            errors = _before(current.errors, started)
            current.set_errors([e for e in current.errors if e not in errors])
            rows = []
            for fsrel, (row, moved) in lost.items():
                if fsrel not in current.wrote:
                    continue
                current.drop("wrote", fsrel)
                rows.append(row)
                if moved is not None:
                    current.put("wrote", moved[0], moved[1])
            if to_mark:
                current.put("read", to_mark, iso(dt.datetime.now(dt.UTC)))
            return [{k: v for k, v in e.items() if k != "t"} for e in errors], rows

        errors, rows = agentstate.change(history_dir, agent, update, config=config)
        if errors:
            answer["persist_error"] = errors
        if rows:
            answer["lost"] = rows
    if tool == "memory_search":
        docs = inbox(view, agent, state["read"], to_mark)
        answer["inbox"] = [digest(view, d) for d in docs[:config.inbox_shown]]
        answer["inbox_more"] = max(0, len(docs) - config.inbox_shown)


def _before(errors: list[Any], started: float) -> list[dict[str, Any]]:
    """The persist errors recorded before this call began (a later one is this call's own)."""
    return [e for e in errors if isinstance(e, dict) and isinstance(e.get("t"), int | float) and e["t"] < started]


def _read_now(view: View, tool: str, agent: str, answer: dict[str, Any]) -> str | None:
    """The uid of the note this call read, when it is addressed to ``agent``."""
    uid = answer.get("uid")
    if tool not in READ_TOOLS or answer.get("status") != "ok" or not isinstance(uid, str):
        return None
    return uid if view.snapshot.docs_where([("to", fold(agent)), ("key_uid", fold(uid))]) else None


def _lost(view: View, agent: str, wrote: dict[str, Any]) -> dict[str, tuple[dict[str, Any], tuple[str, Any] | None]]:
    """The notes of ``wrote`` (fsrel -> [uid, path, title]) whose file is gone and that the index
    no longer holds there: a row for ``lost`` and, when the uid is now indexed elsewhere, its new
    place."""
    root = view.vault.root
    found: dict[str, tuple[dict[str, Any], tuple[str, Any] | None]] = {}
    if not wrote:
        return found
    there = view.snapshot.written_by(agent)
    # ``wrote`` is keyed by each note's file path, which is its indexed path except where the two
    # are spelled apart (a decomposed name on macOS): such keys stay in the difference and get the
    # full check below. A key found in ``there`` is a live note of the agent at that very file.
    # One set difference in C instead of a loop over every note the agent wrote, on every write.
    for fsrel in wrote.keys() - there:
        info = wrote[fsrel]
        if not isinstance(info, list) or len(info) != 3 or info[1] in there:
            continue
        with contextlib.suppress(ValueError, OSError):
            if os.path.lexists(root / fsrel):
                continue
        uid, path, title = info
        if view.snapshot.by_path(str(path)) is not None:
            continue  # the index has not caught up yet: in a moment it knows whether it moved
        row: dict[str, Any] = {"permalink": view.permalink(str(path)), "title": title, "uid": uid}
        moved: tuple[str, Any] | None = None
        for doc in view.snapshot.term_docs("key_uid", [fold(str(uid))]):
            record = view.snapshot.record(doc)
            if record["path"] != path and resolves_inside(root, root / record["fsrel"]):
                row["moved_to"] = view.permalink(record["path"])
                moved = (record["fsrel"], [uid, record["path"], record["title"]])
                break
        row["what"] = "moved" if moved else "deleted"
        found[fsrel] = (row, moved)
    return found
