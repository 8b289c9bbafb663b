"""The parsed memory: every field normalised, ready for the index and the tools."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

KNOWN_TYPES = (
    "note", "fact", "lesson", "gotcha", "handoff", "research", "decision",
    "task", "checkpoint", "anti_pattern", "reasoning",
)
SCOPES = ("user", "project_shared", "project_local")
TASK_STATES = ("open", "completed", "cancelled")


@dataclass
class Progress:
    done: int = 0
    total: int = 0


@dataclass
class Note:
    """One memory file, as read. Dates are ISO strings in UTC; tags are lower-case."""

    path: str  # vault-relative, '/'-separated, with '.md'; U+FFFD for undecodable names
    uid: str
    has_id: bool
    title: str
    aliases: list[str]
    type: str
    tags: list[str]
    created: str
    updated: str
    status: str  # active | archived
    state: str | None  # open | completed | cancelled, for every note (meaningful for tasks)
    progress: Progress
    importance: float
    supersedes: list[str]
    superseded_by: list[str]
    namespace: str
    scope: str
    project: str | None
    paths: list[str]
    agent: str | None
    metadata: dict[str, Any]  # every other frontmatter key, JSON-safe
    body: str
    links: list[dict[str, Any]]  # outgoing links, body and frontmatter
    problems: list[str]
    etag: str
    size: int
    mtime_ns: int
    excalidraw: bool = False
    has_frontmatter: bool = False
    frontmatter_ok: bool = True  # False: the writer must not rewrite this frontmatter
    fields: dict[str, Any] = field(default_factory=dict)  # the frontmatter as read
    more: dict[str, Any] = field(default_factory=dict)  # the field table's rows that are no attribute here
    # Where a symlink (the file's own or a folder's on its way) makes ``path`` another file of the
    # vault: that file's vault-relative path; None for a note that is where its path says.
    real: str | None = None

    @property
    def domain(self) -> str:
        return domain_of(self.path)

    @property
    def permalink(self) -> str:
        return permalink_of(self.path)

    @property
    def est_tokens(self) -> int:
        return est_tokens(self.body)


    def value(self, name: str) -> Any:
        """The value of the field table's row ``name`` (vault/fields.py)."""
        return self.more[name] if name in self.more else getattr(self, name)


NOTE_ATTRIBUTES = frozenset(Note.__dataclass_fields__)


def domain_of(path: str) -> str:
    return path.rpartition("/")[0]


PERMALINK_PREFIX = "memory://"


def permalink_of(path: str) -> str:
    """``memory://`` + the vault-relative path without ``.md``, raw (docs/tools.md, "permalink")."""
    return PERMALINK_PREFIX + (path[:-3] if path.lower().endswith(".md") else path)


def resource_uri(path: str) -> str:
    """The note's MCP resource URI: its permalink with each path segment percent-encoded
    (RFC 3986), so that spaces, ``#``, ``%``, ``?`` and non-ASCII letters make a valid URI."""
    readable = permalink_of(path)[len(PERMALINK_PREFIX):]
    return PERMALINK_PREFIX + "/".join(quote(segment, safe="") for segment in readable.split("/"))


def est_tokens(text: str) -> int:
    return tokens_for_chars(len(text))


def tokens_for_chars(chars: int) -> int:
    """The estimate of docs/tools.md ("est_tokens"): ceil(characters / 4)."""
    return -(-chars // 4)


_ADDRESSEE = re.compile(r"^(?:@|\[\[)?\s*([^\]|#]*?)\s*(?:[|#][^\]]*)?(?:\]\])?$")


def addressees(value: Any) -> list[str]:
    """The agents a note is addressed to, from its ``to`` key: one name, a list, or names
    separated by commas; ``@coder`` and ``[[coder]]`` (as Obsidian links them) are ``coder``."""
    items = value if isinstance(value, list) else [value]
    # ``to: [[coder]]`` unquoted is YAML for a list in a list
    items = [inner for item in items for inner in (item if isinstance(item, list) else [item])]
    names: list[str] = []
    for item in items:
        if not isinstance(item, str | int):
            continue
        for part in str(item).split(","):
            m = _ADDRESSEE.match(part.strip())
            name = m.group(1).strip() if m else ""
            if name and name not in names:
                names.append(name)
    return names
