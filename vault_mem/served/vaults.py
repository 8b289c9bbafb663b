"""Several vaults served at once (docs/vaults.md): each served vault has a name, one of them is
the default, and each request reaches some of them.

- **Names.** ``NAME=DIR`` names a vault; a plain ``DIR`` is named after its folder. A name is 1 to
  ``NAME_CHARS`` letters, digits, ``-``, ``_`` or ``.`` (the first a letter, digit or ``_``), so that it can
  stand first in a permalink (``memory://work/acme/x``) and never reads as a path; ``*`` means
  every vault the caller may read.
- **The default vault**: the one whose folder holds the working directory of the server (a coding
  agent's client starts its stdio server inside the repository), the innermost when several do;
  else the first given.
- **Reach**: what one request may use, vault by vault: the vault's owner (None, no limits), an
  agent with the limits its key has in that vault, or nothing (the vault is not in the mapping,
  and its name is never shown to that caller).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vault_mem.errors import InvalidInput
from vault_mem.served.agents import Agent
from vault_mem.served.context import Vault

NAME_CHARS = 64
EVERY = "*"  # the vault parameter's "every vault this caller may read"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,NUM}".replace("NUM", str(NAME_CHARS - 1)))

# What a request reaches: vault name -> the caller there (None: the owner, no limits). A vault
# not in it is invisible to the request.
Reach = Mapping[str, Agent | None]


def is_vault_name(text: str) -> bool:
    return _NAME.fullmatch(text) is not None


def check_vault_name(text: str, param: str = "--vault") -> str:
    """``text`` when it is a valid vault name, else InvalidInput naming what a name may be."""
    if not is_vault_name(text):
        raise InvalidInput(param, f"{text[:80]!r} is not a vault name: 1 to {NAME_CHARS} letters, digits, "
                                  "'-', '_' or '.', starting with a letter, digit or '_', e.g. work=~/work")
    return text


def name_after_folder(root: Path) -> str:
    """A vault's name when none is given: its folder's name, with every character a name may not
    hold made ``-`` (``My Notes`` is ``My-Notes``); ``vault`` for a root with no usable name."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.")[:NAME_CHARS].strip("-.")
    return name or "vault"


def split_vault_arg(value: str) -> tuple[str | None, str]:
    """``NAME=DIR`` as (NAME, DIR); a plain ``DIR`` as (None, DIR). A value is a plain folder when
    what comes before its first ``=`` could not be a name (it holds a path separator, ``~`` or a
    drive letter's colon) or when the whole of it is an existing folder (``a=b`` on disk)."""
    head, sep, rest = value.partition("=")
    if not sep or not is_vault_name(head) or Path(value).expanduser().is_dir():
        return None, value
    return head, rest


def default_vault(roots: Mapping[str, Path], cwd: Path | None) -> str:
    """The default vault's name: the innermost root holding ``cwd`` (resolved), else the first."""
    if not roots:
        raise ValueError("no vault served")
    if cwd is not None:
        try:
            here = cwd.resolve()
        except OSError:
            here = None
        if here is not None:
            holding = [(len(root.resolve().parts), name) for name, root in roots.items()
                       if here == root.resolve() or root.resolve() in here.parents]
            if holding:
                return max(holding)[1]
    return next(iter(roots))


@dataclass
class Served:
    """The vaults one server serves, by name, in the order given, and its default."""

    vaults: dict[str, Vault]
    default: str

    def __post_init__(self) -> None:
        if self.default not in self.vaults:
            raise ValueError(f"the default vault {self.default!r} is not served")

    @property
    def several(self) -> bool:
        return len(self.vaults) > 1

    @property
    def primary(self) -> Vault:
        """The default vault (a call that names none is answered from it)."""
        return self.vaults[self.default]

    def reachable(self, reach: Reach) -> list[str]:
        """The names of the served vaults ``reach`` includes, in the order served."""
        return [name for name in self.vaults if name in reach]
