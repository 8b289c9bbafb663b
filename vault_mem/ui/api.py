"""What the page's JSON endpoints answer, from the same functions the tools and the CLI use:
the journal (``writes/undo.py``), ``memory_search`` and ``memory_read`` (``reads/``), the
inboxes (``served/mailbox.py``) and the agent keys (``served/keys.py``), each through the
caller's view: a page opened with an agent's key sees only what that agent may read."""

from __future__ import annotations

import datetime as dt
import difflib
from typing import Any

from vault_mem import settings
from vault_mem.errors import Forbidden, InvalidInput, NotFound, VaultUnavailable
from vault_mem.history import journal
from vault_mem.history.agentstate import agent_key
from vault_mem.reads import memory_search, read
from vault_mem.search.api import VaultIndex
from vault_mem.served.agents import Agent
from vault_mem.served.context import Vault, View, may_see
from vault_mem.served.keys import list_agents
from vault_mem.served.mailbox import digest as inbox_digest
from vault_mem.served.mailbox import inbox
from vault_mem.vault.dates import WHEN_FORMS, parse_when
from vault_mem.writes import undo

PERSON = "person"  # the agent name the owner's page reads under


def _visible(vault: Vault, caller: Agent | None, entry: journal.Entry,
             judged: dict[tuple[str, str, str | None], bool] | None = None) -> bool:
    """Whether ``caller`` may see this change: its note's path, the file a symlink made it then, and
    the file its path leads to now (``may_see``). ``judged`` keeps the verdicts of one call."""
    key = (entry.path, entry.fsrel, entry.real)
    if judged is not None and key in judged:
        return judged[key]
    verdict = may_see(caller, vault.root, entry.path, entry.fsrel, entry.real)
    if judged is not None:
        judged[key] = verdict
    return verdict


def activity(vault: Vault, caller: Agent | None, agent: str = "", folder: str = "", since: str = "",
             offset: int = 0) -> dict[str, Any]:
    """The journal's changes, newest first, filtered by agent (any case), folder and moment."""
    moment = None
    if since.strip():
        moment = parse_when(since.strip())
        if moment is None:
            raise InvalidInput("since", f"{since[:80]!r} is not a moment: give {WHEN_FORMS}")
    prefix = folder.strip().strip("/")
    rows = []
    judged: dict[tuple[str, str, str | None], bool] = {}
    for entry in reversed(journal.entries(vault.index.history_dir)):
        if not _visible(vault, caller, entry, judged):
            continue
        if agent.strip() and agent_key(entry.agent) != agent_key(agent.strip()):
            continue
        if prefix and not (entry.path == prefix or entry.path.startswith(prefix + "/")):
            continue
        if moment is not None and entry.t < moment.timestamp():
            continue
        rows.append(entry)
    size = settings.current().ui_activity_page
    page = rows[offset: offset + size]
    return {"status": "ok", "count": len(rows), "offset": offset,
            "next_offset": offset + size if offset + size < len(rows) else None,
            "changes": [_row(e) for e in page],
            "agents": sorted({e.agent for e in rows}, key=str.lower)}


def _row(entry: journal.Entry) -> dict[str, Any]:
    return {**entry.public(), "id": undo.change_id(entry), "kind": undo.KINDS.get(entry.tool, entry.tool),
            "created": entry.before is None, "deleted": entry.after is None}


def _version(vault: Vault, sha: str | None, fsrel: str) -> tuple[str | None, bool]:
    """(the text whose SHA-256 is ``sha``, whether it is known): from the journal, else the file
    when it still has those bytes; None with True for no file."""
    if sha is None:
        return None, True
    data = journal.blob(vault.index.history_dir, sha)
    if data is None:
        try:
            from vault_mem.vault.paths import note_file

            current = note_file(vault.root, fsrel).read_bytes()
        except (OSError, InvalidInput, NotFound):
            current = None
        data = current if current is not None and journal.digest(current) == sha else None
    if data is None:
        return None, False
    return data[:settings.current().ui_max_diff_side].decode("utf-8", "replace"), True


def change(vault: Vault, caller: Agent | None, ident: str) -> dict[str, Any]:
    """One change with its unified diff against the version before, and what undo would do."""
    entry = undo.find_change(vault.index, ident)
    if not _visible(vault, caller, entry):
        raise NotFound(f"no change {ident[:40]!r} in the journal")
    before, known_before = _version(vault, entry.before, entry.fsrel)
    after, known_after = _version(vault, entry.after, entry.fsrel)
    answer: dict[str, Any] = {"status": "ok", "change": _row(entry)}
    if not (known_before and known_after):
        answer["diff"] = None
        answer["diff_note"] = ("the journal no longer holds " + ("the version before" if not known_before
                                                                 else "this version") + " (past its limits)")
    else:
        lines = list(difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(),
                                          f"a/{entry.path}" if before is not None else "/dev/null",
                                          f"b/{entry.path}" if after is not None else "/dev/null", lineterm=""))
        answer["diff"] = lines[:settings.current().ui_max_diff_lines]
        if len(lines) > settings.current().ui_max_diff_lines:
            answer["diff_note"] = f"{len(lines) - settings.current().ui_max_diff_lines} more diff lines not shown"
    if caller is None:
        step = undo.plan_change(vault.index, entry)
        answer["undo"] = step.public()
    return answer


def undo_change(vault: Vault, caller: Agent | None, ident: str) -> dict[str, Any]:
    """Undo one change (the owner only), by the window undo's rules."""
    _owner_only(caller, "undo")
    entry = undo.find_change(vault.index, ident)
    step = undo.plan_change(vault.index, entry)
    if step.action == "leave":
        return {"status": "ok", "restored": [], "left": [step.public()], "warnings": []}
    moment = dt.datetime.fromtimestamp(entry.t, dt.UTC)
    result = undo.apply(_own_index(vault), [step], entry.agent, moment, git_commit=vault.git_commit)
    return {"status": "ok", "restored": result["done"], "left": result["failed"], "warnings": result["warnings"]}


def undo_window(vault: Vault, caller: Agent | None, agent: str, since: str, apply: bool) -> dict[str, Any]:
    """An agent's changes since a moment: the plan, or (``apply``) done; as ``vault-mem undo``."""
    _owner_only(caller, "undo")
    moment = parse_when(since.strip()) if since.strip() else None
    if moment is None:
        raise InvalidInput("since", f"{since[:80]!r} is not a moment: give {WHEN_FORMS}")
    if not agent.strip():
        raise InvalidInput("agent", "name the agent whose changes to undo")
    steps = undo.plan(vault.index, agent.strip(), moment)
    todo = [s for s in steps if s.action != "leave"]
    left = [s.public() for s in steps if s.action == "leave"]
    if not apply:
        return {"status": "ok", "applied": False, "would_restore": [s.public() for s in todo], "left": left}
    result = undo.apply(_own_index(vault), todo, agent.strip(), moment, git_commit=vault.git_commit)
    return {"status": "ok", "applied": True, "restored": result["done"], "left": left + result["failed"],
            "warnings": result["warnings"]}


def _own_index(vault: Vault) -> VaultIndex:
    """A handle of its own on the vault's index for an undo, as ``vault-mem undo`` beside a running
    server has: the undo closes it when done, which must not close the server's."""
    return VaultIndex(vault.root, vault.index.dir, config=vault.index.config)


def _owner_only(caller: Agent | None, what: str) -> None:
    if caller is not None:
        raise Forbidden(f"{what} is for the vault's owner: this page was opened with agent {caller.name!r}'s key",
                        rule="owner")


def _view_call(vault: Vault, caller: Agent | None, handler: Any, raw: dict[str, Any]) -> dict[str, Any]:
    vault.check()
    try:
        with vault.answering(), vault.index.searching() as searcher:
            answer: dict[str, Any] = handler(View(vault, searcher, caller), raw)
    except VaultUnavailable:
        if vault.indexing() is None:  # as the tools say it (mcp_server/app.py): not a failure while it builds
            raise
        return {"status": "none", "message": "the index is being built; try again shortly"}
    return answer


def search(vault: Vault, caller: Agent | None, raw: dict[str, Any]) -> dict[str, Any]:
    """memory_search's answer, as the caller's view gives it (nothing is marked read)."""
    return _view_call(vault, caller, memory_search.memory_search, {**raw, "agent": _name(caller)})


def note(vault: Vault, caller: Agent | None, ref: str, offset: int = 0) -> dict[str, Any]:
    """memory_read's answer (no inbox is marked read: only an agent's own call does that)."""
    return _view_call(vault, caller, read.memory_read, {"ref": ref, "offset": offset, "agent": _name(caller)})


def _name(caller: Agent | None) -> str:
    """The ``agent`` a read names: the page's agent, else the person (reads only check its form)."""
    return caller.name if caller is not None else PERSON


def inboxes(vault: Vault, caller: Agent | None) -> dict[str, Any]:
    """The unread handoffs waiting for each agent (for an agent's page: its own), with senders."""
    names = {e.agent.name for e in list_agents(vault.root)} if caller is None else {caller.name}
    vault.check()
    boxes = []
    with vault.index.searching() as searcher:
        view = View(vault, searcher, caller)
        if caller is None:
            names |= set(view.lexicon("to"))
        seen: set[str] = set()
        for name in sorted(names, key=str.lower):
            if agent_key(name) in seen:
                continue
            seen.add(agent_key(name))
            rows = [inbox_digest(view, doc) for doc in inbox(view, name)]
            boxes.append({"agent": name, "count": len(rows), "inbox": rows})
    return {"status": "ok", "inboxes": boxes}


def agents(vault: Vault, caller: Agent | None) -> dict[str, Any]:
    """Each agent with a key: its limits and its last journaled change; never a key or its hash."""
    last: dict[str, str] = {}
    for entry in journal.entries(vault.index.history_dir):
        last[agent_key(entry.agent)] = entry.time
    rows = []
    for item in list_agents(vault.root):
        if caller is not None and item.agent.name != caller.name:
            continue
        rows.append({**item.public(), "last_change": last.get(agent_key(item.agent.name))})
    return {"status": "ok", "agents": rows, "you": caller.name if caller is not None else None}
