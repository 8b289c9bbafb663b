"""Conflicted copies left by ``vault-mem sync`` (docs/git.md): ``<name> (conflict <host> <date>).md``
beside the note whose remote version won. Served answers carry a hint naming them until a
person resolves each one (merges what they want into the note and deletes the copy)."""

from __future__ import annotations

from vault_mem.git.sync import CONFLICT_COPY
from vault_mem.served.context import View


def conflict_copies(view: View) -> list[str]:
    """Vault-relative paths of the conflicted copies in the index, sorted (shared: do not modify)."""
    # Asked on every call: a term lookup per segment (no matcher) and the paths of its few hits
    # (cells: the first call after a start would otherwise read the path of every note), once
    # per commit.
    def make() -> list[str]:
        paths = view.snapshot.cells("path")
        return sorted(path for doc in view.snapshot.term_docs("perm", ["conflict"])
                      if (path := paths[doc]) and CONFLICT_COPY.search(path))

    return view.snapshot.cached("conflicted copies", make)


def conflict_hint(view: View) -> str | None:
    config = view.config
    copies = conflict_copies(view)
    if not copies:
        return None
    shown = config.conflicts_shown
    more = f" and {len(copies) - shown} more" if len(copies) > shown else ""
    return (f"{len(copies)} conflicted cop{'y' if len(copies) == 1 else 'ies'} from a git sync await a person: "
            f"{', '.join(copies[:shown])}{more}; each holds this machine's version of the note beside it "
            "(merge what matters into the note, then delete the copy)")
