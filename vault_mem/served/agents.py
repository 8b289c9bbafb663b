"""Who is calling: an ``Agent`` with the folders it may read and write (docs/sharing.md).

Every tool call carries one (``View.caller``), or None: the shared ``--token``, an HTTP
server without agent keys, or a stdio server started without ``--agent`` call as the
vault's owner, unlimited. An HTTP request with an agent key (served/keys.py) carries that
key's agent; ``serve --agent NAME`` gives its one stdio client that agent.

Globs are matched against a note's vault-relative path (``/`` between folders, ``.md``
included), anchored at the vault's top, case-sensitively:

- ``*`` is any run of characters within a folder or file name, ``?`` one character,
  ``**`` any number of folders (``**/drafts/**``);
- a folder glob ends in ``/`` or ``/**`` (``projects/``, ``projects/**``): the folder and
  everything beneath it;
- a note glob ends in ``.md`` (``projects/*.md``): those notes only, never a folder of that
  name (``projects/notes.md/x.md`` is not ``projects/*.md``);
- a plain name (``projects/plan``) is the note ``projects/plan.md`` only; ``agents add``
  turns one naming a folder of the vault into ``projects/plan/`` (``resolve_globs``);
- a last part with a wildcard and no ``.md`` (``projects/*``) matches notes and folders, and
  everything inside those folders.

No read globs: every note may be read. No write globs: every note it may read may be
written. A note outside the read globs cannot be written either, whatever the write globs
say (a note one cannot read back is not one to edit blind).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from vault_mem.errors import Forbidden, InvalidInput
from vault_mem.vault.paths import check_relative

AGENT_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


def check_agent_name(name: str, param: str = "NAME") -> str:
    if not AGENT_NAME.fullmatch(name):
        raise InvalidInput(param, f"{name[:80]!r} is not a valid agent name: use 1-64 letters, digits, "
                                  "'.', '_' or '-' (the name agents pass as `agent`)")
    return name


def check_globs(globs: list[str] | tuple[str, ...], param: str, max_globs: int) -> tuple[str, ...]:
    """``globs`` cleaned (surrounding space and slashes kept as meant), or InvalidInput naming ``param``;
    ``max_globs``: the setting of that name."""
    if len(globs) > max_globs:
        raise InvalidInput(param, f"{len(globs)} globs given; at most {max_globs} are accepted")
    cleaned = []
    for glob in globs:
        text = glob.strip()
        if not text or text in ("/", "."):
            raise InvalidInput(param, f"{glob!r} is empty: give a folder such as 'projects/' or a glob "
                                      "such as 'projects/**/*.md'")
        check_relative(text.removeprefix("./"), param)
        cleaned.append(text.removeprefix("./"))
    return tuple(cleaned)


def _kind(glob: str) -> str:
    """``folder``, ``note``, ``name`` (a plain name: the note NAME.md) or ``wild`` (module docstring)."""
    last = glob.rstrip("/").rpartition("/")[2]
    if glob.endswith("/") or last == "**":
        return "folder"
    if last.endswith(".md"):
        return "note"
    return "wild" if "*" in last or "?" in last else "name"


def resolve_globs(root: Path, globs: tuple[str, ...], param: str) -> tuple[str, ...]:
    """``globs`` with each plain name made explicit by what the vault holds: a folder gets its
    ``/``, a note its ``.md``; InvalidInput when a name is both or neither."""
    out = []
    for glob in globs:
        if _kind(glob) != "name":
            out.append(glob)
            continue
        folder, note = (root / glob).is_dir(), (root / f"{glob}.md").is_file()
        if folder and note:
            raise InvalidInput(param, f"{glob!r} names both the folder {glob}/ and the note {glob}.md: give "
                                      f"'{glob}/' for the folder or '{glob}.md' for the note")
        if not folder and not note:
            raise InvalidInput(param, f"{glob!r} names no folder or note of the vault: give '{glob}/' for a "
                                      f"folder (existing or not) or '{glob}.md' for a note")
        out.append(f"{glob}/" if folder else f"{glob}.md")
    return tuple(out)


def glob_pattern(glob: str) -> re.Pattern[str]:
    """The regex of one glob, by its kind (module docstring): a folder covers what is beneath
    it, a note glob and a plain name only notes, a wildcard last part notes and folders."""
    kind = _kind(glob)
    text = glob.rstrip("/")
    out = []
    i = 0
    while i < len(text):
        if text.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif text.startswith("**", i):
            out.append(".*")
            i += 2
        elif text[i] == "*":
            out.append("[^/]*")
            i += 1
        elif text[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(text[i]))
            i += 1
    tail = {"folder": r"(?:/.*)?", "note": "", "name": r"\.md", "wild": r"(?:\.md)?(?:/.*)?"}[kind]
    return re.compile("".join(out) + tail, re.DOTALL)


@dataclass(frozen=True)
class Agent:
    """A caller with a name and limits. Empty ``read``/``write``: everything."""

    name: str
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    read_only: bool = False
    _patterns: dict[str, tuple[re.Pattern[str], ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def reads_everything(self) -> bool:
        return not self.read

    @cached_property
    def mask(self) -> str:
        """A string naming what this agent may read (agents with the same read globs share it)."""
        return json.dumps(sorted(self.read))

    def _matches(self, kind: str, globs: tuple[str, ...], path: str) -> bool:
        patterns = self._patterns.get(kind)
        if patterns is None:
            patterns = self._patterns[kind] = tuple(glob_pattern(g) for g in globs)
        return any(p.fullmatch(path) for p in patterns)

    def may_read(self, path: str) -> bool:
        return not self.read or self._matches("read", self.read, path)

    def may_write(self, path: str) -> bool:
        if self.read_only or not self.may_read(path):
            return False
        return not self.write or self._matches("write", self.write, path)

    def check_writes(self, tool: str) -> None:
        """Forbidden when this agent may not write at all (its key was made with --read-only)."""
        if self.read_only:
            raise Forbidden(f"agent {self.name!r} is read-only: {tool} is refused (its key was made with "
                            "--read-only; docs/sharing.md)", rule="read-only")

    def check_write(self, path: str, tool: str) -> None:
        """Forbidden, naming the rule, unless this agent may write the note at ``path``."""
        self.check_writes(tool)
        if not self.may_read(path):
            raise Forbidden(f"agent {self.name!r} may not write {path}: it is outside its read globs "
                            f"({', '.join(self.read)}); docs/sharing.md", rule="read")
        if not self.may_write(path):
            raise Forbidden(f"agent {self.name!r} may not write {path}: it is outside its write globs "
                            f"({', '.join(self.write)}); docs/sharing.md", rule="write")

    def check_name(self, given: object) -> None:
        """Forbidden when a call passes another agent's name as ``agent``."""
        if isinstance(given, str) and given != self.name:
            raise Forbidden(f"agent: this caller is agent {self.name!r} and cannot act as {given[:64]!r}; "
                            f"pass agent={self.name!r}", rule="name")
