"""What an agent's limits say about a write's effects beyond the note it names (docs/sharing.md):
the file actually created when the name was taken, and frontmatter that acts on another note
(supersession) or on who is shown as the sender (``agent``, ``to``). The owner (no caller) is
never limited here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vault_mem.errors import Forbidden, InvalidInput, NotFound, WriteFailed
from vault_mem.served.context import View
from vault_mem.served.refs import resolve_ref
from vault_mem.vault.fields import FIELD
from vault_mem.vault.markdown import wikilinks
from vault_mem.vault.reader import read_note


def check_free_name(view: View, final: Path, target: str, rel: str, tool: str) -> None:
    """The name was taken (in any case), so another was written: that file must be one the caller
    may write too, or it is removed again. The refusal names no note, visible or hidden."""
    try:
        view.check_write(rel, tool, rel)
    except Forbidden as refused:
        try:
            final.unlink()
        except OSError as exc:
            raise WriteFailed(f"{rel} could not be removed after a refused write ({exc.strerror}); "
                              "delete it by hand") from exc
        caller = view.caller.name if view.caller is not None else ""
        raise Forbidden(f"agent {caller!r} may not write {target}: that name is taken (names compare in any "
                        f"case) and the free name {rel.rpartition('/')[2]} is outside its globs; pick another "
                        "title (docs/sharing.md)", rule=refused.details.get("rule", "write")) from None


# Keys whose value acts on another note or on who is shown as the sender (docs/sharing.md).
LINEAGE_KEYS = (FIELD["supersedes"].key, FIELD["superseded_by"].key)


def check_effects(view: View, path: str, updates: dict[str, Any], tool: str) -> None:
    """For an agent with a key: a supersession target must be a note it may write (one it cannot
    see answers as one that does not exist), the sender (``agent``) must be its own name, and
    addressing a note (``to``) needs the note's sender to be itself."""
    caller = view.caller
    if caller is None:
        return
    if "agent" in updates:
        caller.check_name(str(updates["agent"]))
    for key in LINEAGE_KEYS:
        if key not in updates:
            continue
        value = updates[key]
        for item in value if isinstance(value, list) else [value]:
            if item is None or not str(item).strip():
                continue
            text = str(item).strip()
            links = wikilinks(text)
            for target in [lk.target for lk in links if lk.target] if links else [text]:
                try:
                    doc = resolve_ref(view, target, f"set.{key}")
                except (NotFound, InvalidInput):
                    raise NotFound(f"set.{key}: {target[:200]!r} names no note agent {caller.name!r} may write; "
                                   "pass the id of one it may write") from None
                record = view.snapshot.record(doc)
                view.check_write(record["path"], tool, record.get("fsrel") or record["path"])
    if "to" in updates and "agent" not in updates:
        sender = read_note(view.vault.root, path, None, config=view.config).fields.get("agent")
        if sender is not None and str(sender) != caller.name:
            raise Forbidden(f"to: {path} was sent by {str(sender)[:64]!r} (its agent field); agent "
                            f"{caller.name!r} may address it only as its sender: also set agent={caller.name!r}",
                            rule="name")
