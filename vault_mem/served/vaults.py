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
from vault_mem.served.params import text_param
from vault_mem.vault.note import PERMALINK_PREFIX

NAME_CHARS = 64
EVERY = "*"  # the vault parameter's "every vault this caller may read"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,NUM}".replace("NUM", str(NAME_CHARS - 1)))

# Every tool's ``vault``, listed in the input schemas only when several vaults are served (docs/tools.md).
VAULT_PARAM = text_param("vault", "A served vault's name (list_domains lists them); default: the default vault; "
                                  "'*' with memory_search: every vault you may read.")

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
        for name, vault in self.vaults.items():  # each vault knows its name; its permalinks name it among several
            vault.name = name
            vault.named = self.several

    @classmethod
    def one(cls, vault: Vault) -> Served:
        """One vault served alone (as before several were): named as it is, else ``vault``."""
        name = vault.name or "vault"
        return cls({name: vault}, name)

    def everywhere(self, caller: Agent | None) -> dict[str, Agent | None]:
        """The reach of ``caller`` in every served vault (stdio without --agent, a Vault served alone)."""
        return dict.fromkeys(self.vaults, caller)

    def refused(self, given: str, reach: Reach) -> InvalidInput:
        """The one answer to a ``vault`` that is not served or not reachable (the same words for
        both: a hidden vault's name is never confirmed), listing only the reachable ones."""
        shown = ", ".join(repr(n) for n in self.reachable(reach)) or "none"
        return InvalidInput("vault", f"{given[:80]!r} is not a vault you can use here; vaults: {shown}")

    def chosen(self, given: object, reach: Reach) -> str:
        """The vault a call's ``vault`` names (``EVERY`` stays ``EVERY``), else the default one,
        else (a caller that cannot reach the default) the first it reaches. InvalidInput for a
        name it cannot use."""
        names = self.reachable(reach)
        if given is None:
            if not names:
                raise InvalidInput("vault", "no served vault is open to this caller")
            return self.default if self.default in reach else names[0]
        if not isinstance(given, str):
            raise InvalidInput("vault", f"must be a string: a vault's name or '{EVERY}'; vaults: "
                                        + (", ".join(repr(n) for n in names) or "none"))
        if given == EVERY or given in names:
            return given
        raise self.refused(given, reach)

    def named_in(self, ref: str, reach: Reach) -> tuple[str, str] | None:
        """(vault, the ref without its name) when ``ref`` is a permalink ``memory://NAME/...`` whose
        NAME is a vault ``reach`` includes and several are served; None for any other ref (an old
        permalink, a path, a title: read in the call's vault). A name the caller cannot reach is
        not a vault name to it: the ref is taken as a path, as with one vault."""
        if not self.several or not ref.lower().startswith(PERMALINK_PREFIX):
            return None
        head, sep, rest = ref[len(PERMALINK_PREFIX):].partition("/")
        if sep and head in self.vaults and head in reach:
            return head, PERMALINK_PREFIX + rest
        return None

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
