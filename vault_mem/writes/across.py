"""``memory_supersede`` whose old note is in another served vault (docs/vaults.md, "Moves
between vaults"; docs/tools.md, memory_supersede).

The new note is written in the call's vault, the old one gets ``valid_until`` in its own vault;
each change is its own write there (its own journal entry, its own git commit under
``--git-commit``). The lineage is kept on both sides as vault-named permalinks: the new note's
``supersedes`` names ``memory://OLD-VAULT/...``, the old note's ``superseded_by`` names
``memory://NEW-VAULT/...`` (memory_read shows each in its ``lineage``).

Nothing is written unless both sides may be: the old note is found and the caller's write rules
of its vault are checked first, then the new note's place is checked against the rules of the
call's vault by the write itself before its file is made. The two writes take their vault's
turns one after the other, never both at once (``WriteTurns``: the git turn is one lock)."""

from __future__ import annotations

from typing import Any

from vault_mem.errors import Conflict, InvalidInput, NotFound, WriteFailed
from vault_mem.served.context import View
from vault_mem.served.params import Args
from vault_mem.served.refs import resolve_ref
from vault_mem.vault.fields import FIELD
from vault_mem.vault.fmedit import set_keys
from vault_mem.vault.writer import decode_for_edit
from vault_mem.writes.tools import SUPERSEDE_PARAMS, WriteTurns, _create, _current, _rewrite, _shown, _with_similar

TOOL = "memory_supersede"


def supersede_across(view: View, old_view: View, raw: dict[str, Any]) -> dict[str, Any]:
    """The new note in ``view``'s vault replacing the note ``raw["ref"]`` names in ``old_view``'s
    (each view as the caller may see and change that vault)."""
    args = Args(raw, SUPERSEDE_PARAMS, config=view.config)
    agent = args.agent()
    old = old_view.snapshot.record(resolve_ref(old_view, args.required_str("ref", max_len=1000)))
    # Superseding retires the old note: the caller's write rule of the old note's vault applies.
    old_view.check_write(old["path"], TOOL, old.get("fsrel") or old["path"])
    old_link = old_view.permalink(old["path"])
    defaults = {"domain": old["path"].rpartition("/")[0], "type": old["type"], "tags": old["tags"],
                "extra": {FIELD["supersedes"].key: old_link}}
    with WriteTurns(view.vault.index, view.vault.git_commit) as turns:
        answer = _create(view, turns, args, agent, defaults, TOOL)
    if answer.get("status") == "ok":
        try:  # the old note stops being true when its successor is written (docs/vault-format.md)
            with WriteTurns(old_view.vault.index, old_view.vault.git_commit) as turns:
                rel, data = _current(old_view, turns, old["uid"] if old.get("has_id") else old["path"], TOOL)
                later = [str(t) for t in old.get("superseded_by") or [] if str(t) != answer["permalink"]]
                updates: dict[str, Any] = {FIELD["superseded_by"].key: [*later, answer["permalink"]]}
                if not old.get("valid_until"):
                    updates[FIELD["valid_until"].key] = answer["updated"]
                text = set_keys(decode_for_edit(data, rel), updates, rel, config=old_view.config)
                ended = _rewrite(old_view, turns, rel, data, text, TOOL, agent)
            if ended.get("warnings"):
                answer.setdefault("warnings", []).extend(ended["warnings"])
        except (Conflict, NotFound, InvalidInput, WriteFailed) as exc:
            answer.setdefault("warnings", []).append(
                f"the new version was saved, but {old_link} did not get valid_until and superseded_by: {exc}")
    title = args.required_str("title", max_len=view.config.max_title).strip()
    content = str(raw.get("content") or "")
    return _with_similar(view, answer, title, content, [], _shown(view, None))
