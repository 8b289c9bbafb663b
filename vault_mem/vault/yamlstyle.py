"""YAML as a person writes it: the plainest form of each value that reads back the same.

Every scalar is written plain when YAML allows and quoted only when the reader
(``vault.frontmatter.load_yaml``) would read the plain form differently, or when a
YAML 1.2 reader such as Obsidian's would (``1e5``, ``0o17``). Lists and mappings are
block style (``tags:\n  - a``); multi-line strings are ``|`` blocks. Each choice is
checked by loading it back, so the reader and the writer cannot drift apart.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from vault_mem.errors import InvalidInput
from vault_mem.settings import Settings
from vault_mem.vault.fields import leading_keys
from vault_mem.vault.frontmatter import load_yaml, plain

KEY_ORDER = leading_keys()  # id, title, type, tags, created, updated (the field table's ``first``)
# YAML 1.2 core-schema numbers, booleans and nulls that PyYAML (YAML 1.1) reads as
# strings: Obsidian would not, so such strings are quoted too.
_YAML12_NON_STRING = re.compile(
    r"[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF))"
    r"|\.(?:nan|NaN|NAN)|true|True|TRUE|false|False|FALSE|null|Null|NULL|~"
)
SURROGATE = re.compile("[\ud800-\udfff]")


def plain_value(value: Any, config: Settings) -> Any:
    """The value as ``load_yaml`` gives it back (``frontmatter.plain``, within ``config``'s bounds)."""
    return plain(value, config)


def same_value(a: Any, b: Any) -> bool:
    """Equality that tells ``True`` from ``1`` and ``1.0`` from ``1`` (YAML does)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _reads_back(doc: str, expected: Any, *, config: Settings) -> bool:
    loaded = load_yaml(doc, config=config)
    return loaded.parsed and not loaded.problems and same_value(loaded.data.get("k"), expected)


def _number_text(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text and "." not in text.split("e")[0]:
        # PyYAML's float pattern needs a dot and a signed exponent: 1e-05 -> 1.0e-05
        mantissa, exponent = text.split("e")
        sign = "" if exponent[0] in "+-" else "+"
        text = f"{mantissa}.0e{sign}{exponent}"
    return text


def _quoted_forms(text: str, prefer: str | None) -> Iterator[str]:
    """The quoted spellings of ``text`` to try, in order; PyYAML's escaped form (a whole dump,
    the costly one) only when the simple quotes did not read back."""
    single = "'" + text.replace("'", "''") + "'"
    double = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    yield from [double, single] if prefer == '"' or (prefer is None and "'" in text) else [single, double]
    escaped = yaml.safe_dump(text, default_style='"', allow_unicode=True, width=1 << 30)
    yield escaped.removesuffix("\n...\n").rstrip("\n")


def scalar_text(value: Any, context: str = "value", prefer: str | None = None, *, config: Settings) -> str | None:
    """One-line YAML for a scalar that ``load_yaml`` reads back as ``value``, or None.

    ``context`` is where it goes: "value" (after ``key: ``), "item" (after ``- ``) or
    "flow" (inside ``[...]``). ``prefer`` is a quote style to keep ("'" or '"'); without
    it a string is plain when YAML allows, else quoted.
    """
    if value is None:
        return "null" if context == "flow" else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number_text(value)
    if isinstance(value, dt.datetime | dt.date):
        value = value.isoformat()
    if not isinstance(value, str):
        return None
    plain = [value] if prefer is None and "\n" not in value and not _YAML12_NON_STRING.fullmatch(value) else []
    candidates = itertools.chain(plain, _quoted_forms(value, prefer))
    expected = [value] if context in ("item", "flow") else value
    for text in candidates:
        if context == "item":
            doc = f"k:\n  - {text}\n"
        elif context == "flow":
            doc = f"k: [{text}]\n"
        else:
            doc = f"k: {text}\n"
        if _reads_back(doc, expected, config=config):
            return text
    return None


def _literal_lines(text: str, indent: int, *, config: Settings) -> list[str] | None:
    """``|`` block scalar lines (header first) for a multi-line string, or None."""
    body = text.rstrip("\n")
    trailing = len(text) - len(body)
    chomp = "-" if trailing == 0 else ("" if trailing == 1 else "+")
    lines = body.split("\n") + [""] * max(0, trailing - 1)
    first_content = next((ln for ln in lines if ln.strip()), "")
    header = "|" + ("2" if first_content.startswith(" ") else "") + chomp
    pad = " " * (indent + 2)
    rendered = [header] + [pad + ln if ln else "" for ln in lines]
    probe = ["k: " + rendered[0]] + [("  " + ln[len(pad):]) if ln else "" for ln in rendered[1:]]
    return rendered if _reads_back("\n".join(probe) + "\n", text, config=config) else None


def is_collection(value: Any) -> bool:
    return isinstance(value, list | tuple | dict) and len(value) > 0


def flow_text(value: Any, *, config: Settings) -> str | None:
    """``[a, b]`` or ``{a: 1}`` for a list or mapping of one-line scalars, or None."""
    if isinstance(value, list | tuple):
        items = [scalar_text(v, "flow", config=config) if not is_collection(v) else None for v in value]
        if any(i is None for i in items):
            return None
        return "[" + ", ".join(i for i in items if i is not None) + "]"
    if isinstance(value, dict):
        parts = []
        for key, val in value.items():
            k, v = _key_text(str(key), config=config), scalar_text(val, "flow", config=config)
            if v is None or is_collection(val) or not re.fullmatch(r"[\w][\w .-]*", k):
                return None
            parts.append(f"{k}: {v}")
        return "{" + ", ".join(parts) + "}"
    return None


@functools.lru_cache(maxsize=1024)
def _key_text(key: str, *, config: Settings) -> str:
    """The YAML spelling of a mapping key (the same few keys come in every note: cached, with the
    settings whose bounds read it back)."""
    if not key or key != key.strip():
        raise InvalidInput("set", f"the key {key!r} cannot be written: keys need a name with no "
                           "spaces at either end")
    for text in itertools.chain((key,), _quoted_forms(key, None)):
        loaded = load_yaml(f"{text}: 0\n", config=config)
        if loaded.parsed and list(loaded.data) == [key]:
            return text
    raise InvalidInput("set", f"the key {key!r} cannot be written as YAML")


def value_lines(value: Any, indent: int, prefer: str | None = None, *, config: Settings) -> tuple[bool, list[str]]:
    """(on_key_line, lines) for a value under a key at ``indent``.

    On the key line: ``lines[0]`` follows ``key: `` and later lines (a ``|`` block) follow.
    Otherwise the value is a block collection on the lines below the key.
    """
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list | dict) and not value:
        return True, ["[]" if isinstance(value, list) else "{}"]
    if isinstance(value, list | dict):
        return False, block_lines(value, indent + 2, config=config)
    if isinstance(value, str) and "\n" in value and prefer not in ("'", '"'):
        literal = _literal_lines(value, indent, config=config)
        if literal is not None:
            return True, literal
    text = scalar_text(value, "value", prefer if prefer in ("'", '"') else None, config=config)
    if text is None and prefer is not None:
        text = scalar_text(value, "value", config=config)
    if text is None:
        why = " (it holds a lone surrogate, U+D800..U+DFFF)" if SURROGATE.search(str(value)) else ""
        raise InvalidInput("set", f"the value {str(value)[:60]!r} cannot be written as YAML{why}")
    return True, [text]


def block_lines(value: list[Any] | dict[str, Any], indent: int, *, config: Settings) -> list[str]:
    """Block-style YAML lines for a non-empty list (``- item``) or mapping at ``indent``."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, list):
        for item in value:
            if is_collection(item):
                lines.append(pad + "-")
                lines += block_lines(list(item) if isinstance(item, tuple) else item, indent + 2, config=config)
                continue
            if isinstance(item, str) and "\n" in item:
                literal = _literal_lines(item, indent, config=config)
                if literal is not None:
                    lines += [pad + "- " + literal[0], *literal[1:]]
                    continue
            text = scalar_text(item, "item", config=config) if not isinstance(item, list | dict) else None
            if text is None:
                text = "[]" if isinstance(item, list) else "{}" if isinstance(item, dict) else None
            if text is None:
                raise InvalidInput("set", f"the list item {str(item)[:60]!r} cannot be written as YAML")
            lines.append((pad + "- " + text).rstrip(" "))
        return lines
    for key, val in value.items():
        lines += entry_lines(str(key), val, indent, config=config)
    return lines


def entry_lines(key: str, value: Any, indent: int = 0, *, config: Settings) -> list[str]:
    """The lines of one ``key: value`` entry in block style, at ``indent``."""
    pad = " " * indent
    head = pad + _key_text(key, config=config) + ":"
    on_line, lines = value_lines(value, indent, config=config)
    if not on_line:
        return [head, *lines]
    first = f"{head} {lines[0]}" if lines[0] else head
    return [first, *lines[1:]]


def ordered(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with id, title, type, tags, created, updated first, the rest as given."""
    out = {key: fields[key] for key in KEY_ORDER if key in fields}
    out.update((key, value) for key, value in fields.items() if key not in out)
    return out


def render_frontmatter(fields: Mapping[str, Any], newline: str = "\n", *, config: Settings) -> str:
    """A whole ``---`` block in block style, keys in KEY_ORDER, ending with a newline."""
    lines = ["---"]
    for key, value in ordered(fields).items():
        lines += entry_lines(key, value, config=config)
    lines.append("---")
    return newline.join(lines) + newline
