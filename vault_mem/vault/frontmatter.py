"""Splitting a note into frontmatter and body, and loading the YAML safely.

The frontmatter is the block that starts on the very first line (after an optional BOM)
with ``---`` and ends at the next line that is exactly ``---``. A blank line before it
means there is none, as in Obsidian. We split the text ourselves because
python-frontmatter strips leading whitespace and cannot tell.

YAML's native types are normalised here, once: timestamps stay strings (parsed by
``vault.dates``), keys become strings, values become JSON-safe (str, int, float, bool,
None, list, dict). Alias bombs and deep nesting are cut by a node budget.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from vault_mem.settings import Settings

_LoaderBase: type[yaml.SafeLoader]
try:
    _LoaderBase = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _LoaderBase = yaml.SafeLoader


class _NoTimestampLoader(_LoaderBase):  # type: ignore[misc,valid-type]
    """SafeLoader that leaves timestamps as strings (an impossible date must not sink the block)."""


_NoTimestampLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _LoaderBase.yaml_implicit_resolvers.items()
}

_FENCE_LINE = re.compile(r"---[ \t]*")


@dataclass
class Split:
    """The raw pieces of a note's text."""

    yaml_text: str | None  # None: no frontmatter block
    body: str
    body_offset: int  # offset of the body in the text
    problems: list[str] = field(default_factory=list)


def split_frontmatter(text: str) -> Split:
    """Cut ``text`` (BOM already removed) into the YAML block and the body. Never raises."""
    first_end = text.find("\n")
    first = text if first_end < 0 else text[:first_end]
    if not _FENCE_LINE.fullmatch(first.rstrip("\r")):
        problems = []
        stripped = text.lstrip()
        if stripped.startswith("---") and text[: len(text) - len(stripped)].strip(" \t") != "":
            problems.append(
                "text before the first '---' (a blank line?): not read as frontmatter, as in Obsidian"
            )
        return Split(None, text, 0, problems)
    pos = first_end + 1
    while pos <= len(text) and first_end >= 0:
        nl = text.find("\n", pos)
        line = text[pos:] if nl < 0 else text[pos:nl]
        if line.rstrip("\r") == "---":
            body_start = len(text) if nl < 0 else nl + 1
            return Split(text[first_end + 1 : pos], text[body_start:], body_start)
        if nl < 0:
            break
        pos = nl + 1
    return Split(
        None, text, 0, ["frontmatter: the opening '---' is never closed; the whole file is read as body"]
    )


@dataclass
class Loaded:
    data: dict[str, Any]
    problems: list[str]
    parsed: bool  # False when the block could not be read as a mapping



def load_yaml(yaml_text: str, config: Settings) -> Loaded:
    """Parse a frontmatter block into a normalised mapping, within the YAML bounds of ``config``
    (``yaml_node_budget``, ``yaml_string_unit``, ``yaml_max_depth``). Never raises."""
    if not yaml_text.strip():
        return Loaded({}, [], True)
    try:
        raw = yaml.load(yaml_text, Loader=_NoTimestampLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 2}, column {mark.column + 1}"
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return Loaded({}, [f"frontmatter: malformed YAML{where}: {reason}"], False)
    except RecursionError:
        return Loaded({}, ["frontmatter: YAML nested too deeply to read"], False)
    except Exception as exc:  # the C loader can raise plain errors on hostile input
        return Loaded({}, [f"frontmatter: YAML could not be read: {type(exc).__name__}"], False)
    if raw is None:
        return Loaded({}, [], True)
    if not isinstance(raw, dict):
        kind = type(raw).__name__
        return Loaded({}, [f"frontmatter: a YAML {kind}, not a mapping of keys to values; ignored"], False)
    problems: list[str] = []
    budget = [config.yaml_node_budget]
    data: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in raw.items():
        name = _key(key)
        if name == "":
            problems.append("frontmatter: a key with no name; its value is ignored")
            continue
        if budget[0] <= 0:  # spent: the keys left are dropped unread, and said so once below
            dropped.append(name)
            continue
        left = budget[0]
        try:
            data[name] = to_plain(value, budget, 0, config)
        except _TooBig:
            budget[0] = left  # what the dropped value spent is free again for the keys after it
            dropped.append(name)
    if dropped:
        # One line, however many keys: 200,000 keys must not become 200,000 problems.
        named = ", ".join(f"'{n[:60]}'" for n in dropped[:5])
        more = f" and {len(dropped) - 5:,} more keys" if len(dropped) > 5 else ""
        problems.append(f"frontmatter: the value of {named}{more} is too large or too deeply nested "
                        "(an alias bomb?); ignored")
    return Loaded(data, problems, True)


class _TooBig(Exception):
    pass


def _key(key: Any) -> str:
    if key is None:
        return ""
    if isinstance(key, str):
        return key.strip()
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key).strip()


def plain(value: Any, config: Settings) -> Any:
    """``to_plain`` of one value with a whole ``yaml_node_budget`` of its own."""
    return to_plain(value, [config.yaml_node_budget], 0, config)


def to_plain(value: Any, budget: list[int], depth: int, config: Settings) -> Any:
    """A JSON-safe copy of a YAML value, spending one unit of ``budget`` per node (and one per
    ``yaml_string_unit`` characters of a string), at most ``yaml_max_depth`` deep."""
    # A string costs by its length too: aliases can repeat one long string a thousand times
    # ("a: &a <1 MB>", "b: [*a, *a, ...]"), a gigabyte once expanded into an answer.
    budget[0] -= 1 + (len(value) // config.yaml_string_unit if isinstance(value, str) else 0)
    if budget[0] < 0 or depth > config.yaml_max_depth:
        raise _TooBig
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {_key(k): to_plain(v, budget, depth + 1, config) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_plain(v, budget, depth + 1, config) for v in value]
    return str(value)
