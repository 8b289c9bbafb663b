"""What the page's JSON endpoints answer, from the same functions the tools and the CLI use:
the journal (``writes/undo.py``), ``memory_search`` and ``memory_read`` (``reads/``), the
inboxes (``served/mailbox.py``) and the agent keys (``served/keys.py``), each through the
caller's view: a page opened with an agent's key sees only what that agent may read."""

from __future__ import annotations

import datetime as dt
import difflib
from typing import Any

from vault_mem.errors import Forbidden, InvalidInput, NotFound, VaultMemError, VaultUnavailable
from vault_mem.history import journal
from vault_mem.history.agentstate import agent_key
from vault_mem.reads import memory_search, read
from vault_mem.search.api import VaultIndex
from vault_mem.served.agents import Agent
from vault_mem.served.context import Vault, may_see, view_of
from vault_mem.served.keys import list_agents
from vault_mem.served.mailbox import digest as inbox_digest
from vault_mem.served.mailbox import inbox
from vault_mem.vault.dates import WHEN_FORMS, from_timestamp, iso, parse_when
from vault_mem.vault.paths import note_file
from vault_mem.writes import undo

PERSON = "person"  # the agent name the owner's page reads under
OWN_TOOLS = frozenset({"undo", "tidy", "import"})  # what vault-mem's own commands journal (not a write tool's)


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
    size = vault.index.config.ui_activity_page
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
            current = note_file(vault.root, fsrel).read_bytes()
        except (OSError, InvalidInput, NotFound):
            current = None
        data = current if current is not None and journal.digest(current) == sha else None
    if data is None:
        return None, False
    return data[:vault.index.config.ui_max_diff_side].decode("utf-8", "replace"), True


def _gone(vault: Vault, caller: Agent | None, entry: journal.Entry, side: str) -> str:
    """Why neither the journal nor the file holds the version ``side`` ("before" or "after") of
    this change (docs/ui.md, "Activity"). The journal keeps, as a blob, each version one of its
    own changes replaced, for as long as it keeps that change; the version a change left is held
    only once a later journaled change replaced it, and the file holds it only until it moves on.
    So a version is past the journal's limits only when the journal dropped a later change (which
    ``dropped.json`` says); when it dropped none, the file moved on outside the journal: by hand,
    or by a program other than vault-mem's write tools. An agent's page is not told what other
    agents did that it may not see."""
    history = vault.index.history_dir
    missing = ("the journal's copy of {} is missing from its history folder (removed or damaged there, "
               "not by vault-mem)")
    if side == "before":  # kept as long as its change is: named by the change itself
        return missing.format("the version before")
    everything = journal.entries(history)
    mine = next((n for n, e in enumerate(everything) if e == entry), len(everything))
    later = next((e for e in everything[mine + 1:] if e.fsrel == entry.fsrel), None)
    if later is not None and later.before == entry.after:
        return missing.format("this version")
    drops = [d for d in journal.dropped(history) if d.until >= entry.t]  # one record may drop its own moment
    if drops:
        which = f" ({'; '.join(f'{d.changes} by {d.agent}, {d.why}' for d in drops)})" if caller is None else ""
        return ("the journal no longer holds this version (past its limits): the note changed since, and the "
                f"journal has dropped later changes{which}, so it cannot say by whom")
    if later is not None:
        kind = undo.KINDS.get(later.tool, later.tool)
        who = f"{later.agent}'s {kind}" if _visible(vault, caller, later) else "a change"
        return (f"the file was changed by hand (or by another program) after this change, before {who} at "
                f"{later.time}: the journal keeps the versions its own changes replaced, and none replaced this one")
    try:
        moved = iso(from_timestamp(note_file(vault.root, entry.fsrel).stat().st_mtime))
    except (OSError, VaultMemError):
        return ("the file was deleted or moved since, by hand (or by another program): the journal keeps the "
                "versions its own changes replaced, and none replaced this one")
    return (f"the file was changed since by hand (or by another program), last at {moved}: the journal keeps "
            "the versions its own changes replaced, and none replaced this one")


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
        answer["diff_note"] = _gone(vault, caller, entry, "before" if not known_before else "after")
    else:
        lines = list(difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(),
                                          f"a/{entry.path}" if before is not None else "/dev/null",
                                          f"b/{entry.path}" if after is not None else "/dev/null", lineterm=""))
        answer["diff"] = lines[:vault.index.config.ui_max_diff_lines]
        if len(lines) > vault.index.config.ui_max_diff_lines:
            answer["diff_note"] = f"{len(lines) - vault.index.config.ui_max_diff_lines} more diff lines not shown"
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
        with vault.answering(), view_of(vault, caller) as view:
            answer: dict[str, Any] = handler(view, raw)
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
    with view_of(vault, caller) as view:
        if caller is None:
            names |= set(view.snapshot.lexicon("to"))
        seen: set[str] = set()
        for name in sorted(names, key=str.lower):
            if agent_key(name) in seen:
                continue
            seen.add(agent_key(name))
            rows = [inbox_digest(view, doc) for doc in inbox(view, name)]
            boxes.append({"agent": name, "count": len(rows), "inbox": rows})
    return {"status": "ok", "inboxes": boxes}


def agents(vault: Vault, caller: Agent | None) -> dict[str, Any]:
    """Every agent with a key and every agent the journal names (in any case: one agent), with its
    limits when it has a key, how many changes the journal holds of it, of which kinds, and its last,
    and ``own`` when vault-mem's own commands made them all (``vault-mem`` for an undo, ``tidy``,
    ``import-FORMAT``); never a key or its hash. An agent's page: itself, and of its changes those it
    may read."""
    seen: dict[str, dict[str, Any]] = {}
    judged: dict[tuple[str, str, str | None], bool] = {}
    for entry in journal.entries(vault.index.history_dir):
        if caller is not None and (agent_key(entry.agent) != agent_key(caller.name)
                                   or not _visible(vault, caller, entry, judged)):
            continue
        row = seen.setdefault(agent_key(entry.agent), {"changes": 0, "kinds": {}, "own": True})
        row.update(name=entry.agent, last_change=entry.time)  # the newest spelling names it
        row["changes"] += 1
        row["own"] = row["own"] and entry.tool in OWN_TOOLS
        kind = undo.KINDS.get(entry.tool, entry.tool)
        row["kinds"][kind] = row["kinds"].get(kind, 0) + 1
    rows = []
    keyed = set()
    for item in list_agents(vault.root):
        if caller is not None and item.agent.name != caller.name:
            continue
        keyed.add(agent_key(item.agent.name))
        journaled = seen.get(agent_key(item.agent.name), {})
        rows.append({**item.public(), "key": True, "own": False, "changes": journaled.get("changes", 0),
                     "kinds": journaled.get("kinds", {}), "last_change": journaled.get("last_change")})
    for key, journaled in seen.items():
        if key not in keyed:
            rows.append({"agent": journaled["name"], "key": False, "own": journaled["own"], "read": None,
                         "write": None, "read_only": None, "created": None, "changes": journaled["changes"],
                         "kinds": journaled["kinds"], "last_change": journaled["last_change"]})
    rows.sort(key=lambda row: (str(row["agent"]).lower(), str(row["agent"])))
    return {"status": "ok", "agents": rows, "you": caller.name if caller is not None else None}
