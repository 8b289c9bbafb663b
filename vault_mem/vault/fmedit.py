"""Frontmatter and body text for the write tools: render new notes, edit old ones surgically.

Everything here works on ``str`` and never touches the disk. An edited file keeps
its BOM (a leading U+FEFF), its line endings, its comments, its quoting, its key
order and every line the call did not change, so that ``git diff`` shows only what
was set (SPEC 5, "Written files look hand-written").

YAML is checked against the reader, not trusted: every scalar is written in the
plainest form that ``load_yaml`` reads back as the same value, and every edited block
is re-read and compared before it is returned. Frontmatter the reader cannot parse
is never rewritten (InvalidInput on ``ref``): the person has to fix it first.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from vault_mem.errors import InvalidInput
from vault_mem.vault.frontmatter import NODE_BUDGET, load_yaml, split_frontmatter, to_plain

KEY_ORDER = ("id", "title", "type", "tags", "created", "updated")
_BOM = "\ufeff"
# YAML 1.2 core-schema numbers, booleans and nulls that PyYAML (YAML 1.1) reads as
# strings: Obsidian would not, so such strings are quoted too.
_YAML12_NON_STRING = re.compile(
    r"[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF))"
    r"|\.(?:nan|NaN|NAN)|true|True|TRUE|false|False|FALSE|null|Null|NULL|~"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_TRAILING_BLANK_LINES = re.compile(r"(?:\r?\n[ \t]*)+\Z")


# --- rendering values ------------------------------------------------------------------

def _plain(value: Any) -> Any:
    return to_plain(value, [NODE_BUDGET], 0)


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


def _reads_back(doc: str, expected: Any) -> bool:
    loaded = load_yaml(doc)
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


def _quoted_forms(text: str, prefer: str | None) -> list[str]:
    single = "'" + text.replace("'", "''") + "'"
    double = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    escaped = yaml.safe_dump(text, default_style='"', allow_unicode=True, width=1 << 30)
    escaped = escaped.removesuffix("\n...\n").rstrip("\n")
    first = [double, single] if prefer == '"' or (prefer is None and "'" in text) else [single, double]
    return [*first, escaped]


def scalar_text(value: Any, context: str = "value", prefer: str | None = None) -> str | None:
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
    candidates: list[str] = []
    if prefer is None and "\n" not in value and not _YAML12_NON_STRING.fullmatch(value):
        candidates.append(value)
    candidates += _quoted_forms(value, prefer)
    expected = [value] if context in ("item", "flow") else value
    for text in candidates:
        if context == "item":
            doc = f"k:\n  - {text}\n"
        elif context == "flow":
            doc = f"k: [{text}]\n"
        else:
            doc = f"k: {text}\n"
        if _reads_back(doc, expected):
            return text
    return None


def _literal_lines(text: str, indent: int) -> list[str] | None:
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
    return rendered if _reads_back("\n".join(probe) + "\n", text) else None


def _is_collection(value: Any) -> bool:
    return isinstance(value, list | tuple | dict) and len(value) > 0


def flow_text(value: Any) -> str | None:
    """``[a, b]`` or ``{a: 1}`` for a list or mapping of one-line scalars, or None."""
    if isinstance(value, list | tuple):
        items = [scalar_text(v, "flow") if not _is_collection(v) else None for v in value]
        if any(i is None for i in items):
            return None
        return "[" + ", ".join(i for i in items if i is not None) + "]"
    if isinstance(value, dict):
        parts = []
        for key, val in value.items():
            k, v = _key_text(str(key)), scalar_text(val, "flow")
            if v is None or _is_collection(val) or not re.fullmatch(r"[\w][\w .-]*", k):
                return None
            parts.append(f"{k}: {v}")
        return "{" + ", ".join(parts) + "}"
    return None


def _key_text(key: str) -> str:
    if not key or key != key.strip():
        raise InvalidInput("set", f"the key {key!r} cannot be written: keys need a name with no "
                           "spaces at either end")
    for text in [key, *_quoted_forms(key, None)]:
        loaded = load_yaml(f"{text}: 0\n")
        if loaded.parsed and list(loaded.data) == [key]:
            return text
    raise InvalidInput("set", f"the key {key!r} cannot be written as YAML")


def _value_lines(value: Any, indent: int, prefer: str | None = None) -> tuple[bool, list[str]]:
    """(on_key_line, lines) for a value under a key at ``indent``.

    On the key line: ``lines[0]`` follows ``key: `` and later lines (a ``|`` block) follow.
    Otherwise the value is a block collection on the lines below the key.
    """
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list | dict) and not value:
        return True, ["[]" if isinstance(value, list) else "{}"]
    if isinstance(value, list | dict):
        return False, _block_lines(value, indent + 2)
    if isinstance(value, str) and "\n" in value and prefer not in ("'", '"'):
        literal = _literal_lines(value, indent)
        if literal is not None:
            return True, literal
    text = scalar_text(value, "value", prefer if prefer in ("'", '"') else None)
    if text is None and prefer is not None:
        text = scalar_text(value, "value")
    if text is None:
        why = " (it holds a lone surrogate, U+D800..U+DFFF)" if _SURROGATE.search(str(value)) else ""
        raise InvalidInput("set", f"the value {str(value)[:60]!r} cannot be written as YAML{why}")
    return True, [text]


def _block_lines(value: list[Any] | dict[str, Any], indent: int) -> list[str]:
    """Block-style YAML lines for a non-empty list (``- item``) or mapping at ``indent``."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, list):
        for item in value:
            if _is_collection(item):
                lines.append(pad + "-")
                lines += _block_lines(list(item) if isinstance(item, tuple) else item, indent + 2)
                continue
            if isinstance(item, str) and "\n" in item:
                literal = _literal_lines(item, indent)
                if literal is not None:
                    lines += [pad + "- " + literal[0], *literal[1:]]
                    continue
            text = scalar_text(item, "item") if not isinstance(item, list | dict) else None
            if text is None:
                text = "[]" if isinstance(item, list) else "{}" if isinstance(item, dict) else None
            if text is None:
                raise InvalidInput("set", f"the list item {str(item)[:60]!r} cannot be written as YAML")
            lines.append((pad + "- " + text).rstrip(" "))
        return lines
    for key, val in value.items():
        lines += entry_lines(str(key), val, indent)
    return lines


def entry_lines(key: str, value: Any, indent: int = 0) -> list[str]:
    """The lines of one ``key: value`` entry in block style, at ``indent``."""
    pad = " " * indent
    head = pad + _key_text(key) + ":"
    on_line, lines = _value_lines(value, indent)
    if not on_line:
        return [head, *lines]
    first = f"{head} {lines[0]}" if lines[0] else head
    return [first, *lines[1:]]


def ordered(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with id, title, type, tags, created, updated first, the rest as given."""
    out = {key: fields[key] for key in KEY_ORDER if key in fields}
    out.update((key, value) for key, value in fields.items() if key not in out)
    return out


def _check_fields(text: str, fields: Mapping[str, Any], param: str) -> None:
    split = split_frontmatter(text.removeprefix(_BOM))
    loaded = load_yaml(split.yaml_text or "")
    for key, value in fields.items():
        if key not in loaded.data or not same_value(loaded.data[key], _plain(value)):
            raise InvalidInput(param, f"the value of {key!r} cannot be written so that it reads back "
                               "the same; try a plainer value")


def render_frontmatter(fields: Mapping[str, Any], newline: str = "\n") -> str:
    """A whole ``---`` block in block style, keys in KEY_ORDER, ending with a newline."""
    lines = ["---"]
    for key, value in ordered(fields).items():
        lines += entry_lines(key, value)
    lines.append("---")
    return newline.join(lines) + newline


def render_note(fields: Mapping[str, Any], body: str) -> str:
    """The text of a new note: frontmatter, then ``body`` with LF endings and a final newline.

    Raises InvalidInput("set") when a value cannot be written so that it reads back equal.
    """
    text = render_frontmatter(fields) + _normal_body(body, "\n")
    _check_fields(text, fields, "set")
    return text


def _normal_body(body: str, newline: str, param: str = "content") -> str:
    if _SURROGATE.search(body):
        raise InvalidInput(param, "holds a lone surrogate (U+D800..U+DFFF), which UTF-8 cannot store")
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    if body and not body.endswith("\n"):
        body += "\n"
    return body.replace("\n", newline) if newline != "\n" else body


# --- surgical edits ----------------------------------------------------------------------

class _Parts:
    """A note's text cut into BOM, frontmatter block (between the fences) and body."""

    def __init__(self, text: str, name: str) -> None:
        self.bom = _BOM if text.startswith(_BOM) else ""
        rest = text[len(self.bom):]
        split = split_frontmatter(rest)
        if split.yaml_text is None and any("never closed" in p for p in split.problems):
            raise InvalidInput("ref", f"the frontmatter of {name} cannot be parsed (the opening '---' "
                               "is never closed); fix it by hand first")
        self.yaml = split.yaml_text
        first_end = rest.find("\n")
        if self.yaml is not None:
            self.yaml_start = first_end + 1
            self.yaml_end = self.yaml_start + len(self.yaml)
            self.newline = "\r\n" if rest[:first_end].endswith("\r") else "\n"
        else:
            self.yaml_start = self.yaml_end = 0
            self.newline = "\r\n" if "\r\n" in rest[: first_end + 1 if first_end >= 0 else 0] else "\n"
        self.head = rest[: split.body_offset]
        self.body = split.body
        self.rest = rest


def set_keys(text: str, updates: Mapping[str, Any], name: str = "the note") -> str:
    """``text`` with the frontmatter keys in ``updates`` set, every other byte kept.

    A key that exists has only its own value replaced, keeping its form (a flow list
    stays ``[a, b]``, a quoted string keeps its quotes, a block list its indentation);
    new keys are appended at the end of the block in block style; a file with no
    frontmatter gets a new block on top. Raises InvalidInput("ref") when the existing
    frontmatter cannot be parsed, InvalidInput("set") for a key or value YAML cannot hold.
    """
    parts = _Parts(text, name)
    if not updates:
        return text
    nl = parts.newline
    if parts.yaml is None:
        new = parts.bom + render_frontmatter(updates, nl) + parts.rest
        _check_fields(new, updates, "set")
        return new
    before = load_yaml(parts.yaml)
    if not before.parsed:
        reason = "; ".join(before.problems).removeprefix("frontmatter: ") or "not a mapping"
        raise InvalidInput("ref", f"the frontmatter of {name} cannot be parsed ({reason}); "
                           "fix it by hand first")
    changed = {k: v for k, v in updates.items()
               if k not in before.data or not same_value(before.data[k], _plain(v))}
    if not changed:
        return text
    new_yaml = _edit_block(parts.yaml, changed, nl, name)
    new = parts.bom + parts.rest[: parts.yaml_start] + new_yaml + parts.rest[parts.yaml_end:]
    after = load_yaml(new_yaml)
    others_kept = all(k in after.data and same_value(after.data[k], v)
                      for k, v in before.data.items() if k not in changed)
    if not after.parsed or not others_kept:
        raise InvalidInput("set", f"the frontmatter of {name} is laid out in a way that cannot be "
                           "edited safely (anchors, aliases or a flow mapping?); edit it by hand")
    _check_fields(new, changed, "set")
    return new


def _edit_block(block: str, updates: Mapping[str, Any], nl: str, name: str) -> str:
    try:
        root = yaml.compose(block, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise InvalidInput("ref", f"the frontmatter of {name} cannot be parsed ({exc}); "
                           "fix it by hand first") from exc
    entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    root_indent = 0
    if isinstance(root, yaml.MappingNode):
        if root.flow_style:
            raise InvalidInput("set", f"the frontmatter of {name} is one flow mapping {{...}}; "
                               "edit it by hand")
        for key_node, value_node in root.value:
            if isinstance(key_node, yaml.ScalarNode):
                entries[key_node.value.strip()] = (key_node, value_node)
        if root.value:
            root_indent = root.value[0][0].start_mark.column
    edits: list[tuple[int, int, str]] = []
    appended: list[str] = []
    for key, value in updates.items():
        if key in entries:
            edits.append(_replacement(block, *entries[key], value, name, key))
        else:
            appended += entry_lines(key, value, root_indent)
    for start, end, new in sorted(edits, reverse=True):
        block = block[:start] + new.replace("\n", nl) + block[end:]
    if appended:
        if block and not block.endswith("\n"):
            block += nl
        block += nl.join(appended) + nl
    return block


def _content_end(node: yaml.Node) -> int:
    """Index just after the last character that belongs to ``node``'s value."""
    if isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(last[1] if isinstance(last, tuple) else last)
    return int(node.end_mark.index)


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    end = len(text) if end < 0 else end
    return end - 1 if end > index and text[end - 1] == "\r" else end


def _replacement(block: str, key_node: yaml.Node, node: yaml.Node, value: Any,
                 name: str, key: str) -> tuple[int, int, str]:
    """(start, end, text): the slice of ``block`` holding ``key``'s value, and what replaces it."""
    colon = block.index(":", key_node.end_mark.index)
    after_colon = colon + 1
    start = node.start_mark.index
    if start < after_colon:
        raise InvalidInput("set", f"{key!r} in {name} is a YAML alias (*name); edit it by hand")
    end = _content_end(node)
    while end > start and block[end - 1] in " \t\r\n":
        end -= 1
    empty = isinstance(node, yaml.ScalarNode) and node.value == "" and node.style is None and end == start
    below = "\n" in block[after_colon:start]
    indent = key_node.start_mark.column
    child_indent: int | None = None
    if isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        first = node.value[0][0] if isinstance(node, yaml.MappingNode) else node.value[0]
        line_start = block.rfind("\n", 0, first.start_mark.index) + 1
        line = block[line_start:]
        child_indent = len(line) - len(line.lstrip(" "))

    on_line, lines = _form_keeping_lines(node, value, indent, child_indent)
    if on_line:
        lead = "" if not (empty or below) else " "
        region = (after_colon, after_colon) if empty else (after_colon, end) if below else (start, end)
    else:
        lead = "\n"
        key_line_end = _line_end(block, after_colon)
        region = (key_line_end, max(end, key_line_end)) if empty or below else (after_colon, end)
    first, rest = lead + lines[0], lines[1:]
    if rest or not on_line:
        # A comment after the old value must not end up inside a multi-line new one:
        # it moves to the new value's first line.
        tail = block[region[1]:_line_end(block, region[1])]
        if tail.strip().startswith("#"):
            first = (first + tail) if on_line else tail + first
            region = (region[0], region[1] + len(tail))
    return region[0], region[1], "\n".join([first, *rest])


def _form_keeping_lines(node: yaml.Node, value: Any, indent: int,
                        child_indent: int | None) -> tuple[bool, list[str]]:
    if isinstance(node, yaml.CollectionNode) and node.flow_style and isinstance(value, list | tuple | dict):
        flow = flow_text(value)
        if flow is not None:
            return True, [flow]
    same_kind = isinstance(value, list | tuple) if isinstance(node, yaml.SequenceNode) else isinstance(value, dict)
    if child_indent is not None and same_kind and _is_collection(value):
        lines = _block_lines(list(value) if isinstance(value, tuple) else value, child_indent)
        return False, lines
    # A quoted string keeps its quotes; a multi-line string becomes a | block whatever it was.
    style = node.style if isinstance(node, yaml.ScalarNode) else None
    quoted = style in ("'", '"') and isinstance(value, str)
    return _value_lines(value, indent, style if quoted else None)


def _edit_body(text: str, name: str, make_body: Callable[[str, str], str]) -> str:
    parts = _Parts(text, name)
    head = parts.head
    if head and not head.endswith("\n"):
        head += parts.newline
    return parts.bom + head + make_body(parts.body, parts.newline)


def replace_body(text: str, body: str, name: str = "the note") -> str:
    """``text`` with its body replaced; BOM and frontmatter kept byte for byte.

    The new body takes the file's line endings and ends with a newline.
    """
    return _edit_body(text, name, lambda _old, nl: _normal_body(body, nl))


def append_paragraph(text: str, paragraph: str, name: str = "the note") -> str:
    """``text`` with ``paragraph`` added at the end of its body after one blank line.

    Trailing blank lines of the old body are folded into that one blank line; the file
    keeps its line endings and ends with a newline. Raises InvalidInput("append") when
    ``paragraph`` holds nothing but whitespace.
    """
    addition = paragraph.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if not addition.strip():
        raise InvalidInput("append", "nothing to append: the text is empty")

    def make(old: str, nl: str) -> str:
        kept = _TRAILING_BLANK_LINES.sub("", old)
        if not kept.strip():
            return _normal_body(addition, nl, "append")
        return kept + nl + nl + _normal_body(addition, nl, "append")

    return _edit_body(text, name, make)
